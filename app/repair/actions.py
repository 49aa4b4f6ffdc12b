"""Every repair by its id (the ids the findings name), and the aliases the CLI accepts; and the one shape every
repair has (`RepairAction`)."""

from __future__ import annotations

from typing import Callable, Optional, Protocol

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.probes.finding import Finding
from app.repair.companions import MatchCompanions
from app.repair.dll_package import InstallDllPackage
from app.repair.duplicate_openmp import RemoveDuplicateOpenMP
from app.repair.guides import GUIDED_REPAIRS
from app.repair.journal import Transaction
from app.repair.long_paths import EnableLongPaths
from app.repair.names import ALIASES
from app.repair.paging_file import PagingFileSystemManaged
from app.repair.path_entry import TakeOutPathEntry
from app.repair.place_openmp import PlaceOpenMP
from app.repair.plan import Plan, PlanRefused, said
from app.repair.restore_files import RestoreTorchFiles
from app.repair.runtime_copy import SetAsideRuntimeCopy
from app.repair.shadowing_torch import SetAsideShadowingTorch
from app.repair.upgrade import UpgradeTorch
from app.repair.user_settings import UserSettings
from app.repair.vc_runtime import InstallVCRuntime
from app.system.base import System


class RepairAction(Protocol):
    """A repair: `plan` says what it would change, before anything changes (PlanRefused: why it cannot); `apply`
    makes that plan's changes, each one a step of the transaction (app/repair/changes/), and tells `on_output` the
    lines a step prints and `on_progress` a download's progress. A guided repair's plan is steps for the person,
    and its `apply` is never called."""

    id: str
    sources: tuple[str, ...]  # the --source values it accepts, best first

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan: ...

    def apply(self, system: System, plan: Plan, transaction: Transaction, on_output: Callable[[str], None],
              on_progress: Callable[[object], None], token: Optional[CancelToken]) -> None: ...


ACTIONS: dict[str, RepairAction] = {action.id: action for action in (PlaceOpenMP(), UpgradeTorch(), InstallVCRuntime(),
                                            UserSettings("unset-env-var"),
                                            UserSettings("remove-path-entry"), EnableLongPaths(),
                                            RestoreTorchFiles(), PagingFileSystemManaged(), RemoveDuplicateOpenMP(),
                                            MatchCompanions(), InstallDllPackage(), SetAsideRuntimeCopy(),
                                            SetAsideShadowingTorch(),
                                            TakeOutPathEntry(),
                                            *GUIDED_REPAIRS)}


def action_for(action_id: str) -> RepairAction:
    found = ACTIONS.get(ALIASES.get(action_id, action_id))
    if found is None:
        raise PlanRefused([said("repair.refused.unknown_action", action=action_id,
                                actions=", ".join([*ACTIONS, *ALIASES]))])
    return found
