"""The PATH setting: folders that do not exist, and folders listed twice."""

from __future__ import annotations

import ntpath
from typing import Iterator

from app.probes.base import MACHINE, Probe, ProbeContext
from app.probes.finding import INFO, Finding


def run(ctx: ProbeContext) -> Iterator[Finding]:
    counts: dict[str, list[str]] = {}
    for entry in ctx.machine.path_effective:
        counts.setdefault(ntpath.normcase(ntpath.normpath(entry)).rstrip("\\"), []).append(entry)
    for spellings in counts.values():
        entry = spellings[0]
        host = ctx.system.host_path(entry)
        if host is not None and not host.is_dir():  # None: a drive this image does not hold
            yield ctx.finding("path-dead-entry", INFO, {"entry": entry}, ["remove-path-entry"])
        if len(spellings) > 1:
            yield ctx.finding("path-duplicate-entry", INFO, {"entry": entry, "count": len(spellings)},
                              ["remove-path-entry"])


PROBE = Probe("path", MACHINE, run)
