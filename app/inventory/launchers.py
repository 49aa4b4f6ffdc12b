"""The launchers that install PyTorch for people: Pinokio, Stability Matrix, ComfyUI Desktop, SwarmUI, the Invoke
launcher, Intel's AI Playground, and uv's own Pythons (resources/launchers.json, each layout with the launcher's own
source cited).

Each records its home somewhere (a settings file, a shortcut, a variable, a fixed folder): `recorded_homes` reads
those, and `environments_in` lists the environment folders of a home, exactly where the launcher puts them. The
search that walks the drives knows a home when it meets one by what it holds (`is_home`), and goes straight to its
environments however deep they are. `placed` says, from a folder's path alone, which launcher (and app) it belongs
to: "ComfyUI · Pinokio", "ComfyUI · Stability Matrix (portable)", the app named as the launcher shows it where the
launcher records its title (`app_title`: Pinokio's pinokio.js). Nothing is imported or run."""

from __future__ import annotations

import json
import ntpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Iterator, Optional

from app.resources import resources_folder
from app.system.base import System, UserProfile
from app.system.folders import child, children
from app.system.user_json import read_json

MAX_SETTINGS_BYTES = 1 << 20  # a launcher's settings file is a few KB; a bigger one is not read
# the value is unquoted in code, not by the pattern: a lazy value before optional quotes and spaces is quadratic
URL_LINE = re.compile(r"^[^\S\n]*URL[^\S\n]*=(.*)$", re.I | re.M)


@dataclass(frozen=True)
class Launcher:
    id: str
    name: str
    url: str
    homes: tuple[dict, ...]
    environments: tuple[dict, ...]
    fresh: dict
    marker: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    home_names: frozenset[str] = frozenset()
    portable: Optional[str] = None
    portable_name: Optional[str] = None
    titles: tuple[str, ...] = ()  # the app's own records of its title, in the app's folder, the first found wins


@dataclass(frozen=True)
class Placed:
    """Where an environment sits: the launcher, its home, the app (the folder name the launcher gave it), and
    whether it is the launcher's own Python."""

    launcher: Launcher
    home: Path
    app: Optional[str]
    own: bool
    portable: bool = False

    @property
    def label(self) -> str:
        name = self.launcher.portable_name if self.portable and self.launcher.portable_name else self.launcher.name
        return f"{self.app} · {name}" if self.app and not self.own else name


@cache
def launchers() -> tuple[Launcher, ...]:
    data = json.loads((resources_folder() / "launchers.json").read_text(encoding="utf-8"))
    return tuple(Launcher(
        id=item["id"], name=item["name"], url=item["url"], homes=tuple(item["homes"]),
        environments=tuple(item["environments"]),
        fresh=item["fresh"], marker=frozenset(item.get("marker", ())), absent=frozenset(item.get("absent", ())),
        home_names=frozenset(item.get("home_names", ())), portable=item.get("portable"),
        portable_name=item.get("portable_name"), titles=tuple(item.get("titles", ()))) for item in data["launchers"])


def recorded_homes(system: System, profiles: list[UserProfile],
                   problems: Optional[list[str]] = None) -> Iterator[tuple[Launcher, Path]]:
    """Each launcher's home folders that exist, where the launcher records or puts them, in its own order. A settings
    file that cannot be read (too big, nested too deep, not JSON) is passed over, with a note in `problems`."""
    seen: set[str] = set()
    problems = problems if problems is not None else []
    for launcher in launchers():
        for spec in launcher.homes:
            for windows in _home_paths(system, profiles, spec, problems):
                host = system.host_path(windows) if windows else None
                if host is not None and str(host).lower() not in seen and host.is_dir():
                    seen.add(str(host).lower())
                    yield launcher, host


def environments_in(launcher: Launcher, home: Path) -> Iterator[Path]:
    """The environment folders of a launcher's home, as its layout has them ('*': every folder there)."""
    for layout in launcher.environments:
        folders = [home]
        for part in layout["path"].split("\\"):
            if "*" in part:
                folders = [f for folder in folders for f in children(folder)
                           if f.is_dir() and fnmatchcase(f.name.lower(), part.lower())]
            else:
                folders = [f for f in (child(folder, part) for folder in folders) if f is not None]
        yield from (f for f in folders if f.is_dir())


def is_home(launcher: Launcher, names: set[str]) -> bool:
    """Whether a folder holding `names` (lower case) is a home of this launcher, by what a home always holds."""
    return bool(launcher.marker) and launcher.marker <= names and not (launcher.absent & names)


@cache
def marker_names() -> frozenset[str]:
    """Every name (lower case) that says a folder may be a launcher's home, or that it is not."""
    return frozenset(name for launcher in launchers() for name in (*launcher.marker, *launcher.absent))


def homes_among(names: set[str]) -> list[Launcher]:
    """The launchers whose home a folder holding `names` (lower case) is."""
    return [launcher for launcher in launchers() if is_home(launcher, names)]


def placed(folder: Optional[Path]) -> Optional[Placed]:
    """The launcher an environment folder belongs to, by its path and what its home holds; None for any other."""
    if folder is None:
        return None
    parts = folder.parts
    for launcher in launchers():
        for layout in launcher.environments:
            pattern = layout["path"].lower().split("\\")
            if len(parts) <= len(pattern):
                continue
            tail = parts[-len(pattern):]
            if not all(fnmatchcase(part.lower(), want) for part, want in zip(tail, pattern)):
                continue
            home = Path(*parts[:-len(pattern)])
            if launcher.home_names and home.name.lower() not in launcher.home_names:
                continue
            names = {p.name.lower() for p in children(home)} if launcher.marker or launcher.portable else set()
            if launcher.marker and not is_home(launcher, names):
                continue
            own = bool(layout.get("own"))
            star = next((i for i, want in enumerate(pattern) if "*" in want), None)
            app = layout.get("app") or (tail[star] if star is not None else None)
            if app is not None and app.lower().endswith(".git"):
                app = app[:-4]  # Pinokio names an app's folder after its script's repository
            if star is not None and launcher.titles:
                app = app_title(launcher, Path(*parts[:len(parts) - len(pattern) + star + 1])) or app
            return Placed(launcher, home, app, own, portable=bool(launcher.portable)
                          and launcher.portable.lower() in names)
    return None


def launcher_of(env) -> Optional[Placed]:
    """The launcher that made an environment: the environment's own folder, or, for a venv, the base Python it was
    made with (uv's managed Pythons, which `uv python install` brings back), whether or not that is still there."""
    if env is None:
        return None
    where = placed(env.exec_prefix)
    if where is not None and not where.own:
        return where
    interpreter = env.loading.interpreter if env.loading is not None else None
    return placed(interpreter.home_folder) if interpreter is not None else None


def fresh_steps(where: Placed, minor: Optional[str]) -> list[dict[str, str]]:
    """The launcher's own way to make the environment again, in each language."""
    values = {"app": where.app or where.launcher.name, "minor": minor or "3.12"}
    steps = where.launcher.fresh
    return [{lang: text.format(**values) for lang, text in zip(steps, texts)} for texts in zip(*steps.values())]


TITLE_LINE = re.compile(r"""\btitle\s*:\s*["'`]([^"'`\n]{1,200})["'`]""")  # `title: "ComfyUI",` in a script


def app_title(launcher: Launcher, app_folder: Path) -> Optional[str]:
    """The title the launcher shows for an app, from the app's own records (Pinokio: pinokio.json, then
    pinokio_meta.json, then pinokio.js's `title`, in the app's folder or its pinokio folder); None when none says."""
    inner = child(app_folder, "pinokio")
    for folder in (app_folder, inner) if inner is not None else (app_folder,):
        for name in launcher.titles:
            found = child(folder, name)
            title = _title_in(found) if found is not None else None
            if title:
                return title
    return None


def _title_in(record: Path) -> Optional[str]:
    if record.suffix.lower() == ".json":
        try:
            document = read_json(record, max_bytes=MAX_SETTINGS_BYTES, errors="replace")
        except (OSError, ValueError):
            return None
        title = document.get("title") if isinstance(document, dict) else None
        return title.strip() if isinstance(title, str) and title.strip() else None
    try:
        with open(record, "rb") as f:
            text = f.read(MAX_SETTINGS_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    match = TITLE_LINE.search(text)
    return match.group(1).strip() if match else None


def _home_paths(system: System, profiles: list[UserProfile], spec: dict,
                problems: list[str]) -> Iterator[Optional[str]]:
    if "variable" in spec:
        yield system.variable(spec["variable"])
        return
    for profile in profiles:
        values = {"profile": profile.home, "roaming": profile.roaming_appdata, "local": profile.local_appdata,
                  "drive": ntpath.splitdrive(profile.home)[0] if profile.home else None}
        template = spec.get("json") or spec.get("url_file") or spec.get("folder") or ""
        needed = re.findall(r"\{(\w+)\}", template)
        if any(values.get(name) is None for name in needed):
            continue
        path = template.format(**values)
        if "folder" in spec:
            yield path
        elif "json" in spec:
            yield _json_value(system, path, spec["key"], problems)
        else:
            yield _shortcut_folder(system, path)


def _read(system: System, windows: str) -> Optional[str]:
    host = system.host_path(windows)
    try:
        with open(host, "rb") as f:  # type: ignore[arg-type]
            data = f.read(MAX_SETTINGS_BYTES + 1)
    except (OSError, TypeError):
        return None
    return data.decode("utf-8-sig", errors="replace") if len(data) <= MAX_SETTINGS_BYTES else None


def _json_value(system: System, windows: str, key: str, problems: list[str]) -> Optional[str]:
    """A launcher's settings file's value at a dotted key: a folder as the launcher wrote it, or None."""
    host = system.host_path(windows)
    try:
        value = read_json(host, max_bytes=MAX_SETTINGS_BYTES, errors="replace") if host is not None else None
    except OSError:
        return None  # no such file: this launcher is not here
    except ValueError as exc:
        problems.append(f"{windows} was passed over: {exc}")
        return None
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _shortcut_folder(system: System, windows: str) -> Optional[str]:
    """The folder of the file an Internet shortcut (.url) opens: SwarmUI's points at its launch-windows.bat."""
    text = _read(system, windows)
    match = URL_LINE.search(text or "")
    target = match.group(1).strip().removeprefix('"').removesuffix('"').strip() if match else ""
    return ntpath.dirname(target) if re.match(r"^[A-Za-z]:\\", target) else None
