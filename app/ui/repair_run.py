"""The repair run: the chosen repairs one after another, with retry and skip, Stop (which rolls back what this run
changed), a close of the window that waits for the rollback, and the one way to undo transactions in a worker
(Repair, Finish and Welcome all use it). No Qt: the pages draw it, and tests drive it without a window.

Work runs through a `start` callable with WorkerPool.start's shape (work, yielded=, returned=, errored=); its
handlers run on the caller's (GUI) thread, and so does everything here. Results of a worker that is no longer the
run's current one are ignored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Optional

from app.cancel import Cancelled
from app.failures import failure_text, settle
from app.i18n import words
from app.probes.runner import Diagnosis
from app.repair.journal import Transaction
from app.repair.run import (
    FIXED,
    RESTART_NEEDED,
    UNCHECKED,
    DownloadMoved,
    OutputLine,
    RepairFailed,
    RepairOutcome,
    RunEvent,
    RunStep,
    StepReached,
    apply_plan,
    left_installed,
    undo,
)
from app.repair.vc_runtime import InstallerFailed
from app.sources.download import DownloadCancelled, DownloadProgress
from app.system.identity import system_for

PROGRESS_EVERY_S = 0.1  # at most ten progress updates a second reach the GUI thread


class Phase(str, Enum):
    """Where one repair of the run stands."""

    WAITING = "waiting"
    APPLYING = "applying"
    DOWNLOADING = "downloading"
    VERIFYING = "verifying"
    ROLLING_BACK = "rolling-back"
    DONE = "done"
    STILL_BLOCKED = "still-blocked"
    RESTART_NEEDED = "restart-needed"
    UNCHECKED = "unchecked"  # done, and the check after it could not see everything
    FAILED = "failed"
    SKIPPED = "skipped"
    ROLLED_BACK = "rolled-back"
    NOT_ROLLED_BACK = "not-rolled-back"
    INSTALLER_RUNNING = "installer-running"  # the app stopped waiting; Microsoft's installer may still install


STEP_PHASES = {RunStep.APPLYING: Phase.APPLYING, RunStep.ROLLING_BACK: Phase.ROLLING_BACK,
               RunStep.VERIFYING: Phase.VERIFYING}


class RunState(str, Enum):
    """Where the run as a whole stands."""

    IDLE = "idle"
    RUNNING = "running"
    FAILED = "failed"  # a repair failed (and rolled itself back): Retry, Skip or Roll back everything
    DONE = "done"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_STOPPED = "rollback-stopped"  # the rollback could not put everything back: said, not called success


@dataclass(frozen=True)
class Recorded:
    """A log entry: a repair was recorded in the journal as this transaction (the page says it in words)."""

    transaction_id: str


@dataclass
class RepairItem:
    option: Any  # session.RepairOption
    phase: Phase = Phase.WAITING
    progress: Optional[DownloadProgress] = None
    outcome: Optional[RepairOutcome] = None

    @property
    def action(self) -> str:
        return self.option.action


@dataclass
class UndoResult:
    """What an undo of several transactions did: those undone, and the one that stopped it (with its error)."""

    undone: list[Transaction] = field(default_factory=list)
    stopped: Optional[Transaction] = None
    error: Optional[BaseException] = None
    after: Optional[Diagnosis] = None
    left_installed: list[str] = field(default_factory=list)  # what installers left ("x64 14.44.35211.0"), read now

    @property
    def complete(self) -> bool:
        return self.error is None


def undo_transactions(transactions: list[Transaction], owner_window: int = 0) -> UndoResult:
    """Undo each transaction in turn (give them newest first); stop at the first that cannot be undone.
    `owner_window`: the wizard's, for Windows' permission prompt of an undo (a machine setting's)."""
    result = UndoResult()
    for transaction in transactions:
        try:
            result.after = undo(transaction, owner_window=owner_window)
        except Exception as error:  # noqa: BLE001 - said in plain words by the page, the details logged
            settle(error)  # here, in the worker: the page only draws the words
            result.stopped, result.error = transaction, error
            return result
        result.undone.append(transaction)
        left = left_installed(system_for(transaction.machine), transaction)
        if left:
            result.left_installed.append(left)
    return result


class RepairRun:
    """One run of the chosen repairs. `changed()` is called after every change of state (the page redraws)."""

    def __init__(self, session, start: Callable[..., Any], changed: Callable[[], None] = lambda: None) -> None:
        self.session = session
        self._start = start
        self.changed = changed
        self.items = [RepairItem(option) for option in session.chosen]
        self.current = 0
        self.state = RunState.IDLE
        self.error: Optional[BaseException] = None  # the last failure, for its words and details
        self.log: list = []  # lines of output and details, and Recorded entries
        self.closing = False  # the window asked to close: it does once the rollback is over
        self.on_closed: Callable[[], None] = lambda: None
        self.left_installed: list[str] = []  # what a stopped or undone repair's installer left, as read after it
        self.left_needs_restart = False  # its installer said Windows must restart to finish it (3010, 1641)
        # an installer the app stopped waiting for (its failure, for the words): it may still be installing
        self.installer_running: Optional[BaseException] = None
        self._worker = None

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.state in (RunState.RUNNING, RunState.ROLLING_BACK)

    @property
    def restart_needed(self) -> bool:
        return any(item.outcome is not None and item.outcome.transaction.restart_needed for item in self.items)

    def failure_words(self) -> str:
        error = self.error or self.installer_running
        if error is None:
            return ""
        text = failure_text(error, self.session.lang)
        left = error.left_installed if isinstance(error, RepairFailed) else ""
        return f"{text}\n{words('repair.left_installed', self.session.lang, runtimes=left)}" if left else text

    # -- running ---------------------------------------------------------------------------------------------
    def begin(self) -> None:
        self.current = 0
        self._run_current()

    def _run_current(self) -> None:
        if self.current >= len(self.items):
            self.state = RunState.DONE
            self.changed()
            return
        item = self.items[self.current]
        self.state, self.error = RunState.RUNNING, None
        item.phase, item.progress = Phase.APPLYING, None
        self.changed()
        session, plan = self.session, item.option.plan
        system, env, journal = session.system, session.env, session.journal

        def work(worker):
            last = [0.0]  # the throttle is the worker's own: nothing here is shared with the GUI thread

            def event(told: RunEvent) -> None:
                if isinstance(told, DownloadMoved):
                    now, progress = time.monotonic(), told.progress
                    if now - last[0] < PROGRESS_EVERY_S and progress.done != progress.total:
                        return
                    last[0] = now
                worker.emit(told)

            return apply_plan(system, env, plan, journal, event, worker.token)

        worker = None

        def mine(handler):
            return lambda value: handler(value) if worker is self._worker else None

        worker = self._worker = self._start(work, yielded=mine(self._event), returned=mine(self._applied),
                                            errored=mine(self._failed))

    def _event(self, event: RunEvent) -> None:
        item = self.items[self.current]
        if isinstance(event, OutputLine):
            text = event.text[self.session.lang] if isinstance(event.text, dict) else event.text
            self.log.append(str(text).rstrip())
        elif isinstance(event, StepReached):
            item.phase = STEP_PHASES[event.step]
            if self.state == RunState.ROLLING_BACK and item.phase != Phase.ROLLING_BACK:
                return  # a Stop was asked: the page keeps saying so
        elif isinstance(event, DownloadMoved):
            finished = event.progress.total is not None and event.progress.done >= event.progress.total
            # once the file is there, the next step (the installer, placing the files) is working, not downloading
            item.phase, item.progress = (Phase.APPLYING, None) if finished else (Phase.DOWNLOADING, event.progress)
        self.changed()

    def _applied(self, outcome: RepairOutcome) -> None:
        self._worker = None
        item = self.items[self.current]
        item.outcome = outcome
        self.session.add_outcome(outcome)
        self._take_diagnosis(outcome.after)
        item.phase = {FIXED: Phase.DONE, RESTART_NEEDED: Phase.RESTART_NEEDED,
                      UNCHECKED: Phase.UNCHECKED}.get(outcome.state, Phase.STILL_BLOCKED)
        self.log.append(Recorded(outcome.transaction.id))
        if self.state == RunState.ROLLING_BACK:  # Stop came after the last change was made: undo it too
            self._roll_back_done()
            return
        self.current += 1
        self._run_current()

    def _failed(self, error: BaseException) -> None:
        self._worker = None
        item = self.items[self.current]
        self.log.append(getattr(error, "details", None) or f"{error.__class__.__name__}: {error}")
        cause = error.cause if isinstance(error, RepairFailed) else error
        if isinstance(error, RepairFailed) and error.left_installed:
            self.left_installed.append(error.left_installed)
            self.left_needs_restart = self.left_needs_restart or error.restart_needed
        stopped = isinstance(cause, (Cancelled, DownloadCancelled))
        running = isinstance(cause, InstallerFailed) and cause.installer_running
        if running:
            self.installer_running = error
        if stopped or self.state == RunState.ROLLING_BACK:
            item.phase = Phase.ROLLED_BACK if rolled_itself_back(error) else Phase.NOT_ROLLED_BACK
            if item.phase == Phase.NOT_ROLLED_BACK:
                self.error = error
            elif running:
                item.phase = Phase.INSTALLER_RUNNING
            self._roll_back_done()
            return
        item.phase = Phase.FAILED if rolled_itself_back(error) else Phase.NOT_ROLLED_BACK
        if running and item.phase == Phase.FAILED:
            item.phase = Phase.INSTALLER_RUNNING
        self.state = RunState.ROLLBACK_STOPPED if item.phase == Phase.NOT_ROLLED_BACK else RunState.FAILED
        self.error = error
        self.changed()
        if self.closing:
            self._roll_back_done()

    # -- the user's answers ------------------------------------------------------------------------------------
    @property
    def can_retry(self) -> bool:
        """Not while an installer the app stopped waiting for may still run: a second one would only wait for it."""
        return self.state == RunState.FAILED and self.items[self.current].phase != Phase.INSTALLER_RUNNING

    def retry(self) -> None:
        if self.can_retry:
            self._run_current()

    def skip(self) -> None:
        if self.state == RunState.FAILED:
            if self.items[self.current].phase != Phase.INSTALLER_RUNNING:  # the row keeps saying it still runs
                self.items[self.current].phase = Phase.SKIPPED
            self.current += 1
            self._run_current()

    def stop(self) -> None:
        """Stop what runs (it rolls itself back), then undo the repairs this run finished, newest first."""
        if self.state == RunState.ROLLING_BACK:
            return
        running = self._worker is not None
        self.state = RunState.ROLLING_BACK
        if running:
            self.items[self.current].phase = Phase.ROLLING_BACK
            self.changed()
            self._worker.cancel()  # _failed follows, or _applied when the repair had already finished
            return
        if self.current < len(self.items) and self.items[self.current].phase == Phase.FAILED:
            self.items[self.current].phase = Phase.ROLLED_BACK
        self._roll_back_done()

    def close(self) -> bool:
        """The window wants to close: True when it may now; else the run is stopped (and rolled back) first, and
        `on_closed` is called when it is over. Asking again while it rolls back changes nothing."""
        if not self.busy:
            return True
        self.closing = True
        self.stop()
        return False

    def _roll_back_done(self) -> None:
        self.state = RunState.ROLLING_BACK
        self.changed()
        done = [item for item in self.items if item.outcome is not None]
        for item in done:
            item.phase = Phase.ROLLING_BACK
        transactions = [item.outcome.transaction for item in reversed(done)]
        owner = self.session.owner_window  # read here, on the GUI thread: the worker gets a number
        worker = None

        def finished(result: UndoResult) -> None:
            if worker is self._worker:
                self._worker = None
                self._rolled_back(done, result)

        worker = self._worker = self._start(lambda w: undo_transactions(transactions, owner), returned=finished,
                                            errored=lambda error: finished(UndoResult(error=error)))

    def _rolled_back(self, done: list[RepairItem], result: UndoResult) -> None:
        undone = {t.id for t in result.undone}
        for item in done:
            if item.outcome.transaction.id in undone:
                item.phase = Phase.ROLLED_BACK
                self.session.forget_outcomes({item.outcome.transaction.id})
                item.outcome = None
            else:
                item.phase = Phase.NOT_ROLLED_BACK
        if result.after is not None:
            self._take_diagnosis(result.after)
        self.left_installed.extend(result.left_installed)
        if result.left_installed and any(t.restart_needed for t in result.undone):
            self.left_needs_restart = True  # a finished repair's installer said 3010: the restart still counts
        stuck = any(item.phase == Phase.NOT_ROLLED_BACK for item in self.items)
        if result.error is not None:
            self.error = result.error
        self.state = RunState.ROLLBACK_STOPPED if stuck or result.error is not None else RunState.ROLLED_BACK
        self.changed()
        if self.closing:
            self.on_closed()

    def _take_diagnosis(self, after: Diagnosis) -> None:
        self.session.take_repair_diagnosis(after)


def rolled_itself_back(error: BaseException) -> bool:
    """A repair that failed put back what it changed, unless its own rollback stopped or could not finish (one
    refused before its transaction began changed nothing)."""
    return error.rolled_back if isinstance(error, RepairFailed) else True
