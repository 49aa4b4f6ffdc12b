"""Running a repair: diagnose the environment, plan, check that no program holds the files, apply the plan inside a
journal transaction, then diagnose again; and undoing one. The CLI and the wizard both call these."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, Optional, Union

from app.cancel import CancelToken
from app.i18n import words
from app.inventory.environment import PythonEnvironment, inspect_environment
from app.probes.runner import BLIND, Diagnosis, not_seen, run_diagnosis
from app.repair.actions import action_for
from app.repair.changes.installers import kept_runtimes
from app.repair.in_use import processes_using
from app.repair.journal import ROLLED_BACK, Journal, NewerRepairFirst, RollbackStopped, Transaction
from app.repair.plan import Plan
from app.system.base import System
from app.system.offline import OfflineImage


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


def machine_of(system: System) -> dict:
    """Which computer a transaction belongs to: this one, or a copied drive (by its folder)."""
    if isinstance(system, OfflineImage):
        return {"kind": "image", "root": str(system.root)}
    return {"kind": "live"}


def system_for(machine: dict, owner_window: int = 0) -> System:
    """The computer a transaction belongs to; `owner_window`: the window Windows' permission prompt belongs to
    (the wizard's), so an undo's prompt is not a flashing taskbar button behind it."""
    if machine.get("kind") == "image":
        return OfflineImage(Path(machine["root"]))
    from app.system.live import LiveWindows  # only on Windows

    system = LiveWindows()
    system.owner_window = owner_window
    return system


def diagnose_environment(system: System, env: PythonEnvironment) -> Diagnosis:
    return run_diagnosis(system, [env])


@dataclass
class RepairOutcome:
    plan: Plan
    transaction: Transaction
    before: Diagnosis
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
    names = [f.evidence.get("check") for f in diagnosis.findings if f.code in BLIND]
    spelled = [n.get(lang) or n.get("en") if isinstance(n, dict) else str(n) for n in names if n]
    return ", ".join(dict.fromkeys(spelled))


def plan_repair(system: System, env: PythonEnvironment, action: str, source: Optional[str] = None,
                diagnosis: Optional[Diagnosis] = None) -> tuple[Plan, Diagnosis]:
    diagnosis = diagnosis or diagnose_environment(system, env)
    plan = action_for(action).plan(system, env, diagnosis.machine, diagnosis.findings, source)
    return plan, diagnosis


def apply_plan(system: System, env: PythonEnvironment, plan: Plan, diagnosis: Diagnosis,
               journal: Optional[Journal] = None, on_step: Callable[[RunStep], None] = lambda s: None,
               on_output: Callable[[str], None] = lambda line: None, on_progress=None,
               token: Optional[CancelToken] = None) -> RepairOutcome:
    """Apply a confirmed plan. One repair or undo at a time (RepairBusy); files a running program holds are refused
    before anything changes (FilesInUse). Cancelling `token` stops the step under way (a download, pip, the
    installer) and rolls everything back. An error raised after the transaction began carries it as
    `error.transaction`."""
    journal = journal or Journal()
    with journal.exclusive(plan.action):
        if system.can_run_programs:
            held = processes_using([c.host_target for c in plan.changes if c.host_target is not None])
            if held:
                raise FilesInUse(held)
        transaction = journal.begin(machine_of(system), plan.action, plan.source, plan.environment,
                                    plan.to_dict())
        try:
            return _apply(system, env, plan, diagnosis, transaction, on_step, on_output, on_progress, token)
        except BaseException as error:
            error.transaction = transaction  # type: ignore[attr-defined]
            # the journal's word, never assumed: its rollback did not finish (a journal that could not be written, a
            # failure after the last step), so its changes stay, recorded (a stopped rollback says so itself)
            error.changes_left = (None if transaction.state == ROLLED_BACK or isinstance(error, RollbackStopped)
                                  else transaction.id)  # type: ignore[attr-defined]
            error.left_installed = left_installed(system, transaction)  # type: ignore[attr-defined]
            error.restart_needed = transaction.restart_needed  # type: ignore[attr-defined] # a stopped 3010
            raise
        finally:
            transaction.release()


def _apply(system: System, env: PythonEnvironment, plan: Plan, diagnosis: Diagnosis, transaction: Transaction,
           on_step: Callable[[RunStep], None], on_output: Callable[[str], None], on_progress,
           token: Optional[CancelToken]) -> RepairOutcome:
    on_step(RunStep.APPLYING)
    try:
        action_for(plan.action).apply(system, plan, transaction, on_output, on_progress, token)
        if token is not None:
            token.check()  # cancelled after the last step: rolled back all the same
    except BaseException:
        on_step(RunStep.ROLLING_BACK)
        transaction.rollback(system)  # a step failed (disk full, denied, cancelled): nothing stays half done
        raise
    on_step(RunStep.VERIFYING)
    refreshed = inspect_environment(system, env.python) or env
    after = diagnose_environment(system, refreshed)
    if token is not None and token.cancelled:  # Stop (Ctrl+C) while it checked again: put back, as Stop promises
        on_step(RunStep.ROLLING_BACK)
        transaction.rollback(system)
        token.check()
    left = [p for p in after.problems if p.severity == "blocker"]
    outcome = RepairOutcome(plan, transaction, diagnosis, after, left)
    transaction.finish({"state": outcome.state.value, "problems_left": [p.lead.code for p in left]})
    return outcome


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
    with journal.exclusive(f"undo {transaction.id}"):
        transaction.hold()
        try:
            newer = journal.newer_on_same_files(transaction)
            if newer is not None:
                raise NewerRepairFirst(transaction.id, newer)
            if system.can_run_programs:
                held = processes_using(transaction.targets())
                if held:
                    raise FilesInUse(held)
            transaction.rollback(system)
        finally:
            transaction.release()
    try:  # the undo is done and recorded: a check after it that cannot look says so, never "the undo failed"
        python = system.host_path(transaction.begin.get("environment") or "")
        env = inspect_environment(system, python) if python is not None and python.exists() else None
    except Exception as error:  # noqa: BLE001 - denied, damaged: what the check could not see is named
        diagnosis = run_diagnosis(system, [])
        not_seen(diagnosis, "environment", {"error": getattr(error, "strerror", None) or str(error) or
                                            type(error).__name__, "environment": transaction.begin.get("environment")})
        return diagnosis
    return run_diagnosis(system, [env] if env else [])


