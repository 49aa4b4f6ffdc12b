"""A model of how torch asks Windows to load its DLLs, and how Windows searches for each dependency.

torch's `_load_dll_libraries` (torch/__init__.py) first calls `os.add_dll_directory` for its folders and
loads every `torch\\lib\\*.dll` with `LoadLibraryExW(dll, None, 0x1100)`
(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR). Only on error 126 does it prepend
those folders to PATH and retry with plain `LoadLibraryW`, whose legacy search includes PATH. A
dependency found only by that retry loads by luck, so every resolution records the rule that found it
and every place tried, in order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Union

from app.engine.apiset import ApiSetResolver
from app.resources import windows_dlls
from app.system.once_per_file import OncePerFile

# Rules, in the words the reports use. The value is the stable id shown in JSON.
API_SET = "api-set"
KNOWN_DLL = "known-dll"
DLL_FOLDER = "dll-folder"  # LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: the folder of the DLL torch is loading
APP_FOLDER = "application-folder"  # where the running python.exe lives
ADDED_FOLDER = "added-folder"  # os.add_dll_directory
SYSTEM32 = "system32"
WINDOWS_COMPONENT = "windows-component"  # part of every Windows, though absent from this image
# torch's LoadLibraryW retry: the legacy search order, PATH last
LEGACY_APP_FOLDER = "legacy-application-folder"
LEGACY_SYSTEM32 = "legacy-system32"
LEGACY_SYSTEM = "legacy-system"
LEGACY_WINDOWS = "legacy-windows"
LEGACY_CURRENT_FOLDER = "legacy-current-folder"  # SafeDllSearchMode: after the Windows folders, before PATH
PATH_FALLBACK = "path-fallback"  # found only on PATH by the retry: loads by luck
SYSTEM_RULES = frozenset({API_SET, KNOWN_DLL, SYSTEM32, WINDOWS_COMPONENT, LEGACY_SYSTEM32, LEGACY_SYSTEM,
                          LEGACY_WINDOWS})


class DirectoryIndex:
    """Case-insensitive file lookups, one directory listing per folder (Windows names ignore case)."""

    def __init__(self) -> None:
        self._listings: dict[str, dict[str, str]] = {}
        self._errors: dict[str, str] = {}
        self._unseen: set[str] = set()

    def listing(self, folder: Union[Path, str]) -> dict[str, str]:
        key = str(folder)
        found = self._listings.get(key)
        if found is None:
            try:
                names = os.listdir(folder)
            except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in a damaged path
                names = []  # no such folder: nothing can be found there
            except OSError as exc:  # the folder is there but cannot be listed: its DLLs are unknown, not absent
                names = []
                self._errors[key] = exc.strerror or str(exc)
            found = self._listings[key] = {name.lower(): name for name in names}
        return found

    def cannot_read(self, folder: Path, why: str, unseen: bool = False) -> None:
        """A folder known, before any listing, not to show what it holds (a Store Python's own install, seen only
        through its app alias; `unseen`: a venv's Python on a drive this machine does not show): a DLL that would be
        there is "not surely missing", never missing."""
        self._listings[str(folder)] = {}
        self._errors[str(folder)] = why
        if unseen:
            self._unseen.add(str(folder))

    def unseen(self, folder: Path) -> bool:
        """Whether the folder stands for one this machine cannot show at all (not one that refused its listing)."""
        return str(folder) in self._unseen

    def error(self, folder: Union[Path, str]) -> Optional[str]:
        """Why the folder could not be listed; None when it was listed or does not exist."""
        self.listing(folder)
        return self._errors.get(str(folder))

    def find(self, folder: Path, name: str) -> Optional[Path]:
        actual = self.listing(folder).get(name.lower())
        return folder / actual if actual is not None else None


@dataclass(frozen=True)
class SearchContext:
    """Everything the search depends on, as folders on this machine (for an image: inside its root)."""

    app_folder: Optional[Path] = None
    added_folders: tuple[Path, ...] = ()
    system32: Optional[Path] = None
    windows_folder: Optional[Path] = None
    path_entries: tuple[Path, ...] = ()  # the PATH the retry sees, torch's prepended folders first
    current_folder: Optional[Path] = None  # the process's current folder, which only the legacy retry searches
    known_dlls: frozenset[str] = field(default_factory=frozenset)  # lower-case names
    api_sets: ApiSetResolver = field(default_factory=ApiSetResolver)
    cpu_type: Optional[int] = None  # the process's CPU type (python.exe); None: take the root DLL's

    @property
    def system_folders(self) -> tuple[Path, ...]:
        folders = [self.system32] if self.system32 else []
        if self.windows_folder:
            folders += [self.windows_folder / "System", self.windows_folder]
        return tuple(folders)


@dataclass(frozen=True)
class Resolution:
    name: str  # as the importer spells it
    path: Optional[Path]  # None: not found, or an API set / Windows component with no file here
    rule: Optional[str]  # which rule found it; None when not found
    tried: tuple[tuple[str, str], ...] = ()  # (rule, folder) in search order, across both attempts
    api_set_host: Optional[str] = None
    unreadable: tuple[tuple[str, str], ...] = ()  # (folder, why) of tried folders that could not be listed

    @property
    def found(self) -> bool:
        return self.rule is not None

    @property
    def fragile(self) -> bool:
        """Found only by torch's PATH retry: works by luck, breaks when PATH changes."""
        return self.rule == PATH_FALLBACK

    @property
    def is_system(self) -> bool:
        return self.rule in SYSTEM_RULES


def torch_dll_folders(torch_folder: Path, exec_prefix: Path, base_exec_prefix: Path,
                      userbase: Optional[Path], exists=os.path.isdir) -> list[Path]:
    """The folders torch adds with os.add_dll_directory, in its order, keeping those that exist. Newer torch
    also adds `<exec_prefix>\\bin` (its __init__.py then names `py_root_bin_path`)."""
    candidates = [torch_folder / "lib", exec_prefix / "Library" / "bin"]
    if exec_prefix != base_exec_prefix:
        candidates.append(base_exec_prefix / "Library" / "bin")
    if userbase is not None:
        candidates.append(userbase / "Library" / "bin")
    if _loader_adds_root_bin(torch_folder):
        candidates.append(exec_prefix / "bin")
    return [folder for folder in candidates if exists(folder)]


_ROOT_BIN: OncePerFile[bool] = OncePerFile(128)  # torch's __init__.py, shared by the environments uv links


def _loader_adds_root_bin(torch_folder: Path) -> bool:
    try:
        return _ROOT_BIN.get(torch_folder / "__init__.py", lambda init: "py_root_bin_path" in init.read_text(
            encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return False


class LoaderModel:
    """Resolves DLL names the way Windows does for torch's two load attempts."""

    def __init__(self, context: SearchContext, index: Optional[DirectoryIndex] = None) -> None:
        self.context = context
        self.index = index or DirectoryIndex()
        self._cache: dict[tuple[str, str, str], Resolution] = {}
        self._components = windows_dlls()

    def resolve(self, name: str, load_folder: Optional[Path], importer: Optional[str] = None) -> Resolution:
        """Find `name` as a dependency of a DLL loaded from `load_folder` (None: no DLL-folder rule)."""
        key = (name.lower(), str(load_folder), (importer or "").lower())
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._resolve(name, load_folder, importer)
        return found

    def _resolve(self, name: str, load_folder: Optional[Path], importer: Optional[str]) -> Resolution:
        ctx = self.context
        target = ctx.api_sets.resolve(name, importer)
        if target is not None:
            host_path = self.index.find(ctx.system32, target.host) if ctx.system32 and target.host else None
            if target.host and host_path is None and not ctx.api_sets.contracts_are_builtin:
                # Windows 7 / 8.1: the UCRT is an update or comes with the VC++ runtime; search for it.
                hosted = self._resolve(target.host, load_folder, importer)
                return Resolution(target.host, hosted.path, hosted.rule, hosted.tried, target.host, hosted.unreadable)
            return Resolution(name, host_path, API_SET, (), target.host)
        if name.lower() in ctx.known_dlls and ctx.system32:
            known = self.index.find(ctx.system32, name)
            if known is not None:
                return Resolution(name, known, KNOWN_DLL, ((KNOWN_DLL, str(ctx.system32)),))
        tried: list[tuple[str, str]] = []
        first = [(DLL_FOLDER, load_folder), (APP_FOLDER, ctx.app_folder)]
        first += [(ADDED_FOLDER, folder) for folder in ctx.added_folders]
        first.append((SYSTEM32, ctx.system32))
        hit = self._search(name, first, tried)
        if hit is None:
            legacy = [(LEGACY_APP_FOLDER, ctx.app_folder), (LEGACY_SYSTEM32, ctx.system32)]
            if ctx.windows_folder:
                legacy += [(LEGACY_SYSTEM, ctx.windows_folder / "System"), (LEGACY_WINDOWS, ctx.windows_folder)]
            legacy.append((LEGACY_CURRENT_FOLDER, ctx.current_folder))
            legacy += [(PATH_FALLBACK, folder) for folder in ctx.path_entries]
            hit = self._search(name, legacy, tried)
        unreadable = tuple(dict.fromkeys((folder, why) for _, folder in tried
                                         if (why := self.index.error(folder)) is not None))
        if hit is not None:
            return Resolution(name, hit[1], hit[0], tuple(tried), unreadable=unreadable)
        if name.lower() in self._components and ctx.api_sets.contracts_are_builtin:
            return Resolution(name, None, WINDOWS_COMPONENT, tuple(tried), unreadable=unreadable)
        return Resolution(name, None, None, tuple(tried), unreadable=unreadable)

    def _search(self, name: str, places: Iterable[tuple[str, Optional[Path]]],
                tried: list[tuple[str, str]]) -> Optional[tuple[str, Path]]:
        for rule, folder in places:
            if folder is None:
                continue
            tried.append((rule, str(folder)))
            path = self.index.find(folder, name)
            if path is not None and path.is_file():
                return rule, path
        return None
