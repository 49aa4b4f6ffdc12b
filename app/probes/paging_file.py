"""The paging file: can Windows commit the DLLs a CUDA build of torch maps at import (WinError 1455)?

torch's import loads every `torch\\lib\\*.dll`. Windows charges the commit (RAM plus paging files) for a DLL's
writable pages when it maps it, and the CUDA libraries' large device-code sections are writable (hence the
community's fixNvPe.py, which clears that flag), so a CUDA build's DLL sizes are what its import needs. When the
commit limit cannot reach that, the import fails with "The paging file is too small for this operation to complete".

What Windows can still commit is the commit limit minus the commit charge, where the limit can grow:
- a system-managed paging file grows into the drive's free space (so only a nearly full drive stops it);
- a custom size grows up to its maximum (RAM plus the maxima, when RAM is known);
- with no paging file, or with a setting changed since Windows started (it applies at the next start), only the
  limit measured now counts.

A blocker when even torch's DLLs do not fit; a warning when one process fits but a second does not (each data-loading
worker and each extra copy of a web UI maps the same DLLs again: the most reported way to reach 1455). Nothing when
the setting, the commit figures or (for a system-managed file) the free space are unknown, and nothing for CPU builds,
whose DLLs are small.
"""

from __future__ import annotations

from typing import Iterator, Optional

from app.i18n import LANGUAGES, words
from app.inventory.paging import CUSTOM, MB, NONE, SYSTEM_MANAGED, PagingFacts
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding

CODE = "paging-file-too-small"
REPAIR = "paging-file-system-managed"
LARGEST_SHOWN = 3
DISK_RESERVE = 1 << 30  # Windows stops growing a system-managed paging file about 1 GB short of a full drive


def run(ctx: ProbeContext) -> Iterator[Finding]:
    torch = ctx.env.torch if ctx.env else None
    paging = ctx.machine.paging
    if torch is None or not torch.cuda or paging is None:
        return
    if paging.kind is None and paging.setting is not None:  # there, but in no form Windows writes: not judged
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id,
                                                 "error": f"PagingFiles = {list(paging.setting)!r:.120}"},
                          variant="settings")
        return
    if paging.kind is None or paging.memory is None:
        return
    sizes = []
    for dll in ctx.torch_dlls():
        try:
            sizes.append((dll.stat().st_size, dll.name))
        except OSError:
            continue
    mapped = sum(size for size, _ in sizes)
    ceiling, variant = _ceiling(paging)
    if ceiling is None or not mapped:
        return
    room = max(0, ceiling - paging.memory.commit_total)
    if room >= 2 * mapped:
        return
    severity = BLOCKER if room < mapped else WARNING
    largest = [name for _, name in sorted(sizes, reverse=True)[:LARGEST_SHOWN]]
    yield ctx.finding(CODE, severity, _evidence(paging, mapped, room, largest),
                      [] if variant in ("restart", "disk") else [REPAIR],
                      variant=variant if severity == BLOCKER else "tight")


def _ceiling(paging: PagingFacts) -> tuple[Optional[int], str]:
    """How far the commit limit can reach before the next restart (None: cannot tell), and why it stops there."""
    memory = paging.memory
    assert memory is not None
    kind = paging.kind
    if paging.pending_restart:
        return memory.commit_limit, "restart" if kind == SYSTEM_MANAGED else str(kind)
    if kind == NONE:
        return memory.commit_limit, NONE
    files = paging.files or ()
    if kind == CUSTOM:
        if all(f.initial_mb == f.maximum_mb for f in files):
            return memory.commit_limit, CUSTOM  # initial = maximum: it never grows
        if memory.physical_total is None:
            return None, CUSTOM
        return max(memory.commit_limit, memory.physical_total + sum(f.maximum_mb or 0 for f in files) * MB), CUSTOM
    # system-managed: it grows into the free space of its drive; only a file on the system drive is measured here
    if paging.system_drive_space is None or any(f.system_managed and f.drive not in ("?:", paging.system_drive)
                                                for f in files):
        return None, "disk"
    return memory.commit_limit + max(0, paging.system_drive_space.free - DISK_RESERVE), "disk"


def _evidence(paging: PagingFacts, mapped: int, room: int, largest: list[str]) -> dict:
    memory = paging.memory
    assert memory is not None
    kind = paging.kind or NONE
    maximum = sum(f.maximum_mb or 0 for f in paging.files or () if not f.system_managed)
    space = paging.system_drive_space
    return {
        "setting": list(paging.setting or ()), "setting_words": {lang: words(f"paging.setting.{kind}", lang,
                                                                               maximum=megabytes(maximum * MB))
                                                                 for lang in LANGUAGES},
        "pending_restart": paging.pending_restart,
        "needed": megabytes(mapped), "twice": megabytes(2 * mapped), "room": megabytes(room),
        "limit": megabytes(memory.commit_limit), "used": megabytes(memory.commit_total),
        "maximum": megabytes(maximum * MB), "largest": largest, "drive": paging.system_drive,
        "free": megabytes(space.free) if space else None,
        "short": megabytes(max(0, mapped - room)),
        "bytes": {"mapped": mapped, "room": room, "commit_limit": memory.commit_limit,
                  "commit_total": memory.commit_total, "physical_total": memory.physical_total,
                  "free": space.free if space else None},
    }


def megabytes(count: int) -> str:
    """In the Virtual memory dialog's unit: `4,096 MB` (1 MB = 1,048,576 bytes)."""
    return f"{round(count / MB):,} MB"


PROBE = Probe("paging-file", ENVIRONMENT, run)
