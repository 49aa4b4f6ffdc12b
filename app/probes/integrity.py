"""torch's files against its install record: quarantined or half-installed files."""

from __future__ import annotations

from typing import Iterator

from app.inventory.integrity import check_torch_files
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding


def run(ctx: ProbeContext) -> Iterator[Finding]:
    if ctx.env is None or ctx.env.torch is None:
        return
    report = check_torch_files(ctx.env, cancel=ctx.cancel)
    if report.record is None:
        return  # installed without pip's record (e.g. conda): nothing to compare with
    changed = report.missing + report.size_changed + report.hash_changed
    if not changed:
        return
    loads = any(name.lower().endswith((".dll", ".pyd")) for name in changed)
    yield ctx.finding("torch-files-missing", BLOCKER if loads else WARNING, {
        "files": [name.rsplit("/", 1)[-1] for name in changed], "count": len(changed), "missing": report.missing,
        "size_changed": report.size_changed, "record": ctx.display(report.record),
        "folder": ctx.display(ctx.env.torch.folder)}, ["restore-torch-files"])


PROBE = Probe("integrity", ENVIRONMENT, run)
