"""Running a repair: diagnose the environment, plan, check that no program holds the files, apply the plan inside a
journal transaction, then diagnose again; and undoing one. The CLI and the wizard both call these."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional, Union

from app.cancel import CancelToken
from app.failures import failure_text
from app.i18n import words
from app.inventory.environment import PythonEnvironment, inspect_environment
from app.probes.checklist import BLIND
from app.probes.evidence import UnfinishedCheck
from app.probes.finding import BLOCKER
from app.probes.runner import Diagnosis, not_seen, run_diagnosis
from app.repair.actions import action_for
from app.repair.changes.installers import kept_runtimes
from app.repair.in_use import processes_using
from app.repair.journal import ROLLED_BACK, Journal, NewerRepairFirst, RollbackStopped, Transaction
from app.repair.plan import Plan
from app.system.base import System
from app.system.identity import machine_of, system_for
from app.system.once_per_file import forget_every_file


class Outcome(str, Enum):
    """How a repair ended, as the diagnosis after it says."""

    FIXED = "fixed"
    STILL_BLOCKED = "still-blocked"
    RESTART_NEEDED = "restart-needed"
    UNCHECKED = "unchecked"  # nothing left that the check saw, but it could not see everything: never "fixed"


FIXED, STILL_BLOCKED, RESTART_NEEDED, UNCHECKED = Outcome


class RunStep(str, Enum):
    """Where a repair is: the one vocabulary of a run, for the command line and the wizard."""

    APPLYING = "applying"
    ROLLING_BACK = "rolling-back"
    VERIFYING = "verifying"


@dataclass(frozen=True)
class StepReached:
    step: RunStep


@dataclass(frozen=True)
class OutputLine:
    text: Union[str, dict]  # a line of pip or the installer, or words in both languages ({"en", "zh_CN"})


@dataclass(frozen=True)
class DownloadMoved:
    progress: object  # app.sources.download.DownloadProgress


RunEvent = Union[StepReached, OutputLine, DownloadMoved]  # what a running repair reports, typed


class FilesInUse(Exception):
    """Programs have files loaded that the repair must change: close them, then try again."""

    def __init__(self, holders: list[dict]) -> None:
        super().__init__(_names(holders))
        self.holders = holders

    def text(self, lang: str) -> str:
        sure = [h for h in self.holders if not h.get("unreadable")]
        maybe = [h for h in self.holders if h.get("unreadable")]
        said = [words("cli.repair.in_use", lang, programs=_names(sure))] if sure else []
        if maybe:  # Python programs the app may not look into: they may hold the files, so they are named too
            said.append(words("cli.repair.in_use_maybe", lang, programs=_names(maybe)))
        return "\n".join(said)


def _names(holders: list[dict]) -> str:
    return ", ".join(f"{h['name']} ({h['pid']})" for h in holders)


def diagnose_environment(system: System, env: PythonEnvironment) -> Diagnosis:
    return run_diagnosis(system, [env])


@dataclass
class RepairOutcome:
    plan: Plan
    transaction: Transaction
    after: Diagnosis
    problems_left: list = field(default_factory=list)

    @property
    def state(self) -> Outcome:
        if self.problems_left and self.transaction.restart_needed:
            return RESTART_NEEDED  # what is left waits for Windows to restart (files replaced at the reboot)
        if self.problems_left:
            return STILL_BLOCKED
        return FIXED if self.after.complete else UNCHECKED


def unfinished_checks(diagnosis: Diagnosis, lang: str) -> str:
    """The names of a diagnosis's checks that could not see what they check ("" when all did)."""
    names = [UnfinishedCheck.of(f).check for f in diagnosis.findings if f.code in BLIND]
    spelled = [n.get(lang) or n.get("en") if isinstance(n, dict) else str(n) for n in names if n]
    return ", ".join(dict.fromkeys(spelled))


def plan_repair(system: System, env: PythonEnvironment, action: str, source: Optional[str] = None,
                diagnosis: Optional[Diagnosis] = None) -> tuple[Plan, Diagnosis]:
    diagnosis = diagnosis or diagnose_environment(system, env)
    plan = action_for(action).plan(system, env, diagnosis.machine, diagnosis.findings, source)
    return plan, diagnosis


class RepairFailed(Exception):
    """A repair that stopped after its transaction began: why (`cause`), and what the journal says it left."""

    def __init__(self, cause: BaseException, transaction: Transaction, changes_left: Optional[str],
                 left_installed: str, restart_needed: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.transaction = transaction
        self.changes_left = changes_left  # the transaction's id when its rollback did not finish; None when it did
        self.left_installed = left_installed  # what its installers left installed ("x64 14.44.35211.0"), or ""
        self.restart_needed = restart_needed  # a 3010 that a Stop let finish

    def text(self, lang: str) -> str:
        return failure_text(self.cause, lang, changes_left=self.changes_left)

    @property
    def rolled_back(self) -> bool:
        """It put back what it changed: its own rollback neither stopped nor failed to finish."""
        return self.changes_left is None and not isinstance(self.cause, RollbackStopped)


def apply_plan(system: System, env: PythonEnvironment, plan: Plan, journal: Journal,
               events: Callable[[RunEvent], None] = lambda event: None,
               token: Optional[CancelToken] = None) -> RepairOutcome:
    """Apply a confirmed plan: what happens is told to `events` as it happens. One repair or undo at a time
    (RepairBusy); files a running program holds are refused before anything changes (FilesInUse). Cancelling
    `token` stops the step under way (a download, pip, the installer) and rolls everything back. A failure after
    the transaction began is a RepairFailed: its cause, and what the journal says was left."""
    if system.can_run_programs:
        held = processes_using([c.host_target for c in plan.changes if c.host_target is not None])
        if held:
            raise FilesInUse(held)
    facts = {"machine": machine_of(system), "action": plan.action, "source": plan.source,
             "environment": plan.environment, "plan": plan.to_dict()}
    with journal.transaction(plan.action, facts=facts) as transaction:
        try:
            return _apply(system, env, plan, transaction, events, token)
        except Exception as error:
            # the journal's word, never assumed: its rollback did not finish (a journal that could not be written, a
            # failure after the last step), so its changes stay, recorded (a stopped rollback says so itself)
            left = None if transaction.state == ROLLED_BACK or isinstance(error, RollbackStopped) else transaction.id
            raise RepairFailed(error, transaction, left, left_installed(system, transaction),
                               transaction.restart_needed) from error


def _apply(system: System, env: PythonEnvironment, plan: Plan, transaction: Transaction,
           events: Callable[[RunEvent], None], token: Optional[CancelToken]) -> RepairOutcome:
    events(StepReached(RunStep.APPLYING))
    try:
        action_for(plan.action).apply(system, plan, transaction, lambda line: events(OutputLine(line)),
                                      lambda progress: events(DownloadMoved(progress)), token)
        if token is not None:
            token.check()  # cancelled after the last step: rolled back all the same
    except BaseException:
        events(StepReached(RunStep.ROLLING_BACK))
        roll_back(system, transaction)  # a step failed (disk full, denied, cancelled): nothing stays half done
        raise
    forget_every_file()  # the check after it reads the files as they are now
    events(StepReached(RunStep.VERIFYING))
    refreshed = inspect_environment(system, env.python) or env
    after = diagnose_environment(system, refreshed)
    if token is not None and token.cancelled:  # Stop (Ctrl+C) while it checked again: put back, as Stop promises
        events(StepReached(RunStep.ROLLING_BACK))
        roll_back(system, transaction)
        token.check()
    left = [p for p in after.problems if p.severity == BLOCKER]
    outcome = RepairOutcome(plan, transaction, after, left)
    transaction.finish({"state": outcome.state.value, "problems_left": [p.lead.code for p in left]})
    tidy(transaction)
    return outcome


def roll_back(system: System, transaction: Transaction) -> None:
    """Undo every step of a held transaction (Transaction.rollback), then keep only what is worth keeping; nothing
    read of the files before is taken again."""
    try:
        transaction.rollback(system)
    finally:
        forget_every_file()
    tidy(transaction)


def tidy(transaction: Transaction) -> None:
    """Once a transaction is finished or undone, only what an undo needs stays: the backups and the journal, not
    the downloads (25 MB installers, whole wheels). The installers' own logs (a few KB) stay too, for the report."""
    downloads = transaction.folder / "downloads"
    if not downloads.is_dir():
        return
    for item in downloads.iterdir():
        if item.is_dir():
            shutil.rmtree(item, ignore_errors=True)
        elif item.suffix.lower() != ".log":
            with contextlib.suppress(OSError):
                item.unlink()


def left_installed(system: System, transaction: Transaction) -> str:
    """What the transaction's installers left installed, read from the registry now ("x64 14.44.35211.0"; "" for
    none): a rollback or an undo never removes a shared runtime, and a Stop lets a started installer finish."""
    try:
        return kept_runtimes(system, transaction) if system.can_run_programs else ""
    except OSError:  # the registry unreadable: the failure itself is what is said
        return ""


def undo(transaction: Transaction, journal: Optional[Journal] = None, owner_window: int = 0) -> Diagnosis:
    """Roll a transaction back on the computer it belongs to, then diagnose that environment again. Refused
    before anything changes while another repair runs (RepairBusy), another process holds this one
    (TransactionBusy), or a program holds its files (FilesInUse)."""
    journal = journal or Journal(transaction.folder.parent.parent)
    system = system_for(transaction.machine, owner_window)
    with journal.transaction(f"undo {transaction.id}", existing=transaction):
        newer = journal.newer_on_same_files(transaction)
        if newer is not None:
            raise NewerRepairFirst(transaction.id, newer)
        if system.can_run_programs:
            held = processes_using(transaction.targets())
            if held:
                raise FilesInUse(held)
        roll_back(system, transaction)
    try:  # the undo is done and recorded: a check after it that cannot look says so, never "the undo failed"
        python = system.host_path(transaction.begin.get("environment") or "")
        env = inspect_environment(system, python) if python is not None and python.exists() else None
    except Exception as error:  # noqa: BLE001 - denied, damaged: what the check could not see is named
        diagnosis = run_diagnosis(system, [])
        not_seen(diagnosis, "environment", {"error": getattr(error, "strerror", None) or str(error) or
                                            type(error).__name__, "environment": transaction.begin.get("environment")})
        return diagnosis
    return run_diagnosis(system, [env] if env else [])


