"""Companions built for another torch: torchvision, torchaudio, xformers, ... whose extension modules call into
torch's DLLs. pip installs `torchvision 0.20.1` beside torch 2.4.1 with `--no-deps` or a second `pip install`, and
then `import torchvision` fails with WinError 127 ("The specified procedure could not be found") or "operator
torchvision::nms does not exist", because the .pyd asks torch_cpu.dll for a function 2.4.1 does not have.

A companion is any installed distribution whose RECORD lists a .pyd that imports from torch's own DLLs (c10.dll,
torch_cpu.dll, torch_python.dll, torch_cuda.dll, ...): no list of names to keep up to date. The real test is the
import table: each such .pyd's imports are checked against the installed torch's exports with the dependency graph
(the same check as `missing-export`), and the missing functions are named as a reader writes them (demangled).
The `Requires-Dist: torch` pin only says which torch it was made for, and alone (nothing missing) is a warning.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from app.cancel import check
from app.engine.demangle import demangle
from app.engine.graph import DependencyGraph
from app.engine.pe import PEInfo
from app.engine.versions import matches, version_tuple
from app.inventory.integrity import read_record
from app.inventory.packages import canonical, installed_versions, metadata_head
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.resources import known_issues
from app.system.confine import inside
from app.system.folders import child, children
from app.system.user_json import read_json

CODE = "companion-mismatch"
REPAIR = "match-companions"
# torch's own DLLs, the ones a companion links against (CPU, CUDA, ROCm and XPU builds)
TORCH_DLLS = frozenset({"c10.dll", "c10_cuda.dll", "c10_hip.dll", "c10_xpu.dll", "torch.dll", "torch_cpu.dll",
                        "torch_cuda.dll", "torch_hip.dll", "torch_xpu.dll", "torch_python.dll",
                        "torch_global_deps.dll"})
METADATA_HEAD = 64 << 10  # the headers come before the description
MAX_LISTED = 200  # missing functions kept as evidence per companion
SHOWN = 5  # named in the explanation; the details list them all
# `torch (==2.5.1)` (older metadata) or `torch==2.5.1`, then markers; never torchvision
REQUIRES_TORCH = re.compile(r"^Requires-Dist:[ \t]*torch(?![\w.-])[ \t]*(?:\(([^)]*)\)|([^;\s][^;]*?))?"
                            r"[ \t]*(?:;(.*))?$", re.I | re.M)


@dataclass(frozen=True)
class MissingFunction:
    function: str  # demangled
    raw: str  # as the import table names it
    dll: str
    needed_by: tuple[str, ...]  # the .pyd files that import it, relative to site-packages


@dataclass
class Companion:
    name: str
    version: str
    requires_torch: Optional[str]  # "==2.5.1", ">=2.14.0"; None when its metadata names no torch
    extensions: list[Path] = field(default_factory=list)  # its .pyd files that import from torch's DLLs

    def made_for(self) -> Optional[str]:
        """The torch release it was made for: its exact pin, else the release table's pairing."""
        pin = re.fullmatch(r"\s*===?\s*([\w.+]+)\s*", self.requires_torch or "")
        if pin:
            return pin.group(1)
        for torch, pairs in companion_releases().items():
            if pairs.get(canonical(self.name)) == self.version:
                return torch
        return None

    def pin_fits(self, torch_release: Optional[str]) -> Optional[bool]:
        """Whether the installed torch satisfies its Requires-Dist; None when it names none, or an unknown form."""
        if not self.requires_torch:
            return None
        spec = self.requires_torch.replace(" ", "")
        try:
            return matches(torch_release, spec)
        except ValueError:
            return None  # "==2.5.*", "~=2.5": not judged


def companion_releases() -> dict[str, dict[str, str]]:
    """torch release -> {companion: version made with it} (resources/known_issues.json)."""
    return {k: v for k, v in known_issues().get("companion_releases", {}).items() if not k.startswith("_")}


def fitting_version(name: str, torch_release: Optional[str]) -> Optional[str]:
    return companion_releases().get(torch_release or "", {}).get(canonical(name))


def _metadata(folder: Path) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(name, version, the torch requirement without markers) from a dist-info's METADATA headers."""
    metadata = child(folder, "METADATA")
    if metadata is None:
        return None, None, None
    try:
        with metadata.open("r", encoding="utf-8", errors="replace") as f:
            head = f.read(METADATA_HEAD).split("\n\n", 1)[0]
    except OSError:
        return None, None, None
    name = re.search(r"^Name:\s*(\S+)", head, re.M)
    version = re.search(r"^Version:\s*(\S+)", head, re.M)
    requires = None
    for found in REQUIRES_TORCH.finditer(head):
        marker = found.group(3) or ""
        if "extra" in marker:
            continue  # an optional feature's requirement, not the package's own
        requires = (found.group(1) or found.group(2) or "").strip() or None
        break
    return (name.group(1) if name else None), (version.group(1) if version else None), requires


def _imports_torch(info: PEInfo) -> bool:
    return any(imported.name.lower() in TORCH_DLLS for imported in info.imports)


def installed_companions(ctx: ProbeContext, unseen: Optional[list[str]] = None) -> list[Companion]:
    """Every distribution of the environment (but torch) with a .pyd that imports from torch's DLLs. `unseen`
    gets each package that requires torch but could not be looked at: its RECORD or an extension module of it
    unreadable (damaged, access denied, quarantined)."""
    site = ctx.env.site_packages if ctx.env else None
    unseen = [] if unseen is None else unseen
    found = []
    for folder in sorted(children(site), key=lambda p: p.name.lower()):
        check(ctx.cancel)
        if not folder.name.lower().endswith(".dist-info"):
            continue
        if canonical(folder.name[: -len(".dist-info")].rsplit("-", 1)[0]) == "torch":
            continue  # torch itself (its own files are the integrity probe's)
        record = child(folder, "RECORD")
        if record is None:
            continue
        try:
            entries = read_record(record, prefix="")
        except (OSError, csv.Error, ValueError) as exc:  # nothing to go by: said when the package needs torch
            _unseen(folder, f"RECORD: {getattr(exc, 'strerror', None) or exc}", unseen)
            continue
        extensions, unreadable = [], []
        for entry in entries:
            path = inside(site, entry.path) if entry.path.lower().endswith(".pyd") else None
            if path is None:
                continue
            info = ctx.cache.get(path)
            if isinstance(info, PEInfo) and _imports_torch(info):
                extensions.append(path)
            elif not isinstance(info, PEInfo):
                unreadable.append(entry.path.rsplit("/", 1)[-1])
        if unreadable:
            _unseen(folder, ", ".join(unreadable[:3]), unseen)
        if not extensions:
            continue
        name, version, requires = _metadata(folder)
        if name and version and canonical(name) != "torch":
            found.append(Companion(name, version, requires, extensions))
    return found


def _unseen(folder: Path, what: str, unseen: list[str]) -> None:
    name, version, requires = _metadata(folder)
    if name and requires is not None:  # a package made for torch: a companion that could not be checked
        unseen.append(f"{name} {version or '?'} ({what})")


def missing_functions(ctx: ProbeContext, companion: Companion) -> list[MissingFunction]:
    """What the companion's extension modules import from torch's DLLs and the installed torch does not export."""
    site = ctx.env.site_packages
    by_function: dict[tuple[str, str], list[str]] = {}
    for pyd in companion.extensions:
        graph = DependencyGraph(ctx.loader(), cache=ctx.cache, cancel=ctx.cancel)  # one per file: names repeat
        root = graph.add_root(pyd)
        shown = str(pyd.relative_to(site)).replace("/", "\\")
        for edge in graph.children(root):
            if edge.name.lower() not in TORCH_DLLS or edge.target.path is None:
                continue  # a torch DLL that is not there at all is torch's own problem, found by the other probes
            for missing in edge.target.missing_exports:
                if missing.importer == root.name:
                    by_function.setdefault((str(missing.function), edge.target.name), []).append(shown)
    return [MissingFunction(demangle(raw), raw, dll, tuple(dict.fromkeys(files)))
            for (raw, dll), files in sorted(by_function.items(), key=lambda item: (item[0][1].lower(), item[0][0]))]


CUDA_ONLY = re.compile(r"^(torch_cuda|c10_cuda|cudart64_\d+)\.dll$", re.I)  # in torch\lib of a CUDA build only
INSTALL_CUDA_TORCH = "install-cuda-torch"


def built_for(companion: Companion) -> Optional[str]:
    """The torch build a companion says it was compiled against, with its local label ("2.6.0+cu124"): xformers
    records it in `xformers\\cpp_lib.json`; else its exact Requires-Dist pin (no label)."""
    for extension in companion.extensions[:1]:
        info = child(extension.parent, "cpp_lib.json")
        try:
            data = read_json(info, encoding="utf-8") if info is not None else None
        except (OSError, ValueError):
            data = None
        torch = (data.get("version") or {}).get("torch") if isinstance(data, dict) else None
        if isinstance(torch, str) and torch:
            return torch
    return companion.made_for()


def needs_cuda(ctx: ProbeContext, companion: Companion) -> list[str]:
    """The CUDA build's DLLs a companion's extension modules import, when this torch is not a CUDA build and its
    torch\\lib does not have them (xformers' Windows wheels are all CUDA builds)."""
    torch = ctx.env.torch
    if torch.cuda or torch.hip:
        return []
    lib = child(torch.folder, "lib")
    present = {p.name.lower() for p in children(lib)}
    needed = []
    for pyd in companion.extensions:
        info = ctx.cache.get(pyd)
        if isinstance(info, PEInfo):
            needed += [i.name for i in info.imports if CUDA_ONLY.match(i.name) and i.name.lower() not in present]
    return list(dict.fromkeys(needed))


def _needs_cuda_finding(ctx: ProbeContext, companion: Companion, needed: list[str]) -> Finding:
    made = built_for(companion)
    variant = made.split("+", 1)[1] if made and "+" in made else None
    return ctx.finding(CODE, BLOCKER, {
        "package": companion.name, "version": companion.version, "torch": ctx.env.torch.version,
        "build": ctx.env.torch.build, "needs": needed, "built_for": made or "-", "variant": variant,
        "release": made.split("+", 1)[0] if made else None,
        "extensions": [ctx.display(p) for p in companion.extensions]}, [INSTALL_CUDA_TORCH], variant="needs-cuda")


def run(ctx: ProbeContext) -> Iterator[Finding]:
    torch = ctx.env.torch if ctx.env else None
    if torch is None or ctx.env.site_packages is None:
        return
    yield from _numpy_2(ctx, torch.release, torch.version)
    yield from _bitsandbytes(ctx, torch.cuda, torch.version)
    unseen: list[str] = []
    for companion in installed_companions(ctx, unseen):
        needed = needs_cuda(ctx, companion)
        if needed:  # another build altogether: no version of it fits this torch, the build of torch must change
            yield _needs_cuda_finding(ctx, companion, needed)
            continue
        missing = missing_functions(ctx, companion)
        fits = companion.pin_fits(torch.release)
        if not missing and fits is not False:
            continue
        made_for = companion.made_for()
        fit = fitting_version(companion.name, torch.release)
        if fit == companion.version:
            fit = None  # the table's own pairing, yet functions are missing: another build of it, not a version
        evidence = {
            "package": companion.name, "version": companion.version, "torch": torch.version,
            "made_for": made_for, "requires": f"torch{companion.requires_torch}" if companion.requires_torch
            else None, "fits": fit, "install": f"{companion.name}=={fit}" if fit else None,
            "count": len(missing), "functions": [m.function for m in missing[:SHOWN]],
            "missing": [{"function": m.function, "raw": m.raw, "dll": m.dll, "needed_by": list(m.needed_by)}
                        for m in missing[:MAX_LISTED]],
            "extensions": [ctx.display(p) for p in companion.extensions]}
        if missing:
            severity = BLOCKER
            variant = "no-fit" if not fit else None if made_for else "other-torch"
        else:
            severity, variant = WARNING, "pin-only" if fit else "pin-only-no-fit"
        yield ctx.finding(CODE, severity, evidence, [REPAIR] if fit else [], variant=variant)
    if unseen:  # the loading test imports torch alone: nothing else would see them
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "packages": "; ".join(unseen)},
                          variant="companions-unreadable")


PROBE = Probe("companions", ENVIRONMENT, run)


def _numpy_2(ctx: ProbeContext, release: Optional[str], version: Optional[str]) -> Iterator[Finding]:
    """NumPy 2 beside a torch built against NumPy 1 (before 2.3.0): torch imports with a warning, and its NumPy
    bridge (tensor.numpy(), torch.from_numpy) fails; also where another package's own metadata pins numpy<2."""
    numpy = installed_versions(ctx.env.site_packages, ["numpy"]).get("numpy")
    if numpy is None or not numpy.split(".")[0].isdigit() or int(numpy.split(".")[0]) < 2:
        return
    first = known_issues()["numpy_2_first_torch"]
    old_torch = bool(release) and version_tuple(release) < version_tuple(first)
    pinned = sorted(_pinned_to_numpy_1(ctx.env.site_packages))
    if not old_torch and not pinned:
        return
    yield ctx.finding("numpy-2-too-new", WARNING, {
        "numpy": numpy, "torch": version, "first_torch": first, "torch_made_for_numpy_1": old_torch,
        "packages": pinned, "package_list": ", ".join(pinned) if pinned else "-"}, ["install-numpy-1"],
        variant=None if old_torch else "packages")


def _pinned_to_numpy_1(site: Path) -> Iterator[str]:
    """Packages whose METADATA requires numpy below 2 (numpy<2, numpy<2.0, numpy<=1.26...)."""
    for info in children(site):
        if not info.name.lower().endswith(".dist-info"):
            continue
        head = metadata_head(info)
        if re.search(r"^Requires-Dist:\s*numpy\b[^;\n]*(?:<\s*2(?:\.0)*\b|<=\s*1\.)", head, re.M | re.I):
            name = re.search(r"^Name:\s*(\S+)", head, re.M)
            yield name.group(1) if name else info.name.split("-")[0]


def _bitsandbytes(ctx: ProbeContext, cuda: Optional[str], version: Optional[str]) -> Iterator[Finding]:
    """bitsandbytes loads the GPU library made for torch's CUDA version (libbitsandbytes_cuda128.dll beside
    torch cu128) from its own folder: a release without one for that version (every release before 0.43 had none
    for Windows) falls back to the processor, or stops where the program needs the GPU."""
    folder = child(ctx.env.site_packages, "bitsandbytes")
    if not cuda or folder is None:
        return
    libraries = sorted(p.name for p in children(folder)
                       if re.fullmatch(r"libbitsandbytes_cuda\d+\w*\.dll", p.name, re.IGNORECASE))
    wanted = "libbitsandbytes_cuda" + "".join(cuda.split(".")[:2]) + ".dll"
    if any(name.lower() == wanted for name in libraries):
        return
    installed = installed_versions(ctx.env.site_packages, ["bitsandbytes"]).get("bitsandbytes")
    yield ctx.finding("bitsandbytes-no-gpu-library", WARNING, {
        "version": installed, "cuda": cuda, "torch": version, "wanted": wanted,
        "libraries": libraries, "library_list": ", ".join(libraries) or "-"}, ["upgrade-bitsandbytes"])
