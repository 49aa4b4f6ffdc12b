"""`match-companions`: the torchvision / torchaudio made for the installed torch, in place of the ones built for
another torch (`companion-mismatch`), with the environment's own `python -m pip`, so the user's pip settings apply.

torch itself is not touched: `--no-deps`, or pip would follow torchvision 0.20.1's `torch==2.5.1` when undo installs
it again. The build variant and the index are upgrade-torch's (a CUDA build's companions come from PyTorch's index
for that CUDA, as `+cu121` builds). The versions come from the release table (resources/known_issues.json,
`companion_releases`); one set of packages in one journalled step, which undo puts back, also half done.
"""

from __future__ import annotations

from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.inventory.packages import installed_versions
from app.probes.companions import CODE
from app.probes.evidence import CompanionMismatch
from app.probes.finding import Finding
from app.repair.changes.packages import ChangePackages
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.repair.upgrade import index_arguments, package_set
from app.system.base import System


class MatchCompanions:
    id = "match-companions"
    sources = ()

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        torch = env.torch
        before, after, mismatched = proposal(system, env, findings)
        if not after:
            named = ", ".join(f"{c.package} {c.version}" for c in map(CompanionMismatch.of, mismatched))
            raise PlanRefused([said("repair.refused.no_companion_fit", version=torch.version if torch else "-",
                                    packages=named or "-")])
        if not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live", action=self.id)])
        extensions = {c.package: c.extensions for c in map(CompanionMismatch.of, mismatched)}
        change = package_set(env, after, "--no-deps")
        changes = [Change("match-package", name, value=f"{change.before[name]} -> {version}",
                          host_target=_first_extension(system, extensions.get(name)))
                   for name, version in change.after.items()]
        index = index_arguments(env)
        return Plan(self.id, None, system.windows_path(env.python), changes, packages=change, downloads=True,
                    notes=[said("repair.note.companions", torch=torch.version, index=" ".join(index) or "-")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        transaction.step(system, ChangePackages(plan.packages, on_output, token))


def proposal(system: System, env: PythonEnvironment,
             findings: list[Finding]) -> tuple[dict[str, str], dict[str, str], list[Finding]]:
    """(versions now, versions made for the installed torch, the companion-mismatch findings) of the companions
    this environment's diagnosis found built for another torch, where the release table knows the fitting one."""
    if env.torch is None or env.site_packages is None:
        raise PlanRefused([said("repair.refused.no_torch")])
    mismatched = [f for f in findings if f.code == CODE and f.environment == system.windows_path(env.python)]
    wanted = {c.package: c.fits for c in map(CompanionMismatch.of, mismatched) if c.fits}
    now = installed_versions(env.site_packages, wanted)
    after = {name: version for name, version in wanted.items() if now.get(name) not in (None, version)}
    return {name: now[name] for name in after}, after, mismatched


def _first_extension(system: System, shown: Optional[list]):
    """The companion's first extension module on this computer: a program that has it loaded holds what pip
    must replace, so the repair names that program first."""
    for path in shown or []:
        host = system.host_path(path)
        if host is not None and host.exists():
            return host
    return None
