"""A system-wide installer (Microsoft's vc_redist), started elevated itself. Recorded, never undone: other programs
share what it installs, so a rollback leaves it (the plan says so); its own uninstaller, or the restore point Windows
Installer makes when System Restore is on, removes it."""

from __future__ import annotations

from pathlib import Path

from app.repair.changes import INSTALLER
from app.system.base import System
from app.system.files import sha256_of


def prepare(system: System, arch: str, installer: Path) -> dict:
    argv = [system.windows_path(installer), "/install", "/quiet", "/norestart"]  # its own log: %TEMP% (vc_runtime)
    return {"op": INSTALLER, "arch": arch, "argv": argv, "sha256": sha256_of(installer), "shown": argv[0]}


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    return  # a shared, system-wide runtime stays


def targets(intent: dict) -> list:
    return []
