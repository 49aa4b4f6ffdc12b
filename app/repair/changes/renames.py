"""A file renamed in place (set aside, never deleted): the intent records its SHA-256, and undo renames it back
only while the set-aside file is as the step left it and the original name is free."""

from __future__ import annotations

from pathlib import Path

from app.repair.changes import RENAME, RollbackStopped
from app.system.base import System
from app.system.files import sha256_of


def prepare(system: System, source: Path, target: Path) -> dict:
    """The intent of renaming `source` to `target` (in the same folder); refused when `target` is taken."""
    if target.exists():
        raise FileExistsError(17, "a file of that name is already there", str(target))
    return {"op": RENAME, "source": str(source), "target": str(target), "shown": system.windows_path(source),
            "shown_target": system.windows_path(target), "sha256": sha256_of(source),
            "size": source.stat().st_size}


def apply(system: System, source: Path, target: Path) -> None:
    if target.exists():  # taken between the plan and now: never overwrite
        raise FileExistsError(17, "a file of that name is already there", str(target))
    system.rename_file(source, target)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    source, target = Path(intent["source"]), Path(intent["target"])
    if not target.exists():
        if source.exists() and sha256_of(source) == intent["sha256"]:
            return  # as it was: the crash came before the rename
        raise RollbackStopped("rename-missing", target=intent["shown_target"], original=intent["shown"])
    if sha256_of(target) != intent["sha256"]:
        raise RollbackStopped("rename-changed-since", target=intent["shown_target"], original=intent["shown"])
    if source.exists():
        raise RollbackStopped("rename-name-taken", target=intent["shown_target"], original=intent["shown"])
    system.rename_file(target, source)


def targets(intent: dict) -> list[Path]:
    """The files this change touches (checked for programs that hold them before an undo)."""
    return [Path(intent["source"]), Path(intent["target"])]
