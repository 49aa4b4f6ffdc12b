"""Read-only data shipped in `resources/`: beside `app/` in a checkout (and an editable install), the package
`app/_resources` in an installed wheel (pyproject.toml maps the folder), `resources/` inside the bundle in the .exe."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path


def resources_folder() -> Path:
    bundle = getattr(sys, "_MEIPASS", None)  # PyInstaller's unpacked bundle
    if bundle:
        return Path(bundle) / "resources"
    here = Path(__file__).resolve().parent
    installed = here / "_resources"
    return installed if installed.is_dir() else here.parent / "resources"


@cache
def _windows_dll_lines() -> tuple[tuple[str, bool], ...]:
    lines = (resources_folder() / "windows_dlls.txt").read_text(encoding="utf-8").splitlines()
    entries = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, tag = line.partition(" ")
            entries.append((name.lower(), tag.strip() == "[known]"))
    return tuple(entries)


def windows_dlls() -> frozenset[str]:
    """Lower-case names of the DLLs that every Windows 10/11 carries in System32."""
    return frozenset(name for name, _ in _windows_dll_lines())


def default_known_dlls() -> frozenset[str]:
    """Windows 10/11's default KnownDLLs, for when the registry cannot be read."""
    return frozenset(name for name, known in _windows_dll_lines() if known)


@cache
def known_issues() -> dict:
    """resources/known_issues.json: known-bad torch builds, runtime minimums, Python support, drivers."""
    return json.loads((resources_folder() / "known_issues.json").read_text(encoding="utf-8"))


@cache
def ai_apps() -> dict:
    """resources/ai_apps.json: AI apps by their folders (resources/schemas/ai_apps.schema.json), read once. Its
    readers take what they need from it and never change it."""
    return json.loads((resources_folder() / "ai_apps.json").read_text(encoding="utf-8"))


@cache
def download_catalog() -> dict:
    """resources/catalog.json: what the app downloads, and how each download is verified."""
    return json.loads((resources_folder() / "catalog.json").read_text(encoding="utf-8"))
