"""Case-insensitive lookups in real folders, as Windows does them (`KERNEL32.dll` is `kernel32.dll`)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator, Optional

_listings: ContextVar[Optional[dict[str, list[str]]]] = ContextVar("listings", default=None)


@contextmanager
def one_look() -> Iterator[None]:
    """Inside it, each folder is listed once: for a reader that takes in one moment of a folder tree (an
    environment's description asks for the same few folders twenty times)."""
    token = _listings.set({})
    try:
        yield
    finally:
        _listings.reset(token)


class Listings:
    """Each folder's entries (`os.scandir`) by lower-case name, as Windows looks a name up, listed once for every
    reader that asks while they are kept: the checks of one environment each walk its site-packages (the install
    record's files, the runtime copies), 11,000 entries for one torch. Of two names that differ only in case (a
    copy made on Linux; Windows holds one), the first in sorted order, as `child` takes it. An error is raised
    again at the next ask, never remembered. Dropped (`clear`) once the readers are done: a torch's listing holds
    about 4 MB."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[str, os.DirEntry]] = {}
        self._twins: dict[str, list[os.DirEntry]] = {}  # by folder: the entries `named` left out

    def named(self, folder: str) -> dict[str, os.DirEntry]:
        """{lower-case name: entry}, in the order the file system gives them; OSError (and ValueError for a NUL in
        the path) as `os.scandir` raises them."""
        found = self._kept.get(folder)
        if found is None:
            with os.scandir(folder) as listing:
                entries = list(listing)
            found = {e.name.lower(): e for e in entries}
            if len(found) < len(entries):
                found = {e.name.lower(): e for e in sorted(entries, key=lambda e: e.name, reverse=True)}
                self._twins[folder] = [e for e in entries if found[e.name.lower()] is not e]
            self._kept[folder] = found
        return found

    def twins(self, folder: str) -> list[os.DirEntry]:
        """The entries of a listed folder that `named` left out: names that differ from one it holds only in case
        (a folder made case-sensitive, a copy made on Linux). A search for every file of a kind reads them too."""
        return self._twins.get(folder, [])

    def clear(self) -> None:
        self._kept.clear()
        self._twins.clear()

    def __len__(self) -> int:
        """How many folders' entries are kept."""
        return len(self._kept)


def _names(folder: Path) -> list[str]:
    memo = _listings.get()
    if memo is None:
        return os.listdir(folder)
    key = str(folder)
    names = memo.get(key)
    if names is None:
        names = memo[key] = os.listdir(folder)  # an error is raised again at the next ask, never remembered
    return names


def names(folder: Optional[Path]) -> list[str]:
    """The names of the folder's entries, in the order the file system gives them; [] when it is missing or
    unreadable."""
    try:
        return list(_names(folder)) if folder else []
    except (OSError, ValueError):
        return []


def children(folder: Optional[Path]) -> list[Path]:
    """The folder's entries, sorted; [] when it is missing or unreadable."""
    try:
        return sorted(folder / name for name in _names(folder)) if folder else []
    except (OSError, ValueError):  # ValueError: a NUL character in a damaged image's path
        return []


def child(folder: Optional[Path], name: str) -> Optional[Path]:
    """The entry named `name` in any case; of two that differ only in case (a copy made on Linux), the first in
    sorted order, as `children` lists them."""
    if not folder:
        return None
    lower = name.lower()
    try:
        matches = [n for n in _names(folder) if n.lower() == lower]  # names only: no Path for each entry
    except (OSError, ValueError):
        return None
    return folder / min(matches) if matches else None


def descend(folder: Optional[Path], *names: str) -> Optional[Path]:
    """folder / names..., matching each part without regard to case; None when a part is missing."""
    current = folder
    for name in names:
        current = child(current, name)
        if current is None:
            return None
    return current
