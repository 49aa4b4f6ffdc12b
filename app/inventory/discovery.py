"""Find every Python environment on a machine, streaming each one as soon as it is found.

Sources, in order: folders the user chose, PEP 514 registry entries, the `py` launcher, conda, the homes the
launchers record (Pinokio, Stability Matrix, ComfyUI Desktop, SwarmUI, the Invoke launcher, uv: each one's own
settings file, then its default folder; app/inventory/launchers.py), Pythons on PATH, per-user python.org
installs, the apps that bring their own Python wherever Windows installs apps (those with an Uninstall entry first,
then %LOCALAPPDATA%\\Programs, %ProgramFiles% and %ProgramFiles(x86)%; app/inventory/installed_apps.py), a bounded
walk of the usual places on every fixed drive and in every user profile for AI apps (ComfyUI portable, web UIs,
Fooocus, kohya_ss, ...), then %APPDATA% and %LOCALAPPDATA%, and the Microsoft Store Python. Each walk knows a
launcher's home when it meets one (a portable Stability Matrix beside its program) and goes straight to its
environments. What the apps' folders hold is kept only when it holds torch, and named after the app that owns it.
The profiles are the System's `user_profiles()`: the current user's on a live machine, every profile in an offline
image (whose environment.json often has no %USERPROFILE%). Nothing is imported or run except the `py` launcher's
list on a live machine. A time budget and a depth bound keep it finite.
"""

from __future__ import annotations

import ntpath
import os
import re
import time
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from app.cancel import CancelToken, Progress, check, no_progress
from app.inventory.environment import (
    FREE_THREADED_EXE,
    PythonEnvironment,
    describe,
    free_threaded_pythons,
    inspect_environment,
)
from app.inventory.installed_apps import APP_DEPTH, DATA_DEPTH, Owners, app_places, data_places
from app.inventory.launchers import environments_in, homes_among, marker_names, recorded_homes
from app.resources import ai_apps
from app.system.base import NotAvailable, System, UserProfile
from app.system.folders import child, children, descend

PEP514_ROOTS = (r"HKCU\Software\Python", r"HKLM\Software\Python", r"HKLM\Software\WOW6432Node\Python")
CONDA_NAMES = ("anaconda3", "miniconda3", "miniforge3", "mambaforge")
DEFAULT_SEARCH = (4, 60.0)  # how deep (folders below each place) and how long (s) discovery looks
EVERYWHERE = (7, 600.0)  # "search everywhere": deeper and longer
WANTED_NAMES = frozenset({"python.exe", "pyvenv.cfg"})  # what makes a folder an environment (free-threaded too)
INSTALLED_APP = "installed app"  # found in an app's own folder or its data: kept only with torch
STORE_PACKAGE = re.compile(r"^PythonSoftwareFoundation\.Python\.3\.(\d+)_\w+$", re.I)


@dataclass
class DiscoveryReport:
    """What a finished (or stopped) discovery saw, beside the environments it streamed."""

    folders_visited: int = 0
    out_of_time: bool = False  # the time ran out before every place was looked in: an environment may be missing
    problems: list[str] = field(default_factory=list)


@cache
def _ai_apps() -> dict:
    """ai_apps.json as discovery reads it: each app's folder pattern compiled, the names never walked as a set."""
    data = ai_apps()
    return {"apps": [{**app, "pattern": re.compile(app["folder"], re.I)} for app in data["apps"]],
            "places": data["places"], "user_places": data["user_places"], "skip": frozenset(data["skip"])}


def app_name(python_folder: Path) -> Optional[str]:
    """'ComfyUI (portable)' for ...\\ComfyUI_windows_portable\\python_embeded, else None."""
    parts = python_folder.parts
    for app in _ai_apps()["apps"]:
        for inner in app["python"]:
            depth = len(inner.split("\\"))
            tail = [p.lower() for p in parts[-depth:]]
            if tail == inner.lower().split("\\") and len(parts) > depth and app["pattern"].match(parts[-depth - 1]):
                return app["name"]
    return None


def discover(system: System, *, folders: Iterable[Path] = (), drives: Optional[Iterable[str]] = None,
             budget_s: float = 60.0, max_depth: int = 4, cancel: Optional[CancelToken] = None,
             progress: Progress = no_progress, report: Optional[DiscoveryReport] = None) -> Iterator[PythonEnvironment]:
    """Yield each environment once, as found. `drives` limits the search of AI-app folders (default: every
    fixed drive); `report` (if given) is filled in as discovery goes."""
    report = report if report is not None else DiscoveryReport()
    deadline = time.monotonic() + budget_s
    seen: dict[tuple, PythonEnvironment] = {}
    walked: set[str] = set()
    profiles = system.user_profiles()
    owners: list[Owners] = []  # read at the first environment
    walk = partial(_walk, deadline=deadline, cancel=cancel, report=report, walked=walked)

    def accept(env: Optional[PythonEnvironment], source: str) -> Optional[PythonEnvironment]:
        if env is None or (source == INSTALLED_APP and env.torch is None):
            return None
        # python3.13t.exe beside python.exe is another interpreter with the same prefix
        key = (_identity(env.exec_prefix), env.free_threaded)
        if key in seen:
            _another_path(seen[key], env.exec_prefix)
            return None
        owners[:] = owners or [Owners(system, profiles)]
        app = env.app or app_name(env.exec_prefix) or owners[0].name_of(env.exec_prefix)
        seen[key] = replace(env, found_by=source, app=app)
        return seen[key]

    def candidates() -> Iterator[tuple[str, Path]]:
        for folder in folders:
            yield from (("chosen folder", p) for p in walk(Path(folder), max_depth))
        yield from (("registry (PEP 514)", p) for p in _pep514(system))
        yield from (("py launcher", p) for p in _py_launcher(system, profiles, report))
        yield from (("conda", p) for p in _conda(system, profiles))
        # where each launcher records its home: exactly its environments, however deep
        yield from (("launcher", p) for launcher, home in recorded_homes(system, profiles, report.problems)
                    for p in environments_in(launcher, home))
        yield from (("PATH", p) for p in _on_path(system))
        yield from (("search", p) for p in _profile_pythons(system, profiles))
        yield from _walked(system, profiles, drives, max_depth, walk)

    for step, (source, location) in enumerate(candidates()):
        check(cancel)
        if time.monotonic() > deadline:
            report.out_of_time = True
            break
        progress(step, 0, str(location))
        found = accept(inspect_environment(system, location), source)
        if found is not None:
            yield found
        if found is not None and not found.is_venv:
            for python in free_threaded_pythons(found.exec_prefix):
                sibling = accept(inspect_environment(system, python), source)
                if sibling is not None:
                    yield sibling
    if report.out_of_time:  # stopped here, or a walk at the deadline: folders were never visited
        report.problems.append(f"the search stopped after {budget_s:.0f} s; some folders were not visited")
        return
    for env in _store_pythons(system, profiles):
        found = accept(env, "Microsoft Store")
        if found is not None:
            yield found


def _walked(system: System, profiles: list[UserProfile], drives: Optional[Iterable[str]], max_depth: int,
            walk: Callable[[Path, int], Iterator[Path]]) -> Iterator[tuple[str, Path]]:
    """The walks, in order: the apps' own folders, the usual places on each drive, then the apps' data folders."""
    deeper = max_depth - DEFAULT_SEARCH[0]  # "search everywhere" looks deeper below the apps' folders too
    for place in app_places(system, profiles):
        yield from ((INSTALLED_APP, p) for p in walk(place, APP_DEPTH + deeper))
    for place in _places(system, profiles, drives):
        yield from (("search", p) for p in walk(place, max_depth))
    for place in data_places(system, profiles):
        yield from ((INSTALLED_APP, p) for p in walk(place, DATA_DEPTH + deeper))


def _identity(folder: Path) -> tuple:
    """What a folder is, whatever path reached it: its device and file number (os.stat follows a junction or a
    link, and Windows answers the same for an 8.3 name or another case); its path, in one case, when the file
    system gives no number."""
    try:
        found = os.stat(folder)
    except OSError:
        found = None
    if found is not None and found.st_ino:
        return (found.st_dev, found.st_ino)
    return (os.path.normcase(str(folder)).lower(),)


def _another_path(env: PythonEnvironment, folder: Path) -> None:
    """Keeps `folder` among the paths `env` is reached by, unless it is a spelling already known (case aside)."""
    known = [env.exec_prefix, *env.also_at]
    if all(os.path.normcase(str(p)).lower() != os.path.normcase(str(folder)).lower() for p in known):
        env.also_at.append(folder)


def _pep514(system: System) -> Iterator[Path]:
    for root in PEP514_ROOTS:
        for company in system.registry_subkeys(root):
            if company.lower() == "pylauncher":
                continue
            for tag in system.registry_subkeys(f"{root}\\{company}"):
                key = f"{root}\\{company}\\{tag}\\InstallPath"
                for name in ("ExecutablePath", ""):
                    value = system.registry_value(key, name)
                    if value is not None and isinstance(value.data, str) and value.data.strip():
                        host = system.host_path(value.data.strip())
                        if host is not None:
                            yield host
                        break


def _py_launcher(system: System, profiles: list[UserProfile], report: DiscoveryReport) -> Iterator[Path]:
    """`py -0p` lists the Pythons the launcher knows; only on a live machine with the launcher."""
    windows = system.host_path(system.system_root)
    launcher = child(windows, "py.exe") if windows else None
    for local in (p.local_appdata for p in profiles if p.local_appdata):
        if launcher is not None:
            break
        base = system.host_path(ntpath.join(local, "Programs", "Python", "Launcher"))
        launcher = child(base, "py.exe") if base else None
    if launcher is None:
        return
    try:
        result = system.run([system.windows_path(launcher), "-0p"], timeout=10)
    except NotAvailable:
        return
    except (OSError, TimeoutError) as exc:
        report.problems.append(f"the py launcher's list could not be read: {exc}")
        return
    for line in (line.strip() for line in result.stdout.splitlines()):
        # from the first drive to a python.exe that ends the line: two searches, linear in the line
        drive = re.search(r"[A-Za-z]:\\", line) if re.search(r"pythonw?\.exe$", line, re.I) else None
        if drive:
            host = system.host_path(line[drive.start():])
            if host is not None:
                yield host


def _conda(system: System, profiles: list[UserProfile]) -> Iterator[Path]:
    roots: list[Path] = []
    for profile in (p.home for p in profiles if p.home):
        listed = system.host_path(ntpath.join(profile, ".conda", "environments.txt"))
        try:
            lines = listed.read_text(encoding="utf-8", errors="replace").splitlines() if listed else []
        except OSError:
            lines = []
        for line in lines:
            host = system.host_path(line.strip()) if line.strip() else None
            if host is not None:
                yield host
    bases = [folder for p in profiles for folder in (p.home, p.local_appdata)]
    for base in filter(None, (*bases, system.variable("ProgramData") or r"C:\ProgramData")):
        for name in CONDA_NAMES:
            host = system.host_path(ntpath.join(base, name))
            if host is not None and host.is_dir() and host not in roots:
                roots.append(host)
    for root in roots:
        yield root
        yield from children(child(root, "envs"))


def _on_path(system: System) -> Iterator[Path]:
    for entry in system.search_path():
        host = system.host_path(entry)
        if host is not None and child(host, "python.exe") is not None and "windowsapps" not in str(host).lower():
            yield host


def _profile_pythons(system: System, profiles: list[UserProfile]) -> Iterator[Path]:
    """python.org's per-user installs, Local AppData\\Programs\\Python\\PythonXY: the registry (PEP 514) names
    them only in the current user's HKCU, which is the only one an image's registry.json holds."""
    for local in (p.local_appdata for p in profiles if p.local_appdata):
        for folder in children(system.host_path(ntpath.join(local, "Programs", "Python"))):
            if child(folder, "python.exe") is not None:
                yield folder


def _store_pythons(system: System, profiles: list[UserProfile]) -> Iterator[PythonEnvironment]:
    """Store Pythons: the install is in Program Files\\WindowsApps, packages in LocalCache\\local-packages."""
    for local in (p.local_appdata for p in profiles if p.local_appdata):
        yield from _store_pythons_of(system, local)


def _store_pythons_of(system: System, local: str) -> Iterator[PythonEnvironment]:
    """The Store Pythons of one user, whose Local AppData is `local`."""
    packages = system.host_path(ntpath.join(local, "Packages"))
    for package in children(packages):
        match = STORE_PACKAGE.match(package.name)
        if not match:
            continue
        minor = match.group(1)
        # the user site: the Store's launcher sets PYTHONUSERBASE to LocalCache\local-packages (python_uwp.cpp),
        # where pip puts what it cannot write to the install's own Lib\site-packages
        userbase = descend(package, "LocalCache", "local-packages")
        install = _store_install(system, minor)
        alias = descend(system.host_path(local), "Microsoft", "WindowsApps", package.name, "python.exe")
        python = child(install, "python.exe") if install else alias
        if python is None:
            continue
        folder = install or python.parent
        env = describe(system, python, "store", folder, folder, folder, f"3.{minor}", userbase=userbase)
        yield env if install else replace(env, unread_install=True)


APPMODEL_PACKAGES = r"HKCU\Software\Classes\Local Settings\Software\Microsoft\Windows\CurrentVersion\AppModel" \
                    r"\Repository\Packages"


def _store_install(system: System, minor: str) -> Optional[Path]:
    """Where Windows installed the Store Python 3.<minor> package. Its registration (this user's AppModel
    repository: `PackageRootFolder`) names the folder Windows really runs, also while an older version waits in
    `Program Files\\WindowsApps` to be removed, and `WindowsApps` itself cannot be listed by a user; a listing (a
    copied drive, an administrator) is the fallback. None when neither can be read: the environment is then
    described from its app alias (a 0-byte link: its machine type cannot be read from it)."""
    prefix = f"pythonsoftwarefoundation.python.3.{minor}_"
    for name in system.registry_subkeys(APPMODEL_PACKAGES):
        if not name.lower().startswith(prefix):
            continue
        root = system.registry_value(f"{APPMODEL_PACKAGES}\\{name}", "PackageRootFolder")
        folder = system.host_path(str(root.data)) if root is not None and isinstance(root.data, str) else None
        if folder is not None and (folder / "python.exe").is_file():  # read by name: the folder may not be listable
            return folder
    installs = system.host_path(r"C:\Program Files\WindowsApps")
    return next((p for p in children(installs) if p.name.lower().startswith(prefix) and child(p, "python.exe")),
                None)


def _places(system: System, profiles: list[UserProfile], drives: Optional[Iterable[str]]) -> list[Path]:
    data = _ai_apps()
    places: list[Path] = []
    templates = [t.format(profile=p.home) for p in profiles if p.home for t in data["user_places"]]
    for drive in system.fixed_drives() if drives is None else drives:
        templates += [t.format(drive=drive) for t in data["places"]]
    for template in templates:
        host = system.host_path(template)
        if host is not None and host.is_dir() and host not in places:
            places.append(host)
    return places


def _walk(start: Path, max_depth: int, deadline: float, cancel: Optional[CancelToken],
          report: DiscoveryReport, walked: set[str]) -> Iterator[Path]:
    """Breadth-first: folders holding python.exe or pyvenv.cfg, not descending into them or skipped names; a
    launcher's home (known by what it holds) gives its environments at once, however deep they are.
    `walked` is shared between walks so that overlapping places (Desktop, then the profile) cost once. The work per
    entry is what os.walk does (a name, a type): only the names that say something are kept."""
    skip = _ai_apps()["skip"]
    wanted = WANTED_NAMES | marker_names()
    # a whole name of those, between the NULs that frame and join a folder's names: the leading NUL lets the regex
    # engine jump from name to name instead of trying every character
    wanted_pattern = re.compile(r"\0(?:" + "|".join(sorted(map(re.escape, wanted))) + r"|python3[^\0]*)\0")
    level, depth = [str(start)], 0
    while level:  # one level at a time: breadth-first, with no per-folder bookkeeping beyond the name
        below: list[str] = []
        for folder in level:
            if time.monotonic() > deadline:
                report.out_of_time = True  # what is still queued was never visited
                return
            check(cancel)
            key = folder.lower()
            if key in walked:
                continue
            walked.add(key)
            report.folders_visited += 1
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            framed = "\0".join(["", *[entry.name for entry in entries], ""]).lower()  # one call, not one a name
            if wanted_pattern.search(framed):  # most folders: one search in C, and nothing more
                split = framed.split("\0")
                names = set(split) & wanted
                names.update(n for n in split if n.startswith("python3") and FREE_THREADED_EXE.match(n))
                known = homes_among(names)
                if known:  # a launcher's home: its environments are where its layout puts them, below any depth
                    for launcher in known:
                        yield from environments_in(launcher, Path(folder))
                    continue
                if "python.exe" in names or "pyvenv.cfg" in names or any(FREE_THREADED_EXE.match(n) for n in names):
                    yield Path(folder)
                    continue
            if depth >= max_depth:
                continue
            subfolders = [entry.path for entry in entries
                          if entry.is_dir(follow_symlinks=False) and entry.name.lower() not in skip]
            if subfolders:
                subfolders.sort()
                below += subfolders
        level, depth = below, depth + 1
