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
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, said
from app.resources import known_issues
from app.system.base import System

PYTORCH_INDEX = "https://download.pytorch.org/whl/cu{digits}"
PIP_TIMEOUT_S = 3600.0


def index_arguments(env: PythonEnvironment) -> list[str]:
    """pip arguments that keep the build variant: nothing for CPU (the user's index), PyTorch's CUDA index else."""
    cuda = env.torch.cuda if env.torch else None
    return ["--extra-index-url", PYTORCH_INDEX.format(digits=cuda.replace(".", ""))] if cuda else []


def pin(name: str, version: str, env: PythonEnvironment) -> str:
    """`torch==2.4.1`, or `torch==2.4.1+cu121` for a CUDA build (PyTorch's index names them so)."""
    cuda = env.torch.cuda if env.torch else None
    local = f"+cu{cuda.replace('.', '')}" if cuda and "+" not in version and name in ("torch", "torchvision",
                                                                                        "torchaudio") else ""
    return f"{name}=={version}{local}"


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
            raise PlanRefused([said("repair.refused.needs_live", action=self.id)])
        wanted = {"torch": build["fixed_in"], **build.get("companions", {})}
        before = installed_versions(env.site_packages, wanted)
        after = {name: version for name, version in wanted.items() if name in before}
        changes = [Change("upgrade-package", name, value=f"{before[name]} -> {after[name]}") for name in after]
        packages = {"python": str(env.python), "site_packages": str(env.site_packages), "before": before,
                    "after": after, "index": index_arguments(env),
                    "install": [pin(n, v, env) for n, v in after.items()],
                    "restore": [pin(n, v, env) for n, v in before.items()]}
        return Plan(self.id, None, system.windows_path(env.python), changes, packages=packages,
                    notes=[said("repair.note.pip", index=" ".join(index_arguments(env)) or "-")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        transaction.change_packages(system, plan.packages, on_output, token)
