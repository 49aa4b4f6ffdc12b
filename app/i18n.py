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


def words_keys() -> frozenset[str]:
    """Every key of resources/ui_text.json."""
    return frozenset(_texts())


MODULE_COMMAND = "python -m app"  # how the words name this program's command; said as it was started


def words(key: str, lang: str = "en", **values: object) -> str:
    entry = _texts()[key]
    text = entry.get(supported(lang)) or entry[FALLBACK]
    text = text.format(**values) if values else text
    command = started_as()
    return text.replace(MODULE_COMMAND, command) if command != MODULE_COMMAND else text


@cache
def started_as() -> str:
    """The command this program was started as, for the words that tell the user what to type next: `python -m
    app`, the script pip or pipx installed (`torch-dll-doctor-cli`), or the frozen program (`TorchDllDoctor.exe`)."""
    import sys

    first = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if getattr(sys, "frozen", False):
        return first or "TorchDllDoctor.exe"
    name, ext = os.path.splitext(first)
    # the scripts pyproject.toml installs ([project.scripts], [project.gui-scripts]); anything else (python -m app,
    # a test runner that calls main()) is named as the module
    return name if name in INSTALLED_COMMANDS and ext.lower() in ("", ".exe") else MODULE_COMMAND


INSTALLED_COMMANDS = ("torch-dll-doctor-cli", "torch-dll-doctor")


def language_for(explicit: Optional[str], ui_language: Optional[str] = None, code_page: Optional[int] = None) -> str:
    """The one rule of the command line and the wizard: --lang wins; then the display language of the computer the
    person sits at (zh-* or code page 936: `System.display_language()`); then LANG; else English."""
    if explicit:
        return supported(explicit)
    if (ui_language or "").lower().startswith("zh") or code_page == 936:
        return "zh_CN"
    if os.environ.get("LANG", "").lower().startswith("zh") or os.environ.get("LC_ALL", "").lower().startswith("zh"):
        return "zh_CN"
    return "en"
