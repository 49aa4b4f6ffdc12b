"""Static dependency analysis: the loader model's graph of torch\\lib, read without running anything."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Iterator, Optional

from app.engine.graph import (
    CORRUPT,
    MISSING,
    MISSING_DELAY,
    MISSING_EXPORT,
    OK,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    DependencyGraph,
    Node,
)
from app.engine.pe import CPU_NAMES
from app.engine.versions import version_tuple
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import find_record, read_record
from app.inventory.machine import LIBOMP140
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.dll_owner import STARTS_TORCH, family_name, owned_dll, owner_of, torch_search_folders
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.probes.gpu_backends import AMD_DRIVER, HIP_SDK
from app.probes.run_time_loads import run_time_loads
from app.resources import known_issues

PYTHON_RUNTIME = re.compile(r"python3\d*t?(_d)?\.dll", re.I)  # python312.dll, python313t.dll, python3.dll

SHOWN_UNSEEN = 5  # folders named in a finding's text; the evidence keeps them all
ZLUDA_VARIANT = {"zluda": "zluda"}  # ZLUDA's nvcuda.dll lacking a function is said as ZLUDA's, not NVIDIA's


def repairs_for(dll: str, torch_files: frozenset[str] = frozenset()) -> list[str]:
    """Which repair fixes a missing DLL, by what it is: torch's own files (`torch_files`, from its RECORD) are put
    back by restore-torch-files; a DLL from elsewhere has no repair here (its own finding says what to do)."""
    name = dll.lower()
    if name in known_issues()["vc_runtime_dlls"]:
        return ["install-vc-runtime"]
    if name == LIBOMP140:
        return ["place-libomp140", "upgrade-torch"]
    return ["restore-torch-files"] if name in torch_files else []


def torch_lib_files(env: Optional[PythonEnvironment]) -> frozenset[str]:
    """The DLL names (lower case) torch's install record lists in torch\\lib: the files it brought."""
    record = find_record(env) if env is not None and env.torch is not None and env.site_packages else None
    try:
        entries = read_record(record) if record is not None else []
    except (OSError, csv.Error, ValueError):
        return frozenset()
    return frozenset(e.path.rsplit("/", 1)[-1].lower() for e in entries)


def _restorable(ctx: ProbeContext, node: Node, torch_files: frozenset[str]) -> list[str]:
    """restore-torch-files for a broken copy inside torch\\lib of a file torch brought; nothing for one elsewhere."""
    torch = ctx.env.torch if ctx.env is not None else None
    inside = torch is not None and node.path is not None and node.path.parent.parent == torch.folder
    return ["restore-torch-files"] if inside and node.name.lower() in torch_files else []


def importers(node: Node) -> list[str]:
    return sorted({edge.source.name for edge in node.incoming})


def first_failing_root(graph: DependencyGraph) -> Optional[str]:
    """The DLL torch would name in its error: the first of torch\\lib, in load order, that cannot load."""
    statuses = graph.statuses()
    for root in graph.roots:  # roots were added in torch's glob order
        if statuses[root] in (MISSING, WRONG_ARCHITECTURE, MISSING_EXPORT, CORRUPT, UNREADABLE, "children-error"):
            return root.name
    return None


def loaded_at_start(graph: DependencyGraph) -> set[int]:
    """Ids of the nodes torch loads when it starts: reachable from its roots through load-time imports only."""
    seen = {node.id for node in graph.roots}
    queue = list(graph.roots)
    while queue:
        node = queue.pop()
        for edge in node.edges:
            if edge.kind == "import" and edge.target.id not in seen:
                seen.add(edge.target.id)
                queue.append(edge.target)
    return seen


def delay_gateways(graph: DependencyGraph, node: Node, at_start: set[int]) -> list[str]:
    """The delay-loaded DLLs through which a node not loaded at start is reached ("cudnn64_8.dll")."""
    gateways = []
    for candidate in graph.walk():
        entered_by_delay = any(e.kind == "delay" and e.source.id in at_start for e in candidate.incoming)
        if not entered_by_delay or candidate.id in at_start:
            continue
        seen, queue = {candidate.id}, [candidate]
        while queue:
            current = queue.pop()
            if current is node:
                gateways.append(candidate.name)
                break
            for edge in current.edges:
                if edge.target.id not in seen:
                    seen.add(edge.target.id)
                    queue.append(edge.target)
    return sorted(set(gateways))


def run(ctx: ProbeContext) -> Iterator[Finding]:
    if ctx.env is not None and ctx.env.is_64bit is False:
        return  # every torch DLL is 64-bit: python-32bit says it once, not once per DLL
    graph = ctx.graph()
    statuses = graph.statuses()
    stops_at = first_failing_root(graph)
    at_start = loaded_at_start(graph)
    torch_files = torch_lib_files(ctx.env)
    base_gone = _base_gone(ctx.env)
    missing: list[str] = []
    for node in graph.walk():
        status = statuses[node]
        if base_gone and status in (MISSING, MISSING_DELAY) and PYTHON_RUNTIME.fullmatch(node.name):
            continue  # the venv's base Python is gone (venv-base-missing): its runtime DLL went with it
        base = {"dll": node.name, "needed_by": importers(node)}
        # severity follows how torch reaches the DLL: only through a delay load, it fails when a feature needs it
        severity = BLOCKER if node.id in at_start else WARNING
        if status in (MISSING, MISSING_DELAY):
            missing.append(node.name)
        if status == MISSING and severity == WARNING:
            yield ctx.finding("missing-delay-dll", WARNING, {**base, "via": delay_gateways(graph, node, at_start)},
                              variant="indirect")
        elif status == MISSING:
            yield _missing(ctx, node, {**base, "torch_stops_at": stops_at}, torch_files)
        elif status == MISSING_DELAY:
            yield ctx.finding("missing-delay-dll", WARNING, base)
        elif node.problem == WRONG_ARCHITECTURE:
            yield ctx.finding("wrong-architecture", severity, {
                **base, **file_owner(ctx, node), "path": ctx.display(node.path), "machine": node.info.cpu_name,
                "expected": CPU_NAMES.get(graph.cpu_type or 0, "x64")}, _restorable(ctx, node, torch_files))
        elif node.problem == CORRUPT:
            repairs = _restorable(ctx, node, torch_files)
            yield ctx.finding("dll-damaged", severity, {**base, "path": ctx.display(node.path), "reason": node.reason},
                              repairs, variant="torch-file" if repairs else None)
        elif status == UNREADABLE:  # the file, or a folder it may be in, is there but could not be read
            folder = node.resolution.unreadable[0][0] if node.path is None else None
            unseen = folder is not None and ctx.loader().index.unseen(Path(folder))
            interpreter = ctx.env.loading.interpreter if unseen and ctx.env.loading else None
            yield ctx.finding("dll-unreadable", severity, {
                **base, "path": interpreter.home if interpreter else ctx.display(Path(folder) if folder else node.path),
                "reason": node.shown_reason(ctx.display)},
                variant="unseen" if unseen else "folder" if folder else None)
        elif status == MISSING_EXPORT:
            missing = [{"importer": m.importer, "function": str(m.function)} for m in node.missing_exports]
            owner = file_owner(ctx, node)
            yield ctx.finding("missing-export", severity, {
                **base, **owner, "needed_by": sorted({m.importer for m in node.missing_exports}),
                "path": ctx.display(node.path), "version": node.info.file_version if node.info else None,
                "count": len({m.function for m in node.missing_exports}), "missing": missing},
                repairs_for(node.name) or _restorable(ctx, node, torch_files), ZLUDA_VARIANT.get(owner["family"]))
        # "it works, nothing is broken now" is said only of a copy that loads: a broken one has its own finding
        if node.resolution is not None and node.resolution.fragile and status == OK:
            yield ctx.finding("path-fragile", WARNING, {**base, "path": ctx.display(node.path.parent)},
                              repairs_for(node.name, torch_files))
    yield from _path_unseen(ctx, missing)
    yield from shadowing(ctx, graph)
    yield from run_time_loads(ctx)


def _missing(ctx: ProbeContext, node: Node, base: dict, torch_files: frozenset[str]) -> Finding:
    """missing-dll: torch's own file gone (@torch-file), AMD's (@amd-driver, @hip-sdk), one a repair here brings
    (the VC++ runtime, libomp140), else whose it is, from the DLL index (app/probes/dll_owner.py)."""
    searched = list(dict.fromkeys(ctx.display(Path(folder)) for _, folder in node.resolution.tried))
    needs = [{"dll": e.source.name, "functions": [str(f) for f in e.functions]} for e in node.incoming]
    evidence = {**base, "searched": searched, "needs": needs}
    ours = node.name.lower() in torch_files  # torch brought it: deleted or quarantined since
    amd = None if ours else "amd-driver" if AMD_DRIVER.match(node.name) else \
        "hip-sdk" if HIP_SDK.match(node.name) else None  # AMD's driver, or its HIP SDK, brings it
    repairs = ["update-amd-driver"] if amd else repairs_for(node.name, torch_files)
    if ours or repairs:
        return ctx.finding("missing-dll", BLOCKER, evidence, repairs, variant="torch-file" if ours else amd)
    owned = owned_dll(ctx, node.name, torch_search_folders(ctx), STARTS_TORCH)
    return ctx.finding("missing-dll", BLOCKER, {**evidence, **owned.evidence}, owned.repairs, owned.variant)


def file_owner(ctx: ProbeContext, node: Node) -> dict:
    """Whose the copy Windows found is: the package whose wheel puts it where it lies, or ZLUDA's nvcuda.dll."""
    owner = owner_of(ctx.env, node.name, node.path)
    return {"owner": owner.package, "owner_installed": owner.installed, "family": owner.family,
            "family_name": family_name(owner.family)}


def _base_gone(env: Optional[PythonEnvironment]) -> bool:
    """A venv whose base Python is not there any more: one problem (venv-base-missing), whatever made the venv."""
    interpreter = env.loading.interpreter if env is not None and env.loading is not None else None
    return interpreter is not None and interpreter.home is not None and interpreter.seen and not interpreter.exists


def _path_unseen(ctx: ProbeContext, missing: list[str]) -> Iterator[Finding]:
    """PATH folders this machine cannot show (a copied drive's D:\\tools, a share): torch's retry searches PATH
    last, so a DLL reported missing may be there (and load, by luck). Said only when one is missing: nothing else
    depends on PATH."""
    unseen = list(dict.fromkeys(e for e in ctx.system.search_path() if ctx.system.host_path(e) is None))
    if not missing or not unseen:
        return
    shown = ", ".join(unseen[:SHOWN_UNSEEN]) + (f" (+{len(unseen) - SHOWN_UNSEEN})" if len(unseen) > SHOWN_UNSEEN
                                                else "")
    yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "folders": unseen,
                                             "folder_list": shown, "dlls": missing, "dll_list": ", ".join(missing)},
                      variant="path-entries-unseen")


def shadowing(ctx: ProbeContext, graph: DependencyGraph) -> Iterator[Finding]:
    """A runtime DLL that wins the search while a newer copy of the same maker sits later in the search order.
    Versions of different makers' builds (Intel's libomp140 is 5.0.x, Microsoft's 14.x) say nothing about which
    is newer: such a pair is only noted, and never called older."""
    watched = set(known_issues()["vc_runtime_dlls"]) | set(known_issues()["openmp_runtimes"])
    loader = ctx.loader()
    context = loader.context
    folders = [context.app_folder, *context.added_folders, context.system32, *context.path_entries]
    for node in graph.walk():
        if node.path is None or node.name.lower() not in watched:
            continue
        if node.path.parent in (context.app_folder, context.system32):
            continue  # python.exe's own vcruntime140 (loaded first by design), or Windows' own copy: not shadowing
        version = node.info.file_version if node.info else None
        if version is None:
            continue
        maker = _maker(node.info)
        better, other_maker = None, None
        for folder in folders:
            other = loader.index.find(folder, node.name) if folder else None
            if other is None or other == node.path:
                continue
            found = ctx.cache.get(other)
            if isinstance(found, str) or found.file_version is None:
                continue
            if _maker(found) != maker:
                other_maker = other_maker or (other, found)
                continue
            best_so_far = better[1] if better else version
            if _newer(found.file_version, best_so_far):
                better = (other, found.file_version)
        if better is not None:
            yield ctx.finding("path-shadowing", WARNING, {
                "dll": node.name, "path": ctx.display(node.path), "found": version,
                "other": ctx.display(better[0]), "better": better[1]})
        elif other_maker is not None:
            other, info = other_maker
            yield ctx.finding("path-shadowing", INFO, {
                "dll": node.name, "path": ctx.display(node.path), "found": version,
                "company": node.info.company or UNKNOWN_MAKER,
                "other": ctx.display(other), "other_version": info.file_version,
                "other_company": info.company or UNKNOWN_MAKER},
                variant="other-maker")


UNKNOWN_MAKER = {"en": "a maker it does not name", "zh_CN": "未注明"}


def _maker(info) -> str:
    """Whose build a DLL is (its CompanyName), for comparing versions only within one maker's builds."""
    return " ".join((info.company or "").lower().replace(",", " ").replace(".", " ").split())


def _newer(a: str, b: str) -> bool:
    """Newer by release (major.minor): builds within one release are interchangeable."""
    return version_tuple(a)[:2] > version_tuple(b)[:2]


PROBE = Probe("dependencies", ENVIRONMENT, run)
