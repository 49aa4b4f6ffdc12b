"""JSON from the computer (a launcher's settings, a copied drive's registry.json, conda's records, a package's own
file) read within limits: a size, and a depth of nesting. Python's parser recurses once per level, so a file nested
100,000 deep would end in RecursionError; here it is a plain :class:`JsonNotRead` (a ValueError) that the caller
passes over with a note, as it does a damaged file.

The depth is measured before parsing, in one pass over the text: strings are skipped whole (an unclosed one runs to
the end), and the brackets left are counted."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path

MAX_DEPTH = 64  # settings files nest a few levels; a depth of hundreds is a damaged or hostile file
MAX_BYTES = 16 << 20  # the largest file read: a conda record of a big package is a few MB

# A string (to its closing quote, or to the end when it has none), or one bracket: each match is final, so the
# scan never goes over a character twice.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonNotRead(ValueError):
    """A JSON text too big or too deeply nested to be read; its message says which."""


def depth_of(text: str) -> int:
    """How deeply a JSON text's arrays and objects nest (0 for a plain value)."""
    return max(accumulate((_STEP.get(m.group(), 0) for m in _STRING_OR_BRACKET.finditer(text)), initial=0))


def loads(text: str, *, max_depth: int = MAX_DEPTH) -> object:
    """json.loads within a depth; JsonNotRead when deeper, ValueError when it is not JSON."""
    depth = depth_of(text)
    if depth > max_depth:
        raise JsonNotRead(f"nested {depth} levels deep; more than {max_depth} is not read")
    return json.loads(text)


def read_json(path: Path, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
              encoding: str = "utf-8-sig", errors: str = "strict") -> object:
    """A JSON file from the computer; OSError when it cannot be read, JsonNotRead when it is bigger than `max_bytes`
    or deeper than `max_depth`, ValueError when it is not JSON (a wrong encoding is one too)."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise JsonNotRead(f"larger than {_megabytes(max_bytes)}; a bigger file is not read")
    return loads(data.decode(encoding, errors), max_depth=max_depth)


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):g} MB"

