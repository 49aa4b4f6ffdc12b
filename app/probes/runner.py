"""Run the probes: concurrently, within a time budget, cancellable, reporting progress.

A probe that fails becomes an `info` finding saying what could not be checked; it never ends the
diagnosis. Probes that need to run programs are skipped on offline images, with an `info` finding.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from app.core.cancel import Cancelled, CancelToken, check
from app.core.environment import PythonEnvironment
from app.core.findings import INFO, Finding
from app.core.graph import DependencyGraph, PECache
from app.core.machine import MachineFacts, read_machine
from app.probes import ALL_PROBES
from app.probes.base import MACHINE, Probe, ProbeContext
from app.system.base import System

STARTED, DONE, FAILED = "started", "done", "failed"
SKIPPED_REASON = {"en": "Programs cannot be started inside a copied Windows drive, so PyTorch was not started.",
                  "zh_CN": "在复制出来的 Windows 磁盘里无法运行程序，所以没有启动 PyTorch。"}


@dataclass(frozen=True)
class ProbeEvent:
    probe: Probe
    environment: Optional[str]  # python.exe, or None for machine-wide probes
    state: str  # STARTED, DONE, FAILED
    done: int
    total: int


@dataclass
class Diagnosis:
    machine: MachineFacts
    environments: list[PythonEnvironment]
    findings: list[Finding] = field(default_factory=list)
    graphs: dict[str, DependencyGraph] = field(default_factory=dict)  # python.exe -> torch\lib graph
    elapsed_s: float = 0.0
    complete: bool = True

    @property
    def blockers(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "blocker"]


def run_diagnosis(system: System, environments: Iterable[PythonEnvironment], *, probes: Iterable[Probe] = ALL_PROBES,
                  live: Optional[bool] = None, budget_s: float = 180.0, workers: int = 4,
                  cancel: Optional[CancelToken] = None, on_event: Callable[[ProbeEvent], None] = lambda e: None,
                  machine: Optional[MachineFacts] = None) -> Diagnosis:
    """Diagnose the machine and each environment. `live`: whether programs can run (default: ask the system)."""
    started = time.monotonic()
    cancel = cancel or CancelToken()
    machine = machine or read_machine(system)
    envs = list(environments)
    diagnosis = Diagnosis(machine, envs)
    cache = PECache()
    live = system.can_run_programs if live is None else live
    contexts = {id(env): ProbeContext(system, machine, env, cancel, cache) for env in envs if env.torch}
    machine_context = ProbeContext(system, machine, None, cancel, cache)
    jobs: list[tuple[Probe, ProbeContext]] = []
    for probe in probes:
        targets = [machine_context] if probe.scope == MACHINE else list(contexts.values())
        for ctx in targets:
            if probe.needs_live and not live:
                diagnosis.findings.append(ctx.finding("check-skipped", INFO, {
                    "check": probe.name, "probe": probe.id, "reason": SKIPPED_REASON}))
            else:
                jobs.append((probe, ctx))
    total = len(jobs)
    done = 0
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="probe")
    try:
        pending: dict[Future, tuple[Probe, ProbeContext]] = {}
        for probe, ctx in jobs:
            on_event(ProbeEvent(probe, ctx.python, STARTED, done, total))
            pending[pool.submit(_collect, probe, ctx)] = (probe, ctx)
        while pending:
            check(cancel)
            remaining = budget_s - (time.monotonic() - started)
            if remaining <= 0:
                break
            finished, _ = wait(pending, timeout=min(remaining, 0.5), return_when=FIRST_COMPLETED)
            for future in finished:
                probe, ctx = pending.pop(future)
                done += 1
                error = future.exception()
                if isinstance(error, Cancelled):
                    raise error
                if error is None:
                    diagnosis.findings.extend(future.result())
                else:
                    diagnosis.findings.append(_failed(probe, ctx, f"{error.__class__.__name__}: {error}"))
                on_event(ProbeEvent(probe, ctx.python, DONE if error is None else FAILED, done, total))
        for future, (probe, ctx) in pending.items():  # out of time
            future.cancel()
            diagnosis.complete = False
            diagnosis.findings.append(_failed(probe, ctx, f"did not finish within {budget_s:.0f} s"))
        if pending:
            cancel.cancel()  # tell the stragglers to stop; they are abandoned, never waited for
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for ctx in contexts.values():
        if ctx._graph is not None:
            diagnosis.graphs[ctx.python or ""] = ctx._graph
    diagnosis.findings.sort(key=lambda f: f.sort_key)
    diagnosis.elapsed_s = time.monotonic() - started
    return diagnosis


def _collect(probe: Probe, ctx: ProbeContext) -> list[Finding]:
    return list(probe.run(ctx))


def _failed(probe: Probe, ctx: ProbeContext, error: str) -> Finding:
    return ctx.finding("check-failed", INFO, {"check": probe.name, "probe": probe.id, "error": error})


