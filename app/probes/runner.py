"""Run the probes: concurrently, within a time budget, cancellable, reporting progress.

A probe that fails or runs out of time becomes a `check-failed` finding saying what could not be checked, and
the diagnosis is then incomplete (`complete` is False, and the CLI never exits 0). Probes that need to run
programs are skipped on offline images, with an `info` finding. Cancelling (the caller's token) stops every
probe and its child processes, and returns only once the workers have ended; the time budget stops this
diagnosis's own probes and leaves the caller's token alone.
"""

from __future__ import annotations

import collections
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from app.cancel import Cancelled, CancelToken
from app.engine.graph import SHARED_CACHE, DependencyGraph
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import SeenFiles
from app.inventory.machine import MachineFacts, read_machine_facts
from app.probes.base import Probe, ProbeContext, Program
from app.probes.causes import Problem, group_by_cause
from app.probes.checklist import CHECK_FAILED, complete, failed, ordered, runnable, settle
from app.probes.every_probe import ALL_PROBES
from app.probes.finding import BLOCKER, INFO, Finding
from app.system.base import System

NO_WINDOWS, NO_TORCH = "no-windows", "no-torch"
STARTED, DONE, FAILED = "started", "done", "failed"
WORKER_STOP_S = 5.0  # how long a stopped diagnosis waits for its workers (each ends its child process first)
# Probes that work in this process share the interpreter's lock. Where a file call is cheap (Linux reading a copied
# drive), a second thread for them only queues for it, and a thread back from a file call waits its turn behind the
# other: a diagnose of 16 environments, median of five, took 0.54 s with one such thread, 0.60 s with two, 0.89 s
# with four, on two cores. Where a file call costs a trip to the system (Windows; measured under Wine), two overlap
# them: a diagnose of the lab's torch took 3.2 s with two, 3.9 s with one, 3.5 s with four. One more is started
# for the rest while a probe takes longer than SLOW_PROBE_S (a folder on a slow network drive). Probes that run a
# program wait on it, and have threads of their own.
PYTHON_WORKERS = 2 if os.name == "nt" else 1
MORE_PYTHON_WORKERS = 3  # at most this many more, one per slow probe
SLOW_PROBE_S = 2.0
PROGRAM_WORKERS = 2


@dataclass(frozen=True)
class ProbeEvent:
    probe: Probe
    environment: Optional[str]  # python.exe, or None for machine-wide probes
    state: str  # STARTED, DONE, FAILED
    done: int
    total: int
    findings: tuple[Finding, ...] = ()  # DONE: what this probe found (the wizard's checklist shows the worst)


@dataclass
class Diagnosis:
    machine: MachineFacts
    environments: list[PythonEnvironment]
    findings: list[Finding] = field(default_factory=list)
    graphs: dict[str, DependencyGraph] = field(default_factory=dict)  # python.exe -> torch\lib graph
    elapsed_s: float = 0.0
    complete: bool = True
    program: Program = field(default_factory=Program)  # the program the checks assumed, as the user named it
    nothing_checked: Optional[str] = None  # NO_WINDOWS or NO_TORCH: there was nothing to check, never "all clear"

    @property
    def blockers(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == BLOCKER]

    @property
    def problems(self) -> list[Problem]:
        """The findings grouped by cause: what a reader counts as things to fix."""
        return group_by_cause(self.findings, self.graphs)


def run_diagnosis(system: System, environments: Iterable[PythonEnvironment], *,
                  probes: Optional[Iterable[Probe]] = None, live: Optional[bool] = None, budget_s: float = 180.0,
                  workers: int = PYTHON_WORKERS,
                  cancel: Optional[CancelToken] = None, on_event: Callable[[ProbeEvent], None] = lambda e: None,
                  machine: Optional[MachineFacts] = None, program: Optional[Program] = None) -> Diagnosis:
    """Diagnose the machine and each environment. `live`: whether programs can run (default: ask the system).
    `program`: the program that shows the error, as the user named it (the environments' own apps if empty).
    `workers`: threads for the probes that work in this process (those that run a program have their own)."""
    started = time.monotonic()
    caller = cancel or CancelToken()
    cancel = caller.child()  # the budget below cancels this one, never the caller's
    machine = machine or read_machine_facts(system)
    envs = list(environments)
    diagnosis = Diagnosis(machine, envs, program=program or Program())
    if machine.problems:  # a setting the checks use could not be read: they could not see everything
        not_seen(diagnosis, "settings", {"error": "; ".join(machine.problems)})
    if system.system32 is None or not system.system32.is_dir():
        diagnosis.nothing_checked = NO_WINDOWS
    elif not any(env.torch for env in envs):
        diagnosis.nothing_checked = NO_TORCH
    seen = SeenFiles()  # a file another environment lists through a hard link is read once
    contexts = [ProbeContext(system, machine, env, cancel, SHARED_CACHE, diagnosis.program, seen) for env in envs
                if env.torch]  # SHARED_CACHE: kept by each file's identity, so a changed file is read again
    checks = ordered(ALL_PROBES if probes is None else probes, ProbeContext(system, machine, None, cancel,
                                                                            SHARED_CACHE), contexts)
    jobs, skipped = runnable(checks, system.can_run_programs if live is None else live,
                             getattr(system, "is_demo", False))
    diagnosis.findings.extend(skipped)
    ended = _Schedule(jobs, workers, cancel, caller, on_event).run(diagnosis, started + budget_s, budget_s)
    for ctx in contexts:
        if ctx._graph is not None:
            diagnosis.graphs[ctx.python or ""] = ctx._graph
    diagnosis.complete = diagnosis.complete and complete(diagnosis.findings, ended)
    settle(diagnosis.findings)
    diagnosis.elapsed_s = time.monotonic() - started
    return diagnosis


class _Schedule:
    """The checks on the pool's threads, within the time budget: each outcome as it comes (on_event), an
    environment's listings dropped when its last check ends, Stop honoured, stragglers stopped at the deadline."""

    def __init__(self, jobs: list[tuple[Probe, ProbeContext]], workers: int, cancel: CancelToken,
                 caller: CancelToken, on_event: Callable[[ProbeEvent], None]) -> None:
        self.jobs, self.cancel, self.caller, self.on_event = jobs, cancel, caller, on_event
        self.pool = _Pool(jobs, workers, cancel)
        self.left = collections.Counter(id(ctx) for _, ctx in jobs)  # an environment's checks still to end
        self.waiting = set(range(len(jobs)))

    def run(self, diagnosis: Diagnosis, deadline: float, budget_s: float) -> bool:
        """Whether every check ended in time; the findings go into `diagnosis`. Raises Cancelled on Stop."""
        while self.waiting:
            if self.caller.cancelled:
                _stop(self.cancel, self.pool.threads)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.pool.grow_if_slow()
            try:
                index, state, payload = self.pool.outcomes.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            self._outcome(diagnosis, index, state, payload)
        if self.caller.cancelled:  # the last probes may have ended on the cancel itself: still a cancelled diagnosis
            _stop(self.cancel, self.pool.threads)
        if not self.waiting:
            return True
        self.cancel.cancel()  # out of time: the stragglers are told to stop (ending their child processes)
        _wait_for(self.pool.threads, WORKER_STOP_S)
        for index in sorted(self.waiting):
            probe, ctx = self.jobs[index]
            diagnosis.findings.append(failed(probe, ctx, f"did not finish within {budget_s:.0f} s"))
        return False

    def _outcome(self, diagnosis: Diagnosis, index: int, state: str, payload) -> None:
        probe, ctx = self.jobs[index]
        total = len(self.jobs)
        if state == STARTED:
            self.on_event(ProbeEvent(probe, ctx.python, STARTED, total - len(self.waiting), total))
            return
        self.waiting.discard(index)
        self.left[id(ctx)] -= 1
        if not self.left[id(ctx)]:
            ctx.listings.clear()
        if isinstance(payload, Cancelled):
            _stop(self.cancel, self.pool.threads)
        found = list(payload) if state == DONE else [failed(probe, ctx, f"{payload.__class__.__name__}: {payload}")]
        diagnosis.findings.extend(found)
        self.on_event(ProbeEvent(probe, ctx.python, state, total - len(self.waiting), total, tuple(found)))


def not_seen(diagnosis: Diagnosis, what: str, evidence: dict) -> None:
    """Something the diagnosis needs could not be seen, outside any probe: Windows' settings ("settings"), or every
    folder where an environment may be ("search": the search ran out of time). Said, and never "all clear"."""
    name = {lang: words(f"probe.{what}.name", lang) for lang in LANGUAGES}
    diagnosis.findings.append(Finding(CHECK_FAILED, INFO, {"check": name, "probe": what, **evidence}, variant=what))
    diagnosis.complete = False


def _stop(cancel: CancelToken, threads: list[threading.Thread]) -> None:
    """Cancelled: every probe is told, and each ends its child process before this returns (bounded)."""
    cancel.cancel()
    _wait_for(threads, WORKER_STOP_S)
    raise Cancelled()


def _wait_for(threads: list[threading.Thread], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


class _Pool:
    """The probes' daemon threads (a stuck probe must not keep the program alive): `workers` for the probes that
    work in this process, PROGRAM_WORKERS for those that run a program. They report (index, STARTED, None), then
    (index, DONE, findings) or (index, FAILED, exception), on `outcomes`."""

    def __init__(self, jobs: list[tuple[Probe, ProbeContext]], workers: int, cancel: CancelToken) -> None:
        self.jobs, self.cancel = jobs, cancel
        self.outcomes: queue.Queue = queue.Queue()
        self.threads: list[threading.Thread] = []
        self._python: queue.Queue = queue.Queue()
        programs: queue.Queue = queue.Queue()
        for index, (probe, _) in enumerate(jobs):
            (programs if probe.needs_live else self._python).put(index)
        self._running: dict[int, float] = {}  # a probe that works in this process -> when it started
        self._added = 0
        for todo, count in ((self._python, workers), (programs, PROGRAM_WORKERS)):
            for _ in range(min(max(1, count), todo.qsize())):
                self._start(todo)

    def _start(self, todo: queue.Queue) -> None:
        thread = threading.Thread(target=self._work, args=(todo,), daemon=True,
                                  name=f"{'probe' if todo is self._python else 'program'}-{len(self.threads)}")
        self.threads.append(thread)
        thread.start()

    def _work(self, todo: queue.Queue) -> None:
        while not self.cancel.cancelled:
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            probe, ctx = self.jobs[index]
            if todo is self._python:
                self._running[index] = time.monotonic()
            self.outcomes.put((index, STARTED, None))
            try:
                self.outcomes.put((index, DONE, list(probe.run(ctx))))
            except BaseException as exc:  # noqa: BLE001 - a failing probe becomes a finding, never a crash
                self.outcomes.put((index, FAILED, exc))
            finally:
                self._running.pop(index, None)

    def grow_if_slow(self) -> None:
        """One more thread for the waiting probes while a probe has run longer than SLOW_PROBE_S (at most
        MORE_PYTHON_WORKERS more)."""
        now = time.monotonic()
        slow = sum(1 for began in list(self._running.values()) if now - began > SLOW_PROBE_S)
        if slow > self._added and self._added < MORE_PYTHON_WORKERS and not self._python.empty():
            self._added += 1
            self._start(self._python)
