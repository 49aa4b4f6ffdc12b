"""A file or folder renamed in place (set aside, never deleted): the intent records its fingerprint (a file's
SHA-256; a folder's listing: every file's relative name and size), and undo renames it back only while the
set-aside one is as the step left it. Both renames refuse to replace anything (app/system/files.py rename_file):
a name taken meanwhile stops the undo, and nothing is lost."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from app.repair.changes import RENAME, RollbackStopped
from app.system.base import System
from app.system.files import sha256_of


def fingerprint(path: Path) -> str:
    """A file's SHA-256, or a folder's: of its files' relative names and sizes, in order (links never followed)."""
    if not path.is_dir() or path.is_symlink():
        return sha256_of(path)
    digest = hashlib.sha256(b"folder\0")
    for top, folders, names in os.walk(path, followlinks=False):
        folders.sort()
        for name in sorted(names):
            full = os.path.join(top, name)
            relative = os.path.relpath(full, path).replace(os.sep, "/")
            digest.update(f"{relative}\0{os.lstat(full).st_size}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _size(path: Path) -> int:
    return path.stat().st_size if not path.is_dir() else 0


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    source, target = Path(intent["source"]), Path(intent["target"])
    if not target.exists():
        if source.exists() and fingerprint(source) == intent["sha256"]:
            return  # as it was: the crash came before the rename
        raise RollbackStopped("rename-missing", target=intent["shown_target"], original=intent["shown"])
    if fingerprint(target) != intent["sha256"]:
        raise RollbackStopped("rename-changed-since", target=intent["shown_target"], original=intent["shown"])
    try:
        system.rename_file(target, source)  # refuses an original name taken since, in the same call
    except FileExistsError:
        raise RollbackStopped("rename-name-taken", target=intent["shown_target"], original=intent["shown"]) from None


def targets(intent: dict) -> list[Path]:
    """The files this change touches (checked for programs that hold them before an undo)."""
    return [Path(intent["source"]), Path(intent["target"])]


@dataclass(frozen=True)
class RenameFile:
    """Rename `source` to `target` in place (a file set aside, never deleted); its fingerprint is recorded first."""

    source: Path
    target: Path
    op = RENAME

    def prepare(self, system: System, transaction, number: int) -> dict:
        """Refused when `target` is taken."""
        if self.target.exists():
            raise FileExistsError(17, "a file of that name is already there", str(self.target))
        return {"op": RENAME, "source": str(self.source), "target": str(self.target),
                "shown": system.windows_path(self.source), "shown_target": system.windows_path(self.target),
                "sha256": fingerprint(self.source), "size": _size(self.source), "folder": self.source.is_dir()}

    def apply(self, system: System, transaction, intent: dict) -> None:
        if self.target.exists():  # taken between the plan and now: never overwrite
            raise FileExistsError(17, "a file of that name is already there", str(self.target))
        system.rename_file(self.source, self.target)

    undo = staticmethod(undo)
    targets = staticmethod(targets)
