"""Build the loader's SearchContext from a computer (System) and, when known, a Python environment."""

from __future__ import annotations

import ntpath
from functools import lru_cache
from pathlib import Path
from typing import Optional

from app.engine.apiset import ApiSetResolver, ApiSetSchema
from app.engine.loader import DirectoryIndex, LoaderModel, SearchContext, torch_dll_folders
from app.engine.pe import PEError, read_section
from app.inventory.environment import PythonEnvironment
from app.resources import default_known_dlls
from app.system.base import System
from app.system.folders import children


def torch_search_folders(system: System, env: PythonEnvironment) -> list[Path]:
    """The folders torch's `_load_dll_libraries` adds with os.add_dll_directory, for this environment."""
    if env.torch is None:
        return []
    appdata = system.variable("APPDATA")
    userbase = env.userbase or (system.host_path(ntpath.join(appdata, "Python")) if appdata else None)
    folders = torch_dll_folders(env.torch.folder, env.exec_prefix, env.base_exec_prefix, userbase)
    program_files = system.variable("ProgramFiles") or r"C:\Program Files"
    if not any((folder / "nvToolsExt64_1.dll").exists() for folder in folders):
        nvtx = system.variable("NVTOOLSEXT_PATH") or ntpath.join(program_files, "NVIDIA Corporation", "NvToolsExt")
        _append_existing(system, folders, ntpath.join(nvtx, "bin", "x64"))
    cuda = env.torch.cuda
    if cuda and not any(any(f.name.lower().startswith("cudart64") for f in children(folder)) for folder in folders):
        default = ntpath.join(program_files, "NVIDIA GPU Computing Toolkit", "CUDA", f"v{cuda}")
        base = system.variable("CUDA_PATH_V" + cuda.replace(".", "_")) or default
        _append_existing(system, folders, ntpath.join(base, "bin"))
    return folders


def search_context(system: System, env: Optional[PythonEnvironment] = None) -> SearchContext:
    added = tuple(torch_search_folders(system, env)) if env else ()
    path_entries = [host for host in (system.host_path(entry) for entry in system.search_path()) if host]
    return SearchContext(
        app_folder=env.app_folder if env else None,
        added_folders=added,
        system32=system.system32,
        windows_folder=system.windows_folder,
        path_entries=added + tuple(path_entries),  # torch prepends its folders to PATH before the retry
        current_folder=env.exec_prefix if env else None,  # the folder the live replay runs python.exe in
        known_dlls=system.known_dlls() or default_known_dlls(),
        api_sets=ApiSetResolver(_schema(system.system32), system.windows_major),
        cpu_type=env.python_cpu_type if env else None,
    )


# why the folder of a Store Python known only as its app alias is not read (the reason a DLL there is not named)
STORE_FOLDER_UNREAD = "only the Microsoft Store's shortcut to this Python was found, not its own folder"
HOME_UNSEEN = "this environment's Python is in {home}, which this copy of Windows does not hold"


def loader_for(system: System, env: Optional[PythonEnvironment] = None) -> LoaderModel:
    index = DirectoryIndex()
    if env is not None and env.unread_install and env.app_folder is not None:
        # the alias folder stands in for the install folder, which holds python3X.dll and vcruntime140*.dll
        index.cannot_read(env.app_folder, STORE_FOLDER_UNREAD)
    interpreter = env.loading.interpreter if env is not None and env.loading is not None else None
    if interpreter is not None and not interpreter.seen:  # the venv's own folder stands in for its Python's
        index.cannot_read(env.app_folder, HOME_UNSEEN.format(home=interpreter.home), unseen=True)
    return LoaderModel(search_context(system, env), index)


def _schema(system32: Optional[Path]) -> Optional[ApiSetSchema]:
    if system32 is None:
        return None
    dll = next((f for f in children(system32) if f.name.lower() == "apisetschema.dll"), None)
    if dll is None:
        return None
    try:
        stat = dll.stat()
    except OSError:
        return None
    return _parsed_schema(str(dll), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=8)
def _parsed_schema(path: str, device: int, number: int, size: int, mtime_ns: int) -> Optional[ApiSetSchema]:
    """Parsed once per file, by its identity (device, file number, size, time): every environment of a machine
    shares it."""
    try:
        data = read_section(path, ".apiset")
        return ApiSetSchema.parse(data) if data else None
    except (OSError, PEError, ValueError, UnicodeDecodeError):
        return None  # a damaged schema: fall back to the documented rules


def _append_existing(system: System, folders: list[Path], windows_path: str) -> None:
    host = system.host_path(windows_path)
    if host is not None and host.is_dir():
        folders.append(host)
