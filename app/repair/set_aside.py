"""Setting aside: a file or folder renamed in place to `<name>.set-aside-by-torch-dll-doctor`, never deleted, so an
undo names it back (app/repair/changes/renames.py). What the three repairs that do it share: the names, the plan's
changes, and applying them one by one, cancellable between renames."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from app.cancel import CancelToken
from app.repair.changes.renames import RenameFile
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan
from app.system.base import System

SET_ASIDE = ".set-aside-by-torch-dll-doctor"


def set_aside_name(path: Path) -> Path:
    """Where `path` is set aside: beside it, `<name>.set-aside-by-torch-dll-doctor` (then `...-2`, `-3`, ... when an
    earlier one is still there)."""
    candidate = path.with_name(path.name + SET_ASIDE)
    number = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}{SET_ASIDE}-{number}")
        number += 1
    return candidate


def rename_changes(system: System, paths: Iterable[Path]) -> list[Change]:
    """The plan's changes that set these aside."""
    changes = []
    for path in paths:
        target = set_aside_name(path)
        changes.append(Change("rename-file", system.windows_path(path), value=target.name, host_target=path,
                              host_source=target))
    return changes


class SetAside:
    """A repair whose changes are all set-asides: applied one by one through the journal."""

    sources = ()

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            if token is not None:
                token.check()
            transaction.step(system, RenameFile(change.host_target, change.host_source))
