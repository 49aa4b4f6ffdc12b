"""Python's own side of loading torch (app/inventory/python_path.py): which interpreter a venv runs, which copy of
torch `import torch` gets and which copies it hides, PYTHONHOME / PYTHONPATH set for every program, folders the
registry adds to every Python of a version, code that runs at every start (sitecustomize), torch outside sys.path,
and square brackets in torch's folder (torch's own preload lists its DLLs with `glob`)."""

from __future__ import annotations

import ntpath
import re
from typing import Iterator, Optional

from app.inventory.environment import python_version_in, read_torch
from app.inventory.installed_apps import owner_of
from app.inventory.launchers import launcher_of
from app.inventory.python_path import (
    NAMESPACE,
    PTH_FILE,
    PTH_LINE,
    PYTHONPATH,
    REGISTRY,
    SITE,
    USER_SITE,
    VENV_HOME,
    TorchCopy,
    host_folder,
)
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.system.folders import descend

SET_ASIDE_TORCH = "set-aside-shadowing-torch"
UNSET_VARIABLE, UNSET_MACHINE_VARIABLE = "unset-env-var", "unset-machine-variable"
MOVE_FOLDER = "rename-app-folder"
REMOVE_REGISTRY_PATH = "remove-registry-python-path"
TAKE_OUT_ENTRY = "take-out-path-entry"  # app/repair/path_entry.py
STARTUP_CODE = "python-startup-code"
UNREADABLE_PTH = "python-pth-unreadable"
PTH_IMPORT_LINE = "python-pth-import-line"
STORE_ALIAS = "store-python-unread"
# the runner: with one of these the diagnosis is complete only where the live check ran (it sees what files cannot)
SEEN_LIVE_ONLY = frozenset({STARTUP_CODE, STORE_ALIAS})
GLOB_MAGIC = re.compile(r"[\[\]]")
# Windows folders whose first level names the program that owns what is below them
PROGRAM_ROOTS = ("program files", "program files (x86)", "programdata")
SHOWN_UNSEEN = 5  # folders named in a finding's text; the evidence keeps them all


def run(ctx: ProbeContext) -> Iterator[Finding]:
    env = ctx.env
    if env is None or env.loading is None:
        return
    loading = env.loading
    if env.unread_install:
        yield ctx.finding(STORE_ALIAS, INFO, {"alias": ctx.display(env.python), "version": env.python_version})
    yield from _interpreter(ctx)
    yield from _unseen(ctx)
    yield from _variables(ctx)
    yield from _registry(ctx)
    if loading.pth_fatal is not None:  # 3.8-3.10 stop at start: "only 'import site' is supported in ._pth file"
        yield ctx.finding(PTH_IMPORT_LINE, BLOCKER, {"file": ctx.display(loading.pth_file), "line": loading.pth_fatal,
                                                     "version": ctx.env.python_version})
    for pth, encoding in loading.unreadable_pth[:1]:  # site stops at the first: the rest are never read
        yield ctx.finding(UNREADABLE_PTH, BLOCKER, {"file": ctx.display(pth), "folder": ctx.display(pth.parent),
                                                    "encoding": encoding})
    if loading.startup:
        yield ctx.finding(STARTUP_CODE, INFO, {"files": [ctx.display(p) for p in loading.startup],
                                               "file": ctx.display(loading.startup[0])})
    imported = loading.imported
    if imported is None and env.torch is not None:
        # on sys.path, but named `Torch`: FileFinder matches the name's case exactly (unless PYTHONCASEOK)
        folders = {str(e.folder).casefold() for e in loading.path}
        misnamed = env.torch.folder.name != "torch" and str(env.torch.folder.parent).casefold() in folders
        yield ctx.finding("torch-not-on-path", BLOCKER, {
            "torch": ctx.display(env.torch.folder), "pth_file": ctx.display(loading.pth_file),
            "site_runs": loading.site_runs, "name": env.torch.folder.name}, ["start-fresh"],
            variant="case" if misnamed else "pth" if loading.pth_file else None)
    if imported is not None:
        yield from _shadowing(ctx, imported)
    if env.torch is not None:
        yield from _brackets(ctx)


def _interpreter(ctx: ProbeContext) -> Iterator[Finding]:
    """A venv whose base Python is gone, or now another minor version: its launcher starts nothing, or a Python
    that its packages (torch_python.dll imports python3XY.dll by name) were not built for."""
    interpreter = ctx.env.loading.interpreter
    if interpreter is None or interpreter.home is None:
        return
    evidence = {"home": interpreter.home, "venv": ctx.display(ctx.env.exec_prefix), "made_with": interpreter.made_with,
                "runs": interpreter.runs, "minor": _minor(interpreter.made_with)}
    if not interpreter.seen:  # not "gone": whether it is there, its version and what it loads are not known
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, **evidence},
                          variant="home-unseen")
    elif not interpreter.exists:
        where = launcher_of(ctx.env)  # made by a launcher, or from uv's Python: its own way back, not python.org's
        launcher = where.launcher.name if where is not None else None
        yield ctx.finding("venv-base-missing", BLOCKER, {**evidence, "launcher": launcher}, ["start-fresh"],
                          variant="launcher" if where is not None else None)
    elif interpreter.changed_minor:
        yield ctx.finding("venv-base-changed", BLOCKER, evidence, ["start-fresh"])


def _unseen(ctx: ProbeContext) -> Iterator[Finding]:
    """Folders sys.path would hold that could not be looked in (another drive or a share that a copied drive does
    not hold, or a path relative to the folder a program starts in): a torch there would not be seen, so the
    diagnosis does not say "nothing wrong". A PYTHONUSERBASE among them is said on its own: it names the user site."""
    loading = ctx.env.loading
    folders = list(dict.fromkeys(path for path, origin in loading.unseen if origin not in (USER_SITE, VENV_HOME)))
    if folders:
        shown = ", ".join(folders[:SHOWN_UNSEEN]) + (f" (+{len(folders) - SHOWN_UNSEEN})"
                                                     if len(folders) > SHOWN_UNSEEN else "")
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "folders": folders,
                                                 "folder_list": shown, "count": len(folders)}, variant="path-unseen")
    userbase = next((path for path, origin in loading.unseen if origin == USER_SITE), None)
    if userbase is not None:
        variable = loading.variable("PYTHONUSERBASE")
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "value": userbase,
                                                 "scope": variable.scope if variable else "user",
                                                 "python_version": ctx.env.python_version}, variant="user-site-unseen")


def _variables(ctx: ProbeContext) -> Iterator[Finding]:
    """PYTHONHOME moves every Python's standard library (and a plain Python's site-packages); PYTHONPATH puts its
    folders before site-packages. A ._pth file makes the interpreter ignore both."""
    loading = ctx.env.loading
    if loading.isolated:
        return
    home = loading.variable("PYTHONHOME")
    if home is not None:
        folder = host_folder(ctx.system, home.value)
        found = python_version_in(folder) if folder is not None and folder.is_dir() else None
        ours = ctx.env.python_version
        # getpath.py: prefix = PYTHONHOME. Naming this plain Python's own folder, it changes nothing for this one
        # (other Pythons still get its library): a warning here, not what stops PyTorch
        own = (not ctx.env.is_venv and folder is not None and found is not None and found == ours
               and _same_folder(folder, ctx.env.exec_prefix))
        # the program it points into only when an installed app's records name that folder, never its folder's name
        program = owner_of(ctx.system, folder) if folder is not None else None
        evidence = {"variable": home.name, "value": home.value, "scope": home.scope, "program": program,
                    "python_there": found, "python_version": ours, "exists": bool(folder and folder.is_dir()),
                    "own_folder": own}
        variant = "-".join(filter(None, ("system" if home.scope == "system" else None,
                                         None if program else "unowned")))
        yield ctx.finding("python-home-set", WARNING if own else BLOCKER, evidence, [_unset(home.scope)],
                          variant=variant or None)
    path = loading.variable("PYTHONPATH")
    if path is not None:
        folders = [p.strip() for p in path.value.split(";") if p.strip()]
        torch_there = [c for c in loading.copies if c.entry.origin == PYTHONPATH]
        yield ctx.finding("python-path-set", WARNING, {
            "variable": path.name, "value": path.value, "scope": path.scope, "folders": folders,
            "programs": sorted({program_of(f) for f in folders}), "torch_there": bool(torch_there)},
            [_unset(path.scope)], variant="system" if path.scope == "system" else None)


def _registry(ctx: ProbeContext) -> Iterator[Finding]:
    """Folders the registry adds to every Python of this version (...\\PythonCore\\3.12\\PythonPath\\<name>), put
    there by another program's installer: before the standard library and every site-packages."""
    entries = [e for e in ctx.env.loading.path if e.origin == REGISTRY]
    if not entries:
        return
    keys = list(dict.fromkeys(e.key for e in entries if e.key))
    folders = [ctx.display(e.folder) for e in entries]
    torch_there = any(c.entry.origin == REGISTRY for c in ctx.env.loading.copies)
    programs = sorted({program_of(f) for f in folders})
    yield ctx.finding("python-registry-path", WARNING, {
        "key": keys[0], "keys": keys, "folders": folders, "folder_list": ", ".join(folders), "programs": programs,
        "program_list": ", ".join(programs), "torch_there": torch_there,
        "machine": keys[0].upper().startswith("HKLM")}, [REMOVE_REGISTRY_PATH])


def _shadowing(ctx: ProbeContext, imported: TorchCopy) -> Iterator[Finding]:
    """Another copy of torch that `import torch` gets first (a `pip install --user` one, PYTHONPATH, a .pth line),
    or copies it hides: the checks read the imported one, and say which one it is."""
    shadowed = ctx.env.loading.shadowed
    if not shadowed:
        return
    first = _described(ctx, imported)
    others = [_described(ctx, c) for c in shadowed]
    same = all(o["version"] == first["version"] for o in others)
    repairs, extra = [], {}
    if _own(ctx, imported):  # the environment's own copy is the one imported: the others are only hidden
        yield ctx.finding("torch-shadowed", WARNING, {
            "imported": first, "others": others, "folder": first["folder"], "version": first["version"],
            "origin": first["origin"], "added_by": first["added_by"] or "-", "entry": first["entry"],
            "other_folder": others[0]["folder"], "other_version": others[0]["version"],
            "other_origin": others[0]["origin"]}, [], variant="hidden")
        return
    if imported.entry.origin == USER_SITE and imported.kind != NAMESPACE:
        repairs.append(SET_ASIDE_TORCH)
    elif imported.entry.origin in (PTH_FILE, PTH_LINE):  # that one line becomes a comment
        repairs.append(TAKE_OUT_ENTRY)
    elif imported.entry.origin == PYTHONPATH:
        variable = ctx.env.loading.variable("PYTHONPATH")
        scope = variable.scope if variable else "user"
        repairs += ([TAKE_OUT_ENTRY] if scope == "user" else []) + [_unset(scope)]  # the entry, or the variable
        extra = {"variable": "PYTHONPATH"}  # what the repair removes, as the finding names it
    elif imported.entry.origin == REGISTRY:
        repairs.append(REMOVE_REGISTRY_PATH)
        extra = {"program_list": program_of(ntpath.dirname(first["folder"]))}
    repairs.append("start-fresh")
    yield ctx.finding("torch-shadowed", WARNING if same else BLOCKER, {**extra,
        "imported": first, "others": others, "folder": first["folder"], "version": first["version"],
        "origin": first["origin"], "added_by": first["added_by"] or "-", "entry": first["entry"],
        "other_folder": others[0]["folder"],
        "other_version": others[0]["version"],
        "other_origin": others[0]["origin"]}, repairs, variant=imported.entry.origin)


def _own(ctx: ProbeContext, copy: TorchCopy) -> bool:
    """The copy is the environment's own: in its own site-packages (also when its ._pth file lists that folder), never
    a folder a PYTHONPATH entry, a registry key, a ._pth or .pth line adds from elsewhere, or the user site."""
    if copy.entry.origin not in (SITE, PTH_FILE):
        return False
    own = descend(ctx.env.exec_prefix, "Lib", "site-packages")  # never env.site_packages: that is the imported one's
    return own is not None and _same_folder(copy.entry.folder, own)


def _brackets(ctx: ProbeContext) -> Iterator[Finding]:
    """torch's `_load_dll_libraries` preloads `glob.glob(os.path.join(torch\\lib, '*.dll'))`: with `[` or `]` in
    the folder's path that pattern matches nothing, so no DLL is preloaded. The extension modules still load
    (torch\\lib is an added DLL folder), but what CUDA's libraries load later by plain LoadLibrary is not found."""
    lib = ctx.display(ctx.env.torch.folder) or ""
    if not GLOB_MAGIC.search(lib):
        return
    parts = [p for p in lib.split("\\") if GLOB_MAGIC.search(p)]
    cuda = ctx.env.torch.cuda
    yield ctx.finding("torch-folder-brackets", BLOCKER if cuda else WARNING, {
        "folder": lib + "\\lib", "names": parts, "build": ctx.env.torch.build, "cuda": cuda},
        [MOVE_FOLDER], variant=None if cuda else "cpu")


def _described(ctx: ProbeContext, copy: TorchCopy) -> dict:
    version = read_torch(copy.folder).version if copy.kind != "module" else None
    origin = copy.entry.origin
    return {"folder": ctx.display(copy.folder), "version": version or "-", "origin": origin,
            "entry": ctx.display(copy.entry.folder),
            "added_by": (ctx.display(copy.entry.source) if origin in (PTH_FILE, PTH_LINE)
                         else copy.entry.key if origin == REGISTRY else None)}


def _unset(scope: str) -> str:
    return UNSET_MACHINE_VARIABLE if scope == "system" else UNSET_VARIABLE


def program_of(value: str) -> str:
    """The program a folder belongs to, by the Windows folder it is in: `C:\\Program Files\\QGIS 3.34\\apps\\Python39`
    → "QGIS 3.34"; a user's `AppData\\Local\\Programs\\X` → "X"; else the folder itself."""
    parts = [p for p in ntpath.normpath(value.strip().strip('"')).split("\\") if p]
    lower = [p.lower() for p in parts]
    for i, part in enumerate(lower[1:], start=1):
        if part in PROGRAM_ROOTS and i + 1 < len(parts):
            return parts[i + 1]
        if part == "programs" and i >= 2 and lower[i - 1] == "local" and i + 1 < len(parts):
            return parts[i + 1]
    return parts[1] if len(parts) > 1 else value


def _minor(version: Optional[str]) -> Optional[str]:
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


PROBE = Probe("python-loading", ENVIRONMENT, run)


def _same_folder(a, b) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
