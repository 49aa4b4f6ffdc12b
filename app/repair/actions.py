"""Every repair by its id (the ids the findings name), and the aliases the CLI accepts."""

from __future__ import annotations

from app.repair.companions import MatchCompanions
from app.repair.duplicate_openmp import RemoveDuplicateOpenMP
from app.repair.guides import GUIDED_REPAIRS
from app.repair.names import ALIASES
from app.repair.paging_file import PagingFileSystemManaged
from app.repair.path_entry import TakeOutPathEntry
from app.repair.plan import EnableLongPaths, PlaceOpenMP, PlanRefused, UserSettings, said
from app.repair.restore_files import RestoreTorchFiles
from app.repair.runtime_copy import SetAsideRuntimeCopy
from app.repair.shadowing_torch import SetAsideShadowingTorch
from app.repair.upgrade import UpgradeTorch
from app.repair.vc_runtime import InstallVCRuntime

ACTIONS = {action.id: action for action in (PlaceOpenMP(), UpgradeTorch(), InstallVCRuntime(),
                                            UserSettings("unset-env-var"),
                                            UserSettings("remove-path-entry"), EnableLongPaths(),
                                            RestoreTorchFiles(), PagingFileSystemManaged(), RemoveDuplicateOpenMP(),
                                            MatchCompanions(), SetAsideRuntimeCopy(), SetAsideShadowingTorch(),
                                            TakeOutPathEntry(),
                                            *GUIDED_REPAIRS)}


def action_for(action_id: str):
    found = ACTIONS.get(ALIASES.get(action_id, action_id))
    if found is None:
        raise PlanRefused([said("repair.refused.unknown_action", action=action_id,
                                actions=", ".join([*ACTIONS, *ALIASES]))])
    return found
