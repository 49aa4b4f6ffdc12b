"""OpenMP runtimes: libomp140 needed but missing, several runtimes within reach, and the unsafe switch."""

from __future__ import annotations

from typing import Iterator

from app.engine.graph import MISSING
from app.engine.versions import matches
from app.inventory.machine import LIBOMP140
from app.probes.base import ENVIRONMENT, MACHINE, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.resources import known_issues
from app.system.folders import child, children

TRUE_WORDS = {"1", "true", ".true.", "on", "yes", "y", "t", "enable", "enabled"}


def run(ctx: ProbeContext) -> Iterator[Finding]:
    graph = ctx.graph()
    statuses = graph.statuses()
    for node in graph.walk():
        if node.name.lower() == LIBOMP140 and statuses[node] == MISSING:
            needs = []
            for edge in node.incoming:
                names = [str(f) for f in edge.functions]
                needs.append({"dll": edge.source.name, "functions": names})
            sources = [ctx.display(p) for vs in ctx.machine.visual_studio for p in vs.libomp140]
            dlls = ctx.torch_dlls()
            intel = child(dlls[0].parent, "libiomp5md.dll") if dlls else None
            torch = ctx.env.torch
            bug = next((b for b in known_issues()["builds"] if b["missing_dll"].lower() == LIBOMP140
                        and torch is not None and matches(torch.release, b["torch"])), None)
            yield ctx.finding("openmp-runtime-missing", BLOCKER, {
                "dll": LIBOMP140, "needed_by": sorted({n["dll"] for n in needs}), "needs": needs,
                "visual_studio_copies": sources, "intel_runtime": ctx.display(intel) if intel else None,
                "torch": torch.version if torch else None, "fixed_in": bug["fixed_in"] if bug else None},
                ["place-libomp140", "upgrade-torch"], variant="known-bad-build" if bug else None)
    yield from conflicts(ctx)


def conflicts(ctx: ProbeContext) -> Iterator[Finding]:
    """Two copies of one OpenMP runtime within reach of torch (OMP Error #15), or conda's openmp next to
    intel-openmp (WinError 182)."""
    context = ctx.loader().context
    folders = list(dict.fromkeys(f for f in (*context.added_folders, context.app_folder) if f is not None))
    copies: dict[str, list[str]] = {}
    for folder in folders:
        for name in known_issues()["openmp_runtimes"]:
            found = child(folder, name)
            if found is not None:
                copies.setdefault(name.lower(), []).append(ctx.display(found))
    duplicated = {name: paths for name, paths in copies.items() if len(paths) > 1}
    conda_meta = child(ctx.env.exec_prefix, "conda-meta") if ctx.env else None
    packages = {p.name.rsplit("-", 2)[0].lower() for p in children(conda_meta) if p.suffix == ".json"}
    both_conda = {"openmp", "intel-openmp"} <= packages
    if duplicated or both_conda:
        listed = [path for paths in duplicated.values() for path in paths]
        if both_conda:
            listed += ["conda: openmp", "conda: intel-openmp"]
        yield ctx.finding("openmp-conflict", WARNING, {"copies": listed}, ["remove-duplicate-openmp"])


def unsafe_switch(ctx: ProbeContext) -> Iterator[Finding]:
    for name, value in ctx.machine.variables.items():
        if name.upper() == "KMP_DUPLICATE_LIB_OK" and value.strip().lower() in TRUE_WORDS:
            yield ctx.finding("unsafe-env-var", WARNING, {"variable": name, "value": value}, ["unset-env-var"])


PROBE = Probe("openmp", ENVIRONMENT, run)
SWITCH_PROBE = Probe("openmp-switch", MACHINE, unsafe_switch)
