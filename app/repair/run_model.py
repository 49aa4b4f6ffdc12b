"""One repair run as a state machine, without Qt or threads: where the run and each of its repairs stand (one enum,
`RepairState`), the events that move them (`handle`: an event the state does not allow is refused), what each
state says in the reader's language (resources/ui_text.json `repair.row.*`, `repair.status.*`) and how its row
looks. app/ui/repair_run.py feeds it what the workers report; the Repair page only shows what it says.

Also what a finished repair changed and what an undo changes back, read from its journal's intents (`shown`), for
the Repair page's log and the question Finish asks before an undo."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from app.i18n import words
from app.repair.changes import FILE, INSTALLER, MACHINE_VALUE, PACKAGES, RENAME, VARIABLE


class RepairState(str, Enum):
    """Where one repair of the run stands, and where the run as a whole does (RUN_STATES)."""

    WAITING = "waiting"  # a repair not reached yet; the run before it begins
    APPLYING = "applying"
    DOWNLOADING = "downloading"
    VERIFYING = "verifying"
    PUTTING_BACK = "putting-back"  # the repair puts back what it changed itself (after a failure, or a Stop)
    FIXED = "fixed"
    RESTART_NEEDED = "restart-needed"
    UNCHECKED = "unchecked"  # done, and the check after it could not see everything: never "fixed"
    STILL_BLOCKED = "still-blocked"
    FAILED = "failed"  # failed and put itself back; the run waits for Retry, Skip or Roll back
    INSTALLER_RUNNING = "installer-running"  # the app stopped waiting; Microsoft's installer may still install
    SKIPPED = "skipped"
    ROLLING_BACK = "rolling-back"  # a finished repair being undone; the run: undoing every finished one
    ROLLED_BACK = "rolled-back"
    NOT_ROLLED_BACK = "not-rolled-back"  # could not be put back completely: said, never called success
    UNDONE = "undone"  # undone afterwards (Undo on Finish)
    RUNNING = "running"  # the run: a repair is at work
    STOPPING = "stopping"  # the run: Stop was asked while a repair was at work, which puts back what it changed
    DONE = "done"  # the run: every chosen repair had its turn


S = RepairState
AT_WORK = frozenset({S.APPLYING, S.DOWNLOADING, S.VERIFYING, S.PUTTING_BACK})
CHANGED = frozenset({S.FIXED, S.RESTART_NEEDED, S.UNCHECKED, S.STILL_BLOCKED})  # finished: its changes stay
RUN_STATES = frozenset({S.WAITING, S.RUNNING, S.STOPPING, S.FAILED, S.INSTALLER_RUNNING, S.ROLLING_BACK, S.DONE,
                        S.ROLLED_BACK, S.NOT_ROLLED_BACK, S.UNDONE})
ENDED = frozenset({S.DONE, S.ROLLED_BACK, S.NOT_ROLLED_BACK, S.UNDONE})  # the run is over: Next may be pressed


# -- the events ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Started:
    """The run begins with its first repair."""


@dataclass(frozen=True)
class Progressed:
    """The repair at work reached a step: APPLYING, DOWNLOADING, VERIFYING or PUTTING_BACK."""

    state: RepairState


@dataclass(frozen=True)
class Applied:
    """The repair finished; `outcome` is what the check after it says (one of CHANGED)."""

    outcome: RepairState
    restart_needed: bool = False  # its installer said Windows must restart (3010, 1641)


@dataclass(frozen=True)
class Failed:
    """The repair failed. `rolled_back`: it put back what it changed; `cancelled`: it stopped because Stop was
    asked; `installer_running`: Microsoft's installer it started may still be installing."""

    rolled_back: bool = True
    installer_running: bool = False
    cancelled: bool = False


@dataclass(frozen=True)
class Retry:
    pass


@dataclass(frozen=True)
class Skip:
    pass


@dataclass(frozen=True)
class Stop:
    """Stop what runs, then undo the repairs this run finished."""


@dataclass(frozen=True)
class RolledBack:
    """The undo of the finished repairs is over: `undone` are their places in the run; `complete` False when it
    stopped at one."""

    undone: frozenset = frozenset()
    complete: bool = True


@dataclass(frozen=True)
class Undone:
    """Finished repairs of this run (their places) were undone afterwards, from Finish."""

    undone: frozenset = frozenset()


class Refused(ValueError):
    """An event the run's state does not allow (a Retry while it works, a Stop once it is over)."""


# -- the machine ---------------------------------------------------------------------------------------------------
@dataclass
class RunModel:
    """A run of `count` repairs. `state` is the run's, `states` each repair's; `current` the one whose turn it is.
    The other fields are what the run's words need beyond its state."""

    count: int
    runs_installer: bool = False  # one of the repairs runs Microsoft's installer: Working says it is let finish
    state: RepairState = S.WAITING
    states: list = field(default_factory=list)
    current: int = 0
    closing: bool = False  # the window asked to close: it does once the rollback is over
    installer_running: bool = False  # an installer the app stopped waiting for may still be installing
    restart_needed: bool = False
    left_installed: list = field(default_factory=list)  # what installers left ("x64 14.44.35211.0"), read after
    left_needs_restart: bool = False

    def __post_init__(self) -> None:
        self.states = self.states or [S.WAITING] * self.count

    def allows(self, event: object) -> bool:
        if (self.state, type(event)) not in MOVES:
            return False
        if isinstance(event, Progressed):
            return event.state in AT_WORK
        if isinstance(event, Applied):
            return event.outcome in CHANGED
        if isinstance(event, Undone):  # only a finished repair has changes to undo
            return bool(event.undone) and all(self.states[index] in CHANGED for index in event.undone)
        return True

    def handle(self, event: object) -> RepairState:
        """Move by `event`; Refused when the state does not allow it (nothing changes then)."""
        if not self.allows(event):
            raise Refused(f"{event} while {self.state.value}")
        MOVES[self.state, type(event)](self, event)
        return self.state

    # -- the moves -------------------------------------------------------------------------------------------
    def _turn(self, index: int) -> None:
        """The repair at `index` begins, or the run is done when there is none."""
        self.current = index
        if index >= self.count:
            self.state = S.DONE
            return
        self.state, self.states[index] = S.RUNNING, S.APPLYING

    def _started(self, event: Started) -> None:
        self._turn(0)

    def _progressed(self, event: Progressed) -> None:
        if self.state == S.RUNNING or event.state == S.PUTTING_BACK:  # after a Stop the row keeps saying so
            self.states[self.current] = event.state

    def _applied(self, event: Applied) -> None:
        self.states[self.current] = event.outcome
        self.restart_needed = self.restart_needed or event.restart_needed
        if self.state == S.STOPPING:  # Stop came after its last change was made: it is undone too
            self._roll_back()
        else:
            self._turn(self.current + 1)

    def _failed(self, event: Failed) -> None:
        self.installer_running = self.installer_running or event.installer_running
        stopping = event.cancelled or self.state == S.STOPPING
        if not event.rolled_back:
            ended = S.NOT_ROLLED_BACK
        elif event.installer_running:
            ended = S.INSTALLER_RUNNING
        else:
            ended = S.ROLLED_BACK if stopping else S.FAILED
        self.states[self.current] = ended
        if stopping:
            self._roll_back()
        else:
            self.state = ended

    def _retry(self, event: Retry) -> None:
        self._turn(self.current)

    def _skip(self, event: Skip) -> None:
        if self.states[self.current] == S.FAILED:  # an installer still running keeps saying so
            self.states[self.current] = S.SKIPPED
        self._turn(self.current + 1)

    def _stop(self, event: Stop) -> None:
        if self.state == S.RUNNING:
            self.state, self.states[self.current] = S.STOPPING, S.PUTTING_BACK
            return
        if self.state == S.FAILED:
            self.states[self.current] = S.ROLLED_BACK  # it had put itself back already
        self._roll_back()

    def _roll_back(self) -> None:
        self.state = S.ROLLING_BACK
        self.states = [S.ROLLING_BACK if state in CHANGED else state for state in self.states]

    def _rolled_back(self, event: RolledBack) -> None:
        self.states = [(S.ROLLED_BACK if index in event.undone else S.NOT_ROLLED_BACK)
                       if state == S.ROLLING_BACK else state for index, state in enumerate(self.states)]
        stuck = not event.complete or S.NOT_ROLLED_BACK in self.states
        self.state = S.NOT_ROLLED_BACK if stuck else S.ROLLED_BACK

    def _undone(self, event: Undone) -> None:
        self.states = [S.UNDONE if index in event.undone else state for index, state in enumerate(self.states)]
        if not any(state in CHANGED or state == S.NOT_ROLLED_BACK for state in self.states):
            self.state = S.UNDONE

    # -- what it says ----------------------------------------------------------------------------------------
    @property
    def can_retry(self) -> bool:
        """Not while an installer the app stopped waiting for may still run: a second one would only wait for it."""
        return self.allows(Retry())

    @property
    def asks(self) -> bool:
        """A repair failed and the run waits for an answer: Skip, or Roll back everything (and Retry if allowed)."""
        return self.allows(Skip())

    @property
    def busy(self) -> bool:
        return self.state in (S.RUNNING, S.STOPPING, S.ROLLING_BACK)

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def says_failure(self) -> bool:
        """The failure's own words are shown (with what to do), beside the run's."""
        return self.state in (S.FAILED, S.INSTALLER_RUNNING, S.NOT_ROLLED_BACK) or (
            self.state == S.ROLLED_BACK and self.installer_running)

    def row_words(self, index: int, lang: str, detail: str = "") -> str:
        """What the row of the repair at `index` says; `detail`: the download's bytes, speed and time left."""
        state = self.states[index]
        if state == S.DOWNLOADING and detail:
            return words("repair.row.downloading.detail", lang, detail=detail)
        return words(f"repair.row.{state.value}", lang)

    def status_words(self, lang: str) -> str:
        """What the run as a whole says under its rows ("" while a failure's own words say it)."""
        key = STATUS.get(self.state)
        if key is None:
            return ""
        variant = self._status_variant()
        said = words(f"{key}.{variant}" if variant else key, lang, runtimes=", ".join(self.left_installed))
        if variant == "left-installed" and self.left_needs_restart:
            said += " " + words("repair.left_installed.restart", lang)
        return said

    def _status_variant(self) -> str:
        if self.state == S.RUNNING:
            return "installer" if self.runs_installer else ""
        if self.state in (S.STOPPING, S.ROLLING_BACK):
            return "closing" if self.closing else ""
        if self.state == S.ROLLED_BACK and self.installer_running:
            return "installer-running"
        if self.state in (S.ROLLED_BACK, S.UNDONE) and self.left_installed:
            return "left-installed"
        if self.state == S.DONE and self.restart_needed:
            return "restart"
        return ""


MOVES = {
    (S.WAITING, Started): RunModel._started,
    (S.RUNNING, Progressed): RunModel._progressed,
    (S.STOPPING, Progressed): RunModel._progressed,
    (S.RUNNING, Applied): RunModel._applied,
    (S.STOPPING, Applied): RunModel._applied,
    (S.RUNNING, Failed): RunModel._failed,
    (S.STOPPING, Failed): RunModel._failed,
    (S.FAILED, Retry): RunModel._retry,
    (S.FAILED, Skip): RunModel._skip,
    (S.INSTALLER_RUNNING, Skip): RunModel._skip,
    (S.RUNNING, Stop): RunModel._stop,
    (S.FAILED, Stop): RunModel._stop,
    (S.INSTALLER_RUNNING, Stop): RunModel._stop,
    (S.DONE, Stop): RunModel._stop,
    (S.ROLLING_BACK, RolledBack): RunModel._rolled_back,
    (S.DONE, Undone): RunModel._undone,
    (S.NOT_ROLLED_BACK, Undone): RunModel._undone,
}

STATUS = {S.RUNNING: "repair.status.running", S.STOPPING: "repair.status.rolling-back",
          S.ROLLING_BACK: "repair.status.rolling-back", S.ROLLED_BACK: "repair.status.rolled-back",
          S.NOT_ROLLED_BACK: "repair.status.not-rolled-back", S.DONE: "repair.status.done",
          S.UNDONE: "repair.status.undone"}


@dataclass(frozen=True)
class Look:
    """How a repair's row looks: its icon (resources/icons) and its bar (`busy`: moving, no end known)."""

    icon: str
    busy: bool = False
    full: bool = False


LOOKS = {
    S.WAITING: Look("waiting"), S.SKIPPED: Look("waiting"), S.ROLLED_BACK: Look("waiting"),
    S.UNDONE: Look("waiting"),
    S.APPLYING: Look("running", busy=True), S.DOWNLOADING: Look("running", busy=True),
    S.VERIFYING: Look("running", busy=True), S.PUTTING_BACK: Look("running", busy=True),
    S.ROLLING_BACK: Look("running", busy=True),
    S.FIXED: Look("ok", full=True), S.RESTART_NEEDED: Look("warning", full=True),
    S.UNCHECKED: Look("warning", full=True), S.STILL_BLOCKED: Look("warning", full=True),
    S.INSTALLER_RUNNING: Look("warning"), S.FAILED: Look("problem"), S.NOT_ROLLED_BACK: Look("problem"),
}


# -- what a repair changed, from its journal -----------------------------------------------------------------------
def what_changed(transaction, lang: str) -> list[str]:
    """One line per change the repair made (its journal's steps that were applied), by what the intent shows."""
    return [_change_words("repair.changed", step.intent, lang) for step in transaction.steps() if step.applied]


def what_changes_back(transaction, lang: str) -> list[str]:
    """One line per change an undo of the repair puts back, newest first (the order the undo takes)."""
    return [_change_words("repair.change_back", step.intent, lang) for step in reversed(transaction.steps())]


def _change_words(prefix: str, intent: dict, lang: str) -> str:
    op = intent.get("op")
    shown = intent.get("shown") or intent.get("target") or op
    if op == FILE:
        kind = "file.replaced" if intent.get("before") else "file.placed"
    elif op == VARIABLE:
        kind = "variable.removed" if intent.get("after") is None else "variable.set"
    elif op in (RENAME, MACHINE_VALUE, PACKAGES, INSTALLER):
        kind = op
    else:
        kind = "other"
    restore = intent.get("restore") or []
    return words(f"{prefix}.{kind}", lang, shown=shown, target=intent.get("shown_target") or "",
                 restore=", ".join(restore) if isinstance(restore, list) else str(restore))

