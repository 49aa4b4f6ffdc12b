"""Changing files, the one way the app does it: atomically, so a crash leaves the old file or the new one,
never half of either.

A write goes to a temporary file in the same folder (same volume, so the rename is atomic), is flushed and
fsynced, then replaces the target with `os.replace`; the folder is fsynced too where the OS allows it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Optional

CHUNK = 1 << 20
Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _sync_folder(folder: Path) -> None:
    if os.name == "nt":
        return  # Windows cannot open a folder for fsync; NTFS journals the rename itself
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _atomic(target: Path, fill: Callable[[object], None]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        if isinstance(error, OSError):
            _said_of_the_target(error, temporary, target)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _said_of_the_target(error: OSError, temporary: str, target: Path) -> None:
    """A failure on the temporary copy is the target's (the user knows no `.x.dll.1a2b.tmp`), asked of Windows while
    that copy is still there: security software that stopped it as it was written answers 225 for it, which the C
    runtime turned into errno 22 (app/failures.py refusal_kind), and a copy gone before it could take the target's
    place (removed by somebody else between our write and the rename) is `vanished`. A failure of another file
    (the source being read) keeps its own name."""
    if error.filename not in (None, temporary):
        return
    if isinstance(error, FileNotFoundError) and error.filename == temporary and not os.path.exists(temporary):
        error.vanished = True  # type: ignore[attr-defined]
    elif getattr(error, "winerror", None) is None and error.errno == errno.EINVAL:
        error._asked_windows = windows_error_of(temporary)  # type: ignore[attr-defined]
    error.filename = str(target)
    if error.filename2 is not None and os.path.normcase(error.filename2) == os.path.normcase(str(target)):
        error.filename2 = None  # os.replace's "temporary -> target" would read "target -> target"


def write_bytes(target: Path, data: bytes) -> None:
    _atomic(target, lambda out: out.write(data))


def copy_file(source: Path, target: Path, progress: Optional[Progress] = None) -> str:
    """Copy `source` over `target` atomically, streaming (DLLs can be 1 GB); the SHA-256 of the bytes copied."""
    total = source.stat().st_size
    digest = hashlib.sha256()

    def read(src) -> bytes:
        try:
            return src.read(CHUNK)
        except OSError as error:  # a read names no file: this one is the source's (a USB stick, a share)
            if error.filename is None:
                error.filename = str(source)
            raise

    def fill(out) -> None:
        done = 0
        with open(source, "rb") as src:
            for block in iter(lambda: read(src), b""):
                digest.update(block)
                out.write(block)
                done += len(block)
                if progress:
                    progress(done, total)

    _atomic(target, fill)
    return digest.hexdigest()


def delete_file(target: Path) -> None:
    os.unlink(target)
    _sync_folder(target.parent)


def replace_file(source: Path, target: Path) -> None:
    """Move a finished temporary file over its target (a download): atomic, the target replaced."""
    os.replace(source, target)
    _sync_folder(target.parent)


def rename_file(source: Path, target: Path) -> None:
    """Rename a file or folder, never over an existing name: the check and the rename are one call of the OS, so a
    file written there meanwhile is never lost (FileExistsError instead). On Windows `os.rename` is MoveFileExW
    without MOVEFILE_REPLACE_EXISTING; on Linux renameat2(RENAME_NOREPLACE); elsewhere a hard link, then unlink."""
    if os.name == "nt":
        os.rename(source, target)
    else:
        _rename_no_replace(source, target)
    _sync_folder(target.parent)


AT_FDCWD, RENAME_NOREPLACE = -100, 1


def _rename_no_replace(source: Path, target: Path) -> None:
    import ctypes
    import errno

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        renameat2 = None
    if renameat2 is not None:
        if renameat2(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(target), RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: a file system without the flag
            raise FileExistsError(code, os.strerror(code), str(target)) if code == errno.EEXIST else OSError(
                code, os.strerror(code), str(source))
    if os.path.isdir(source):  # no link for folders: the OS refuses a non-empty target itself
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
        os.rename(source, target)
        return
    os.link(source, target)  # EEXIST when the name is taken
    os.unlink(source)


GENERIC_READ, OPEN_EXISTING = 0x80000000, 3
FILE_SHARE_READ, FILE_SHARE_ALL = 0x1, 0x7  # ALL: read, write and delete
FILE_ATTRIBUTE_NORMAL, FILE_FLAG_BACKUP_SEMANTICS = 0x80, 0x02000000  # BACKUP_SEMANTICS: folders open too


def open_for_reading(path: str, share: int, flags: int = FILE_ATTRIBUTE_NORMAL):
    """(kernel32, a handle of the Windows path `path` opened for reading, letting others share `share`), Windows
    only; the caller closes the handle with that kernel32's CloseHandle. OSError with Windows' own error
    (`winerror`) when it cannot be opened."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.CreateFileW.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p,
                                     wintypes.DWORD, wintypes.DWORD, wintypes.HANDLE]
    kernel32.CreateFileW.restype = wintypes.HANDLE
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    kernel32.CloseHandle.restype = wintypes.BOOL
    handle = kernel32.CreateFileW(str(path), GENERIC_READ, share, None, OPEN_EXISTING, flags, None)
    if handle is None or handle == wintypes.HANDLE(-1).value:
        raise ctypes.WinError(ctypes.get_last_error())
    return kernel32, handle


def windows_error_of(path: str) -> Optional[int]:
    """The Windows error an open of `path` meets now (ERROR_VIRUS_INFECTED 225, a sharing violation 32, ...), or
    None when it opens or this is not Windows. Python's open() goes through the C runtime, which turns most
    Windows errors into errno 22 and keeps no Windows code: this asks Windows itself, on a failure's path only."""
    if os.name != "nt":
        return None
    try:
        kernel32, handle = open_for_reading(path, FILE_SHARE_ALL, FILE_FLAG_BACKUP_SEMANTICS)
    except OSError as exc:
        return getattr(exc, "winerror", None) or None
    kernel32.CloseHandle(handle)
    return None
