"""The one door to a Windows machine: the live one (LiveWindows) or a copied drive (OfflineImage).

Everything above this layer asks a `System` for files (as paths on the machine running us), registry
values and environment variables, and never touches winreg, ctypes or Windows path rules itself.
"""

from __future__ import annotations

import ntpath
import os
import re
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Optional, Union

from app.cancel import Cancelled, CancelToken
from app.system import files
from app.system.signature import SignatureCheck, verify_here

RegistryData = Union[str, int, list, bytes]
KNOWN_DLLS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs"
USER_ENVIRONMENT_KEY = r"HKCU\Environment"
NAME_MAX = 255  # the longest name of one file or folder: 255 UTF-16 units on NTFS, 255 bytes on Linux' file systems
USER_HIVES = ("HKCU", "HKEY_CURRENT_USER")
# the short names the app writes keys with, and the names Windows' own tools (regedit's address bar) show
HIVES = {"HKLM": "HKEY_LOCAL_MACHINE", "HKCU": "HKEY_CURRENT_USER", "HKU": "HKEY_USERS", "HKCR": "HKEY_CLASSES_ROOT"}
ELEVATED_HIVES = ("HKLM", "HKEY_LOCAL_MACHINE", "HKU", "HKEY_USERS", "HKCR", "HKEY_CLASSES_ROOT")
REGISTRY_DATA_TYPES = {"REG_SZ": str, "REG_EXPAND_SZ": str, "REG_MULTI_SZ": list, "REG_DWORD": int,
                       "REG_QWORD": int, "REG_BINARY": bytes}
INT_LIMITS = {"REG_DWORD": 1 << 32, "REG_QWORD": 1 << 64}


class NotAvailable(Exception):
    """The machine cannot do this (e.g. run a program inside an offline image)."""


class NeedsElevation(PermissionError):
    """The change is machine-wide (HKLM...): only Windows' own reg.exe, elevated, makes it, never the app itself."""


class ElevationDeclined(Exception):
    """The user said No at Windows' consent (UAC) prompt (ERROR_CANCELLED): nothing ran."""

    def text(self, lang: str) -> str:
        from app.i18n import words

        return words("repair.declined", lang)


class StillRunning(TimeoutError):
    """A program started elevated had not ended when the wait for it did: it still runs (it is not ended)."""


class StoppedAfterEnd(Cancelled):
    """A Stop asked for while a program ran elevated, honoured once it had ended: what it did (`exit_code`) is
    kept, so that a 3010 still asks for the restart."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class RegistryValue:
    type: str  # REG_SZ, REG_EXPAND_SZ, REG_MULTI_SZ, REG_DWORD, REG_QWORD, REG_BINARY
    data: RegistryData


@dataclass(frozen=True)
class MemoryStatus:
    """What Windows can commit, in bytes (GlobalMemoryStatusEx): the commit limit (physical memory plus the paging
    files as they are now), the commit charge now, physical memory; and, when known, the PagingFiles setting these
    figures were measured with (an image records it; live it is the setting Windows started with, not read)."""

    commit_limit: int
    commit_total: int
    physical_total: Optional[int] = None
    paging_files: Optional[tuple[str, ...]] = None


@dataclass(frozen=True)
class DiskSpace:
    """A drive's size and free space, in bytes."""

    total: int
    free: int


@dataclass(frozen=True)
class UserProfile:
    """A user's folders, as Windows paths: the home folder (%USERPROFILE%), Local AppData (%LOCALAPPDATA%)
    and Roaming AppData (%APPDATA%). Any of them may be unknown (None)."""

    home: Optional[str]
    local_appdata: Optional[str]
    roaming_appdata: Optional[str]

    @classmethod
    def of_home(cls, home: str) -> UserProfile:
        """The folders Windows gives a profile that does not redirect them."""
        return cls(home, ntpath.join(home, "AppData", "Local"), ntpath.join(home, "AppData", "Roaming"))


class System(ABC):
    """What the engine, the probes and the repairs may ask of a Windows machine."""

    # -- files --------------------------------------------------------------------------------------------
    @abstractmethod
    def host_path(self, windows_path: str) -> Optional[Path]:
        """Where a Windows path (`C:\\Windows\\System32`) is on this machine; None when it cannot be."""

    @abstractmethod
    def windows_path(self, host: Path) -> str:
        """The Windows spelling of a path on this machine, for reports."""

    # -- registry -----------------------------------------------------------------------------------------
    @abstractmethod
    def registry_values(self, key: str) -> dict[str, RegistryValue]:
        """All values of a key (`HKLM\\SOFTWARE\\...`; the 32-bit view spelled as WOW6432Node); {} if absent."""

    @abstractmethod
    def registry_subkeys(self, key: str) -> list[str]:
        """Names of the key's direct subkeys; [] if absent."""

    @abstractmethod
    def set_registry_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        """Write one value of a key under HKCU (created when absent), or delete it with None (deleting a value
        that does not exist does nothing). HKLM and the other machine-wide hives raise NeedsElevation; data that
        does not fit its type raises ValueError; a failed write raises OSError."""

    # -- environment --------------------------------------------------------------------------------------
    @abstractmethod
    def environment(self, scope: str) -> dict[str, str]:
        """Variables of `scope`: "system" (machine), "user" or "process"; names keep their case."""

    @abstractmethod
    def set_user_variable(self, name: str, value: Optional[str], data_type: Optional[str] = None) -> None:
        """Set the user's own environment variable (HKCU\\Environment), or delete it with None. An existing
        variable keeps its type and the spelling of its name; a new one is `data_type` (REG_SZ or REG_EXPAND_SZ:
        an undo bringing back the type it had) or else, with a '%', REG_EXPAND_SZ, otherwise REG_SZ.
        Afterwards environment("user") and variable() see the change."""

    @property
    @abstractmethod
    def windows_version(self) -> Optional[str]:
        """e.g. "10.0.22631"; None when unknown."""

    @property
    @abstractmethod
    def architecture(self) -> Optional[str]:
        """The OS architecture as Windows names it: AMD64, x86, ARM64."""

    def native_machine(self) -> Optional[str]:
        """The processor's architecture as IsWow64Process2 names it (live Windows 10 1709+); None where not asked."""
        return None

    @abstractmethod
    def fixed_drives(self) -> list[str]:
        """Drive letters of the fixed (non-removable, non-network) drives, e.g. ["C:", "D:"]."""

    @property
    @abstractmethod
    def code_page(self) -> Optional[int]:
        """The active ANSI code page (936 on a Simplified Chinese Windows); None when unknown."""

    @property
    @abstractmethod
    def ui_language(self) -> Optional[str]:
        """The user's display language as a locale name ("zh-CN", "en-US"); None when unknown."""

    def display_language(self) -> tuple[Optional[str], Optional[int]]:
        """(ui_language, code_page) of the person's own screen, for `i18n.language_for`."""
        return self.ui_language, self.code_page

    can_run_programs: bool = True  # False where run() always raises NotAvailable

    @abstractmethod
    def run(self, argv: list[str], timeout: float, env: Optional[dict[str, str]] = None,
            cwd: Optional[Path] = None, cancel: Optional[CancelToken] = None,
            on_output: Optional[Callable[[str], None]] = None) -> RunResult:
        """Run a program and wait for it. Raises NotAvailable where programs cannot run; TimeoutError or
        Cancelled once the program and everything it started have ended (app/system/process.py)."""

    owner_window: int = 0  # the wizard's window (HWND), when there is one: the permission prompt's owner

    def run_elevated(self, argv: list[str], timeout: float, cancel: Optional[CancelToken] = None,
                     on_stop_asked: Callable[[], None] = lambda: None) -> int:
        """Run one of Microsoft's programs (argv[0]: its absolute .exe path: a held, checked vc_redist, or
        Windows' reg.exe) with administrator rights, in its own process, and return its exit code. Nothing of ours
        is ever elevated (app/system/elevation.py). Raises ElevationDeclined when the user says No at the consent
        prompt, Cancelled when Stop was asked for (once the program has ended: it is never ended halfway;
        `on_stop_asked` is told at once), StillRunning when it has not ended within `timeout`, NotAvailable where
        programs cannot run, ValueError for anything but an absolute .exe path, OSError when it cannot start."""
        raise NotAvailable("this machine cannot run programs elevated")

    def pinned(self, windows_path: str) -> ContextManager[tuple[str, bytes]]:
        """Hold a file so that nobody can change, replace, rename or delete it while held: (its final Windows path,
        its bytes read through the held handle). OSError when it is reached through a link."""
        raise NotAvailable("files cannot be held for a program here")

    def installer_busy(self) -> bool:
        """Whether Windows Installer is running another installation now."""
        return False

    def query_event_log(self, channel: str, xpath: str, count: int, timeout: float) -> RunResult:
        """The newest `count` events of a channel of Windows' event log that `xpath` selects, as Windows renders
        them (XML), read by Windows' own wevtutil with the user's rights. NotAvailable where there is no live
        event log (a copied drive, this app off Windows)."""
        raise NotAvailable("no live event log here")

    def temp_folder(self) -> Path:
        """This user's temporary folder (where Microsoft's installer writes its own log)."""
        return Path(tempfile.gettempdir())

    elevates_machine_changes: bool = True  # False where machine-wide values are written directly (an image)

    def set_machine_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        """Write (or delete, with None) one machine-wide value (HKLM\\...): on a live machine through Windows' own
        reg.exe, started elevated (one permission prompt), then read back; an offline image has no elevation and
        writes registry.json. OSError when the value is not what was asked for afterwards."""
        raise NotAvailable("this machine cannot change machine-wide settings")

    # -- memory and disks (the paging-file probe) -----------------------------------------------------------
    def memory_status(self) -> Optional[MemoryStatus]:
        """The commit limit and charge now; None when unknown (an image that recorded none)."""
        return None

    def disk_space(self, drive: str) -> Optional[DiskSpace]:
        """Size and free space of a drive ("C:"); None when unknown."""
        return None

    def registry_key_written(self, key: str) -> Optional[float]:
        """When a key was last written (seconds since the epoch); None when unknown or absent."""
        return None

    def started_at(self) -> Optional[float]:
        """When Windows last started (seconds since the epoch); None when unknown."""
        return None

    # -- changing files: atomically (app/system/files.py), never in System32 --------------------------------
    def write_file(self, path: Path, data: bytes) -> None:
        target = self._writable(path)
        files.write_bytes(target, data)
        self._files_changed()

    def copy_file(self, source: Path, target: Path, progress: Optional[files.Progress] = None) -> None:
        checked = self._writable(target)
        files.copy_file(Path(source), checked, progress)
        self._files_changed()

    def delete_file(self, path: Path) -> None:
        target = self._writable(path)
        files.delete_file(target)
        self._files_changed()

    def rename_file(self, source: Path, target: Path) -> None:
        old, new = self._writable(source), self._writable(target)
        files.rename_file(old, new)
        self._files_changed()

    def _writable(self, path: Path) -> Path:
        """The path a file change may touch: absolute, its folder's links resolved (the entry itself is what
        changes, even when it is a link), and not in the Windows system folders. Raises PermissionError."""
        absolute = Path(os.path.abspath(path))
        if not absolute.name:
            raise ValueError(f"not a file path: {path}")
        target = Path(os.path.realpath(absolute.parent)) / absolute.name
        spelled = _comparable(target)
        for folder in self._system_folders():
            if spelled == folder or spelled.startswith(folder.rstrip(os.sep) + os.sep):
                raise PermissionError(f"the app never writes to System32 (or SysWOW64): {path}")
        return target

    def _system_folders(self) -> list[str]:
        """System32, SysWOW64 and Sysnative (System32 as a 32-bit program names it) on this machine, comparable."""
        folders = []
        for root in self._windows_roots():
            for name in ("System32", "SysWOW64", "Sysnative"):
                host = self.host_path(ntpath.join(root, name))
                if host is not None:
                    folders.append(_comparable(Path(os.path.realpath(host))))
        return list(dict.fromkeys(folders))

    def _windows_roots(self) -> list[str]:
        return [self.system_root, r"C:\Windows"]

    def _files_changed(self) -> None:
        """Called after a file operation, for Systems that cache what folders hold."""
        return None

    # -- signatures (app/system/signature.py) ----------------------------------------------------------------
    def verify_signature(self, path: Path) -> SignatureCheck:
        """The Authenticode signature of a file on this machine (`path` as host_path gives it): WinVerifyTrust
        on Windows, elsewhere LIEF plus the pinned roots (signature.verify_here)."""
        return verify_here(Path(path))

    # -- derived facts, the same for every System ----------------------------------------------------------
    def registry_value(self, key: str, name: str) -> Optional[RegistryValue]:
        values = self.registry_values(key)
        lowered = {k.lower(): v for k, v in values.items()}
        return lowered.get(name.lower())

    @property
    def windows_major(self) -> Optional[int]:
        match = re.match(r"(\d+)", self.windows_version or "")
        return int(match.group(1)) if match else None

    @property
    def system_root(self) -> str:
        return self.variable("SystemRoot") or r"C:\Windows"

    def folder(self, windows_path: str) -> Optional[Path]:
        host = self.host_path(windows_path)
        return host if host is not None and host.is_dir() else None

    @property
    def system32(self) -> Optional[Path]:
        return self.folder(ntpath.join(self.system_root, "System32"))

    @property
    def syswow64(self) -> Optional[Path]:
        return self.folder(ntpath.join(self.system_root, "SysWOW64"))

    @property
    def windows_folder(self) -> Optional[Path]:
        return self.folder(self.system_root)

    def variable(self, name: str) -> Optional[str]:
        """A variable as a new process would see it: process, else user, else machine."""
        for scope in ("process", "user", "system"):
            for key, value in self.environment(scope).items():
                if key.lower() == name.lower():
                    return value
        return None

    def user_profiles(self) -> list[UserProfile]:
        """The user profiles whose folders discovery searches, the current user's first. Here: only the current
        user's, from %USERPROFILE%, %LOCALAPPDATA% and %APPDATA% (an offline image adds every profile it holds)."""
        home = self.variable("USERPROFILE") or None
        local = self.variable("LOCALAPPDATA") or (ntpath.join(home, "AppData", "Local") if home else None)
        roaming = self.variable("APPDATA") or (ntpath.join(home, "AppData", "Roaming") if home else None)
        return [UserProfile(home, local, roaming)] if home or local or roaming else []

    def expand(self, text: str) -> str:
        """Expand %VARIABLE% references the way Windows does (unknown ones stay as written)."""
        return re.sub(r"%([^%]+)%", lambda m: self.variable(m.group(1)) or m.group(0), text)

    def search_path(self) -> list[str]:
        """The effective PATH: the process's own when there is one, else machine PATH then user PATH."""
        process = {k.lower(): v for k, v in self.environment("process").items()}
        if "path" in process:
            raw = process["path"]
        else:
            parts = [{k.lower(): v for k, v in self.environment(s).items()}.get("path", "") for s in ("system", "user")]
            raw = ";".join(p for p in parts if p)
        return [self.expand(entry.strip().strip('"')) for entry in raw.split(";") if entry.strip()]

    def known_dlls(self) -> Optional[frozenset[str]]:
        """The KnownDLLs list from the registry; None when the registry does not say."""
        values = self.registry_values(KNOWN_DLLS_KEY)
        names = {str(v.data).lower() for v in values.values() if v.type == "REG_SZ"}
        names = {name for name in names if name.endswith(".dll")}
        return frozenset(names) if names else None


def _comparable(path: Path) -> str:
    """A path spelled for comparison: case and separators ignored, as Windows does."""
    return os.path.normcase(os.path.normpath(str(path))).lower()


def user_key(key: str) -> str:
    """A key that the app may change itself, spelled `HKCU\\...`; NeedsElevation for machine-wide hives."""
    hive, _, path = key.rstrip("\\").partition("\\")
    if hive.upper() in ELEVATED_HIVES:
        raise NeedsElevation(f"{key} is machine-wide: changing it needs administrator rights")
    if hive.upper() not in USER_HIVES:
        raise ValueError(f"not a registry key (HKCU\\... or HKLM\\...): {key!r}")
    parts = path.split("\\")
    if not path or any(not part or "\0" in part for part in parts):
        raise ValueError(f"not a key under HKCU: {key!r}")
    return "HKCU\\" + path


def machine_key(key: str) -> str:
    """A machine-wide key, spelled `HKLM\\...`; ValueError for anything else."""
    hive, _, path = key.rstrip("\\").partition("\\")
    parts = path.split("\\")
    if hive.upper() not in ("HKLM", "HKEY_LOCAL_MACHINE") or not path or any(not p or "\0" in p for p in parts):
        raise ValueError(f"not a key under HKLM: {key!r}")
    return "HKLM\\" + path


def without_empty_entries(data: object) -> object:
    """A REG_MULTI_SZ's texts as a list without empty entries (they are none: Windows ends the list at an empty
    string, and an empty list can read back as [""]); any other data as it is."""
    return [entry for entry in data if entry != ""] if isinstance(data, (list, tuple)) else data


def same_value(a: Optional[RegistryValue], b: Optional[RegistryValue]) -> bool:
    """Whether two values are the same as the registry holds them (a list and a tuple of texts alike, empty
    entries none)."""
    if a is None or b is None:
        return a is b
    return a.type == b.type and without_empty_entries(a.data) == without_empty_entries(b.data)


def check_registry_value(name: str, value: Optional[RegistryValue]) -> None:
    """ValueError unless the value can be written as it is and read back the same (None: only the name)."""
    if not isinstance(name, str) or "\0" in name:
        raise ValueError(f"not a registry value name: {name!r}")
    if value is None:
        return
    expected = REGISTRY_DATA_TYPES.get(value.type)
    if expected is None:
        raise ValueError(f"unknown registry type {value.type!r} for {name!r}")
    data = value.data
    bad = isinstance(data, bool) or not isinstance(data, expected)
    if not bad and value.type in INT_LIMITS:
        bad = not 0 <= data < INT_LIMITS[value.type]
    elif not bad and isinstance(data, str):
        bad = "\0" in data
    elif not bad and isinstance(data, list):  # an empty string would end the list on Windows
        bad = not all(isinstance(item, str) and item and "\0" not in item for item in data)
    if bad:
        raise ValueError(f"{value.type} cannot hold {data!r:.80} (value {name!r})")


def check_variable(name: str, value: Optional[str]) -> None:
    """ValueError unless `name` can be an environment variable's name and `value` its value."""
    if not isinstance(name, str) or not name or "=" in name or "\0" in name:
        raise ValueError(f"not an environment variable name: {name!r}")
    if value is not None and (not isinstance(value, str) or "\0" in value):
        raise ValueError(f"not an environment variable value: {value!r:.80}")


VARIABLE_TYPES = ("REG_SZ", "REG_EXPAND_SZ")


def variable_value(value: str, existing: Optional[RegistryValue], data_type: Optional[str] = None) -> RegistryValue:
    """How a user variable is stored: as it is (REG_SZ or REG_EXPAND_SZ), else as `data_type` asks, else
    REG_EXPAND_SZ when it has a %."""
    if existing is not None and existing.type in VARIABLE_TYPES:
        return RegistryValue(existing.type, value)
    if data_type in VARIABLE_TYPES:
        return RegistryValue(data_type, value)
    return RegistryValue("REG_EXPAND_SZ" if "%" in value else "REG_SZ", value)
