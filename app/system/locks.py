"""Locks that die with their process: an open file with an OS lock on it, held for as long as the work runs.

A repair holds one on its transaction for its whole life, so a live repair is never taken for a crashed one: when
its process ends, for whatever reason (a kill, a crash, a power cut), the OS lets go of the lock, and the next
start sees an unfinished transaction nobody holds. Beside the lock file, `owner.json` says who holds it (process,
program, since when), for the words shown to a second window.

POSIX: flock on the file (per open file, so a second open in the same process is refused too). Windows:
msvcrt.locking on its first byte (per handle, likewise).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

from app.system.files import write_bytes
from app.system.user_json import read_json

PROBE_RETRIES = 5


class LockHeld(Exception):
    """Another process (or another part of this one) holds the lock: `owner` says who, where it is known."""

    def __init__(self, path: Path, owner: dict) -> None:
        super().__init__(f"{path} is held by {owner.get('program') or '?'} (process {owner.get('pid') or '?'})")
        self.path, self.owner = path, owner


def _try_lock(fd: int) -> bool:
    if os.name == "nt":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _unlock(fd: int) -> None:
    if os.name == "nt":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def _owner_file(path: Path) -> Path:
    return path.with_name(path.name + ".owner.json")


def read_owner(path: Path) -> dict:
    try:
        owner = read_json(_owner_file(path), encoding="utf-8")
    except (OSError, ValueError):  # JsonNotRead (too big or deep) is a ValueError
        return {}
    return owner if isinstance(owner, dict) else {}


class ProcessLock:
    """`with ProcessLock(path):` or acquire()/release(). Not re-entrant: a second ProcessLock on the same path is
    refused even in the same process."""

    def __init__(self, path: Path, purpose: str = "") -> None:
        self.path = path
        self.purpose = purpose
        self._fd: Optional[int] = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> ProcessLock:
        """Take the lock now or raise LockHeld; never waits."""
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        for attempt in range(PROBE_RETRIES):  # is_held() of another process takes the lock for an instant
            if _try_lock(fd):
                break
            if attempt + 1 == PROBE_RETRIES:
                os.close(fd)
                raise LockHeld(self.path, read_owner(self.path))
            time.sleep(0.02)
        self._fd = fd
        owner = {"pid": os.getpid(), "program": os.path.basename(sys.executable), "purpose": self.purpose,
                 "since": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        with contextlib.suppress(OSError):  # only words for a second window: the lock itself is what counts
            write_bytes(_owner_file(self.path), json.dumps(owner).encode("utf-8"))
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> ProcessLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_held(path: Path) -> bool:
    """True when some process holds the lock at `path` right now (this call takes and drops it otherwise)."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return False
    try:
        if not _try_lock(fd):
            return True
        _unlock(fd)
        return False
    finally:
        os.close(fd)
