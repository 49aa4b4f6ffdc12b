"""A system-wide installer (Microsoft's vc_redist), started elevated itself. Recorded, never undone: other programs
share what it installs, so a rollback leaves it (the plan says so); its own uninstaller, or the restore point Windows
Installer makes when System Restore is on, removes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from app.inventory.machine import installed_runtime
from app.repair.changes import INSTALLER
from app.system.base import System
from app.system.files import sha256_of


def kept_runtimes(system: System, transaction) -> str:
    """What the transaction's installers left installed, as the registry says it is now ("x64 14.44.35211.0"):
    each architecture whose runtime differs from the one recorded before the installer ran (a Stop while it ran
    lets it finish, so a repair stopped or undone may still leave it). "" when none did, or none ran."""
    kept = []
    for step in transaction.steps():
        intent = step.intent
        if intent.get("op") != INSTALLER:
            continue
        now = installed_runtime(system, intent["arch"])
        changed = now != intent["before"] if "before" in intent else step.applied  # journals before "before"
        if now is not None and changed:
            kept.append(f"{intent['arch']} {now}")
    return ", ".join(dict.fromkeys(kept))


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    return  # a shared, system-wide runtime stays


def targets(intent: dict) -> list:
    return []


@dataclass(frozen=True)
class RunInstaller:
    """Run a system-wide installer (Microsoft's, elevated) through `runner` (argv -> exit code, outcome). Recorded,
    but never undone."""

    arch: str
    installer: Path
    runner: Callable[[list[str]], tuple[int, str]]
    op = INSTALLER

    def prepare(self, system: System, transaction, number: int) -> dict:
        """The installer's command line and hash, and the runtime the registry names before it runs ("before")."""
        argv = [system.windows_path(self.installer), "/install", "/quiet", "/norestart"]  # its log: %TEMP%
        return {"op": INSTALLER, "arch": self.arch, "argv": argv, "sha256": sha256_of(self.installer),
                "shown": argv[0], "before": installed_runtime(system, self.arch)}

    def apply(self, system: System, transaction, intent: dict) -> dict:
        code, outcome = self.runner(intent["argv"])
        return {"exit_code": code, "outcome": outcome}

    undo = staticmethod(undo)
    targets = staticmethod(targets)
