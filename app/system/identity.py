"""Which computer a repair's transaction belongs to, as the journal records it, and that computer again from the
record: this one (live), or a copied drive (by its folder)."""

from __future__ import annotations

from pathlib import Path

from app.system.base import System
from app.system.offline import OfflineImage


def machine_of(system: System) -> dict:
    """The record of a computer: {"kind": "image", "root": folder} or {"kind": "live"}."""
    if isinstance(system, OfflineImage):
        return {"kind": "image", "root": str(system.root)}
    return {"kind": "live"}


def system_for(machine: dict, owner_window: int = 0) -> System:
    """The computer a record names; `owner_window`: the window Windows' permission prompt belongs to (the
    wizard's), so an undo's prompt is not a flashing taskbar button behind it."""
    if machine.get("kind") == "image":
        return OfflineImage(Path(machine["root"]))
    from app.system.live import LiveWindows  # only on Windows

    system = LiveWindows()
    system.owner_window = owner_window
    return system
