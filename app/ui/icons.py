"""The app's icons, drawn in resources/icons/ (SVG), loaded once."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon

from app.probes.finding import BLOCKER, INFO, WARNING
from app.resources import resources_folder

NAMES = ("app", "ok", "problem", "warning", "info", "running", "waiting", "path", "unknown")


@cache
def icon(name: str) -> QIcon:
    if name not in NAMES:
        raise KeyError(name)
    return QIcon(str(resources_folder() / "icons" / f"{name}.svg"))


SEVERITY_ICON = {BLOCKER: "problem", WARNING: "warning", INFO: "info"}
