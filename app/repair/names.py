"""What each repair is called, one catalogue for the wizard and the command line (resources/ui_text.json
`repair.name.<id>`), and the other ids the command line accepts. Light on purpose: the wizard's pages import it."""

from __future__ import annotations

from app.i18n import words

ALIASES = {"openmp-runtime": "place-libomp140", "reinstall-torch": "restore-torch-files"}


def repair_name(action: str, lang: str) -> str:
    action = ALIASES.get(action, action)
    try:
        return words(f"repair.name.{action}", lang)
    except KeyError:
        return words("repair.name.other", lang)
