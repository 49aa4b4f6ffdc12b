"""The languages the app speaks (en, zh_CN), how one is chosen, and the words outside the two catalogues of
findings (`resources/findings.json`) and pasted errors (`resources/error_causes.json`): report headings,
CLI lines, tree rules (`resources/ui_text.json`)."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Optional

from app.resources import resources_folder

LANGUAGES = ("en", "zh_CN")
FALLBACK = "en"


def supported(lang: Optional[str]) -> str:
    """`lang` when the app speaks it, else English."""
    return lang if lang in LANGUAGES else FALLBACK


@cache
def _texts() -> dict[str, dict[str, str]]:
    return json.loads((resources_folder() / "ui_text.json").read_text(encoding="utf-8"))


def words(key: str, lang: str = "en", **values: object) -> str:
    entry = _texts()[key]
    text = entry.get(supported(lang)) or entry[FALLBACK]
    return text.format(**values) if values else text


def language_for(explicit: Optional[str], system: object = None) -> str:
    """--lang, else the display language of the computer looked at when it is this one (not a copied drive),
    else LANG: the one rule of the command line and the wizard."""
    from app.system.offline import OfflineImage

    live = system is not None and not isinstance(system, OfflineImage)
    return pick_language(explicit, getattr(system, "ui_language", None) if live else None,
                         getattr(system, "code_page", None) if live else None)


def pick_language(explicit: Optional[str], ui_language: Optional[str] = None, code_page: Optional[int] = None) -> str:
    """--lang wins; then the machine's display language (zh-* or code page 936); then LANG; else English."""
    if explicit:
        return supported(explicit)
    if (ui_language or "").lower().startswith("zh") or code_page == 936:
        return "zh_CN"
    if os.environ.get("LANG", "").lower().startswith("zh") or os.environ.get("LC_ALL", "").lower().startswith("zh"):
        return "zh_CN"
    return "en"
