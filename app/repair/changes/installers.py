"""A system-wide installer (Microsoft's vc_redist), started elevated itself. Recorded, never undone: other programs
share what it installs, so a rollback leaves it (the plan says so); its own uninstaller, or the restore point Windows
Installer makes when System Restore is on, removes it."""

from __future__ import annotations

from pathlib import Path

from app.inventory.machine import installed_runtime
from app.repair.changes import INSTALLER
from app.system.base import System
from app.system.files import sha256_of


def prepare(system: System, arch: str, installer: Path) -> dict:
    """The installer's command line and hash, and the runtime the registry names before it runs ("before")."""
    argv = [system.windows_path(installer), "/install", "/quiet", "/norestart"]  # its own log: %TEMP% (vc_runtime)
    return {"op": INSTALLER, "arch": arch, "argv": argv, "sha256": sha256_of(installer), "shown": argv[0],
            "before": installed_runtime(system, arch)}


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
