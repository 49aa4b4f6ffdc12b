"""OfflineImage: a folder that is a Windows system drive (C:\\), plus registry.json and environment.json.

Used by the tests, by the demo machine, and by people who analyse a copied Windows drive from another
OS. All lookups ignore case, as on Windows. A missing JSON file means "nothing known", not an error;
a damaged one, or a damaged value, is noted in `problems` and skipped.

Repairs change an image like a machine: the user's own registry values and variables are written back to
registry.json and environment.json (atomically, keeping every other entry as it is), and files change only
inside the image's folder. A damaged JSON file is never overwritten: that would lose what it holds.
"""

from __future__ import annotations

import json
import ntpath
import os
import re
import threading
from itertools import accumulate
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.system import files
from app.system.base import (
    NAME_MAX,
    USER_ENVIRONMENT_KEY,
    DiskSpace,
    MemoryStatus,
    NotAvailable,
    RegistryValue,
    RunResult,
    System,
    UserProfile,
    check_registry_value,
    check_variable,
    machine_key,
    user_key,
    variable_value,
)
from app.system.confine import is_whole_windows_path
from app.system.folders import children
from app.system.user_json import read_json

NLS_CODE_PAGE_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Nls\CodePage"
REGISTRY_TYPES = {"REG_SZ": str, "REG_EXPAND_SZ": str, "REG_MULTI_SZ": list, "REG_DWORD": int,
                  "REG_QWORD": int, "REG_BINARY": str}
PROFILE_LIST_KEY = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList"
SERVICE_SIDS = frozenset({"s-1-5-18", "s-1-5-19", "s-1-5-20"})  # SYSTEM, LocalService, NetworkService
NOT_PROFILES = re.compile(r"^(public|default|default user|all users|defaultuser\d+)$", re.I)
DATA_FILES = ("registry.json", "environment.json")
DATA_FILE_MAX_BYTES = 256 << 20  # an export of a whole registry hive is tens of MB


# The longest path this machine's file system takes (Linux 4096 bytes, macOS 1024); Windows has no such limit here.
HOST_PATH_MAX: Optional[int] = os.pathconf("/", "PC_PATH_MAX") if hasattr(os, "pathconf") else None


def _spelled_here(text: str) -> bool:
    """Whether a text can be a file name on this machine: a lone surrogate (JSON's "\\ud800") cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class ImageFileDamaged(OSError):
    """registry.json or environment.json cannot be read back to be changed; it is left as it is."""


class OfflineImage(System):
    can_run_programs = False
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"the image folder does not exist: {root}")
        self.problems: list[str] = []
        self._listings: dict[str, dict[str, str]] = {}
        self._registry: dict[str, dict[str, RegistryValue]] = {}
        self._subkeys: dict[str, set[str]] = {}
        self._profiles: Optional[list[UserProfile]] = None
        self._write_lock = threading.RLock()
        self._load_registry()
        env = self._load_json("environment.json")
        self._env = env if isinstance(env, dict) else {}

    # -- JSON ---------------------------------------------------------------------------------------------
    def _load_json(self, name: str) -> object:
        path = self.root / name
        if not path.is_file():
            return None
        try:
            return read_json(path, max_bytes=DATA_FILE_MAX_BYTES)
        except (OSError, ValueError) as exc:
            self.problems.append(f"{name} could not be read: {exc}")
            return None

    def _load_registry(self) -> None:
        data = self._load_json("registry.json")
        if data is None:
            return
        if not isinstance(data, dict):
            self.problems.append("registry.json is not a table of keys")
            return
        for key, values in data.items():
            if not isinstance(values, dict):
                self.problems.append(f"registry key {key} has no value table")
                continue
            parsed = {}
            for name, value in values.items():
                checked = _registry_value(value)
                if checked is None:
                    self.problems.append(f"registry value {key}\\{name or '(default)'} is damaged: {value!r:.80}")
                else:
                    parsed[name] = checked
            lower = key.lower().rstrip("\\")
            self._registry.setdefault(lower, {}).update(parsed)
            parts = key.rstrip("\\").split("\\")
            for depth in range(1, len(parts)):
                self._subkeys.setdefault("\\".join(parts[:depth]).lower(), set()).add(parts[depth])

    # -- System -------------------------------------------------------------------------------------------
    def host_path(self, windows_path: str) -> Optional[Path]:
        """Where a path of the copied drive is in its folder; None for one no file here can have. A name that
        cannot be spelled here (a lone UTF-16 surrogate) or a path longer than this file system takes is passed
        over with a note in `problems`."""
        drive, rest = ntpath.splitdrive(windows_path)
        if drive.upper() != "C:" or "\0" in windows_path or not is_whole_windows_path(windows_path):
            return None  # another drive, or `C:name` (relative to a current folder this drive does not have)
        parts = [p for p in rest.replace("/", "\\").split("\\") if p and p != "."]
        if not _spelled_here(windows_path):
            culprit = next(i for i, part in enumerate(parts) if not _spelled_here(part))
            return self._passed_over(drive, parts[:culprit + 1], "holds a character no file name can have here "
                                                                 "(a lone surrogate)")
        current = self.root
        for part in parts:
            if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
                return None  # no copied drive here can hold that name (this file system takes 255 bytes)
            if part == "..":
                current = current.parent if current != self.root else current
                continue
            current = current / self._names(current).get(part.lower(), part)
        if HOST_PATH_MAX is not None and len(os.fsencode(current)) >= HOST_PATH_MAX:
            lengths = accumulate((len(part.encode("utf-8")) + 1 for part in parts), initial=len(os.fsencode(self.root)))
            culprit = next(i for i, total in enumerate(list(lengths)[1:]) if total >= HOST_PATH_MAX)
            return self._passed_over(drive, parts[:culprit + 1], f"is longer than this file system takes "
                                                                 f"({HOST_PATH_MAX} bytes with the image's folder)")
        return current

    def _passed_over(self, drive: str, parts: list[str], why: str) -> None:
        """None, and a note naming the path up to the part that is the cause: the paths below it share one note."""
        shown = "\\".join([drive, *parts])
        note = f"the path {ascii(shown[:160])}{'...' if len(shown) > 160 else ''} {why}: passed over"
        if note not in self.problems:
            self.problems.append(note)
        return None

    def _names(self, folder: Path) -> dict[str, str]:
        """A folder's names by lower case, listed once (an image does not change while it is read)."""
        key = str(folder)
        names = self._listings.get(key)
        if names is None:
            try:
                names = {n.lower(): n for n in os.listdir(folder)}
            except (OSError, ValueError):
                names = {}
            if len(self._listings) > 4096:
                self._listings.clear()
            self._listings[key] = names
        return names

    def windows_path(self, host: Path) -> str:
        text = os.path.abspath(host)  # text, not a Path: a report of many environments spells thousands
        root = str(self.root)
        if text == root:
            return "C:\\"
        inside = root if root.endswith(os.sep) else root + os.sep
        if not text.startswith(inside):
            return str(host)
        return "C:\\" + text[len(inside):].replace(os.sep, "\\")

    def _writable(self, path: Path) -> Path:
        """Only files of the image's drive: inside its folder (links followed), not its registry.json or
        environment.json, and not in System32 (System._writable)."""
        absolute = Path(os.path.abspath(path))
        real = Path(os.path.realpath(absolute.parent)) / absolute.name
        if self.root not in real.parents:
            raise ValueError(f"{path} is outside the offline image {self.root}: the app changes files only inside it")
        if real.parent == self.root and real.name.lower() in DATA_FILES:
            raise ValueError(f"{path} is the image's own data, not a file of its drive")
        return super()._writable(path)

    def _files_changed(self) -> None:
        self._listings.clear()  # folders' listings are cached; a change makes them stale
        self._profiles = None

    def registry_values(self, key: str) -> dict[str, RegistryValue]:
        return dict(self._registry.get(key.lower().rstrip("\\"), {}))

    def registry_subkeys(self, key: str) -> list[str]:
        return sorted(self._subkeys.get(key.lower().rstrip("\\"), set()))

    @property
    def is_demo(self) -> bool:
        """The built-in demo computer (its environment.json says so), not a drive the user copied."""
        return self._env.get("demo") is True

    def environment(self, scope: str) -> dict[str, str]:
        values = self._env.get(scope, {})
        return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}

    # -- changing the user's own settings -----------------------------------------------------------------
    def _read_for_update(self, name: str) -> dict:
        """A data file's table as it is on disk, to be changed and written back; {} when the file is absent."""
        path = self.root / name
        if not path.exists():
            return {}
        try:
            document = read_json(path, max_bytes=DATA_FILE_MAX_BYTES)
        except ValueError as exc:
            raise ImageFileDamaged(f"{path} is damaged ({exc}); it was not changed, so as not to lose what it "
                                   "holds: repair or remove it first") from exc
        if not isinstance(document, dict):
            raise ImageFileDamaged(f"{path} is not a table; it was not changed, so as not to lose what it holds: "
                                   "repair or remove it first")
        return document

    def _write_data(self, name: str, document: dict) -> None:
        text = json.dumps(document, indent=1, ensure_ascii=False)
        files.write_bytes(self.root / name, text.encode("utf-8"))

    elevates_machine_changes = False  # no elevation exists in an image: machine values are written here directly

    def set_registry_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        self._set_value(user_key(key), name, value)

    def set_machine_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        self._set_value(machine_key(key), name, value)

    def _set_value(self, spelled: str, name: str, value: Optional[RegistryValue]) -> None:
        check_registry_value(name, value)
        lower = spelled.lower()
        with self._write_lock:
            document = self._read_for_update("registry.json")
            keys = [k for k in document if k.lower().rstrip("\\") == lower]  # the file may spell it several ways
            tables = [(k, document[k]) for k in keys if isinstance(document[k], dict)]
            found = [(k, table, n) for k, table in tables for n in table if n.lower() == name.lower()]
            if value is None and not found:
                return  # nothing to delete
            if keys and not tables:
                raise ImageFileDamaged(f"registry key {keys[0]} in {self.root / 'registry.json'} has no value "
                                       "table; it was not changed, so as not to lose what it holds")
            keep = found[0] if value is not None and found else None  # rewritten in place, spelling kept
            for entry in found:
                if entry is not keep:
                    del entry[1][entry[2]]
            if value is not None:
                if keep:
                    where, table, stored = keep
                elif tables:
                    (where, table), stored = tables[0], name
                else:
                    where, table, stored = spelled, {}, name
                document[where] = table
                data = value.data.hex() if isinstance(value.data, bytes) else value.data
                table[stored] = {"type": value.type, "data": data}
            self._write_data("registry.json", document)
            memory = self._registry.setdefault(lower, {})
            for old in [n for n in memory if n.lower() == name.lower()]:
                del memory[old]
            if value is not None:
                memory[stored] = value
                parts = where.rstrip("\\").split("\\")
                for depth in range(1, len(parts)):
                    self._subkeys.setdefault("\\".join(parts[:depth]).lower(), set()).add(parts[depth])

    def set_user_variable(self, name: str, value: Optional[str], data_type: Optional[str] = None) -> None:
        check_variable(name, value)
        with self._write_lock:
            document = self._read_for_update("environment.json")
            table = document.get("user", {})
            if not isinstance(table, dict):
                raise ImageFileDamaged(f"the user table of {self.root / 'environment.json'} is not a table; it was "
                                       "not changed, so as not to lose what it holds")
            if USER_ENVIRONMENT_KEY.lower() in self._registry:  # the image holds the user's registry: keep it true
                existing = self.registry_value(USER_ENVIRONMENT_KEY, name)
                self.set_registry_value(USER_ENVIRONMENT_KEY, name,
                                        None if value is None else variable_value(value, existing, data_type))
            names = [k for k in table if k.lower() == name.lower()]
            if value is None and not names:
                return
            for old in names[1:] if value is not None else names:
                del table[old]
            if value is not None:
                table[names[0] if names else name] = value
            document["user"] = table
            self._write_data("environment.json", document)
            self._env = document
            self._profiles = None

    @property
    def windows_version(self) -> Optional[str]:
        version = self._env.get("windows_version")
        return str(version) if version else None

    @property
    def architecture(self) -> Optional[str]:
        """environment.json's "arch", else the machine's PROCESSOR_ARCHITECTURE; ARM64 when either says so (a
        capture made by an x64 program emulated on ARM64 may have been told "AMD64", never the reverse)."""
        arch = str(self._env.get("arch") or "") or None
        variable = next((v for k, v in self.environment("system").items()
                         if k.upper() == "PROCESSOR_ARCHITECTURE" and v), None)
        if "ARM64" in (str(arch).upper(), str(variable).upper()):
            return "ARM64"
        return arch or variable

    def fixed_drives(self) -> list[str]:
        return ["C:"]

    def memory_status(self) -> Optional[MemoryStatus]:
        """environment.json "memory": {"commit_limit", "commit_total", "physical_total", "paging_files"} in bytes,
        as measured on the machine (paging_files: the PagingFiles setting it was measured with); else unknown."""
        memory = self._env.get("memory")
        if memory is None:
            return None
        limit, total = _size(memory, "commit_limit"), _size(memory, "commit_total")
        physical = _size(memory, "physical_total")
        paging = memory.get("paging_files") if isinstance(memory, dict) else None
        if limit is None or total is None or (physical is None and memory.get("physical_total") is not None) or (
                paging is not None and not (isinstance(paging, list) and all(isinstance(p, str) for p in paging))):
            self.problems.append(f"environment.json has an unreadable memory table: {memory!r:.120}")
            return None
        return MemoryStatus(limit, total, physical, tuple(paging) if paging is not None else None)

    def disk_space(self, drive: str) -> Optional[DiskSpace]:
        """environment.json "disks": {"C:": {"total", "free"}} in bytes; else unknown."""
        disks = self._env.get("disks")
        entry = next((v for k, v in disks.items() if k.rstrip("\\").upper() == drive.rstrip("\\").upper()),
                     None) if isinstance(disks, dict) else None
        if entry is None:
            return None
        total, free = _size(entry, "total"), _size(entry, "free")
        if total is None or free is None:
            self.problems.append(f"environment.json has an unreadable entry for drive {drive}: {entry!r:.80}")
            return None
        return DiskSpace(total, free)

    @property
    def code_page(self) -> Optional[int]:
        value = self.registry_value(NLS_CODE_PAGE_KEY, "ACP")
        data = value.data if value else self._env.get("code_page")
        try:
            return int(str(data)) if data is not None else None
        except ValueError:
            self.problems.append(f"the active code page is not a number: {data!r:.40}")
            return None

    def display_language(self) -> tuple[Optional[str], Optional[int]]:
        """None: a copied drive's language is its owner's, not that of the person looking at it."""
        return None, None

    @property
    def ui_language(self) -> Optional[str]:
        for key, name in ((r"HKCU\Control Panel\International", "LocaleName"),
                          (r"HKCU\Control Panel\Desktop", "PreferredUILanguages")):
            value = self.registry_value(key, name)
            if value is not None:
                data = value.data[0] if isinstance(value.data, list) and value.data else value.data
                if isinstance(data, str) and data:
                    return data
        language = self._env.get("ui_language")
        return str(language) if language else None

    # -- user profiles ------------------------------------------------------------------------------------
    def user_profiles(self) -> list[UserProfile]:
        """The current user's profile when environment.json names it, then every other profile in the image:
        those of the registry's ProfileList, else the real profile folders under C:\\Users. Windows sets
        %USERPROFILE%, %LOCALAPPDATA% and %APPDATA% at logon, so a copied drive often has none of them."""
        if self._profiles is None:
            profiles = super().user_profiles()
            seen = {self._profile_key(p.home) for p in profiles if p.home}
            for home in self._listed_profiles() or self._profile_folders():
                if self._profile_key(home) not in seen:
                    seen.add(self._profile_key(home))
                    profiles.append(UserProfile.of_home(home))
            self._profiles = profiles
        return list(self._profiles)

    def _profile_key(self, home: str) -> str:
        return str(self.host_path(home) or home).lower()

    def _listed_profiles(self) -> list[str]:
        """The home folders that ProfileList\\<SID>\\ProfileImagePath names and the image holds."""
        homes: list[str] = []
        for sid in self.registry_subkeys(PROFILE_LIST_KEY):
            if sid.lower() in SERVICE_SIDS:
                continue
            key = f"{PROFILE_LIST_KEY}\\{sid}"
            value = self.registry_value(key, "ProfileImagePath")
            if value is None:
                continue  # absent, or damaged and noted when registry.json was read
            path = self._profile_path(value)
            if path is None:
                self.problems.append(f"registry value {key}\\ProfileImagePath is damaged: {value.data!r:.80}")
                continue
            host = self.host_path(path)
            if host is not None and host.is_dir():  # a profile on another drive, or deleted: not in the image
                homes.append(self.windows_path(host))
        return homes

    def _profile_path(self, value: RegistryValue) -> Optional[str]:
        """ProfileImagePath as an absolute Windows path, %SystemDrive% and the like expanded; None if unusable."""
        if value.type not in ("REG_SZ", "REG_EXPAND_SZ") or not isinstance(value.data, str):
            return None
        text = value.data.strip().strip('"')
        if "\0" in text:
            return None
        defaults = {"systemdrive": "C:", "systemroot": self.system_root, "windir": self.system_root}
        text = re.sub(r"%([^%]+)%", lambda m: self.variable(m.group(1)) or defaults.get(m.group(1).lower(), m.group(0)),
                      text)
        return text if re.match(r"^[A-Za-z]:\\", text) and "%" not in text else None

    def _profile_folders(self) -> list[str]:
        """Folders under C:\\Users that are real profiles: not Public, Default and the like, not links (Windows
        makes "Default User" and "All Users" junctions), and holding a profile's NTUSER.DAT or AppData."""
        homes: list[str] = []
        for entry in children(self.folder(r"C:\Users")):
            if NOT_PROFILES.match(entry.name) or entry.is_symlink() or not entry.is_dir():
                continue
            if {"ntuser.dat", "appdata"} & set(self._names(entry)):
                homes.append(self.windows_path(entry))
        return homes


    def run(self, argv: list[str], timeout: float, env: Optional[dict[str, str]] = None,
            cwd: Optional[Path] = None, cancel: Optional[CancelToken] = None,
            on_output: Optional[Callable[[str], None]] = None) -> RunResult:
        raise NotAvailable("programs cannot run inside an offline image")

    def run_elevated(self, argv: list[str], timeout: float, cancel: Optional[CancelToken] = None,
                     on_stop_asked: Callable[[], None] = lambda: None) -> int:
        raise NotAvailable("programs cannot run inside an offline image (an installer least of all)")


def _size(table: object, name: str) -> Optional[int]:
    """A count of bytes from a JSON table: a non-negative integer, else None."""
    value = table.get(name) if isinstance(table, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _registry_value(value: object) -> Optional[RegistryValue]:
    if not isinstance(value, dict) or value.get("type") not in REGISTRY_TYPES or "data" not in value:
        return None
    kind, data = value["type"], value["data"]
    expected = REGISTRY_TYPES[kind]
    if expected is int and (isinstance(data, bool) or not isinstance(data, int)):
        return None
    if not isinstance(data, expected):
        return None
    if kind == "REG_MULTI_SZ" and not all(isinstance(item, str) for item in data):
        return None
    if kind == "REG_BINARY":
        try:
            data = bytes.fromhex(data)
        except ValueError:
            return None
    return RegistryValue(kind, data)
