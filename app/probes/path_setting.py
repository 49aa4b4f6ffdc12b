"""The PATH setting: folders that do not exist, and folders listed twice."""

from __future__ import annotations

import ntpath
from typing import Iterator

from app.probes.base import MACHINE, Probe, ProbeContext
from app.probes.finding import INFO, Finding


def _key(entry: str) -> str:
    return ntpath.normcase(ntpath.normpath(entry)).rstrip("\\")


def run(ctx: ProbeContext) -> Iterator[Finding]:
    """`remove-path-entry` edits the user's own PATH only: it is named where the user's PATH holds the entry (for
    a duplicate: holds it twice); the computer's PATH is left to the user (harmless, and it needs an administrator)."""
    counts: dict[str, list[str]] = {}
    for entry in ctx.machine.path_effective:
        counts.setdefault(_key(entry), []).append(entry)
    users = [_key(entry) for entry in ctx.machine.path_user]
    for key, spellings in counts.items():
        entry = spellings[0]
        host = ctx.system.host_path(entry)
        if host is not None and not host.is_dir():  # None: a drive this image does not hold
            yield ctx.finding("path-dead-entry", INFO, {"entry": entry},
                              ["remove-path-entry"] if key in users else [])
        if len(spellings) > 1:
            yield ctx.finding("path-duplicate-entry", INFO, {"entry": entry, "count": len(spellings)},
                              ["remove-path-entry"] if users.count(key) > 1 else [])


PROBE = Probe("path", MACHINE, run)
