"""torch's files against its install record: quarantined or half-installed files, and an install that pip cut short
at Windows' path limit (long paths off: no file whose path reaches 260 characters can be created)."""

from __future__ import annotations

from typing import Iterator

from app.inventory.integrity import check_torch_files
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding

MAX_PATH = 260  # a path of 260 characters or more cannot be created while LongPathsEnabled is 0
LOADS = (".dll", ".pyd", ".py")  # a file `import torch` reads: without it the import, or a part of torch, fails
SHOWN_FILES = 40  # the evidence names this many files; `count` says how many there are


def run(ctx: ProbeContext) -> Iterator[Finding]:
    if ctx.env is None or ctx.env.torch is None:
        return
    report = check_torch_files(ctx.env, cancel=ctx.cancel, shown_site=ctx.display(ctx.env.site_packages),
                               seen=ctx.seen, listings=ctx.listings)
    if report.record is None:  # installed without pip's record (conda, a copied folder): nothing to compare with,
        init = ctx.env.torch.folder / "__init__.py"  # but without its __init__.py torch cannot be PyTorch at all
        if not init.is_file():
            yield ctx.finding("torch-files-missing", BLOCKER, {
                "files": ["__init__.py"], "count": 1, "missing": ["torch/__init__.py"], "missing_count": 1,
                "folder": ctx.display(ctx.env.torch.folder), "init_missing": True, "record": None},
                ["start-fresh"], variant="no-record")
        else:  # nothing else could be compared: not "all clear" (the diagnosis is incomplete)
            yield ctx.finding("check-failed", INFO, {
                "check": PROBE.name, "probe": PROBE.id, "error": "no install record (RECORD)",
                "folder": ctx.display(ctx.env.torch.folder), "version": ctx.env.torch.version},
                variant="record-missing")
        return
    if report.problem:  # the record is there but cannot be read (denied, damaged): the files were not compared
        yield ctx.finding("check-failed", INFO, {
            "check": PROBE.name, "probe": PROBE.id, "error": report.problem, "record": ctx.display(report.record),
            "version": ctx.env.torch.version}, variant="record-unreadable")
        return
    changed = report.missing + report.size_changed + report.hash_changed
    if not changed:
        return
    loads = any(name.lower().endswith(LOADS) for name in changed)
    at_limit = report.longest_missing >= MAX_PATH and ctx.machine.long_paths_enabled is not True
    repairs = ["enable-long-paths", "restore-torch-files"] if at_limit else ["restore-torch-files"]
    init_missing = "torch/__init__.py" in {name.lower() for name in report.missing}
    yield ctx.finding("torch-files-missing", BLOCKER if loads else WARNING, {
        "files": _shown(changed), "count": len(changed),
        "missing": report.missing[:SHOWN_FILES], "missing_count": len(report.missing),
        "size_changed": report.size_changed[:SHOWN_FILES], "record": ctx.display(report.record),
        "checked": report.checked, "folder": ctx.display(ctx.env.torch.folder), "init_missing": init_missing,
        "longest_path": report.longest_missing, "long_paths_enabled": ctx.machine.long_paths_enabled},
        repairs, variant="path-limit" if at_limit else None)


def _shown(changed: list[str]) -> list[str]:
    """The names of every DLL and extension module among them (other findings are grouped by these), then the
    first others."""
    names = [name.rsplit("/", 1)[-1] for name in changed]
    loading = [n for n in names if n.lower().endswith((".dll", ".pyd"))]
    return loading + [n for n in names if not n.lower().endswith((".dll", ".pyd"))][:SHOWN_FILES]


PROBE = Probe("integrity", ENVIRONMENT, run)
