"""A file created or replaced: a backup (checked against its SHA-256) before the change, an atomic copy, and an undo
that restores the backup, or removes the file the step created, only while the file is as the step left it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.repair.changes import FILE, RollbackStopped
from app.repair.changes.faults import crash_point
from app.system.base import System
from app.system.files import copy_file, sha256_of


def prepare(system: System, folder: Path, number: int, target: Path, source: Path,
            source_sha256: Optional[str] = None) -> dict:
    """The intent of placing `source` at `target`, with a backup of what is there now. The original is read once
    (hashed while it is copied), the backup once to check it; `source_sha256`, when the caller has just checked
    the source, spares reading that too (torch's DLLs reach 1 GB)."""
    before = None
    if target.exists():
        backup = folder / "backups" / str(number)
        size = target.stat().st_size
        original = copy_file(target, backup)
        before = {"sha256": original, "backup": f"backups/{number}", "size": size}
        if sha256_of(backup) != original:
            raise OSError(f"the backup of {target} does not match the original")
        crash_point(f"backup:{number}")
    return {"op": FILE, "target": str(target), "shown": system.windows_path(target), "before": before,
            "after": source_sha256 or sha256_of(source)}


def apply(system: System, target: Path, source: Path) -> None:
    system.copy_file(source, target)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    target = Path(intent["target"])
    before = intent["before"]
    if not applied or transaction.undone_before:  # a copy cut short (the step's, or an earlier undo's) leaves its
        # temporary file; a finished copy renamed it, so a step recorded as made needs no look at its whole folder
        for leftover in target.parent.glob(f".{target.name}.*.tmp"):
            system.delete_file(leftover)
    now = sha256_of(target) if target.exists() else None
    if now == (before["sha256"] if before else None):
        return  # as it was: the crash came before the change
    if now is not None and now != intent["after"] and before is None:
        raise RollbackStopped("created-changed-since", target=intent["shown"])
    if now is not None and now != intent["after"]:
        raise RollbackStopped("changed-since", target=intent["shown"],
                              backup=str(transaction.folder / before["backup"]))
    # as the step left it, or removed since (by hand, or security software's quarantine): the original goes back,
    # and nothing anybody wrote is overwritten
    if before is None:
        system.delete_file(target)
        return
    backup = transaction.folder / before["backup"]
    if not backup.exists() or sha256_of(backup) != before["sha256"]:
        raise RollbackStopped("backup-damaged", target=intent["shown"], backup=str(backup))
    system.copy_file(backup, target)


def targets(intent: dict) -> list[Path]:
    """The files this change touches (checked for programs that hold them before an undo)."""
    return [Path(intent["target"])]
