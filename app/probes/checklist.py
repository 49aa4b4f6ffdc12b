"""The checklist of a diagnosis, with no threads: which checks run and in what order, the ones an offline computer
skips, and when a diagnosis is complete. The runner (app/probes/runner.py) only schedules what this decides."""

from __future__ import annotations

from typing import Iterable

from app.probes.base import MACHINE, Probe, ProbeContext
from app.probes.causes import reconcile
from app.probes.finding import INFO, Finding
from app.probes.python_loading import SEEN_LIVE_ONLY

CHECK_FAILED = "check-failed"
# findings that mean a check could not see what it checks: the diagnosis is then incomplete and never "all clear"
BLIND = frozenset({CHECK_FAILED, "torch-loaded-elsewhere"})
REPLAYED = frozenset({"import-ok", "import-failed"})
DEMO_SKIPPED_REASON = {"en": "The demo computer is made of small stand-in files and cannot start programs, so "
                              "PyTorch was not started.",
                       "zh_CN": "演示电脑由小的替身文件组成，无法运行程序，所以没有启动 PyTorch。"}
SKIPPED_REASON = {"en": "Programs cannot be started inside a copied Windows drive, so PyTorch was not started.",
                  "zh_CN": "在复制出来的 Windows 磁盘里无法运行程序，所以没有启动 PyTorch。"}


def ordered(probes: Iterable[Probe], machine: ProbeContext,
            environments: list[ProbeContext]) -> list[tuple[Probe, ProbeContext]]:
    """Environment by environment, the machine's checks in their place among the first environment's (the
    checklist's order): the folders an environment's checks list are kept only while they run."""
    probes = list(probes)
    checks = []
    for number, env in enumerate(environments or [None]):
        for probe in probes:
            if probe.scope == MACHINE and number == 0:
                checks.append((probe, machine))
            elif probe.scope != MACHINE and env is not None:
                checks.append((probe, env))
    return checks


def runnable(checks: list[tuple[Probe, ProbeContext]], live: bool,
             demo: bool) -> tuple[list[tuple[Probe, ProbeContext]], list[Finding]]:
    """(the checks to run, a finding for each one skipped): a check that starts a program is skipped where no
    program can run (a copied drive, the demo computer), and says so."""
    jobs, skipped = [], []
    for probe, ctx in checks:
        if probe.needs_live and not live:
            skipped.append(ctx.finding("check-skipped", INFO, {
                "check": probe.name, "probe": probe.id, "reason": DEMO_SKIPPED_REASON if demo else SKIPPED_REASON}))
        else:
            jobs.append((probe, ctx))
    return jobs, skipped


def failed(probe: Probe, ctx: ProbeContext, error: str) -> Finding:
    """A check that could not finish: what could not be checked, and why."""
    return ctx.finding(CHECK_FAILED, INFO, {"check": probe.name, "probe": probe.id, "error": error})


def sees_everything(findings: Iterable[Finding]) -> bool:
    """Whether a check's findings say it saw what it checks."""
    return not any(f.code in BLIND for f in findings)


def complete(findings: list[Finding], every_check_ended: bool) -> bool:
    """A diagnosis is complete when every check ended and saw what it checks, and what only the live check sees
    (code run at every start, a Store Python's unread folder) was seen by it in that environment."""
    replayed = {f.environment for f in findings if f.code in REPLAYED}
    seen_live = not any(f.code in SEEN_LIVE_ONLY and f.environment not in replayed for f in findings)
    return every_check_ended and sees_everything(findings) and seen_live


def settle(findings: list[Finding]) -> None:
    """The findings as a report reads them: each cause's evidence reconciled, then in the checklist's order."""
    reconcile(findings)
    findings.sort(key=lambda f: f.sort_key)

