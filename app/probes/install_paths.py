"""Install paths: near the 260-character limit with long paths off, or with non-English characters."""

from __future__ import annotations

import contextlib
import csv
from typing import Iterator

from app.inventory.integrity import find_record, longest_path
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
            found = longest_path(record, "torch/")
            longest = len(site) + 1 + found if found else longest
    if ctx.machine.long_paths_enabled is not True and longest >= MAX_PATH - MARGIN:
        yield ctx.finding("long-paths-disabled", WARNING, {"path": torch_path, "length": longest,
                                                           "long_paths_enabled": ctx.machine.long_paths_enabled},
                          ["enable-long-paths"])
    prefix = ctx.display(env.exec_prefix) or ""
    if not prefix.isascii() or not torch_path.isascii():
        path = prefix if not prefix.isascii() else torch_path
        where = non_ascii_part(path)
        yield ctx.finding("non-ascii-path", WARNING if not torch_path.isascii() else INFO,
                          {"path": path, **where}, variant="user-name" if where["user_name"] else None)


def non_ascii_part(path: str) -> dict:
    """Which part of a Windows path has the characters, told without them (reports hide user names, so the
    name itself may not show): the count of such characters, the number of the first folder name holding one
    (counted from the drive), the folder it is right under, and whether it is the user's own folder."""
    parts = [p for p in path.replace("/", "\\").split("\\") if p]
    position = next(i for i, part in enumerate(parts) if not part.isascii())
    under = "\\".join(parts[:position]) + ("\\" if position == 1 else "")
    return {"count": sum(1 for c in path if not c.isascii()), "position": position, "under": under,
            "user_name": position == 2 and parts[1].lower() == "users"}


PROBE = Probe("install-paths", ENVIRONMENT, run)
