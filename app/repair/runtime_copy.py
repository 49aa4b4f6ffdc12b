"""An old VC++ runtime that Windows finds before System32's, beside python.exe (probes/vc_runtime.py, the
`vc-runtime-too-old@copy-*` findings). Reinstalling the redistributable cannot help while that copy comes first.

- `set-aside-runtime-copy`: no package's record lists the copy, so nothing would put it back and nothing owns it:
  msvcp140.dll and the runtime files of the same age beside it are renamed in place
  (`<name>.set-aside-by-torch-dll-doctor`, journalled, never deleted; undo names them back), and Windows then loads
  System32's. Refused while System32's own copy is missing or too old (install the runtime first), and never
  vcruntime140*.dll: python.exe loaded its own at start.
- `update-runtime-copy` (guided, app/repair/guides.py): conda or pip owns the copy; that package manager updates it.
"""

from __future__ import annotations

from typing import Optional

from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts, file_version
from app.probes.evidence import VcRuntimeCopy
from app.probes.finding import Finding
from app.probes.vc_runtime import SET_ASIDE_COPY, old_siblings
from app.repair.plan import Plan, PlanRefused, said
from app.repair.set_aside import SetAside, rename_changes
from app.system.base import System


class SetAsideRuntimeCopy(SetAside):
    id = SET_ASIDE_COPY

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if source is not None:
            raise PlanRefused([said("repair.refused.unknown_source", source=source, sources="-")])
        named = next((f for f in findings if f.code == "vc-runtime-too-old" and self.id in f.repairs), None)
        if named is None:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        copy = VcRuntimeCopy.of(named)
        host = system.host_path(copy.path or "")
        if host is None or not host.is_file() or file_version(host) != copy.found:
            raise PlanRefused([said("repair.refused.openmp_changed", path=copy.path or "-")])
        if env.app_folder is None or str(host.parent).casefold() != str(env.app_folder).casefold():
            raise PlanRefused([said("repair.refused.runtime_copy_elsewhere", path=copy.path)])
        if not copy.system_ok:  # System32's copy would be loaded next: it must be new enough first
            raise PlanRefused([said("repair.refused.runtime_copy_system_old", needed=copy.needed,
                                    version=copy.system_version or "-")])
        old = old_siblings(env, host, copy.needed)
        if sorted(p.name for p in old) != sorted(copy.set_aside):  # changed since the check
            raise PlanRefused([said("repair.refused.openmp_changed", path=copy.folder or "-")])
        changes = rename_changes(system, old)
        notes = [said("repair.note.runtime_copy.set_aside", folder=copy.folder or "-",
                      names=", ".join(p.name for p in old), found=copy.found,
                      system=copy.system_version or "-")]
        return Plan(self.id, None, system.windows_path(env.python), changes, notes=notes)
