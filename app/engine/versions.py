"""Version numbers as Windows and PyTorch write them ("14.44.35211.0", "2.4.0+cu121"), stdlib only:
the diagnosis also runs inside the user's own Python, which may have no `packaging`."""

from __future__ import annotations

import re
from typing import Optional


def version_tuple(version: Optional[str]) -> tuple[int, ...]:
    """"2.4.0+cu121" -> (2, 4, 0); "v14.44.35211.00" -> (14, 44, 35211, 0); None or junk -> ()."""
    if not version:
        return ()
    release = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(x) for x in release.group(1).split(".")) if release else ()


def matches(version: Optional[str], spec: str) -> bool:
    """Whether `version` satisfies every comma-separated clause of `spec` (==, !=, >=, <=, >, <)."""
    have = version_tuple(version)
    if not have:
        return False
    for clause in spec.split(","):
        match = re.fullmatch(r"\s*(==|!=|>=|<=|>|<)\s*([\d.]+)\s*", clause)
        if not match:
            raise ValueError(f"bad version clause: {clause!r}")
        op, want = match.group(1), version_tuple(match.group(2))
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        if not {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]:
            return False
    return True
