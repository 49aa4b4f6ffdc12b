"""The Microsoft Visual C++ runtime: installed? found where torch looks? new enough for this torch?"""

from __future__ import annotations

from typing import Iterator

from app.engine.versions import matches, version_tuple
from app.inventory.machine import CORE_VC_DLLS, file_version
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.resources import known_issues


def run(ctx: ProbeContext) -> Iterator[Finding]:
    loader = ctx.loader()
    dlls = ctx.torch_dlls()
    load_folder = dlls[0].parent if dlls else None
    resolved = {name: loader.resolve(name, load_folder) for name in CORE_VC_DLLS}
    absent = [name for name, found in resolved.items() if found.path is None]
    registry = [{"arch": e.arch, "view": e.view, "installed": e.installed, "version": e.version}
                for e in ctx.machine.vc_runtimes]
    in_system32 = {d.name for d in ctx.machine.runtime_dlls if d.folder == "System32"}
    if absent:
        yield ctx.finding("vc-runtime-missing", BLOCKER, {"dlls": absent, "registry": registry},
                          ["install-vc-runtime"], variant="absent")
    elif ctx.machine.vc_runtime("x64") is None and "msvcp140.dll" not in in_system32:
        folders = sorted({ctx.display(found.path.parent) for found in resolved.values()})
        yield ctx.finding("vc-runtime-missing", WARNING, {"dlls": list(CORE_VC_DLLS), "path": folders,
                                                         "registry": registry},
                          ["install-vc-runtime"], variant="unregistered")
    msvcp = resolved["msvcp140.dll"]
    torch = ctx.env.torch if ctx.env else None
    if msvcp.path is None or torch is None:
        return
    for rule in known_issues()["msvcp140_minimum"]:
        if matches(torch.release, rule["torch"]):
            found = file_version(msvcp.path)
            if found and version_tuple(found) < version_tuple(rule["version"]):
                yield ctx.finding("vc-runtime-too-old", BLOCKER, {
                    "torch": torch.version, "needed": rule["version"], "found": found,
                    "path": ctx.display(msvcp.path), "links": rule["links"]}, ["install-vc-runtime"])


PROBE = Probe("vc-runtime", ENVIRONMENT, run)
