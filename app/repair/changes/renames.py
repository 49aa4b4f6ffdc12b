"""A file or folder renamed in place (set aside, never deleted): the intent records its fingerprint (a file's
SHA-256; a folder's listing: every file's relative name and size), and undo renames it back only while the
set-aside one is as the step left it. Both renames refuse to replace anything (app/system/files.py rename_file):
a name taken meanwhile stops the undo, and nothing is lost."""

from __future__ import annotations

import hashlib
import os
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


def prepare(system: System, source: Path, target: Path) -> dict:
    """The intent of renaming `source` to `target` (in the same folder); refused when `target` is taken."""
    if target.exists():
        raise FileExistsError(17, "a file of that name is already there", str(target))
    return {"op": RENAME, "source": str(source), "target": str(target), "shown": system.windows_path(source),
            "shown_target": system.windows_path(target), "sha256": fingerprint(source),
            "size": _size(source), "folder": source.is_dir()}


def apply(system: System, source: Path, target: Path) -> None:
    if target.exists():  # taken between the plan and now: never overwrite
        raise FileExistsError(17, "a file of that name is already there", str(target))
    system.rename_file(source, target)


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
