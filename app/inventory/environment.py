"""One Python environment as the diagnosis sees it, read from its files without running or importing anything."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.engine.graph import SHARED_CACHE
from app.engine.pe import CPU_NAMES, PEError, PEInfo, read_cpu_type, read_pe
from app.inventory.launchers import placed
from app.inventory.python_path import MODULE, Interpreter, PythonLoading, model_loading, read_interpreter
from app.system.base import System
from app.system.folders import child, children, descend, one_look

KINDS = ("python.org", "conda", "embedded", "venv", "store")
# python.org's free-threaded interpreter beside python.exe (PEP 703): python3.13t.exe, pythonw3.14t.exe
FREE_THREADED_EXE = re.compile(r"^python3\.\d+t\.exe$", re.I)
FREE_THREADED_DLL = re.compile(r"^python3\d+t\.dll$", re.I)


@dataclass(frozen=True)
class TorchInstall:
    folder: Path  # ...\site-packages\torch
    version: Optional[str]  # "2.4.0+cpu"
    cuda: Optional[str]  # "12.1", None for CPU builds
    hip: Optional[str]  # ROCm

    @property
    def build(self) -> str:
        if self.cuda:
            return f"CUDA {self.cuda}"
        if self.hip:
            return f"ROCm {self.hip}"
        return "CPU"

    @property
    def release(self) -> Optional[str]:
        """The version without its local part: "2.4.0+cpu" -> "2.4.0"."""
        return self.version.split("+", 1)[0] if self.version else None


GENERIC_VENV = re.compile(r"^\.?(venv|env|virtualenv)([-_.].*)?$", re.IGNORECASE)  # venv, .venv, venv-cu12


@dataclass(frozen=True)
class PythonEnvironment:
    python: Path  # python.exe (for a venv, Scripts\python.exe)
    kind: str  # one of KINDS
    exec_prefix: Path  # sys.exec_prefix
    base_exec_prefix: Path  # sys.base_exec_prefix
    app_folder: Path  # folder of the process image: a venv's launcher starts the base python.exe
    python_version: Optional[str]
    python_cpu_type: Optional[int]
    site_packages: Optional[Path]
    torch: Optional[TorchInstall]
    userbase: Optional[Path] = None  # None: the usual %APPDATA%\Python
    found_by: str = ""  # how discovery found it: "registry (PEP 514)", "conda", "search", ...
    app: Optional[str] = None  # the AI app it belongs to: "ComfyUI (portable)", ...
    free_threaded: bool = False  # the free-threaded build (python3.13t.exe; sysconfig's Py_GIL_DISABLED)
    loading: Optional[PythonLoading] = None  # sys.path and the torch copies on it (app/inventory/python_path.py)
    unread_install: bool = False  # a Store Python described from its 0-byte app alias: its own folder was not read
    # the other paths discovery reached this same folder by (a junction or link to it, an 8.3 name): filled in
    # while discovery goes on, after this environment was streamed, so a list kept out of equality
    also_at: list[Path] = field(default_factory=list, compare=False)

    @property
    def abi_tag(self) -> Optional[str]:
        """The ABI of its extension modules as wheels and `.pyd` names spell it: "cp313", "cp313t"."""
        parts = (self.python_version or "").split(".")
        if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
            return None
        return f"cp{parts[0]}{parts[1]}" + ("t" if self.free_threaded else "")

    @property
    def is_64bit(self) -> Optional[bool]:
        return None if self.python_cpu_type is None else self.python_cpu_type in (0x8664, 0xAA64)

    @property
    def is_venv(self) -> bool:
        return self.exec_prefix != self.base_exec_prefix

    @property
    def folder_name(self) -> str:
        """What a venv no known app names is called by: the folder that holds it when its own name says only
        "venv" ("sd-webui" for ...\\sd-webui\\venv), else its own name."""
        own = self.exec_prefix.name
        return self.exec_prefix.parent.name if GENERIC_VENV.match(own) and self.exec_prefix.parent.name else own


def inspect_environment(system: System, location: Path) -> Optional[PythonEnvironment]:
    """Describe the environment at `location` (its folder, its Scripts folder, or its python.exe); None if
    there is no python.exe there."""
    with one_look():
        return _inspect(system, location)


def _inspect(system: System, location: Path) -> Optional[PythonEnvironment]:
    folder = location.parent if location.suffix.lower() == ".exe" else location
    if folder.name.lower() == "scripts" and child(folder.parent, "pyvenv.cfg"):
        folder = folder.parent
    chosen = location.name if location.suffix.lower() == ".exe" else "python.exe"
    cfg = child(folder, "pyvenv.cfg")
    if cfg is not None:
        settings = _read_cfg(cfg)
        scripts = child(folder, "Scripts")
        python = child(scripts, chosen) or child(scripts, "python.exe") or child(folder, "python.exe")
        if python is None:
            return None
        interpreter = read_interpreter(system, settings, python_version_in)
        base = interpreter.home_folder or python.parent
        # the interpreter the launcher starts is home's: its version now, not the one the venv was made with
        version = interpreter.runs or interpreter.made_with
        # a venv is bound to one interpreter: pyvenv.cfg's `executable` (3.11+) names it, python3.13t.exe or not
        executable = re.split(r"[\\/]", settings.get("executable", ""))[-1]
        free = bool(FREE_THREADED_EXE.match(executable)) or any(
            FREE_THREADED_EXE.match(p.name) for p in children(scripts))
        return describe(system, python, "venv", folder, base, base, version, free_threaded=free, venv=settings,
                        interpreter=interpreter)
    python = child(folder, chosen) or child(folder, "python.exe")
    if python is None:
        python = next(iter(free_threaded_pythons(folder)), None)
    if python is None:
        return None
    if child(folder, "conda-meta") is not None:
        kind = "conda"
    elif any(name.lower().endswith("._pth") for name in [p.name for p in children(folder)]):
        kind = "embedded"
    elif "windowsapps" in str(folder).lower() or "pythonsoftwarefoundation.python" in str(folder).lower():
        kind = "store"
    else:
        kind = "python.org"
    return describe(system, python, kind, folder, folder, folder, None, free_threaded=is_free_threaded(python))


def describe(system: System, python: Path, kind: str, prefix: Path, base_prefix: Path, app_folder: Path,
             version: Optional[str], *, site: Optional[Path] = None, userbase: Optional[Path] = None,
             free_threaded: bool = False, venv: Optional[dict[str, str]] = None,
             interpreter: Optional[Interpreter] = None) -> PythonEnvironment:
    """The facts of one environment whose layout is known. Its torch is the copy `import torch` gets (which may sit
    in the user site, or a folder of PYTHONPATH), and `site_packages` the folder that holds it."""
    site = site or descend(prefix, "Lib", "site-packages")
    version = version or python_version_in(app_folder, free_threaded)
    cpu = _machine(python)
    loading = model_loading(system, python=python, prefix=prefix, base_prefix=base_prefix, app_folder=app_folder,
                            version=version, site=site, userbase=userbase, free_threaded=free_threaded, venv=venv,
                            interpreter=interpreter, cpu=CPU_NAMES.get(cpu or 0))
    copy = loading.imported
    if copy is not None and copy.kind == MODULE:  # a torch.py hides every package: the checks read the next one
        copy = next(iter(loading.shadowed), None)
    if copy is not None:
        torch_folder, site = copy.folder, copy.entry.folder
    else:
        torch_folder = child(site, "torch") if site else None
    where = placed(prefix)
    return PythonEnvironment(
        python=python, kind=kind, exec_prefix=prefix, base_exec_prefix=base_prefix, app_folder=app_folder,
        python_version=version, python_cpu_type=cpu, site_packages=site,
        torch=read_torch(torch_folder) if torch_folder is not None else None, userbase=userbase,
        free_threaded=free_threaded, loading=loading, app=where.label if where is not None else None,
    )


def free_threaded_pythons(folder: Optional[Path]) -> list[Path]:
    """The free-threaded interpreters in a Python's folder (python.org installs python3.13t.exe beside python.exe)."""
    return sorted((p for p in children(folder) if FREE_THREADED_EXE.match(p.name)), key=lambda p: p.name.lower())


def is_free_threaded(python: Path) -> bool:
    """python3.13t.exe by its name, or any python.exe that imports python313t.dll (the free-threaded runtime)."""
    if FREE_THREADED_EXE.match(python.name):
        return True
    try:
        imports = read_pe(python, with_exports=False).imports
    except (OSError, PEError):
        return False
    return any(FREE_THREADED_DLL.match(dll.name) for dll in imports)


def read_torch(folder: Path) -> TorchInstall:
    """Version and build from torch/version.py, read as text (never imported)."""
    try:
        text = (folder / "version.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""

    def value(name: str) -> Optional[str]:
        match = re.search(rf"^{name}\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        return match.group(1) if match else None

    return TorchInstall(folder, value("__version__"), value("cuda"), value("hip"))


def python_version_in(app_folder: Path, free_threaded: bool = False) -> Optional[str]:
    """From pythonXY.dll's version resource (python313t.dll's for the free-threaded build): FileVersion 3.12.4150.x
    means 3.12.4 (micro*1000 + level)."""
    pattern = r"python3\d+t\.dll" if free_threaded else r"python3\d+\.dll"
    for name in sorted([p.name for p in children(app_folder)]):
        if re.fullmatch(pattern, name, re.I):
            info = SHARED_CACHE.get(app_folder / name)  # every venv of one Python reads its DLL: parsed once
            version = info.file_version if isinstance(info, PEInfo) else None
            if version:
                major, minor, field3, _ = (int(x) for x in version.split("."))
                return f"{major}.{minor}.{field3 // 1000}"
            return f"3.{name[7:-4].rstrip('tT')}"
    return None


def _machine(python: Path) -> Optional[int]:
    try:
        return read_cpu_type(python)
    except (OSError, PEError):
        return None


def _read_cfg(path: Path) -> dict[str, str]:
    settings = {}
    try:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                settings[key.strip().lower()] = value.strip()
    except OSError:
        pass
    return settings
