"""Which running programs have a file loaded: a DLL in torch\\lib that a running ComfyUI holds cannot be replaced
(Windows refuses), and must not be changed under it. Named so the user can close them: "python.exe, process 4120"."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Optional


def _key(path: Path) -> str:
    return os.path.normcase(os.path.abspath(path))


def _final_key(path: Path) -> str:
    """The path as Windows reports a loaded file's (a subst drive, a junctioned venv, an 8.3 name resolved)."""
    try:
        return os.path.normcase(os.path.realpath(path))
    except (OSError, ValueError):
        return _key(path)


def _environment_folders(folders: set[str]) -> set[str]:
    """The folders a Python that loads these files likely runs from: the environment that holds `site-packages`
    (a venv, python_embeded: the folder above `Lib`, or above `lib/pythonX.Y`), or the folder itself (python.exe's
    own, for a runtime copy beside it). Never a drive's root nor a user's own folder: every program of the user
    runs from there."""
    roots = set()
    for folder in folders:
        parts = folder.split(os.sep)
        lowered = [p.lower() for p in parts]
        if "site-packages" in lowered:
            at = lowered.index("site-packages") - 1
            if at >= 0 and lowered[at].startswith("python"):
                at -= 1  # lib/python3.12/site-packages (and a user site's PythonXY/site-packages)
            if at >= 0 and lowered[at] == "lib":
                at -= 1
            folder = os.sep.join(parts[:at + 1])
        if not _too_wide(folder):
            roots.add(folder)
    return roots


def _too_wide(folder: str) -> bool:
    """A drive's root, or a user's own folder (C:\\Users\\me, its AppData and what is right in it)."""
    parts = [p.lower() for p in folder.replace("/", os.sep).split(os.sep) if p]
    if len(parts) <= 1:
        return True
    if "appdata" in parts and len(parts) <= parts.index("appdata") + 2:
        return True
    return any(len(parts) == parts.index(home) + 2 for home in ("users", "home") if home in parts)


PYTHON_NAME = re.compile(r"^pythonw?(\d+(\.\d+)?)?(\.exe)?$", re.IGNORECASE)  # python.exe, pythonw.exe, python3.12


def _may_hold(info: dict, roots: set[str]) -> bool:
    """A process we may not look into could be holding the files when it is a Python, or a program of the
    environment itself (ComfyUI started as administrator, another user's python.exe)."""
    if PYTHON_NAME.match(info.get("name") or ""):
        return True
    exe = info.get("exe")
    if not exe:
        return False
    key = _key(Path(exe))
    return any(key.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


LOADED = (".dll", ".pyd")  # what a running Python has mapped: torch's DLLs and extension files


def _watched(paths: list[Path]) -> tuple[set[str], set[str]]:
    """(files, folders) to look for, each as written and as Windows reports it (_final_key). A folder among `paths`
    (a torch folder set aside, or replaced by pip) is held by a program that has any file below it loaded."""
    files, folders = set(), set()
    for path in paths:
        # a path that is no folder now (gone, or cannot be looked at) is looked for as a file
        (folders if os.path.isdir(path) else files).update({_key(path), _final_key(path)})
    return files, folders


def _loaded_below(folders: set[str]) -> Optional[set[str]]:
    """The DLLs and extension files below these folders; None when a folder below could not be listed (denied,
    gone meanwhile): a list with holes would be asked about and answered "nobody", so psutil, whose test needs no
    listing, answers instead."""
    found: set[str] = set()
    unlisted: list[OSError] = []
    for folder in folders:
        for root, _dirs, names in os.walk(folder, onerror=unlisted.append):
            found.update(_key(Path(root) / n) for n in names if n.lower().endswith(LOADED))
    return None if unlisted else found


def _restart_manager(files: set[str], folders: set[str]) -> Optional[list[dict]]:
    """Windows' own answer (app/system/restart_manager.py), for the files, the DLLs beside them and every DLL below
    a folder; None where it gives none. A process named twice (its files) is one holder."""
    from app.system.restart_manager import available, holders

    if not available():
        return None
    below = _loaded_below(folders)
    if below is None:
        return None
    asked = set(files) | below
    for folder in {os.path.dirname(k) for k in files}:
        try:
            asked.update(_key(Path(e.path)) for e in os.scandir(folder) if e.name.lower().endswith(LOADED)
                         and e.is_file())
        except OSError:
            continue
    found = holders(sorted(asked))
    if found is None:
        return None
    return [{"pid": h["pid"], "name": h["name"], "exe": None, "files": []} for h in found
            if h["pid"] != os.getpid()]


def _held(mapped: str, files: set[str], folders: set[str], below: set[str]) -> bool:
    """A mapped file (its key) counts when it is a target, a DLL beside one, or lies below a folder target."""
    if mapped in files:
        return True
    if mapped.lower().endswith(LOADED) and os.path.dirname(mapped) in folders:
        return True
    return any(mapped.startswith(folder.rstrip(os.sep) + os.sep) for folder in below)


def processes_using(paths: Iterable[Path]) -> Optional[list[dict]]:
    """[{"pid", "name", "exe", "files", "unreadable"}] of every process that has one of `paths`, a DLL in their
    folders, or (for a folder among `paths`) any DLL or extension file below it, loaded or mapped. On Windows the
    Restart Manager answers (names included, also for a program started as administrator); else, or where it gives
    no answer, psutil's memory maps. A process we may not look into (started as administrator, another user's) is
    named with "unreadable" when it is a Python or a program of the environment, never taken for "holds nothing".
    None when the processes cannot be listed at all (Wine): then Windows' own refusal to replace a loaded DLL is the
    guard, and the journal rolls the repair back."""
    files, below = _watched(list(paths))
    answered = _restart_manager(files, below)
    if answered is not None:
        return answered
    import psutil

    try:
        processes = list(psutil.process_iter(["pid", "name", "exe"]))
    except (psutil.Error, OSError):
        return None

    folders = {os.path.dirname(k) for k in files}
    roots = _environment_folders(folders | below)
    holders = []
    for process in processes:
        if process.info["pid"] == os.getpid():
            continue
        try:
            maps = process.memory_maps(grouped=True)
        except psutil.AccessDenied:
            if _may_hold(process.info, roots):
                holders.append({"pid": process.info["pid"], "name": process.info["name"],
                                "exe": process.info["exe"], "files": [], "unreadable": True})
            continue
        except (psutil.Error, OSError, NotImplementedError):
            continue  # ended meanwhile, or a kind of process that maps no files
        held = sorted({m.path for m in maps if m.path and _held(_key(Path(m.path)), files, folders, below)})
        if held:
            holders.append({"pid": process.info["pid"], "name": process.info["name"], "exe": process.info["exe"],
                            "files": held})
    return holders
