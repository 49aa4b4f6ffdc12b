"""The repair run: the chosen repairs one after another, with retry and skip, Stop (which rolls back what this run
changed), a close of the window that waits for the rollback, and the one way to undo transactions in a worker
(Repair, Finish and Welcome all use it). It runs the work and feeds what the workers report to the run's one state
machine (app/repair/run_model.py), which says where the run stands and in what words. No Qt: the pages draw it, and
tests drive it without a window.

Work runs through a `start` callable with WorkerPool.start's shape (work, yielded=, returned=, errored=); its
handlers run on the caller's (GUI) thread, and so does everything here. Results of a worker that is no longer the
run's current one are ignored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from app.cancel import Cancelled
from app.failures import failure_text, settle
from app.i18n import words
from app.probes.runner import Diagnosis
from app.repair.journal import Transaction
from app.repair.names import repair_name
from app.repair.run import (
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
from app.repair.run_model import (
    LOOKS,
    Applied,
    Failed,
    Progressed,
    RepairState,
    Retry,
    RolledBack,
    RunModel,
    Skip,
    Started,
    Stop,
    Undone,
    what_changed,
    what_changes_back,
)
from app.repair.vc_runtime import InstallerFailed
from app.report.units import download_line
from app.sources.download import DownloadCancelled, DownloadProgress
from app.system.identity import system_for

PROGRESS_EVERY_S = 0.1  # at most ten progress updates a second reach the GUI thread


STEPS = {RunStep.APPLYING: RepairState.APPLYING, RunStep.ROLLING_BACK: RepairState.PUTTING_BACK,
         RunStep.VERIFYING: RepairState.VERIFYING}


@dataclass(frozen=True)
class Recorded:
    """A log entry: a repair finished and was recorded in the journal as this transaction."""

    transaction: Transaction


@dataclass(frozen=True)
class UndoneAfterwards:
    """A log entry: a finished repair was undone afterwards (from Finish)."""

    transaction: Transaction


@dataclass
class RepairItem:
    option: Any  # session.RepairOption
    progress: Optional[DownloadProgress] = None
    outcome: Optional[RepairOutcome] = None

    @property
    def action(self) -> str:
        return self.option.action


@dataclass(frozen=True)
class Row:
    """What a repair's row shows: its name, its words, its icon, and how far its bar is (None: moving)."""

    name: str
    words: str
    icon: str
    done: Optional[float]


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
    """One run of the chosen repairs: the workers' reports become events of its model (app/repair/run_model.py),
    which says where the run stands and what that is in words. `changed()` is called after every change of state
    (the page redraws)."""

    def __init__(self, session, start: Callable[..., Any], changed: Callable[[], None] = lambda: None) -> None:
        self.session = session
        self._start = start
        self.changed = changed
        self.items = [RepairItem(option) for option in session.chosen]
        self.model = RunModel(len(self.items), runs_installer=any(i.option.plan.runs_installer for i in self.items))
        self.error: Optional[BaseException] = None  # the last failure, for its words and details
        self.log: list = []  # lines of output and details, and Recorded / UndoneAfterwards entries
        self.on_closed: Callable[[], None] = lambda: None
        self.installer_running: Optional[BaseException] = None  # its failure, for the words
        self._worker = None

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def state(self) -> RepairState:
        return self.model.state

    @property
    def busy(self) -> bool:
        return self.model.busy

    @property
    def closing(self) -> bool:
        return self.model.closing

    @property
    def left_installed(self) -> list[str]:
        return self.model.left_installed

    @property
    def restart_needed(self) -> bool:
        return self.model.restart_needed

    @property
    def can_retry(self) -> bool:
        return self.model.can_retry

    def row(self, index: int) -> Row:
        item, lang, state = self.items[index], self.session.lang, self.model.states[index]
        progress = item.progress if state == RepairState.DOWNLOADING else None
        look = LOOKS[state]
        if progress is not None and progress.total:
            done: Optional[float] = progress.done / progress.total
        else:
            done = None if look.busy else float(look.full)
        detail = download_line(progress, lang) if progress is not None else ""
        return Row(repair_name(item.action, lang), self.model.row_words(index, lang, detail), look.icon, done)

    def status_words(self) -> str:
        return self.model.status_words(self.session.lang)

    def log_text(self, entry) -> str:
        """A log entry in the reader's words: a finished repair by what it changed, its journal id after."""
        lang = self.session.lang
        if isinstance(entry, (Recorded, UndoneAfterwards)):
            transaction = entry.transaction
            name = repair_name(transaction.begin.get("action", ""), lang)
            if isinstance(entry, UndoneAfterwards):
                return "\n".join([words("repair.log.undone", lang, name=name),
                                  *("  " + line for line in what_changes_back(transaction, lang))])
            return "\n".join([words("repair.log.done", lang, name=name),
                              *("  " + line for line in what_changed(transaction, lang)),
                              "  " + words("repair.log.recorded", lang, id=transaction.id)])
        return entry

    def failure_words(self) -> str:
        error = self.error or self.installer_running
        if error is None:
            return ""
        text = failure_text(error, self.session.lang)
        left = error.left_installed if isinstance(error, RepairFailed) else ""
        return f"{text}\n{words('repair.left_installed', self.session.lang, runtimes=left)}" if left else text

    # -- running ---------------------------------------------------------------------------------------------
    def _handle(self, event) -> None:
        self.model.handle(event)
        if self.model.state == RepairState.RUNNING and self._worker is None:
            self._run_current()
        elif self.model.state == RepairState.ROLLING_BACK and self._worker is None:
            self._roll_back_done()
        self.changed()

    def begin(self) -> None:
        self._handle(Started())

    def _run_current(self) -> None:
        item = self.items[self.model.current]
        self.error, item.progress = None, None
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
        item = self.items[self.model.current]
        if isinstance(event, OutputLine):
            text = event.text[self.session.lang] if isinstance(event.text, dict) else event.text
            self.log.append(str(text).rstrip())
        elif isinstance(event, StepReached):
            self.model.handle(Progressed(STEPS[event.step]))
        elif isinstance(event, DownloadMoved):
            finished = event.progress.total is not None and event.progress.done >= event.progress.total
            # once the file is there, the next step (the installer, placing the files) is working, not downloading
            item.progress = None if finished else event.progress
            self.model.handle(Progressed(RepairState.APPLYING if finished else RepairState.DOWNLOADING))
        self.changed()

    def _applied(self, outcome: RepairOutcome) -> None:
        self._worker = None
        self.items[self.model.current].outcome = outcome
        self.session.add_outcome(outcome)
        self._take_diagnosis(outcome.after)
        self.log.append(Recorded(outcome.transaction))
        self._handle(Applied(RepairState(outcome.state.value), outcome.transaction.restart_needed))

    def _failed(self, error: BaseException) -> None:
        self._worker = None
        self.log.append(getattr(error, "details", None) or f"{error.__class__.__name__}: {error}")
        cause = error.cause if isinstance(error, RepairFailed) else error
        if isinstance(error, RepairFailed) and error.left_installed:
            self.model.left_installed.append(error.left_installed)
            self.model.left_needs_restart = self.model.left_needs_restart or error.restart_needed
        running = isinstance(cause, InstallerFailed) and cause.installer_running
        if running:
            self.installer_running = error
        event = Failed(rolled_itself_back(error), running, isinstance(cause, (Cancelled, DownloadCancelled)))
        stopping = event.cancelled or self.model.state == RepairState.STOPPING
        if not stopping or not event.rolled_back:
            self.error = error
        self._handle(event)

    # -- the user's answers ------------------------------------------------------------------------------------
    def retry(self) -> None:
        if self.model.allows(Retry()):
            self._handle(Retry())

    def skip(self) -> None:
        if self.model.allows(Skip()):
            self._handle(Skip())

    def stop(self) -> None:
        """Stop what runs (it rolls itself back), then undo the repairs this run finished, newest first."""
        if not self.model.allows(Stop()):
            return
        self.model.handle(Stop())
        if self._worker is not None:
            self._worker.cancel()  # _failed follows, or _applied when the repair had already finished
        else:
            self._roll_back_done()
        self.changed()

    def close(self) -> bool:
        """The window wants to close: True when it may now; else the run is stopped (and rolled back) first, and
        `on_closed` is called when it is over. Asking again while it rolls back changes nothing."""
        if not self.busy:
            return True
        self.model.closing = True
        self.stop()
        self.changed()
        return False

    def take_undone(self) -> bool:
        """Repairs of this run undone afterwards (from Finish: the session says which): the run says so. True when
        something changed."""
        undone = {outcome.transaction.id for outcome in self.session.undone}
        done = {index for index, item in enumerate(self.items)
                if item.outcome is not None and item.outcome.transaction.id in undone}
        if not done or not self.model.allows(Undone(frozenset(done))):
            return False
        self.model.handle(Undone(frozenset(done)))
        for index in sorted(done):
            self.log.append(UndoneAfterwards(self.items[index].outcome.transaction))
            self.items[index].outcome = None
        self.changed()
        return True

    def _roll_back_done(self) -> None:
        done = [item for item in self.items if item.outcome is not None]
        transactions = [item.outcome.transaction for item in reversed(done)]
        owner = self.session.owner_window  # read here, on the GUI thread: the worker gets a number
        worker = None

        def finished(result: UndoResult) -> None:
            if worker is self._worker:
                self._worker = None
                self._rolled_back(result)

        worker = self._worker = self._start(lambda w: undo_transactions(transactions, owner), returned=finished,
                                            errored=lambda error: finished(UndoResult(error=error)))

    def _rolled_back(self, result: UndoResult) -> None:
        undone_ids = {t.id for t in result.undone}
        undone = set()
        for index, item in enumerate(self.items):
            if item.outcome is not None and item.outcome.transaction.id in undone_ids:
                undone.add(index)
                item.outcome = None
        self.session.forget_outcomes(undone_ids)
        if result.after is not None:
            self._take_diagnosis(result.after)
        self.model.left_installed.extend(result.left_installed)
        if result.left_installed and any(t.restart_needed for t in result.undone):
            self.model.left_needs_restart = True  # a finished repair's installer said 3010: the restart still counts
        if result.error is not None:
            self.error = result.error
        self._handle(RolledBack(frozenset(undone), result.complete))
        if self.closing:
            self.on_closed()

    def _take_diagnosis(self, after: Diagnosis) -> None:
        self.session.take_repair_diagnosis(after)


def rolled_itself_back(error: BaseException) -> bool:
    """A repair that failed put back what it changed, unless its own rollback stopped or could not finish (one
    refused before its transaction began changed nothing)."""
    return error.rolled_back if isinstance(error, RepairFailed) else True
