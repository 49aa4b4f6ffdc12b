"""What is made of a file (a parse, a search, a hash), kept by the file's identity: its device, file number, size
and modification time. The environments uv makes share their files through hard links, so sixteen of them ask the
same of one file, and pay a stat each time after the first. A file written again is read again; one that changed
while it was read, or has no file number (some network drives), is not kept."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class OncePerFile(Generic[T]):
    """Up to `limit` answers, the oldest dropped first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[tuple, T] = {}
        self._lock = threading.Lock()

    def get(self, path: Path, make: Callable[[Path], T], *asked: Hashable) -> T:
        """`make(path)`, once per identity of the file and `asked` (what else the answer depends on). OSError as
        the stat or `make` raise it."""
        before = os.stat(path)
        key = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, *asked)
        with self._lock:
            found = self._kept.get(key)
        if found is not None:
            return found
        value = make(path)
        after = os.stat(path)
        if before.st_ino and (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns):
            with self._lock:
                while len(self._kept) >= self.limit:
                    self._kept.pop(next(iter(self._kept)))
                self._kept[key] = value
        return value
