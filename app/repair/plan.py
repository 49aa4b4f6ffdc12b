"""Repair plans: what a repair will change, where, and from which source, before anything changes.

A plan is built from the diagnosis of one environment, is shown to the user (CLI `repair --plan`, the wizard's
plan page), and only then applied inside a journal transaction. Each action is a class with `plan()` and
`apply()`; part 2 (downloads, the VC++ installer) adds actions and sources, not another path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.i18n import LANGUAGES, words
from app.repair.changes.packages import PackageSet
from app.system.base import System


class PlanRefused(Exception):
    """The repair cannot be done as asked: `reasons` say why, in en and zh_CN."""

    def __init__(self, reasons: list[dict[str, str]]) -> None:
        super().__init__(reasons[0]["en"] if reasons else "refused")
        self.reasons = reasons

    def text(self, lang: str) -> str:
        return "\n".join(reason[lang] for reason in self.reasons)


@dataclass
class Change:
    """One thing the repair changes: a file (created or replaced) or one of the user's settings."""

    kind: str  # "create-file", "replace-file", "set-variable", "delete-variable"
    target: str  # as the user knows it: a Windows path, or a variable name
    source: Optional[str] = None  # where the new content comes from (a Windows path), for files
    value: Optional[str] = None  # the new value, for settings
    host_target: Optional[Path] = None
    host_source: Optional[Path] = None
    data_type: Optional[str] = None  # set-machine-value: the registry type written (REG_DWORD, REG_EXPAND_SZ)
    size: Optional[int] = None  # a file's size, where the plan knows it (what a summary of many files adds up)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "target": self.target, "source": self.source, "value": self.value}


@dataclass
class Plan:
    action: str
    source: Optional[str]
    environment: str
    changes: list[Change] = field(default_factory=list)
    needs_admin: bool = False
    download_bytes: int = 0
    notes: list[dict[str, str]] = field(default_factory=list)  # plain words, en and zh_CN
    packages: Optional[PackageSet] = None  # upgrade-torch, match-companions: versions before and after, pip's index
    download: dict = field(default_factory=dict)  # the action's own record of where its files come from
    downloads: bool = False  # something is fetched from the internet when it is applied (download_bytes: how much)

    @property
    def runs_installer(self) -> bool:
        """It starts Microsoft's installer: what that installs stays, however the repair ends."""
        return runs_installer(self.to_dict())

    def to_dict(self) -> dict:
        return {"action": self.action, "source": self.source, "environment": self.environment,
                "changes": [c.to_dict() for c in self.changes], "needs_admin": self.needs_admin,
                "download_bytes": self.download_bytes, "notes": self.notes,
                "packages": self.packages.to_dict() if self.packages is not None else {},
                "download": self.download, "downloads": self.downloads}


INSTALLER_CHANGES = ("install-runtime", "install-runtime-file")  # Microsoft's installer, downloaded or given


def runs_installer(plan: dict) -> bool:
    """Whether a plan, as a transaction records it (`Plan.to_dict`), starts Microsoft's installer."""
    return any(change.get("kind") in INSTALLER_CHANGES for change in plan.get("changes") or [])


def cannot_here(system: System, key: str, **values: object) -> dict[str, str]:
    """Why a repair cannot run on this System: a copied drive's words, or the demo computer's (it is not one)."""
    return said(key + (".demo" if getattr(system, "is_demo", False) else ""), **values)


def said(key: str, **values: object) -> dict[str, str]:
    return {lang: words(key, lang, **values) for lang in LANGUAGES}
