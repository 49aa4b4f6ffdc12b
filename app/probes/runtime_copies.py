"""Old copies of the VC++ runtime inside other packages: harmless to a clean `import torch`, fatal when that package
is imported first.

Windows keeps the first msvcp140.dll a process loads. PyQt5/__init__.py adds PyQt5\\Qt5\\bin (PyQt5-Qt5 5.15.2:
Microsoft's runtime 14.26) with os.add_dll_directory and puts it first on PATH, so in a program that imports PyQt5
before torch, c10.dll gets that copy and torch >= 2.9 (built for 14.40) stops with WinError 1114 (pytorch/pytorch
#169429, #166628; micro-manager/pymmcore#119 shows the same with os.add_dll_directory alone). Only the version
shows it: all 109 functions c10.dll imports from msvcp140.dll are in the old copy. vcruntime140.dll copies are not
counted: python.exe loads its own at start, and that module stays.
"""

from __future__ import annotations

from typing import Iterator, Optional

from app.engine.versions import matches, version_tuple
from app.inventory.runtime_copies import (
    APP_FOLDER,
    MAX_DEPTH,
    CopyListing,
    RuntimeCopy,
    app_entry,
    app_of,
    list_runtime_copies,
)
from app.probes.base import ENVIRONMENT, Probe, ProbeContext, Program
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.probes.openmp import owner_name
from app.resources import known_issues

CODE = "runtime-copy-too-old"
FIRST_IMPORT_VARIANTS = ("app-imports-first", "named-first")  # the program is known, or said, to import it first
REPAIR = "load-torch-first"  # guided (app/repair/guides.py): never touches the other package's files
SHOWN_UNSEEN = 5  # places named where the walk could not see or judge a copy
DECIDING_DLL = "msvcp140.dll"  # the DLL of the minimum rule, and the one whose first copy stays in the process


def no_newer_build(package: str) -> Optional[dict]:
    """What to use instead of a package whose newest Windows build still carries an old runtime (en, zh_CN), from
    resources/known_issues.json (measured on PyPI's wheels); None for a package that has a newer build."""
    return known_issues()["runtime_copy_no_newer_build"].get(package)


def minimum_for(torch_release: Optional[str]) -> Optional[dict]:
    """The msvcp140_minimum rule of known_issues.json that this torch matches, or None."""
    return next((rule for rule in known_issues()["msvcp140_minimum"] if matches(torch_release, rule["torch"])), None)


def program_app(ctx: ProbeContext) -> Optional[str]:
    """The AI app that shows the error: the one the user named, else the environment's own."""
    return ctx.program.app or (app_of(ctx.env) if ctx.env is not None else None)


def app_imports_first(name: Optional[str]) -> list[str]:
    """The modules a known AI app imports before torch (resources/ai_apps.json "imports_first")."""
    entry = app_entry(name)
    return list(entry.get("imports_first") or []) if entry else []


def imports_first(ctx: ProbeContext) -> list[str]:
    """What the program that shows the error imports before torch, in this environment."""
    return program_imports(ctx.program, program_app(ctx))


def program_imports(program: Program, app: Optional[str] = None) -> list[str]:
    """What a program imports before torch: its app's known first imports (`app`, else the one the user named),
    then the modules the user named."""
    return list(dict.fromkeys([*app_imports_first(app or program.app), *program.imports_first]))


def run(ctx: ProbeContext) -> Iterator[Finding]:
    env = ctx.env
    if env is None or env.torch is None:
        return
    listing = list_runtime_copies(env, cancel=ctx.cancel, listings=ctx.listings)
    if listing.stopped in ("entries", "time"):
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "seconds": listing.elapsed_s,
                                                 "error": f"the search stopped after {listing.entries} entries "
                                                          f"({listing.stopped} limit)"})
    rule = minimum_for(env.torch.release)
    if rule is None:
        return
    by_app = {m.lower() for m in app_imports_first(program_app(ctx))}
    named = {m.lower() for m in ctx.program.imports_first}
    torch_folder = env.torch.folder
    own_folders = {str(env.app_folder).casefold()} if env.app_folder is not None else set()
    unseen = [f"{ctx.display(p)} (not listed)" for p in listing.unlisted[:SHOWN_UNSEEN]]
    unseen += [f"{ctx.display(p)} (deeper than {MAX_DEPTH} folders)" for p in listing.deep_folders[:SHOWN_UNSEEN]]
    for copies in listing.folders().values():
        deciding = next((c for c in copies if c.name.lower() == DECIDING_DLL), None)
        if deciding is None or _inside(deciding, torch_folder) or (deciding.owner or "").lower() == "torch":
            continue
        if str(deciding.path.parent).casefold() in own_folders:  # python.exe's folder comes before System32: the
            continue  # vc-runtime probe names that copy (vc-runtime-too-old@copy-*), once
        if not deciding.version:  # no version to compare: it may be the old one
            unseen.append(f"{ctx.display(deciding.path)} (its version cannot be read)")
            continue
        if version_tuple(deciding.version) >= version_tuple(rule["version"]):
            continue
        module = (deciding.module or "").lower()
        first = "app" if module and module in by_app else "named" if module and module in named else None
        yield ctx.finding(CODE, BLOCKER if first else WARNING, _evidence(ctx, deciding, copies, rule, listing),
                          [REPAIR], variant=_variant(deciding, first))
    if unseen:  # where an old copy may be that the walk could not see, or not judge
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "torch": env.torch.version,
                                                 "error": "; ".join(unseen[:SHOWN_UNSEEN])}, variant="copies-unseen")


def _variant(copy: RuntimeCopy, first: Optional[str]) -> Optional[str]:
    """`first`: "app" when the AI app is known to import the copy's package before torch, "named" when the user
    said the program does."""
    if first == "app":
        return "app-imports-first"
    if first == "named":
        return "named-first"
    if copy.place == APP_FOLDER or copy.owner is None:
        return "no-owner"
    if no_newer_build(copy.owner.lower()):
        return "no-newer-build"
    return None


def _inside(copy: RuntimeCopy, folder) -> bool:
    try:
        copy.path.relative_to(folder)
    except ValueError:
        return False
    return True


def _evidence(ctx: ProbeContext, copy: RuntimeCopy, copies: list[RuntimeCopy], rule: dict,
              listing: CopyListing) -> dict:
    owner = ({"package": copy.owner, "version": copy.owner_version, "manager": copy.manager}
             if copy.owner else None)
    instead = no_newer_build((copy.owner or "").lower())
    import_name = copy.module or ctx.display(copy.path.parent)
    return {
        "dll": copy.name, "path": ctx.display(copy.path), "folder": ctx.display(copy.path.parent),
        "version": copy.version, "needed": rule["version"], "torch": ctx.env.torch.version,
        "owner": owner, "owner_name": owner_name(owner), "package": copy.owner or "-", "import_name": import_name,
        "place": copy.place, "app": program_app(ctx), "instead": instead, "winerror": 1114, "failing_dll": "c10.dll",
        "copies": [{"dll": c.name, "path": ctx.display(c.path), "version": c.version} for c in copies],
        "links": rule.get("links", []),
        "walk": {"entries": listing.entries, "seconds": listing.elapsed_s, "complete": listing.complete,
                 "roots": [ctx.display(r) for r in listing.roots]},
    }


PROBE = Probe("runtime-copies", ENVIRONMENT, run)
