"""The one door to a Windows machine: the live one (LiveWindows) or a copied drive (OfflineImage).

Everything above this layer asks a `System` for files (as paths on the machine running us), registry
values and environment variables, and never touches winreg, ctypes or Windows path rules itself.
"""

from __future__ import annotations

import ntpath
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from app.cancel import CancelToken

RegistryData = Union[str, int, list, bytes]
KNOWN_DLLS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs"


class NotAvailable(Exception):
    """The machine cannot do this (e.g. run a program inside an offline image)."""


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

    # -- environment --------------------------------------------------------------------------------------
    @abstractmethod
    def environment(self, scope: str) -> dict[str, str]:
        """Variables of `scope`: "system" (machine), "user" or "process"; names keep their case."""

    @property
    @abstractmethod
    def windows_version(self) -> Optional[str]:
        """e.g. "10.0.22631"; None when unknown."""

    @property
    @abstractmethod
    def architecture(self) -> Optional[str]:
        """The OS architecture as Windows names it: AMD64, x86, ARM64."""

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

    can_run_programs: bool = True  # False where run() always raises NotAvailable

    @abstractmethod
    def run(self, argv: list[str], timeout: float, env: Optional[dict[str, str]] = None,
            cwd: Optional[Path] = None, cancel: Optional[CancelToken] = None) -> RunResult:
        """Run a program and wait for it. Raises NotAvailable where programs cannot run; TimeoutError or
        Cancelled once the program and everything it started have ended (app/system/process.py)."""

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
