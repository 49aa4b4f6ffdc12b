"""DLLs an installed package loads by name while it runs (resources/known_issues.json, `package_run_time_loads`):
no import table shows them, so the dependency graph cannot. CTranslate2 4.x asks for the CUDA 12 cuBLAS
(`cublas64_12.dll`) the first time a model runs on an NVIDIA card; without it, importing works and the first GPU
model fails. Said only where the computer has an NVIDIA card (its driver, or a display adapter of that name).

Windows looks for such a DLL as for a plain LoadLibrary: the folder of python.exe, the folder the package names
(CTranslate2: %CUDA_PATH%\\bin), System32 and the Windows folders, PATH. A CUDA torch's torch\\lib counts as well:
torch loads its copy when it is imported, and a module of that name already loaded is taken. pip's own copy in
site-packages\\nvidia\\...\\bin is none of these, and the finding says so (@package-elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

from app.engine.versions import matches
from app.inventory.packages import installed_versions
from app.probes.base import ProbeContext
from app.probes.dll_owner import owned_dll
from app.probes.finding import WARNING, Finding
from app.resources import known_issues
from app.system.folders import child


def search_folders(ctx: ProbeContext, variable: Optional[str]) -> list[Path]:
    """Where a plain LoadLibrary of the package finds the DLL, in Windows' order (torch\\lib first: loaded)."""
    context = ctx.loader().context
    torch_lib = child(ctx.env.torch.folder, "lib") if ctx.env.torch is not None else None
    named = ctx.system.variable(variable) if variable else None
    named_bin = ctx.system.host_path(named + "\\bin") if named else None
    return [f for f in (torch_lib, context.app_folder, named_bin, *context.system_folders, *context.path_entries)
            if f is not None]


def nvidia_card(ctx: ProbeContext) -> bool:
    return ctx.machine.nvidia_driver is not None or any("nvidia" in gpu.lower() for gpu in ctx.machine.gpus)


def run_time_loads(ctx: ProbeContext) -> Iterator[Finding]:
    """missing-dll (a warning) for each DLL an installed package loads by name and no searched folder holds."""
    if ctx.env is None or ctx.env.site_packages is None or not nvidia_card(ctx):
        return  # each DLL known is loaded only for an NVIDIA card: a computer without one never asks for it
    rows = known_issues().get("package_run_time_loads", [])
    installed = installed_versions(ctx.env.site_packages, {row["package"] for row in rows})
    for row in rows:
        version = installed.get(row["package"])
        if version is None or not matches(version, row["versions"]):
            continue
        folders = search_folders(ctx, row.get("folder_variable"))
        if any(ctx.loader().index.find(folder, row["dll"]) for folder in folders):
            continue
        owned = owned_dll(ctx, row["dll"], folders, row["when"])
        yield ctx.finding("missing-dll", WARNING, {
            "dll": row["dll"], "needed_by": [f"{row['package']} {version}"], "package": row["package"],
            "searched": list(dict.fromkeys(ctx.display(f) for f in folders)), "source": row["source"],
            **owned.evidence}, owned.repairs, owned.variant or "run-time")
