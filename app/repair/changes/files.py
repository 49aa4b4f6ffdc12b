"""A file created or replaced: a backup (checked against its SHA-256) before the change, an atomic copy, and an undo
that restores the backup, or removes the file the step created, only while the file is as the step left it: set
aside first, checked as set aside, and only then removed, so that nothing written at its name meanwhile is lost."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from app.repair.changes import FILE, RollbackStopped
from app.repair.changes.faults import crash_point
from app.system.base import System
from app.system.files import copy_file, sha256_of


def backed_up(system: System, folder: Path, number: int, target: Path, source: Optional[Path],
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


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    """Set the file aside first (a rename that never replaces), check the set-aside copy, and only then remove it:
    a file that pip, conda or the user writes at the name meanwhile is a new file there, never lost. The original
    goes back under its name only while the name is free (a copy beside it, renamed without replacing)."""
    target = Path(intent["target"])
    before = intent["before"]
    if not applied or transaction.undone_before:  # a copy cut short (the step's, or an earlier undo's) leaves its
        # temporary file; a finished copy renamed it, so a step recorded as made needs no look at its whole folder
        for leftover in target.parent.glob(f".{target.name}.*.tmp"):
            system.delete_file(leftover)
    aside = target.with_name(f".{target.name}.{intent['after'][:12]}.undo")  # an undo cut short left it there
    if not aside.exists():
        if not target.exists():  # removed since (by hand, or security software's quarantine)
            if before is not None:
                _put_back(system, transaction, intent, target)
            return
        try:
            system.rename_file(target, aside)
        except FileExistsError:  # the aside name taken by somebody else: nothing of ours is touched
            raise RollbackStopped("changed-since", target=intent["shown"],
                                  backup=str(transaction.folder / before["backup"]) if before else "-") from None
    now = sha256_of(aside)
    crash_point(f"undo-checked:{target.name}")  # checked as set aside; anything at the name now is somebody else's
    if now != intent["after"]:  # not as the step left it: as it was before the step, or changed since
        _name_back(system, aside, target, intent)
        if now == (before["sha256"] if before else None):
            return  # as it was: the crash came before the change
        if before is None:
            raise RollbackStopped("created-changed-since", target=intent["shown"])
        raise RollbackStopped("changed-since", target=intent["shown"],
                              backup=str(transaction.folder / before["backup"]))
    if before is not None:  # the original first, under its name only while that is free; then ours goes
        _put_back(system, transaction, intent, target, aside)
    system.delete_file(aside)


def _name_back(system: System, aside: Path, target: Path, intent: dict) -> None:
    try:
        system.rename_file(aside, target)
    except FileExistsError:  # written at the name meanwhile: both stay
        raise RollbackStopped("rename-name-taken", target=system.windows_path(aside), original=intent["shown"]) \
            from None


def _put_back(system: System, transaction, intent: dict, target: Path, aside: Optional[Path] = None) -> None:
    """The backup, checked, copied beside the target and renamed to its name without replacing anything."""
    before = intent["before"]
    backup = transaction.folder / before["backup"]
    if not backup.exists() or sha256_of(backup) != before["sha256"]:
        if aside is not None:
            _name_back(system, aside, target, intent)
        raise RollbackStopped("backup-damaged", target=intent["shown"], backup=str(backup))
    staged = target.with_name(f".{target.name}.{before['sha256'][:12]}.restore")
    system.copy_file(backup, staged)
    try:
        system.rename_file(staged, target)
    except FileExistsError:  # written at the name since the file was set aside: that file stays, and so does ours
        system.delete_file(staged)
        raise RollbackStopped("rename-name-taken", target=system.windows_path(aside) if aside else str(backup),
                              original=intent["shown"]) from None


def targets(intent: dict) -> list[Path]:
    """The files this change touches (checked for programs that hold them before an undo)."""
    return [Path(intent["target"])]


@dataclass(frozen=True)
class PutFile:
    """Place `source` at `target` (creating or replacing it), backing up what is there first. `sha256`: the
    source's hash when the caller has just checked it (read again otherwise). `content`: the new bytes themselves,
    checked already against `sha256`, in place of a source file (a small file of a restore, never written twice)."""

    target: Path
    source: Optional[Path]
    sha256: Optional[str] = None
    content: Optional[bytes] = None
    op = FILE

    def prepare(self, system: System, transaction, number: int) -> dict:
        return backed_up(system, transaction.folder, number, self.target, self.source, self.sha256)

    def apply(self, system: System, transaction, intent: dict) -> None:
        if self.content is not None:
            system.write_file(self.target, self.content)
        else:
            system.copy_file(self.source, self.target)

    undo = staticmethod(undo)
    targets = staticmethod(targets)
