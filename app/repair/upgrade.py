"""`upgrade-torch`: a known-bad torch build (2.4.0) to the nearest fixed release, with the environment's own
`python -m pip`, so the user's pip configuration (a mirror, a proxy) applies.

The build variant is kept: a CPU build stays on the user's own index; a CUDA build also looks at PyTorch's index
for that CUDA version (as an extra index, so the user's mirror still serves everything else). torchvision and
torchaudio, when installed, move with torch to the releases made together with it. The exact versions before
are recorded (and `pip freeze` beside them), so undo installs them again.
"""

from __future__ import annotations

from typing import Callable, Optional

from app.cancel import CancelToken
from app.engine.versions import matches
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.inventory.packages import installed_versions
from app.probes.finding import Finding
from app.repair.changes.packages import ChangePackages, PackageSet
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.resources import known_issues
from app.system.base import System

PYTORCH_INDEX = "https://download.pytorch.org/whl/cu{digits}"
PIP_TIMEOUT_S = 3600.0


def index_arguments(env: PythonEnvironment) -> list[str]:
    """pip arguments that keep the build variant: nothing for CPU (the user's index), PyTorch's CUDA index else."""
    cuda = env.torch.cuda if env.torch else None
    return ["--extra-index-url", PYTORCH_INDEX.format(digits=cuda.replace(".", ""))] if cuda else []


def same_build(release: str, installed: str) -> str:
    """The exact version of `release` in the build that is installed now: "2.4.1" for "2.4.0+cu121" is
    "2.4.1+cu121"; a CPU torchvision ("0.19.0", no label) beside a CUDA torch stays without one."""
    local = installed.partition("+")[2]
    return f"{release.partition('+')[0]}+{local}" if local else release


def package_set(env: PythonEnvironment, wanted: dict[str, str], *extra_index: str) -> PackageSet:
    """The change of those of `wanted` ({name: release}) that are installed, each kept in its own build."""
    before = installed_versions(env.site_packages, wanted)
    after = {name: same_build(wanted[name], version) for name, version in before.items()
             if same_build(wanted[name], version) != version}
    return PackageSet(str(env.python), str(env.site_packages), {n: before[n] for n in after}, after,
                      (*index_arguments(env), *extra_index))


class UpgradeTorch:
    id = "upgrade-torch"
    sources = ()

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        torch = env.torch
        build = next((b for b in known_issues()["builds"] if torch and matches(torch.release, b["torch"])), None)
        if torch is None or build is None:
            raise PlanRefused([said("repair.refused.not_known_bad", version=torch.version if torch else "-")])
        if not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live", action=self.id)])
        wanted = {"torch": build["fixed_in"], **build.get("companions", {})}
        change = package_set(env, wanted)
        # a program that has anything of torch loaded (ComfyUI left running) holds what pip must replace
        changes = [Change("upgrade-package", name, value=f"{change.before[name]} -> {version}",
                          host_target=torch.folder if name == "torch" else None)
                   for name, version in change.after.items()]
        return Plan(self.id, None, system.windows_path(env.python), changes, packages=change, downloads=True,
                    notes=[said("repair.note.pip", index=" ".join(index_arguments(env)) or "-")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        transaction.step(system, ChangePackages(plan.packages, on_output, token))
