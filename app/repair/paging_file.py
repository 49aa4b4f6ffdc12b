"""`paging-file-system-managed`: let Windows manage the paging file size (PagingFiles = `?:\\pagefile.sys`).

`?:\\pagefile.sys` is what "Automatically manage paging file size for all drives" writes and what Windows is
installed with: Windows chooses the drive and grows the file as the commit charge needs (up to 3 x RAM, into the
drive's free space). It is chosen over `C:\\pagefile.sys 0 0` (system-managed on C: only), which would move a paging
file the user had put on another drive, because the system drive is often the full one.

The change is one machine value, written by Windows' reg.exe started elevated and journalled (undo writes the value
before back the same way); in a copied drive, registry.json directly. Windows reads the setting only when it
starts, so the transaction notes that a restart is needed, and the plan says so first.
"""

from __future__ import annotations

from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.inventory.paging import MEMORY_MANAGEMENT_KEY, PAGING_FILES, SYSTEM_MANAGED_ALL_DRIVES, parse_paging_files
from app.probes.finding import Finding
from app.repair.changes.machine_values import SetMachineValue
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.system.base import RegistryValue, System

SYSTEM_MANAGED_SETTING = [SYSTEM_MANAGED_ALL_DRIVES]


class PagingFileSystemManaged:
    id = "paging-file-system-managed"
    sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if system.elevates_machine_changes and not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live.elevated", action=self.id)])
        current = system.registry_value(MEMORY_MANAGEMENT_KEY, PAGING_FILES)
        if current is None or current.type != "REG_MULTI_SZ":  # never guessed: undo must write back what was there
            raise PlanRefused([said("repair.refused.paging_file_unknown")])
        files = parse_paging_files(list(current.data))
        if files is None:  # in no form Windows writes: its undo could not write it back (changes/machine_values.py)
            raise PlanRefused([said("repair.refused.paging_file_unknown")])
        if files and all(f.system_managed for f in files):
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        before = "; ".join(e for e in current.data if e.strip()) or "-"
        change = Change("set-machine-value", f"{MEMORY_MANAGEMENT_KEY}\\{PAGING_FILES}",
                        value=SYSTEM_MANAGED_ALL_DRIVES, data_type="REG_MULTI_SZ")
        notes = [said("repair.note.paging_file_restart", before=before)]
        if system.elevates_machine_changes:
            notes.append(said("repair.note.machine_elevated"))
        return Plan(self.id, None, system.windows_path(env.python) if env else "", [change],
                    needs_admin=system.elevates_machine_changes, notes=notes)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        transaction.step(system, SetMachineValue(MEMORY_MANAGEMENT_KEY, PAGING_FILES,
                                                 RegistryValue("REG_MULTI_SZ", list(SYSTEM_MANAGED_SETTING))))
        transaction.note({"restart_needed": True, "reason": "paging-file",
                          "setting": list(SYSTEM_MANAGED_SETTING)})
