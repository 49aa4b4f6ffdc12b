"""Apps that bring their own Python, found by where Windows installs apps, not by who made them.

An app installed for one user goes to %LOCALAPPDATA%\\Programs\\<app>, one for all users to %ProgramFiles%\\<app> or
%ProgramFiles(x86)%\\<app>, and its installer writes an Uninstall entry (HKCU or HKLM, also WOW6432Node) with the
folder (InstallLocation) and the app's name (DisplayName). `app_places` lists those folders, the ones with an entry
first; `data_places` the apps' folders in %APPDATA% and %LOCALAPPDATA%, where apps keep what they make as they run
(searched to DATA_DEPTH, an app's folder to APP_DEPTH). `Owners.name_of` says which app an environment folder
belongs to: the Uninstall entry's DisplayName, else an Electron app's own name (productName in its package.json, in
resources\\app or inside resources\\app.asar), else the ProductName in its program's version resource. Nothing is
run."""

from __future__ import annotations

import ntpath
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from app.engine.pe import PEError, read_pe
from app.system.base import System, UserProfile
from app.system.folders import child, children, descend
from app.system.user_json import loads

UNINSTALL_KEYS = (r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall",
                  r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall",
                  r"HKLM\Software\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall")
APP_DEPTH = 4  # below an app's own folder: AI Playground's resources\ComfyUI\.venv is 3 down
DATA_DEPTH = 3  # below an app's folder in AppData: ai-playground's resources\ComfyUI\.venv is 3 down
# AppData's folders that are no app's own: the Store apps' data (the Store step finds their Pythons), Windows' own,
# files in passing, and the apps installed for one user (searched first, as installed apps)
NOT_APP_DATA = frozenset({"packages", "microsoft", "temp", "programs"})
MAX_PACKAGE_BYTES = 1 << 20  # an app's package.json is a few KB
MAX_ASAR_HEADER = 16 << 20  # an app.asar's index of its files: a few MB for the largest apps
# Store packages: their Pythons are found by their registration (discovery's Store step), with their user site
STORE_FOLDERS = frozenset({"windowsapps", "modifiablewindowsapps"})
UNINSTALLERS = ("uninstall", "unins", "update.exe", "elevate.exe", "crashpad")  # programs that are not the app


@dataclass(frozen=True)
class InstalledApp:
    folder: Path  # where its Uninstall entry says it is (InstallLocation)
    name: str  # its DisplayName


def installed_apps(system: System) -> list[InstalledApp]:
    """The apps with an Uninstall entry that names a folder of their own that exists, deepest folder first."""
    found: dict[str, InstalledApp] = {}
    shared = _shared_folders(system)
    for root in UNINSTALL_KEYS:
        for entry in system.registry_subkeys(root):
            key = f"{root}\\{entry}"
            name, location = _text(system, key, "DisplayName"), _text(system, key, "InstallLocation")
            host = system.host_path(location.strip('"').rstrip("\\")) if name and location else None
            if host is None or len(host.parts) < 2 or _folded(host) in shared or not host.is_dir():
                continue  # a drive, Program Files itself or a profile is no app's own folder
            found.setdefault(_folded(host), InstalledApp(host, name))  # type: ignore[arg-type]
    return sorted(found.values(), key=lambda app: -len(app.folder.parts))


def install_roots(system: System, profiles: list[UserProfile]) -> list[Path]:
    """Where Windows puts an app's folder: each user's %LOCALAPPDATA%\\Programs, %ProgramFiles%, %ProgramFiles(x86)%."""
    folders = [ntpath.join(p.local_appdata, "Programs") for p in profiles if p.local_appdata]
    folders += [system.variable("ProgramFiles") or r"C:\Program Files",
                system.variable("ProgramFiles(x86)") or r"C:\Program Files (x86)"]
    return _existing(system, folders)


def app_places(system: System, profiles: list[UserProfile]) -> list[Path]:
    """The apps' own folders: those with an Uninstall entry first, then every folder where Windows installs apps."""
    places = [app.folder for app in installed_apps(system)]
    return places + [folder for root in install_roots(system, profiles) for folder in sorted(children(root))
                     if folder.name.lower() not in STORE_FOLDERS and folder.is_dir()]


def data_places(system: System, profiles: list[UserProfile]) -> list[Path]:
    """The apps' folders in each user's %APPDATA% and %LOCALAPPDATA%, where apps keep what they make as they run."""
    roots = _existing(system, [f for p in profiles for f in (p.roaming_appdata, p.local_appdata) if f])
    return [folder for root in roots for folder in sorted(children(root))
            if folder.name.lower() not in NOT_APP_DATA and folder.is_dir()]


class Owners:
    """Which app an environment folder belongs to, by the records the app itself left: read once per discovery."""

    def __init__(self, system: System, profiles: list[UserProfile]) -> None:
        self.apps = installed_apps(system)
        self.roots = install_roots(system, profiles)
        self.named: dict[str, Optional[str]] = {}

    def name_of(self, folder: Path) -> Optional[str]:
        """The app's name from its Uninstall entry, its Electron package.json or its program's version resource;
        None for a folder of no installed app (a name is never guessed from a folder's name)."""
        key = _folded(folder)
        app = next((a for a in self.apps if _within(key, _folded(a.folder))), None)
        if app is not None:
            return app.name
        top = next((Path(*folder.parts[:len(root.parts) + 1]) for root in self.roots
                    if _within(key, _folded(root)) and len(folder.parts) > len(root.parts)), None)
        if top is None:
            return None
        if _folded(top) not in self.named:
            self.named[_folded(top)] = electron_name(top) or product_name(top)
        return self.named[_folded(top)]


def owner_of(system: System, folder: Path) -> Optional[str]:
    """The installed app a folder belongs to, by the app's own records; None when no record names one."""
    return Owners(system, system.user_profiles()).name_of(folder)


def electron_name(app_folder: Path) -> Optional[str]:
    """An Electron app's productName (else name), from resources\\app\\package.json or resources\\app.asar."""
    resources = child(app_folder, "resources")
    package = descend(resources, "app", "package.json")
    document = _json(_read_capped(package)) if package is not None else None
    if document is None:
        asar = child(resources, "app.asar")
        document = _json(asar_member(asar, "package.json")) if asar is not None else None
    if not isinstance(document, dict):
        return None
    name = document.get("productName") or document.get("name")
    return name.strip() if isinstance(name, str) and name.strip() else None


def asar_member(asar: Path, name: str) -> Optional[bytes]:
    """A file at the top of an asar archive: a pickled header (sizes, then the JSON index of the files, each with its
    size and offset after the header), then the files' bytes. None when it is not there or cannot be read."""
    try:
        with open(asar, "rb") as f:
            _, header_size, _, index_size = struct.unpack("<IIII", f.read(16))
            if index_size > MAX_ASAR_HEADER or index_size > header_size:
                return None
            files = (_json(f.read(index_size)) or {}).get("files", {})
            entry = files.get(name) if isinstance(files, dict) else None
            size = int(entry["size"]) if isinstance(entry, dict) and "offset" in entry else MAX_PACKAGE_BYTES + 1
            if size > MAX_PACKAGE_BYTES:
                return None
            f.seek(8 + header_size + int(entry["offset"]))  # type: ignore[index]
            return f.read(size)
    except (OSError, struct.error, ValueError, TypeError, AttributeError):
        return None


def product_name(app_folder: Path) -> Optional[str]:
    """The ProductName of the app's program: the .exe in its folder named as the folder, else the first other one
    that is not an uninstaller or an updater."""
    programs = sorted((p for p in children(app_folder) if p.suffix.lower() == ".exe"
                       and not p.name.lower().startswith(UNINSTALLERS)), key=lambda p: p.stem.lower()
                      != app_folder.name.lower())
    for program in programs:
        try:
            name = read_pe(program, with_exports=False).product_name
        except (OSError, PEError):
            continue
        if name and name.strip():
            return name.strip()
    return None


def _text(system: System, key: str, name: str) -> Optional[str]:
    value = system.registry_value(key, name)
    data = value.data if value is not None else None
    return data.strip() if isinstance(data, str) and data.strip() else None


def _shared_folders(system: System) -> set[str]:
    """Folders that hold many apps, which an Uninstall entry sometimes names as its own."""
    names = [system.variable(v) for v in ("ProgramFiles", "ProgramFiles(x86)", "ProgramData", "SystemRoot",
                                          "USERPROFILE", "LOCALAPPDATA", "APPDATA")]
    names += [r"C:\Program Files", r"C:\Program Files (x86)", r"C:\ProgramData", r"C:\Windows", r"C:\Users"]
    names += [ntpath.join(p.local_appdata, "Programs") for p in system.user_profiles() if p.local_appdata]
    return {_folded(host) for host in (system.host_path(n) for n in names if n) if host is not None}


def _existing(system: System, windows_folders: list[str]) -> list[Path]:
    found: list[Path] = []
    for folder in windows_folders:
        host = system.host_path(folder)
        if host is not None and host.is_dir() and all(_folded(host) != _folded(f) for f in found):
            found.append(host)
    return found


def _folded(folder: Path) -> str:
    return os.path.normcase(str(folder)).lower().rstrip("\\/")


def _within(folder: str, root: str) -> bool:
    return folder == root or folder.startswith(root + os.sep)


def _read_capped(path: Path) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PACKAGE_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_PACKAGE_BYTES else None


def _json(data: Optional[bytes]) -> Optional[dict]:
    try:
        document = loads(data.decode("utf-8-sig", errors="replace")) if data else None
    except ValueError:  # not JSON, or nested deeper than a package's file is
        return None
    return document if isinstance(document, dict) else None
