"""`remove-duplicate-openmp`: the second copy of torch's OpenMP runtime (conda's `Library\\bin\\libiomp5md.dll`, say)
is set aside: renamed in place to `<name>.set-aside-by-torch-dll-doctor`, journalled, never deleted, so undo names it
back. torch's own copy (torch\\lib) is the one kept: torch loads it by its full path whatever else is there, so it
is the one copy that can stay. The plan says which package put the other copy there, which packages use it, and
what follows for them; and it offers the lasting alternative (one channel for torch and the rest).

Never KMP_DUPLICATE_LIB_OK: it lets both runtimes run, which hides wrong results instead of fixing anything.
"""

from __future__ import annotations

from typing import Optional

from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.probes.evidence import OpenMPConflict
from app.probes.finding import Finding
from app.probes.openmp import owner_name, package_owning
from app.repair.plan import Change, Plan, PlanRefused, said
from app.repair.set_aside import SetAside, rename_changes
from app.system.base import System
from app.system.files import sha256_of


class RemoveDuplicateOpenMP(SetAside):
    id = "remove-duplicate-openmp"

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        changes: list[Change] = []
        notes: list[dict[str, str]] = []
        seen: set[str] = set()
        for finding in findings:
            if finding.code != "openmp-conflict" or self.id not in finding.repairs:
                continue
            conflict = OpenMPConflict.of(finding)
            other = conflict.other_copy
            if not isinstance(other, dict) or not other:
                continue
            host = system.host_path(str(other.get("path") or ""))
            if host is None or not host.is_file() or str(host).lower() in seen:
                continue
            seen.add(str(host).lower())
            if sha256_of(host) != other.get("sha256"):  # changed since the diagnosis: diagnose again first
                raise PlanRefused([said("repair.refused.openmp_changed", path=other["path"])])
            (change,) = rename_changes(system, [host])
            changes.append(change)
            torch_copy = conflict.torch_copy
            notes.append(said("repair.note.openmp.keeps", torch=torch_copy.get("path") or "-",
                              version=torch_copy.get("version") or "-", other=other["path"],
                              other_version=other.get("version") or "-", name=change.value))
            notes.append(self._consequence(package_owning(env, host)))
        if not changes:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        notes.append(said("repair.note.openmp.alternative", python=system.windows_path(env.python)))
        return Plan(self.id, None, system.windows_path(env.python), changes, notes=notes)

    @staticmethod
    def _consequence(owner: Optional[dict]) -> dict[str, str]:
        """What follows for the package that put the copy there, and for the packages that use it."""
        named = owner_name(owner)
        if owner is None:
            return {lang: words("repair.note.openmp.no_owner", lang) for lang in LANGUAGES}
        users = ", ".join(owner.get("used_by") or []) or "-"
        key = f"repair.note.openmp.owner.{owner['manager']}"
        return {lang: words(key, lang, owner=named[lang], package=owner["package"], users=users)
                for lang in LANGUAGES}
