"""Repair plans: what a repair will change, where, and from which source, before anything changes.

A plan is built from the diagnosis of one environment, is shown to the user (CLI `repair --plan`, the wizard's
plan page), and only then applied inside a journal transaction. Each action is a class with `plan()` and
`apply()`; part 2 (downloads, the VC++ installer) adds actions and sources, not another path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import LIBOMP140, MachineFacts
from app.probes.finding import Finding
from app.repair.changes.packages import PackageSet
from app.repair.journal import Transaction
from app.repair.openmp_candidate import check_candidate, refusal_text
from app.resources import download_catalog
from app.sources.pip_settings import read_pip_settings
from app.system.base import RegistryValue, System
from app.system.folders import child


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

    def to_dict(self) -> dict:
        return {"action": self.action, "source": self.source, "environment": self.environment,
                "changes": [c.to_dict() for c in self.changes], "needs_admin": self.needs_admin,
                "download_bytes": self.download_bytes, "notes": self.notes,
                "packages": self.packages.to_dict() if self.packages is not None else {},
                "download": self.download, "downloads": self.downloads}


def cannot_here(system: System, key: str, **values: object) -> dict[str, str]:
    """Why a repair cannot run on this System: a copied drive's words, or the demo computer's (it is not one)."""
    return said(key + (".demo" if getattr(system, "is_demo", False) else ""), **values)


def said(key: str, **values: object) -> dict[str, str]:
    return {lang: words(key, lang, **values) for lang in LANGUAGES}


class PlaceOpenMP:
    """`place-libomp140`: an OpenMP runtime into this environment's torch\\lib as libomp140.x86_64.dll.
    Sources, best first: the user's own Visual Studio copy, the Intel runtime torch ships, then Intel's runtime
    downloaded from the user's package index (resources/catalog.json: a pinned, signed build)."""

    id = "place-libomp140"
    sources = ("vs", "torch-bundled", "intel-openmp")

    def candidates(self, system: System, env: PythonEnvironment, machine: MachineFacts) -> dict[str, list[Path]]:
        lib = child(env.torch.folder, "lib") if env.torch else None
        bundled = child(lib, "libiomp5md.dll") if lib else None
        return {"vs": [p for vs in machine.visual_studio for p in vs.libomp140],
                "torch-bundled": [bundled] if bundled else []}

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if env.torch is None or child(env.torch.folder, "lib") is None:
            raise PlanRefused([said("repair.refused.no_torch")])
        lib = child(env.torch.folder, "lib")
        if source is not None and source not in self.sources:
            raise PlanRefused([said("repair.refused.unknown_source", source=source,
                                     sources=", ".join(self.sources))])
        found = self.candidates(system, env, machine)
        refusals: list[dict[str, str]] = []
        for name in [source] if source else self.sources:
            if name == "intel-openmp":  # checked when it arrives: pinned hash, Intel's signature, the same check
                settings = read_pip_settings(system, env.exec_prefix)
                if not settings.indexes:  # only HTTPS indexes are used: not offered, and said why
                    refusals.append(said("download.error.index-not-https", url=", ".join(settings.skipped_indexes)))
                    continue
                skipped = [said("repair.note.index_skipped", url=url, next=settings.indexes[0])
                           for url in settings.skipped_indexes]
                target = lib / LIBOMP140
                existing = child(lib, LIBOMP140)
                entry = download_catalog()["intel_openmp"]
                change = Change("replace-file" if existing else "create-file", system.windows_path(target),
                                f"{entry['package']} {entry['version']}", host_target=existing or target)
                return Plan(self.id, name, system.windows_path(env.python), [change],
                            download_bytes=entry["member_download_bytes"], downloads=True,
                            download={"pip_prefix": str(env.exec_prefix)},
                            notes=[said("repair.note.source.intel"), *skipped])
            for path in found[name]:
                check = check_candidate(path, lib)
                if check.ok:
                    target = lib / LIBOMP140
                    existing = child(lib, LIBOMP140)
                    change = Change("replace-file" if existing else "create-file", system.windows_path(target),
                                    system.windows_path(path), host_target=existing or target, host_source=path)
                    return Plan(self.id, name, system.windows_path(env.python), [change],
                                notes=[said(f"repair.note.source.{name}")])
                for refusal in check.reasons:
                    refusals.append({lang: words("repair.refused.candidate", lang, path=system.windows_path(path),
                                                 reason=refusal_text(refusal, lang)) for lang in LANGUAGES})
        if not refusals:
            raise PlanRefused([said("repair.refused.no_source", source=source or "-")])
        raise PlanRefused(refusals)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            source, digest = change.host_source, None
            if source is None:  # intel-openmp: download, verify, check, then place like any other source
                from app.sources.intel_openmp import fetch_runtime

                settings = read_pip_settings(system, Path(plan.download["pip_prefix"]))
                source, facts = fetch_runtime(system, settings, transaction.folder / "downloads",
                                              progress=on_progress, token=token)
                transaction.note({"kind": "downloaded", **facts})
                check = check_candidate(source, change.host_target.parent)
                if not check.ok:
                    raise PlanRefused([{lang: refusal_text(check.reasons[0], lang) for lang in LANGUAGES}])
                digest = facts["sha256"]  # the pinned hash it was just checked against
            transaction.put_file(system, change.host_target, source, sha256=digest)


class UserSettings:
    """`unset-env-var` and `remove-path-entry`: the user's own settings (HKCU) that the diagnosis named."""

    def __init__(self, action: str) -> None:
        self.id = action
        self.sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        user = {k.lower(): (k, v) for k, v in system.environment("user").items()}
        changes: list[Change] = []
        notes: list[dict[str, str]] = []
        for finding in findings:
            if not (self.id in finding.repairs or _asks_for_machine_setting(self.id, finding)):
                continue
            if self.id == "unset-env-var":
                name = finding.evidence.get("variable", "")
                if name.lower() in user:
                    changes.append(Change("delete-variable", user[name.lower()][0]))
                else:
                    notes.append(said("repair.note.machine_setting", name=name))
            else:
                entry = finding.evidence.get("entry", "")
                path = user.get("path")
                entries = [e for e in (path[1].split(";") if path else []) if e.strip()]
                same = [i for i, e in enumerate(entries) if _same_folder(system, e, entry)]
                if finding.code == "path-duplicate-entry":
                    same = same[1:]  # the first stays
                kept = [e for i, e in enumerate(entries) if i not in same]
                if path and same:
                    changes.append(Change("set-variable", path[0], value=";".join(kept)))
                    user["path"] = (path[0], ";".join(kept))
                else:  # the machine PATH: its undo could not be held to a value of ours (changes/machine_values.py)
                    notes.append(said("repair.note.machine_path", entry=entry))
        if not changes:
            raise PlanRefused(notes or [said("repair.refused.nothing_to_do", action=self.id)])
        merged: dict[str, Change] = {c.target.lower(): c for c in changes}  # one change per variable, the last
        return Plan(self.id, None, system.windows_path(env.python) if env else "", list(merged.values()),
                    notes=notes)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            transaction.set_user_variable(system, change.target, change.value)


def _asks_for_machine_setting(action: str, finding: Finding) -> bool:
    """A finding about the computer's own settings, which names no per-user repair (or the guided machine one): asked
    for this repair by name, the plan says why it leaves it alone (repair.note.machine_*), never "nothing to do"."""
    if action == "remove-path-entry":
        return finding.code in ("path-dead-entry", "path-duplicate-entry")
    return action == "unset-env-var" and "unset-machine-variable" in finding.repairs and "variable" in finding.evidence


LONG_PATHS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"


def apply_machine_change(system: System, transaction: Transaction, change: Change) -> None:
    key, _, name = change.target.rpartition("\\")
    data: object = int(change.value) if change.data_type in ("REG_DWORD", "REG_QWORD") else change.value
    transaction.set_machine_value(system, key, name, RegistryValue(change.data_type or "REG_SZ", data))


class EnableLongPaths:
    """`enable-long-paths`: LongPathsEnabled = 1 (HKLM FileSystem), through Windows' reg.exe started elevated; undo
    writes the value before back (0, or no value) the same way. In an image: registry.json directly."""

    id = "enable-long-paths"
    sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if system.elevates_machine_changes and not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live.elevated", action=self.id)])
        current = system.registry_value(LONG_PATHS_KEY, "LongPathsEnabled")
        if current is not None and current.data == 1:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        change = Change("set-machine-value", f"{LONG_PATHS_KEY}\\LongPathsEnabled", value="1", data_type="REG_DWORD")
        return Plan(self.id, None, system.windows_path(env.python) if env else "", [change],
                    needs_admin=system.elevates_machine_changes, notes=[said("repair.note.machine_elevated")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            apply_machine_change(system, transaction, change)


def _same_folder(system: System, a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return system.expand(text.strip().strip('"')).rstrip("\\").lower()

    return norm(a) == norm(b)
