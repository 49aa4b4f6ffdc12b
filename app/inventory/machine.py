"""What a machine says about itself: Windows, the VC++ runtime, Visual Studio, NVIDIA, PATH and variables.

Everything is read through the System interface, so the same code reads the live machine and an image.
"""

from __future__ import annotations

import ntpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.engine.pe import PEError, read_pe
from app.engine.versions import version_tuple
from app.inventory.paging import PagingFacts, read_paging_facts
from app.resources import default_known_dlls
from app.system.base import System
from app.system.folders import child, children, descend
from app.system.user_json import read_json

VC_RUNTIMES_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
VC_RUNTIMES_KEY_32 = r"HKLM\SOFTWARE\WOW6432Node\Microsoft\VisualStudio\14.0\VC\Runtimes"
CORE_VC_DLLS = ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll")  # what torch itself loads first
RUNTIME_DLLS = (*CORE_VC_DLLS, "vcomp140.dll")
LONG_PATHS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
# Smart App Control's state (Windows 11): 0 off, 1 on (enforced), 2 evaluation
# (docs/knowledge.md, "Newer setups": sources)
CI_POLICY_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\CI\Policy"
SMART_APP_CONTROL_STATES = {0: "off", 1: "on", 2: "evaluation"}
DISPLAY_CLASS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
VS_INSTANCES = r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances"
VARIABLE_PREFIXES = ("PYTORCH_", "CUDA_", "KMP_", "OMP_")
LIBOMP140 = "libomp140.x86_64.dll"


@dataclass(frozen=True)
class VcRuntimeEntry:
    arch: str  # x64, x86, arm64
    view: str  # "64-bit" or "32-bit" registry view
    installed: bool
    version: Optional[str]  # "14.44.35211.0" from Major/Minor/Bld/Rbld, else parsed from Version


@dataclass(frozen=True)
class RuntimeDll:
    folder: str  # "System32" or "SysWOW64"
    name: str
    path: Path
    version: Optional[str]


@dataclass(frozen=True)
class VisualStudio:
    path: Path
    name: str
    libomp140: tuple[Path, ...]  # Microsoft.VC14x.OpenMP.LLVM\libomp140.x86_64.dll copies inside it


@dataclass
class MachineFacts:
    windows_version: Optional[str]
    architecture: Optional[str]
    system32: Optional[Path]
    syswow64: Optional[Path]
    known_dlls: frozenset[str]
    long_paths_enabled: Optional[bool]
    code_page: Optional[int]
    ui_language: Optional[str]
    vc_runtimes: list[VcRuntimeEntry] = field(default_factory=list)
    runtime_dlls: list[RuntimeDll] = field(default_factory=list)
    visual_studio: list[VisualStudio] = field(default_factory=list)
    nvidia_driver: Optional[str] = None  # "552.22"
    nvidia_driver_source: Optional[str] = None
    gpus: list[str] = field(default_factory=list)  # the display adapters' names (DriverDesc): "NVIDIA GeForce RTX 5090"
    path_machine: list[str] = field(default_factory=list)
    path_user: list[str] = field(default_factory=list)
    path_effective: list[str] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    paging: Optional[PagingFacts] = None  # the paging file setting, the commit limit, the system drive's room
    smart_app_control: Optional[str] = None  # "off", "on", "evaluation"; None: not recorded (before Windows 11)

    @property
    def windows_build(self) -> Optional[int]:
        parts = (self.windows_version or "").split(".")
        return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None

    def vc_runtime(self, arch: str) -> Optional[VcRuntimeEntry]:
        """The newest installed runtime registered for `arch` in either view."""
        return newest_runtime(self.vc_runtimes, arch)


def newest_runtime(entries: list[VcRuntimeEntry], arch: str) -> Optional[VcRuntimeEntry]:
    found = [e for e in entries if e.arch == arch and e.installed]
    return max(found, key=lambda e: version_tuple(e.version), default=None)


def read_machine_facts(system: System) -> MachineFacts:
    facts = MachineFacts(
        windows_version=system.windows_version, architecture=system.architecture, system32=system.system32,
        syswow64=system.syswow64, known_dlls=system.known_dlls() or default_known_dlls(),
        long_paths_enabled=_long_paths(system), code_page=system.code_page, ui_language=system.ui_language)
    facts.vc_runtimes = _vc_runtimes(system, facts.problems)
    facts.runtime_dlls = _runtime_dlls(facts)
    facts.visual_studio = visual_studio_installs(system)
    facts.nvidia_driver, facts.nvidia_driver_source = _nvidia_driver(system, facts.system32)
    facts.gpus = _display_adapters(system)
    facts.path_machine = _split_path(system, system.environment("system"))
    facts.path_user = _split_path(system, system.environment("user"))
    facts.path_effective = system.search_path()
    facts.variables = {name: value for scope in ("system", "user", "process")
                       for name, value in system.environment(scope).items()
                       if name.upper().startswith(VARIABLE_PREFIXES)}
    facts.paging = read_paging_facts(system)
    facts.smart_app_control = _smart_app_control(system, facts.problems)
    facts.problems.extend(getattr(system, "problems", []))
    return facts


def _long_paths(system: System) -> Optional[bool]:
    value = system.registry_value(LONG_PATHS_KEY, "LongPathsEnabled")
    return bool(value.data) if value is not None and value.type == "REG_DWORD" else None


def _smart_app_control(system: System, problems: list[str]) -> Optional[str]:
    value = system.registry_value(CI_POLICY_KEY, "VerifiedAndReputablePolicyState")
    if value is None:
        return None
    state = SMART_APP_CONTROL_STATES.get(value.data) if value.type == "REG_DWORD" else None
    if state is None:
        problems.append(f"Smart App Control's state is unreadable: VerifiedAndReputablePolicyState = "
                        f"{value.data!r:.20} ({value.type})")
    return state


def _vc_runtimes(system: System, problems: list[str]) -> list[VcRuntimeEntry]:
    entries = []
    for root, view in ((VC_RUNTIMES_KEY, "64-bit"), (VC_RUNTIMES_KEY_32, "32-bit")):
        for arch in ("x64", "x86", "arm64"):
            values = {k.lower(): v for k, v in system.registry_values(f"{root}\\{arch}").items()}
            if not values:
                continue
            installed = values.get("installed")
            numbers = [values.get(n) for n in ("major", "minor", "bld", "rbld")]
            version = None
            if all(v is not None and v.type == "REG_DWORD" for v in numbers):
                version = ".".join(str(v.data) for v in numbers)
            elif values.get("version") is not None:
                match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?", str(values["version"].data).strip())
                if match:
                    version = ".".join(g or "0" for g in match.groups())
                else:
                    problems.append(f"VC++ runtime {arch} ({view}) has an unreadable Version: "
                                    f"{values['version'].data!r:.40}")
            if installed is not None and installed.type != "REG_DWORD":
                problems.append(f"VC++ runtime {arch} ({view}) has an Installed value of the wrong type")
                installed = None
            entries.append(VcRuntimeEntry(arch, view, bool(installed and installed.data == 1), version))
    return entries


def installed_runtime(system: System, arch: str) -> Optional[str]:
    """The newest VC++ runtime version the registry says is installed for `arch` now ("14.44.35211.0"), or None."""
    entry = newest_runtime(_vc_runtimes(system, []), arch)
    return entry.version if entry is not None else None


def file_version(path: Path) -> Optional[str]:
    try:
        return read_pe(path, with_exports=False).file_version
    except (OSError, PEError):
        return None


def _runtime_dlls(facts: MachineFacts) -> list[RuntimeDll]:
    found = []
    for label, folder in (("System32", facts.system32), ("SysWOW64", facts.syswow64)):
        if folder is None:
            continue
        names = {p.name.lower(): p for p in children(folder)}
        for name in RUNTIME_DLLS:
            path = names.get(name)
            if path is not None:
                found.append(RuntimeDll(label, name, path, file_version(path)))
    return found


def visual_studio_installs(system: System) -> list[VisualStudio]:
    """VS / Build Tools installs (from the setup instance store, and the usual folders), each with the
    libomp140 copies it carries: a legitimate local source of that DLL."""
    roots: dict[str, Path] = {}
    instances = system.host_path(VS_INSTANCES)
    for instance in children(instances) if instances else []:
        try:
            state = read_json(instance / "state.json")
            where = system.host_path(str(state.get("installationPath", "")))
        except (OSError, ValueError, AttributeError):
            continue
        if where is not None and where.is_dir():
            roots[str(where).lower()] = where
    for program_files in (r"C:\Program Files", r"C:\Program Files (x86)"):
        base = system.host_path(ntpath.join(program_files, "Microsoft Visual Studio"))
        for year in children(base) if base else []:
            for edition in children(year):
                if (edition / "VC").is_dir() or child(edition, "VC") is not None:
                    roots.setdefault(str(edition).lower(), edition)
    installs = []
    for root in roots.values():
        copies = []
        redist = descend(root, "VC", "Redist", "MSVC")
        for version in children(redist) if redist else []:
            x64 = descend(version, "debug_nonredist", "x64")
            for package in children(x64) if x64 else []:
                if re.fullmatch(r"microsoft\.vc14\d\.openmp\.llvm", package.name.lower()):
                    dll = child(package, LIBOMP140)
                    if dll is not None:
                        copies.append(dll)
        installs.append(VisualStudio(root, f"{root.parent.name} {root.name}", tuple(sorted(copies))))
    return sorted(installs, key=lambda v: str(v.path))


def nvidia_version(driver_version: str) -> Optional[str]:
    """Windows driver version 31.0.15.5222 -> NVIDIA's 552.22 (the last five digits)."""
    digits = "".join(driver_version.split(".")[-2:])
    return f"{int(digits[-5:-2])}.{digits[-2:]}" if len(digits) >= 5 and digits.isdigit() else None


def _display_adapters(system: System) -> list[str]:
    """The names Windows gives the display adapters (the display class's DriverDesc), as Device Manager shows them."""
    names = []
    for sub in system.registry_subkeys(DISPLAY_CLASS_KEY):
        value = system.registry_value(f"{DISPLAY_CLASS_KEY}\\{sub}", "DriverDesc")
        if value is not None and isinstance(value.data, str) and value.data.strip():
            names.append(value.data.strip())
    return list(dict.fromkeys(names))


def _nvidia_driver(system: System, system32: Optional[Path]) -> tuple[Optional[str], Optional[str]]:
    for sub in system.registry_subkeys(DISPLAY_CLASS_KEY):
        values = {k.lower(): v for k, v in system.registry_values(f"{DISPLAY_CLASS_KEY}\\{sub}").items()}
        provider, version = values.get("providername"), values.get("driverversion")
        if provider and "nvidia" in str(provider.data).lower() and version and isinstance(version.data, str):
            parsed = nvidia_version(version.data)
            if parsed:
                return parsed, "registry"
    dll = child(system32, "nvcuda.dll") if system32 else None
    version = file_version(dll) if dll else None
    return (nvidia_version(version), "nvcuda.dll") if version and nvidia_version(version) else (None, None)


def _split_path(system: System, variables: dict[str, str]) -> list[str]:
    raw = next((v for k, v in variables.items() if k.lower() == "path"), "")
    return [system.expand(e.strip().strip('"')) for e in raw.split(";") if e.strip()]
