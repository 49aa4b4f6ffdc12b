"""Where the app keeps what it writes for itself: the repairs' journal and backups, the wizard's log, the demo
computer. One folder per user, never beside the program (a signed .exe in Program Files cannot write there)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_FOLDER = "TorchDllDoctor"


def data_folder() -> Path:
    """TDD_DATA_DIR, else the per-user data folder, where platformdirs' `user_data_dir("TorchDllDoctor",
    appauthor=False)` puts it (a test checks they agree). Written with the standard library because `diagnose`,
    which looks for interrupted repairs, runs in the user's own Python."""
    override = os.environ.get("TDD_DATA_DIR")
    if override:
        return Path(override)
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / APP_FOLDER
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_FOLDER
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    return Path(xdg if xdg else Path.home() / ".local" / "share") / APP_FOLDER
