"""A path as a person typed or pasted it, found on this machine: one rule for the command line and the wizard."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from app.system.base import System

QUOTES = "\"'"  # Explorer's "Copy as path" wraps the path in double quotes


def resolve_typed_path(system: System, typed: str) -> Optional[Path]:
    """Where `typed` is on this machine: a folder or file here (`C:\\...` on the live computer, a Linux path to
    a file inside a copied drive), else a Windows path inside the system's image (`C:\\Users\\alice\\venv`
    inside a copied drive). Surrounding blanks and quotes are ignored. None when it is in neither place."""
    text = _expanded(system, typed.strip().strip(QUOTES).strip())
    if not text:
        return None  # not the current folder: an empty box means nothing was typed
    here = Path(text)
    if _exists(here):
        return here
    inside = system.host_path(text)
    return inside if inside is not None and _exists(inside) else None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long for this file system, say: not there
        return False


_PROFILE = re.compile(r"(?i)^(?:%USERPROFILE%|\$env:USERPROFILE|[a-z]:\\Users\\<user>)(?=[\\/]|$)")


def _expanded(system: System, text: str) -> str:
    """The profile folder as a report writes it in a command (%USERPROFILE%, PowerShell's $env:USERPROFILE, or the
    redacted C:\\Users\\<user>) is this system's own: the live user's, or the copied drive's."""
    match = _PROFILE.match(text)
    profile = system.variable("USERPROFILE") if match else None
    return profile + text[match.end():] if match and profile else text
