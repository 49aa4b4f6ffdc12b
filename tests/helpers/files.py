"""SHA-256 of files, for byte-for-byte comparisons before and after a repair and its undo."""

from __future__ import annotations

import hashlib
from pathlib import Path


def hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file of a folder, by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def sha(path) -> str:
    """SHA-256 of one file, read in blocks of 1 MB (a whole torch wheel is 200 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
