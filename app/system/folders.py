"""Case-insensitive lookups in real folders, as Windows does them (`KERNEL32.dll` is `kernel32.dll`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional


def children(folder: Optional[Path]) -> list[Path]:
    """The folder's entries, sorted; [] when it is missing or unreadable."""
    try:
        return sorted(folder.iterdir()) if folder else []
    except (OSError, ValueError):  # ValueError: a NUL character in a damaged image's path
        return []


def child(folder: Optional[Path], name: str) -> Optional[Path]:
    lower = name.lower()
    return next((p for p in children(folder) if p.name.lower() == lower), None)


def descend(folder: Optional[Path], *names: str) -> Optional[Path]:
    """folder / names..., matching each part without regard to case; None when a part is missing."""
    current = folder
    for name in names:
        current = child(current, name)
        if current is None:
            return None
    return current
