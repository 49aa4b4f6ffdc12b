"""Installed distributions of an environment, read from their `*.dist-info` folders (never imported, never pip)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Optional

from app.system.folders import child, children


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions(site_packages: Optional[Path], names: Optional[Iterable[str]]) -> dict[str, str]:
    """{name: version} of those of `names` (None: every one, by its canonical name) installed in
    `site_packages`, from each dist-info's METADATA."""
    wanted = {canonical(n): n for n in names} if names is not None else None
    found: dict[str, str] = {}
    for folder in children(site_packages):
        if not folder.name.lower().endswith(".dist-info"):
            continue
        head = metadata_head(folder, 4000)
        name = re.search(r"^Name:\s*(\S+)", head, re.M)
        version = re.search(r"^Version:\s*(\S+)", head, re.M)
        key = canonical(name.group(1)) if name else ""
        if name and version and (wanted is None or key in wanted):
            found[wanted[key] if wanted is not None else key] = version.group(1)
    return found


def metadata_head(dist_info: Path, limit: int = 20000) -> str:
    """The start of a dist-info's METADATA (its headers), as text; "" when it cannot be read."""
    metadata = child(dist_info, "METADATA")
    try:
        return metadata.read_text(encoding="utf-8", errors="replace")[:limit] if metadata else ""
    except OSError:
        return ""
