"""`set-aside-shadowing-torch`: a torch that `pip install --user` put into the user's own site-packages, which
`import torch` gets before the environment's own (torch-shadowed@user-site). Its distribution (the folders its
installed RECORD lists at the top of the user site: `torch`, `torchgen`, `functorch`, its dist-info) is set aside,
renamed in place to `<name>.set-aside-by-torch-dll-doctor`: Python can no longer import it, pip no longer lists it,
and undo names it back exactly as it was. A copy without a RECORD (an install cut short: pip writes it last) has
only its `torch` folder set aside. Only folders directly inside the user site are ever renamed."""

from __future__ import annotations

import contextlib
import csv
from pathlib import Path
from typing import Optional

from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import RecordFolders, installed_record, read_record
from app.inventory.machine import MachineFacts
from app.probes.evidence import TorchShadowed
from app.probes.finding import Finding
from app.probes.python_loading import SET_ASIDE_TORCH
from app.repair.plan import Plan, PlanRefused, said
from app.repair.set_aside import SetAside, rename_changes
from app.system.base import System
from app.system.folders import child


def distribution_folders(site: Path) -> list[Path]:
    """The top-level folders of the torch installed in `site` (its RECORD's first path parts, confined to `site`),
    its dist-info included; [] without a RECORD."""
    record = installed_record(site)
    if record is None:
        return []
    names = {record.parent.name.lower(): record.parent}
    with contextlib.suppress(OSError, csv.Error, ValueError):
        for entry in read_record(record, prefix=""):
            if RecordFolders.inside(entry.path) and "/" in entry.path:
                top = child(site, entry.path.split("/", 1)[0])
                if top is not None and top.is_dir() and not top.is_symlink():
                    names.setdefault(top.name.lower(), top)
    return sorted(names.values(), key=lambda p: p.name.lower())


class SetAsideShadowingTorch(SetAside):
    id = SET_ASIDE_TORCH

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if source is not None:
            raise PlanRefused([said("repair.refused.unknown_source", source=source, sources="-")])
        named = next((f for f in findings if f.code == "torch-shadowed" and self.id in f.repairs), None)
        loading = env.loading if env is not None else None
        if named is None or loading is None or loading.user_site is None:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        shadow = TorchShadowed.of(named)
        folder = system.host_path(shadow.folder or "")
        site = loading.user_site
        if folder is None or not folder.is_dir() or folder.parent.resolve() != site.resolve():
            raise PlanRefused([said("repair.refused.shadow.not_user_site", folder=shadow.folder or "-",
                                    site=system.windows_path(site))])
        folders = distribution_folders(site)
        if not any(f.name.lower() == "torch" for f in folders):  # no record of that copy (pip writes RECORD last,
            folders = [folder]  # so an install cut short has none): the `torch` folder, which import gets, alone
        changes = rename_changes(system, folders)
        notes = [said("repair.note.shadow.set_aside", site=system.windows_path(site),
                      names=", ".join(p.name for p in folders), version=shadow.version or "-",
                      other=shadow.other_folder or "-", other_version=shadow.other_version or "-")]
        return Plan(self.id, None, system.windows_path(env.python), changes, notes=notes)
