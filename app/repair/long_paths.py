"""`enable-long-paths`: Windows' own long-path setting, written by reg.exe elevated, undone the same way."""

from __future__ import annotations

from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import LONG_PATHS_KEY, MachineFacts
from app.probes.finding import Finding
from app.repair.changes.machine_values import SetMachineValue
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.system.base import RegistryValue, System


def apply_machine_change(system: System, transaction: Transaction, change: Change) -> None:
    key, _, name = change.target.rpartition("\\")
    data: object = int(change.value) if change.data_type in ("REG_DWORD", "REG_QWORD") else change.value
    transaction.step(system, SetMachineValue(key, name, RegistryValue(change.data_type or "REG_SZ", data)))


class EnableLongPaths:
    """`enable-long-paths`: LongPathsEnabled = 1 (HKLM FileSystem), through Windows' reg.exe started elevated; undo
    writes the value before back (0, or no value) the same way. In an image: registry.json directly."""

    id = "enable-long-paths"
    sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if system.elevates_machine_changes and not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live.elevated", action=self.id)])
        current = system.registry_value(LONG_PATHS_KEY, "LongPathsEnabled")
        if current is not None and current.data == 1:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        change = Change("set-machine-value", f"{LONG_PATHS_KEY}\\LongPathsEnabled", value="1", data_type="REG_DWORD")
        return Plan(self.id, None, system.windows_path(env.python) if env else "", [change],
                    needs_admin=system.elevates_machine_changes, notes=[said("repair.note.machine_elevated")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            apply_machine_change(system, transaction, change)
