"""Copies of Microsoft's VC++ runtime DLLs that other packages carry: in an environment's site-packages (PyQt5-Qt5
puts msvcp140.dll in PyQt5\\Qt5\\bin) and in its AI app's own folders. Each with its file version and the package
that installed it (a *.dist-info RECORD, or conda-meta). The walk is bounded: entries, depth and time."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, Optional

from app.cancel import CancelToken
from app.engine.pe import PEError, read_pe
from app.inventory.discovery import app_name
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import record_lines
from app.resources import ai_apps, known_issues
from app.system.folders import Listings, child, children
from app.system.user_json import read_json

SITE_PACKAGES, APP_FOLDER = "site-packages", "app"
MAX_ENTRIES = 400_000  # files and folders looked at, per environment (a large site-packages holds ~100k)
MAX_DEPTH = 14  # below a root: torch\include\...\ reaches 10
BUDGET_S = 20.0
SKIP_ALWAYS = frozenset({"__pycache__", ".git"})


@dataclass(frozen=True)
class RuntimeCopy:
    """One copy of a runtime DLL outside Windows' own folders."""

    path: Path
    version: Optional[str]  # the file version ("14.26.28720.3"), None when unreadable
    place: str  # SITE_PACKAGES or APP_FOLDER
    owner: Optional[str] = None  # the distribution that installed it ("PyQt5-Qt5"), None when no record names it
    owner_version: Optional[str] = None
    manager: Optional[str] = None  # "pip" (RECORD) or "conda" (conda-meta)
    module: Optional[str] = None  # the top-level folder below site-packages that holds it ("PyQt5")

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class CopyListing:
    """What the walk found, and how far it got."""

    copies: list[RuntimeCopy] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)
    entries: int = 0
    elapsed_s: float = 0.0
    stopped: Optional[str] = None  # None: every root walked; else "entries", "time" or "cancelled"
    deep_folders: list[Path] = field(default_factory=list)  # folders below MAX_DEPTH, not entered (first 20)
    unlisted: list[Path] = field(default_factory=list)  # folders that could not be listed (denied; first 20)

    @property
    def complete(self) -> bool:
        return self.stopped is None and not self.deep_folders and not self.unlisted

    def folders(self) -> dict[Path, list[RuntimeCopy]]:
        """The copies by the folder that holds them, in walk order."""
        grouped: dict[Path, list[RuntimeCopy]] = {}
        for copy in self.copies:
            grouped.setdefault(copy.path.parent, []).append(copy)
        return grouped


def runtime_dll_names() -> frozenset[str]:
    return frozenset(name.lower() for name in known_issues()["vc_runtime_dlls"])


def app_folder(env: PythonEnvironment) -> Optional[Path]:
    """The AI app's own folder (ComfyUI_windows_portable for ...\\python_embeded), from resources/ai_apps.json."""
    entry = app_entry(app_of(env))
    if entry is None:
        return None
    parts = env.exec_prefix.parts
    for inner in entry["python"]:
        tail = inner.lower().split("\\")
        if len(parts) > len(tail) and [p.lower() for p in parts[-len(tail):]] == tail:
            return env.exec_prefix.parents[len(tail) - 1]
    return None


def app_of(env: PythonEnvironment) -> Optional[str]:
    """The AI app an environment belongs to: as discovery labelled it, else by its folder (a typed --env)."""
    return env.app or app_name(env.exec_prefix)


def known_apps() -> list[dict]:
    """resources/ai_apps.json's apps, in its order."""
    return ai_apps()["apps"]


def app_entry(name: Optional[str]) -> Optional[dict]:
    """The known app of that name, ignoring case (a name typed after `diagnose --app`, or discovery's label)."""
    if not name:
        return None
    return next((app for app in known_apps() if app["name"].casefold() == name.casefold()), None)


def apps_importing_first(module: str) -> list[str]:
    """The known apps that import `module` before torch (ai_apps.json "imports_first")."""
    return [app["name"] for app in known_apps()
            if module.casefold() in {m.casefold() for m in app.get("imports_first") or []}]


def app_skip() -> frozenset[str]:
    return frozenset(name.lower() for name in ai_apps()["skip"]) - {"site-packages"}


def list_runtime_copies(env: PythonEnvironment, *, budget_s: float = BUDGET_S, max_entries: int = MAX_ENTRIES,
                        max_depth: int = MAX_DEPTH, cancel: Optional[CancelToken] = None,
                        listings: Optional[Listings] = None) -> CopyListing:
    """Every runtime DLL copy in the environment's site-packages and its AI app's folder, with owners. `listings`:
    the folders' entries, shared with the environment's other checks."""
    listing = CopyListing()
    started = time.monotonic()
    deadline = started + budget_s
    names = runtime_dll_names()
    listings = listings if listings is not None else Listings()
    walk = _Walk(names, deadline, max_entries, max_depth, cancel, listing, listings)
    site = env.site_packages
    if site is not None and site.is_dir():
        listing.roots.append(site)
        owners = _owners(env, site, names)
        for path in walk.files(site, skip=SKIP_ALWAYS):
            relative = PurePosixPath(*path.relative_to(site).parts)
            owner = owners.get(str(relative).lower())
            module = relative.parts[0] if len(relative.parts) > 1 else None
            listing.copies.append(RuntimeCopy(path, _version(path), SITE_PACKAGES, *(owner or (None, None, None)),
                                              module=module))
    app = app_folder(env)
    if app is not None and app.is_dir() and listing.stopped is None:
        listing.roots.append(app)
        inside = {os.path.normcase(str(p)) for p in (env.exec_prefix, site) if p is not None}
        for path in walk.files(app, skip=SKIP_ALWAYS | app_skip(), exclude=inside):
            listing.copies.append(RuntimeCopy(path, _version(path), APP_FOLDER))
    listing.elapsed_s = round(time.monotonic() - started, 3)
    return listing


class _Walk:
    """A depth-first walk that shares one budget of entries and time across its roots."""

    def __init__(self, names: frozenset[str], deadline: float, max_entries: int, max_depth: int,
                 cancel: Optional[CancelToken], listing: CopyListing, listings: Listings) -> None:
        self.names, self.deadline, self.max_entries, self.max_depth = names, deadline, max_entries, max_depth
        self.cancel, self.listing, self.listings = cancel, listing, listings

    def files(self, root: Path, skip: frozenset[str], exclude: Iterable[str] = ()) -> Iterator[Path]:
        excluded = set(exclude)
        stack: list[tuple[str, int]] = [(str(root), 0)]
        listing = self.listing
        while stack and listing.stopped is None:
            folder, depth = stack.pop()
            try:
                found = self.listings.named(folder)
            except FileNotFoundError:
                continue  # gone since its parent was listed
            except OSError:
                if len(listing.unlisted) < 20:
                    listing.unlisted.append(Path(folder))
                continue
            listing.entries += len(found)
            if listing.entries > self.max_entries:
                listing.stopped = "entries"
            elif time.monotonic() > self.deadline:
                listing.stopped = "time"
            elif self.cancel is not None and self.cancel.cancelled:
                listing.stopped = "cancelled"
            twins = self.listings.twins(folder)  # names that differ only in case: nearly always none
            hits = [found[lower] for lower in sorted(self.names.intersection(found))]  # a set's work, not a loop
            for entry in hits + [e for e in twins if e.name.lower() in self.names]:
                with contextlib.suppress(OSError):
                    if not entry.is_dir(follow_symlinks=False):
                        yield Path(entry.path)
            everything = [*found.values(), *twins]
            try:  # the listing tells a folder without a call; a link to one is not followed
                inner = [e for e in filter(os.DirEntry.is_dir, everything) if not e.is_symlink()]
            except OSError:  # a link that cannot be followed: asked one by one
                inner = [e for e in everything if _folder(e)]
            folders = []
            for entry in inner:
                if entry.name.lower() not in skip and not (excluded and os.path.normcase(entry.path) in excluded):
                    folders.append(entry.path)
            for path in sorted(folders, reverse=True):  # popped in name order
                if depth + 1 > self.max_depth:
                    if len(listing.deep_folders) < 20:
                        listing.deep_folders.append(Path(path))
                else:
                    stack.append((path, depth + 1))


def _folder(entry: os.DirEntry) -> bool:
    """A folder, not a link to one; False when it cannot be told."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _version(path: Path) -> Optional[str]:
    try:
        return read_pe(path, with_exports=False).file_version
    except (OSError, PEError):
        return None


def _owners(env: PythonEnvironment, site: Path, names: frozenset[str]) -> dict[str, tuple[str, Optional[str], str]]:
    """{path relative to site-packages, lower case, "/" separated: (package, version, manager)} for the runtime
    DLLs that an install record lists: each *.dist-info\\RECORD, then conda-meta\\*.json (relative to the prefix)."""
    owners: dict[str, tuple[str, Optional[str], str]] = {}
    for info in children(site):
        if not info.name.lower().endswith(".dist-info"):
            continue
        record = child(info, "RECORD")
        try:
            mine = record_lines(record, _record_lines(names)) if record else ()  # one scan, once per RECORD
        except OSError:
            continue
        if mine:
            name, version = _distribution(info)
            for path in mine:
                owners.setdefault(str(PurePosixPath(*_parts(path))).lower(), (name, version, "pip"))
    try:
        site_parts = [p.lower() for p in site.relative_to(env.exec_prefix).parts]
    except ValueError:
        return owners
    for meta in children(child(env.exec_prefix, "conda-meta")):
        if meta.suffix.lower() != ".json":
            continue
        try:
            record = read_json(meta, encoding="utf-8")
        except (OSError, ValueError):
            continue
        for path in record.get("files") or []:
            parts = _parts(str(path))
            if parts and parts[-1].lower() in names and [p.lower() for p in parts[:len(site_parts)]] == site_parts:
                key = str(PurePosixPath(*parts[len(site_parts):])).lower()
                owners.setdefault(key, (str(record.get("name") or meta.stem), record.get("version"), "conda"))
    return owners


@functools.cache
def _record_lines(names: frozenset[str]) -> re.Pattern:
    """A RECORD row whose file (its first field, up to the first comma) is named one of `names`, in any folder."""
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    return re.compile(rf"^((?:[^,\r\n]*[/\\])?(?:{alternatives})),", re.I | re.M)


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in re.split(r"[\\/]", path) if p and p != ".")


def _distribution(info: Path) -> tuple[str, Optional[str]]:
    """A dist-info's name and version from its METADATA (as the project spells it), else from the folder's name."""
    metadata = child(info, "METADATA")
    try:
        head = metadata.read_text(encoding="utf-8", errors="replace")[:4000] if metadata else ""
    except OSError:
        head = ""
    name = re.search(r"^Name:\s*(\S+)", head, re.M)
    version = re.search(r"^Version:\s*(\S+)", head, re.M)
    stem_name, _, stem_version = info.name[: -len(".dist-info")].partition("-")
    return (name.group(1) if name else stem_name), (version.group(1) if version else stem_version or None)
