"""OpenMP runtimes: libomp140 needed but missing, a second copy of torch's runtime within reach (and who put it
there), conda's two OpenMP packages, and the unsafe switch."""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from app.engine.graph import MISSING
from app.engine.versions import matches
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import read_record, record_lines
from app.inventory.machine import LIBOMP140
from app.probes.base import ENVIRONMENT, MACHINE, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.probes.variables import variable_repairs
from app.resources import known_issues
from app.system.confine import inside
from app.system.files import sha256_of
from app.system.folders import child, children
from app.system.once_per_file import OncePerFile
from app.system.user_json import read_json

TRUE_WORDS = {"1", "true", ".true.", "on", "yes", "y", "t", "enable", "enabled"}


def run(ctx: ProbeContext) -> Iterator[Finding]:
    graph = ctx.graph()
    statuses = graph.statuses()
    for node in graph.walk():
        if node.name.lower() == LIBOMP140 and statuses[node] == MISSING:
            needs = []
            for edge in node.incoming:
                names = [str(f) for f in edge.functions]
                needs.append({"dll": edge.source.name, "functions": names})
            sources = [ctx.display(p) for vs in ctx.machine.visual_studio for p in vs.libomp140]
            dlls = ctx.torch_dlls()
            intel = child(dlls[0].parent, "libiomp5md.dll") if dlls else None
            torch = ctx.env.torch
            bug = next((b for b in known_issues()["builds"] if b["missing_dll"].lower() == LIBOMP140
                        and torch is not None and matches(torch.release, b["torch"])), None)
            yield ctx.finding("openmp-runtime-missing", BLOCKER, {
                "dll": LIBOMP140, "needed_by": sorted({n["dll"] for n in needs}), "needs": needs,
                "visual_studio_copies": sources, "intel_runtime": ctx.display(intel) if intel else None,
                "torch": torch.version if torch else None, "fixed_in": bug["fixed_in"] if bug else None},
                ["place-libomp140", "upgrade-torch"], variant="known-bad-build" if bug else None)
    yield from conflicts(ctx)


def conflicts(ctx: ProbeContext) -> Iterator[Finding]:
    """Two copies of one OpenMP runtime within reach of torch (OMP Error #15), or conda's openmp next to
    intel-openmp (WinError 182)."""
    rivals = rival_copies(ctx)
    for rival in rivals:
        loader = _loader(rival.owner)
        if loader is not None:  # a package that loads its own copy when imported: any program using both stops
            yield ctx.finding("openmp-conflict", BLOCKER, {**rival.evidence(ctx), "loaded_by": loader,
                                                           "package": (rival.owner or {}).get("package")},
                              ["remove-duplicate-openmp"], variant="package")
            continue
        yield ctx.finding("openmp-conflict", WARNING if rival.same_build else BLOCKER, rival.evidence(ctx),
                          ["remove-duplicate-openmp"], variant="same-build" if rival.same_build else "two-builds")
    context = ctx.loader().context
    folders = list(dict.fromkeys(f for f in (*context.added_folders, context.app_folder) if f is not None))
    copies: dict[str, list[str]] = {}
    for folder in folders:
        for name in known_issues()["openmp_runtimes"]:
            found = child(folder, name)
            if found is not None:
                copies.setdefault(name.lower(), []).append(ctx.display(found))
    reported = {rival.torch_copy.path.name.lower() for rival in rivals}
    duplicated = {name: paths for name, paths in copies.items() if len(paths) > 1 and name not in reported}
    conda_meta = child(ctx.env.exec_prefix, "conda-meta") if ctx.env else None
    packages = {p.name.rsplit("-", 2)[0].lower() for p in children(conda_meta) if p.suffix == ".json"}
    both_conda = {"openmp", "intel-openmp"} <= packages
    if duplicated or both_conda:
        listed = [path for paths in duplicated.values() for path in paths]
        if both_conda:
            listed += ["conda: openmp", "conda: intel-openmp"]
        yield ctx.finding("openmp-conflict", WARNING, {"copies": listed})


@dataclass(frozen=True)
class RuntimeCopy:
    path: Path
    sha256: str
    version: Optional[str]

    def evidence(self, ctx: ProbeContext) -> dict:
        return {"path": ctx.display(self.path), "version": self.version, "sha256": self.sha256}


@dataclass(frozen=True)
class Rival:
    """A second copy of the OpenMP runtime torch ships, in a folder torch adds to the DLL search."""

    torch_copy: RuntimeCopy
    other: RuntimeCopy
    owner: Optional[dict]  # the package that installed the other copy (conda-meta or RECORD), or None

    @property
    def same_build(self) -> bool:
        return self.torch_copy.sha256 == self.other.sha256

    def evidence(self, ctx: ProbeContext) -> dict:
        owner = self.owner or {}
        return {"dll": self.torch_copy.path.name, "copies": [ctx.display(self.torch_copy.path),
                                                               ctx.display(self.other.path)],
                "torch_copy": self.torch_copy.evidence(ctx), "other_copy": self.other.evidence(ctx),
                "other": ctx.display(self.other.path), "other_version": self.other.version or "-",
                "torch_version": self.torch_copy.version or "-", "same_build": self.same_build,
                "owner": self.owner, "owner_name": owner_name(self.owner), "used_by": owner.get("used_by", [])}


def _loader(owner: Optional[dict]) -> Optional[dict]:
    """How a package that loads its own OpenMP runtime loads it ({"en", "zh_CN"}), when it is one that does."""
    package = (owner or {}).get("package") if (owner or {}).get("manager") == "pip" else None
    known = known_issues()["openmp_package_loaders"].get(str(package or "").lower().replace("_", "-"))
    return {lang: known[lang] for lang in ("en", "zh_CN")} if known else None


def owner_name(owner: Optional[dict]) -> dict:
    """Who installed a file, in the reader's words ({"en", "zh_CN"})."""
    if not owner:
        return {"en": "no package (it was copied there by hand or by an installer)",
                "zh_CN": "没有哪个包（是手动或被某个安装程序复制过去的）"}
    name = f"{owner['package']} {owner.get('version') or ''}".strip()
    if owner["manager"] == "conda":
        return {"en": f"the conda package {name}", "zh_CN": f"conda 包 {name}"}
    return {"en": f"the pip package {name}", "zh_CN": f"pip 包 {name}"}


def rival_copies(ctx: ProbeContext) -> list[Rival]:
    """Copies of torch's own OpenMP runtime (same file name) in the other folders torch searches.

    When both load (the rule): torch's loader loads every torch\\lib\\*.dll by its full path, so torch's copy is
    always in the process; a copy in <prefix>\\Library\\bin (a folder torch adds with os.add_dll_directory, and
    conda puts on PATH) is the one numpy/mkl/scipy of that environment bind to, and Windows searches added folders
    in no set order. So any such copy loads beside torch's in a program that uses both. Two files are two modules:
    measured under Wine with torch 2.4.1, one OpenMP call into each ends the process with OMP Error #15, for
    another build (intel-openmp 2023.2.0) and for the very same bytes (2024.2.1). Another build is a blocker
    (whichever copy a DLL binds to, it may not be the code it was built with); the same build is a warning here,
    and the live replay, which makes each copy do one OpenMP call, says whether it really stops.
    """
    dlls = ctx.torch_dlls()
    if not dlls or ctx.env is None:
        return []
    lib = dlls[0].parent
    context = ctx.loader().context
    folders = [f for f in dict.fromkeys((*context.added_folders, context.app_folder)) if f is not None
               and os.path.normcase(str(f)) != os.path.normcase(str(lib))]
    rivals = []
    for name in known_issues()["openmp_runtimes"]:
        own = child(lib, name)
        if own is None:
            continue
        mine = _copy(ctx, own)
        for folder in folders:
            found = child(folder, name)
            if found is not None and found.is_file():
                rivals.append(Rival(mine, _copy(ctx, found), package_owning(ctx.env, found)))
    return rivals + _package_rivals(ctx, lib, {_comparable(r.other.path) for r in rivals})


def _package_rivals(ctx: ProbeContext, lib: Path, known: set[str]) -> list[Rival]:
    """Copies of an OpenMP runtime of torch's family (known_issues' openmp_kmp_runtimes) inside the other packages
    of the environment: ctranslate2\\libiomp5md.dll, numpy+MKL's. A package that loads its copy by its full path
    (ctranslate2 loads every DLL of its folder) makes it a second module beside torch's in any program that imports
    both, whatever its name in the family: "OMP: Error #15: Initializing libiomp5md.dll, but found
    libomp140.x86_64.dll already initialized"."""
    family = [n.lower() for n in known_issues()["openmp_kmp_runtimes"]]
    own = next((child(lib, name) for name in family if child(lib, name) is not None), None)
    if own is None or ctx.env is None:
        return []
    mine = _copy(ctx, own)
    rivals = []
    for path in package_openmp_copies(ctx.env):
        key = _comparable(path)
        if path.name.lower() in family and key not in known and not key.startswith(_comparable(lib)):
            known.add(key)
            rivals.append(Rival(mine, _copy(ctx, path), package_owning(ctx.env, path)))
    return rivals


OPENMP_RECORD_LINE = re.compile(r"^((?:[^,\n]*/)?(?:libiomp5md|libiomp5|libomp[\w.]*|vcomp\d+d?|libgomp-1)\.dll),",
                                re.I | re.M)


def package_openmp_copies(env: PythonEnvironment) -> list[Path]:
    """Every OpenMP runtime DLL the packages of the environment installed (their RECORDs name each file, at any
    depth), that is there: torch's own among them."""
    site = env.site_packages
    found = []
    for info in children(site):
        record = child(info, "RECORD") if info.name.lower().endswith(".dist-info") else None
        try:
            listed = record_lines(record, OPENMP_RECORD_LINE) if record is not None else ()
        except OSError:
            continue
        for line in listed:
            path = inside(site, line.strip().strip('"'), within=_reach(env))
            if path is not None and path.is_file():
                found.append(path)
    return found


_HASHES: OncePerFile[str] = OncePerFile(256, by_content=False)  # an OpenMP runtime's SHA-256, a file uv links


def _copy(ctx: ProbeContext, path: Path) -> RuntimeCopy:
    info = ctx.cache.get(path)
    version = info.file_version if not isinstance(info, str) else None
    return RuntimeCopy(path, _HASHES.get(path, sha256_of), version)


def package_owning(env: PythonEnvironment, path: Path) -> Optional[dict]:
    """The package that installed `path`: a conda package (conda-meta\\*.json "files", relative to the prefix),
    else a pip package (a *.dist-info\\RECORD, relative to site-packages); with the packages that depend on it."""
    wanted = _comparable(path)
    for prefix in dict.fromkeys((env.exec_prefix, env.base_exec_prefix)):
        metas = [p for p in children(child(prefix, "conda-meta")) if p.suffix.lower() == ".json"]
        records = {}
        for meta in metas:
            try:
                record = read_json(meta)
            except (OSError, ValueError):  # JsonNotRead (too big, too deep, not JSON) is a ValueError
                continue
            if isinstance(record, dict):  # a damaged record is passed over
                records[meta] = record
        for meta, record in records.items():
            files = record.get("files") or []
            if any(_comparable(path) == wanted for path in _confined(prefix, files)):
                name = str(record.get("name") or meta.stem.rsplit("-", 2)[0])
                users = sorted({str(r.get("name") or m.stem.rsplit("-", 2)[0]) for m, r in records.items()
                                if m != meta and any(str(d).split()[0].lower() == name.lower()
                                                     for d in r.get("depends") or [] if str(d).strip())})
                return {"manager": "conda", "package": name, "version": record.get("version"),
                        "channel": record.get("channel"), "record": str(meta), "used_by": users}
    site = env.site_packages
    infos = [p for p in children(site) if p.name.lower().endswith(".dist-info") and p.is_dir()]
    for info in infos:
        record = child(info, "RECORD")
        try:
            rows = [entry.path for entry in read_record(record, prefix="")] if record else []
        except (OSError, csv.Error, ValueError):
            continue
        if any(_comparable(path) == wanted for path in _confined(site, rows, _reach(env))):
            name, version = _dist_name(info)
            users = sorted(_dist_name(other)[0] for other in infos if other != info
                           and name.lower().replace("_", "-") in _requirements(other))
            return {"manager": "pip", "package": name, "version": version, "record": str(record), "used_by": users}
    return None


def _reach(env: PythonEnvironment) -> Optional[Path]:
    """The folder a package's RECORD may reach from site-packages: the environment's prefix (pip puts data files
    in `Library\\bin` and `Scripts` there), or for the user site its Python folder (`%APPDATA%\\Python\\Python312`)."""
    site = env.site_packages
    if site is None:
        return None
    return env.exec_prefix if site.is_relative_to(env.exec_prefix) else site.parent


def _confined(base: Path, listed: object, within: Optional[Path] = None) -> Iterator[Path]:
    """The files a package's record lists, relative to `base`, as paths inside `within` (the environment; `base` by
    default); a line that would leave it is passed over."""
    for text in listed if isinstance(listed, list) else ():
        path = inside(base, text, within) if isinstance(text, str) else None
        if path is not None:
            yield path


def _dist_name(info: Path) -> tuple[str, Optional[str]]:
    stem = info.name[: -len(".dist-info")]
    name, _, version = stem.partition("-")
    return name.replace("_", "-"), version or None


def _requirements(info: Path) -> set[str]:
    """The names a dist-info's METADATA requires (Requires-Dist), lower case, "-" for "_"."""
    metadata = child(info, "METADATA")
    try:
        lines = metadata.read_text(encoding="utf-8", errors="replace").splitlines() if metadata else []
    except OSError:
        return set()
    names = set()
    for line in lines:
        if line.lower().startswith("requires-dist:"):
            spec = line.split(":", 1)[1].strip()
            names.add(re.split(r"[\s;(<>=!~\[]", spec, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _comparable(path: Path) -> str:
    return os.path.normcase(os.path.normpath(str(path).replace("\\", "/"))).lower()


def unsafe_switch(ctx: ProbeContext) -> Iterator[Finding]:
    for name, value in ctx.machine.variables.items():
        if name.upper() == "KMP_DUPLICATE_LIB_OK" and value.strip().lower() in TRUE_WORDS:
            yield ctx.finding("unsafe-env-var", WARNING, {"variable": name, "value": value},
                              variable_repairs(ctx, name))


PROBE = Probe("openmp", ENVIRONMENT, run)
SWITCH_PROBE = Probe("openmp-switch", MACHINE, unsafe_switch)
