"""The Microsoft Visual C++ runtime: installed? found where torch looks? new enough for this torch?

An old msvcp140.dll that Windows finds before System32's (beside python.exe: conda's vc14_runtime, the msvc-runtime
wheel in a Python that is not a venv, or a file nobody's record lists) is named as that copy, with its owner: the
redistributable cannot help while it is found first, so its repair is `update-runtime-copy` (conda or pip updates
it) or `set-aside-runtime-copy` (nobody owns it), with `install-vc-runtime` too when System32's own copy is also too
old."""

from __future__ import annotations

from typing import Iterator

from app.engine.loader import APP_FOLDER, LEGACY_APP_FOLDER
from app.engine.versions import matches, version_tuple
from app.i18n import LANGUAGES, words
from app.inventory.machine import CORE_VC_DLLS, file_version
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.probes.openmp import owner_name, package_owning
from app.resources import known_issues

UPDATE_COPY = "update-runtime-copy"  # guided (app/repair/guides.py): the owner's package manager updates it
SET_ASIDE_COPY = "set-aside-runtime-copy"  # app/repair/runtime_copy.py: nobody owns it, so it is renamed in place


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
                evidence = {"torch": torch.version, "needed": rule["version"], "found": found,
                            "path": ctx.display(msvcp.path), "links": rule["links"]}
                system_copy = next((d for d in ctx.machine.runtime_dlls
                                    if d.folder == "System32" and d.name.lower() == "msvcp140.dll"), None)
                if msvcp.rule in (APP_FOLDER, LEGACY_APP_FOLDER) and not (
                        system_copy is not None and _same(system_copy.path, msvcp.path)):
                    yield _copy_first(ctx, msvcp.path, evidence, system_copy.version if system_copy else None)
                else:
                    yield ctx.finding("vc-runtime-too-old", BLOCKER, evidence, ["install-vc-runtime"])
            return


def _same(a, b) -> bool:
    return str(a).casefold() == str(b).casefold()


def _copy_first(ctx: ProbeContext, path, evidence: dict, system_version) -> Finding:
    """The old copy Windows finds first is beside python.exe, before System32's: who put it there, whether
    System32's would do, and (when nobody owns it) exactly which files a set-aside would rename."""
    owner = package_owning(ctx.env, path)
    needed = evidence["needed"]
    system_ok = system_version is not None and version_tuple(system_version) >= version_tuple(needed)
    state = "none" if system_version is None else "ok" if system_ok else "old"
    evidence = {**evidence, "folder": ctx.display(path.parent), "owner": owner, "owner_name": owner_name(owner),
                "package": owner["package"] if owner else "-", "owner_version": owner.get("version") if owner else "-",
                "system_version": system_version, "system_ok": system_ok,
                "system_state": {lang: words(f"vc.system.{state}", lang, version=system_version or "-")
                                 for lang in LANGUAGES},
                "set_aside": [] if owner else [p.name for p in old_siblings(ctx.env, path, needed)],
                "prefix": ctx.display(ctx.env.exec_prefix), "python": ctx.python}
    if owner:
        repairs = [UPDATE_COPY] + ([] if system_ok else ["install-vc-runtime"])
    else:  # Windows' own copy is what loads once this one is set aside: it comes first when it is too old
        repairs = [SET_ASIDE_COPY] if system_ok else ["install-vc-runtime", SET_ASIDE_COPY]
    variant = f"copy-{owner['manager']}" if owner else "copy-no-owner"
    return ctx.finding("vc-runtime-too-old", BLOCKER, evidence, repairs, variant=variant)


def old_siblings(env, path, needed: str) -> list:
    """`path` (an old msvcp140.dll nobody owns) and the runtime files beside it that are older than `needed` and
    that no package owns either: what `set-aside-runtime-copy` renames. A file whose version cannot be read stays."""
    found = [path]
    for other in sorted(path.parent.iterdir()) if path.parent.is_dir() else []:
        if other.name.lower() not in OTHER_COPIES or not other.is_file():
            continue
        version = file_version(other)
        if version is not None and version_tuple(version) < version_tuple(needed) and \
                package_owning(env, other) is None:
            found.append(other)
    return found


# the runtime's files that travel with msvcp140.dll, set aside with it when nobody owns them; never vcruntime140:
# python.exe loaded its own at start
OTHER_COPIES = frozenset({"msvcp140_1.dll", "msvcp140_2.dll", "msvcp140_atomic_wait.dll",
                          "msvcp140_codecvt_ids.dll", "concrt140.dll"})


PROBE = Probe("vc-runtime", ENVIRONMENT, run)
