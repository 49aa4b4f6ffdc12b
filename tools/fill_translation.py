"""Fill a Qt Linguist .ts file from a Python dict of translations (source text -> translation).

Usage: python tools/fill_translation.py resources/translations/torch_dll_doctor_zh_CN.ts WORDS.py
WORDS.py defines ZH = {...} (or EN = {...} for the English plural forms, with `--en`); a text with %n takes
one form (Chinese) or a tuple of forms (English: singular, plural). Messages already translated in the .ts keep
their translation; the .ts stays the source of truth (CI checks that every message is translated and that the .qm
matches it)."""

from __future__ import annotations

import runpy
import sys
import xml.etree.ElementTree as ET


def fill(ts_path: str, words: dict[str, str]) -> list[str]:
    tree = ET.parse(ts_path)
    missing = []
    for message in tree.getroot().iter("message"):
        source = message.find("source").text or ""
        translation = message.find("translation")
        if translation.get("type") != "unfinished" and (translation.text or list(translation)):
            continue
        if source not in words:
            missing.append(source)
            continue
        if message.get("numerus") == "yes":
            for child in list(translation):
                translation.remove(child)
            forms = words[source]
            for text in (forms,) if isinstance(forms, str) else forms:
                ET.SubElement(translation, "numerusform").text = text
        else:
            translation.text = words[source]
        translation.attrib.pop("type", None)
    tree.write(ts_path, encoding="utf-8", xml_declaration=True)
    return missing


if __name__ == "__main__":
    left = fill(sys.argv[1], runpy.run_path(sys.argv[2])["EN" if "--en" in sys.argv[3:] else "ZH"])
    print("\n".join(f"untranslated: {text}" for text in left))
    sys.exit(1 if left else 0)
