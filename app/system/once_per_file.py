"""What is made of a file (a parse, a search, a hash), kept by the file's identity: its device, file number, size
and modification time. The environments uv makes share their files through hard links, so sixteen of them ask the
same of one file, and pay a stat each time after the first. A file written again is read again; one that changed
while it was read, or has no file number (some network drives), is not kept.

Kept by content too, where that is cheaper than the making: environments installed one by one (pip) hold copies
of one torch, each its own RECORD of a megabyte, whose parse costs twenty times hashing it. Never by a sample of a
file's bytes: two files alike in size, head and tail (damage in the middle of a table) are two files.

After the app changed files or settings (a repair, an undo, a rollback), nothing made before is taken again
(`forget_every_file`): not even for a file whose identity came back (a file number reused, a time put back)."""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Callable, Generic, Hashable, TypeVar

from app.system.files import sha256_of

T = TypeVar("T")

_KEEPERS: weakref.WeakSet = weakref.WeakSet()  # every keeper of what was made of files: each has `forget()`


def keeps_what_files_gave(keeper: object) -> None:
    """Register a keeper of what was made of files (it has `forget()`), so that `forget_every_file` reaches it."""
    _KEEPERS.add(keeper)


def forget_every_file() -> None:
    """The app changed files or settings: every keeper drops what it made before, and a making under way then is
    not kept."""
    for keeper in list(_KEEPERS):
        keeper.forget()


class OncePerFile(Generic[T]):
    """Up to `limit` answers, the oldest dropped first; with `by_content`, a copy of a file already answered is
    answered for the price of hashing it."""

    def __init__(self, limit: int, by_content: bool = True) -> None:
        self.limit, self.by_content = limit, by_content
        self._kept: dict[tuple, T] = {}
        self._lock = threading.Lock()
        self._forgotten = 0  # how many times `forget` was called: a making begun before one is not kept
        keeps_what_files_gave(self)

    def forget(self) -> None:
        with self._lock:
            self._kept.clear()
            self._forgotten += 1

    def get(self, path: Path, make: Callable[[Path], T], *asked: Hashable) -> T:
        """`make(path)`, once per identity of the file (and per content, with `by_content`) and `asked` (what else
        the answer depends on). OSError as reading the file raises it."""
        before = os.stat(path)
        key = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, *asked)
        with self._lock:
            forgotten = self._forgotten
            found = self._kept.get(key)
        if found is not None:
            return found
        same = (before.st_size, sha256_of(path), *asked) if self.by_content else None
        with self._lock:
            found = self._kept.get(same) if same is not None else None
        value = found if found is not None else make(path)
        after = os.stat(path)
        if before.st_ino and (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns):
            with self._lock:  # unchanged while it was read: the hash and the making saw the same bytes
                kept_now = forgotten == self._forgotten  # no change by the app since the reading began
                for kept in ((key, same) if same is not None else (key,)) if kept_now else ():
                    while len(self._kept) >= self.limit:
                        self._kept.pop(next(iter(self._kept)))
                    self._kept[kept] = value
        return value
