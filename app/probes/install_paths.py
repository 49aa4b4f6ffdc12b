"""Install paths: near the 260-character limit with long paths off, or with non-English characters."""

from __future__ import annotations

import contextlib
import csv
from typing import Iterator

from app.inventory.integrity import find_record, read_record
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import INFO, WARNING, Finding

MAX_PATH = 260
MARGIN = 30  # an update writes temporary names longer than the installed ones


def run(ctx: ProbeContext) -> Iterator[Finding]:
    env = ctx.env
    if env is None or env.torch is None:
        return
    torch_path = ctx.display(env.torch.folder) or ""
    site = ctx.display(env.site_packages) or torch_path
    longest = len(torch_path) + 40
    record = find_record(env)
    if record is not None:
        with contextlib.suppress(OSError, ValueError, csv.Error):
            longest = max([len(site) + 1 + len(e.path) for e in read_record(record, prefix="torch/")] or [longest])
    if ctx.machine.long_paths_enabled is not True and longest >= MAX_PATH - MARGIN:
        yield ctx.finding("long-paths-disabled", WARNING, {"path": torch_path, "length": longest,
                                                           "long_paths_enabled": ctx.machine.long_paths_enabled},
                          ["enable-long-paths"])
    prefix = ctx.display(env.exec_prefix) or ""
    if not prefix.isascii() or not torch_path.isascii():
        yield ctx.finding("non-ascii-path", WARNING if not torch_path.isascii() else INFO, {"path": prefix})


PROBE = Probe("install-paths", ENVIRONMENT, run)
