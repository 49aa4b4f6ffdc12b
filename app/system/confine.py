"""The one confinement rule for paths read from a file that a user or a package can write: a RECORD row, a conda
record's `files`, a `.pth` line, a launcher's settings, pyvenv.cfg's `home`, the journal. A relative path stays
inside the folder it is relative to; an absolute one is a whole Windows path. What breaks the rule is passed over
by the reader, never looked up, written or removed (tests/unit/test_confine.py lists every reader)."""

from __future__ import annotations

import ntpath
import os
import re
from pathlib import Path
from typing import Optional

MAX_PATH_CHARS = 32_767  # the longest path Windows' file calls take (with the \\?\ prefix)
_SEPARATORS = re.compile(r"[\\/]")
_ROOTED = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2}[^\\/])")  # C:\… or \\server\share


def _well_formed(text: str) -> bool:
    """No NUL, no lone surrogate (a JSON escape can hold one), and no longer than Windows takes."""
    if not text or len(text) > MAX_PATH_CHARS or "\0" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parts(text: str) -> Optional[list[str]]:
    """The parts of a relative path (with / or \\ between them), `..` among them; None for a rooted one, a drive or
    any colon (a drive, a stream), an empty or `.` part, a NUL or a lone surrogate."""
    if not _well_formed(text) or ":" in text:
        return None
    parts = _SEPARATORS.split(text)
    return None if any(part in ("", ".") for part in parts) else parts


def relative_parts(text: str) -> Optional[list[str]]:
    """The parts of a path that must stay inside the folder it is relative to (`torch/lib/c10.dll`); None when it
    could leave it or name something else: `_parts`' refusals, and any `..` part."""
    parts = _parts(text)
    return None if parts is None or ".." in parts else parts


def inside(base: Path, text: str, within: Optional[Path] = None) -> Optional[Path]:
    """`text` joined to `base`, its `..` steps taken as Windows takes them, when the result stays inside `within`
    (by default `base` itself: pip's RECORD reaches an environment's `Scripts` and `Library\\bin` from
    site-packages with `../../`, never further); None otherwise."""
    parts = _parts(text)
    limit = within if within is not None else base
    if parts is None or not base.is_relative_to(limit):
        return None
    stack = list(base.relative_to(limit).parts)
    for part in parts:
        if part != "..":
            stack.append(part)
        elif not stack:
            return None
        else:
            stack.pop()
    return limit.joinpath(*stack) if stack else None


def windows_absolute(text: str) -> Optional[str]:
    """A whole Windows path (`C:\\…` or `\\\\server\\share\\…`), normalised (`..` taken out as Windows does);
    None for a relative one (it would be taken from wherever this program runs), a NUL, a lone surrogate, or one
    longer than Windows takes."""
    text = text.strip()
    if not _well_formed(text) or not _ROOTED.match(text):
        return None
    return ntpath.normpath(text)


def is_whole_windows_path(text: str) -> bool:
    """`C:\\…` or `\\\\server\\share\\…`: a path no current folder changes (System.host_path takes no other)."""
    return _ROOTED.match(text) is not None


def host_absolute(text: str) -> Optional[Path]:
    """A path this program wrote into its own journal (a host path): whole, with no `.` or `..` part, and well
    formed; None otherwise (a damaged or hand-edited journal)."""
    if not _well_formed(text) or not os.path.isabs(text):
        return None
    if any(part in (".", "..") for part in _SEPARATORS.split(text)):
        return None
    return Path(text)
