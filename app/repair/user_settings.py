"""`unset-env-var` and `remove-path-entry`: the user's own settings (HKCU) that the diagnosis named."""

from __future__ import annotations

from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.probes.evidence import PathEntry, named_variable
from app.probes.finding import Finding
from app.repair.changes.user_settings import SetUserVariable
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, said
from app.system.base import System


class UserSettings:
    """`unset-env-var` and `remove-path-entry`: the user's own settings (HKCU) that the diagnosis named."""

    def __init__(self, action: str) -> None:
        self.id = action
        self.sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        user = {k.lower(): (k, v) for k, v in system.environment("user").items()}
        changes: list[Change] = []
        notes: list[dict[str, str]] = []
        for finding in findings:
            if not (self.id in finding.repairs or _asks_for_machine_setting(self.id, finding)):
                continue
            if self.id == "unset-env-var":
                name = named_variable(finding) or ""
                if name.lower() in user:
                    changes.append(Change("delete-variable", user[name.lower()][0]))
                else:
                    notes.append(said("repair.note.machine_setting", name=name))
            else:
                entry = PathEntry.of(finding).entry
                path = user.get("path")
                entries = [e for e in (path[1].split(";") if path else []) if e.strip()]
                same = [i for i, e in enumerate(entries) if _same_folder(system, e, entry)]
                if finding.code == "path-duplicate-entry":
                    same = same[1:]  # the first stays
                kept = [e for i, e in enumerate(entries) if i not in same]
                if path and same:
                    changes.append(Change("set-variable", path[0], value=";".join(kept)))
                    user["path"] = (path[0], ";".join(kept))
                else:  # the machine PATH: its undo could not be held to a value of ours (changes/machine_values.py)
                    notes.append(said("repair.note.machine_path", entry=entry))
        if not changes:
            raise PlanRefused(notes or [said("repair.refused.nothing_to_do", action=self.id)])
        merged: dict[str, Change] = {c.target.lower(): c for c in changes}  # one change per variable, the last
        return Plan(self.id, None, system.windows_path(env.python) if env else "", list(merged.values()),
                    notes=notes)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            transaction.step(system, SetUserVariable(change.target, change.value))


def _asks_for_machine_setting(action: str, finding: Finding) -> bool:
    """A finding about the computer's own settings, which names no per-user repair (or the guided machine one): asked
    for this repair by name, the plan says why it leaves it alone (repair.note.machine_*), never "nothing to do"."""
    if action == "remove-path-entry":
        return finding.code in PathEntry.CODES
    return (action == "unset-env-var" and "unset-machine-variable" in finding.repairs
            and named_variable(finding) is not None)


def _same_folder(system: System, a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return system.expand(text.strip().strip('"')).rstrip("\\").lower()

    return norm(a) == norm(b)
