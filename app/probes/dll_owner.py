"""Whose a DLL is, for the diagnosis: the pip package that brings it (resources/dll_index.json), its releases and
family, whether that package is installed in the environment and at which version, the folder pip puts it in, and
the one command that brings the right one; where no package on the index brings it, the build it comes with (a cited
row). A file found inside a package's folder is that package's, never PyTorch's.

Families are compared with the environment's own: the CUDA of torch's build (torch\\version.py) and of the NVIDIA
packages installed (`nvidia-cublas-cu12`, CUDA 13's `nvidia-cublas` 13.x), the cuDNN of `nvidia-cudnn-*`. ZLUDA's
`nvcuda.dll` (in a `.zluda` or `zluda` folder, or beside HIP's runtime) is ZLUDA's, never NVIDIA's driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import TYPE_CHECKING, Iterable, Optional

from app.engine.dll_family import dll_family
from app.inventory.dll_index import DllOwner, owners
from app.inventory.packages import canonical, installed_versions
from app.system.folders import names

if TYPE_CHECKING:  # explain asks whose a DLL is without an environment, and starts without importing one
    from app.inventory.environment import PythonEnvironment

_PACKAGE_CUDA = re.compile(r"^nvidia-[a-z0-9-]+?-cu(\d+)$")
_NVIDIA_UNSUFFIXED = re.compile(r"^nvidia-[a-z0-9-]+$")  # CUDA 13's libraries: nvidia-cublas 13.x
_FAMILY = re.compile(r"^(cuda|cudnn)-(\d+)$")
ZLUDA_FOLDERS = frozenset({".zluda", "zluda"})
HIP_RUNTIME = re.compile(r"^amdhip64\w*\.dll$", re.I)


@dataclass(frozen=True)
class Owner:
    """What the diagnosis says of one DLL: `package` brings it (None: no package on the index does), `pin` is
    what to ask pip for, `folder` where pip's copy goes (on this computer); `origin` the cited build it comes with
    where no package does; `clash` the environment's family where it is another major than the DLL's."""

    dll: str
    family: Optional[str] = None
    package: Optional[str] = None
    versions: str = ""
    installed: Optional[str] = None
    pin: Optional[str] = None
    folder: Optional[Path] = None
    origin: Optional[str] = None
    citation: str = ""
    clash: Optional[str] = None
    zluda: bool = False

    def command(self, python: Optional[str]) -> Optional[str]:
        """The one command that brings the right one, with the environment's own Python."""
        if self.package is None or self.pin is None:
            return None
        return f'"{python or "python"}" -m pip install "{self.pin}"'

    def evidence(self, display, python: Optional[str]) -> dict:
        """The finding's keys: the JSON document shows them, the words name them."""
        return {"owner": self.package, "owner_versions": self.versions or None, "family": self.family,
                "owner_installed": self.installed, "pin": self.pin, "command": self.command(python),
                "install_folder": display(self.folder) if self.folder is not None else None,
                "origin": self.origin, "citation": self.citation or None, "family_clash": self.clash}


def environment_families(env: Optional[PythonEnvironment], installed: Optional[dict[str, str]] = None) -> set[str]:
    """The CUDA and cuDNN majors this environment shows: torch's build, and the NVIDIA packages installed."""
    families: set[str] = set()
    if env is None:
        return families
    if env.torch is not None and env.torch.cuda:
        families.add(f"cuda-{env.torch.cuda.split('.')[0]}")
    installed = installed if installed is not None else installed_versions(env.site_packages, None)
    for name, version in installed.items():
        major = version.split(".")[0]
        if (found := _PACKAGE_CUDA.match(name)) is not None:
            families.add(f"cuda-{found.group(1)}")
        elif _NVIDIA_UNSUFFIXED.match(name) and major.isdigit() and int(major) >= 13 and "cudnn" not in name:
            families.add(f"cuda-{major}")
        if name.startswith("nvidia-cudnn") and major.isdigit():
            families.add(f"cudnn-{major}")
    return families


def clash(family: Optional[str], families: Iterable[str]) -> Optional[str]:
    """The environment's family of the same kind where none of them is the DLL's ("cuda-13" for a CUDA 12 DLL
    in an environment of CUDA 13 only); None where they agree or the environment shows none of that kind."""
    wanted = _FAMILY.match(family or "")
    if wanted is None:
        return None
    same_kind = sorted(f for f in families if f.startswith(wanted.group(1) + "-"))
    return same_kind[0] if same_kind and family not in same_kind else None


def is_zluda_file(path: Optional[Path]) -> bool:
    """ZLUDA's copy of an NVIDIA file: in a `.zluda` or `zluda` folder, or beside AMD's HIP runtime."""
    if path is None:
        return False
    if path.parent.name.lower() in ZLUDA_FOLDERS:
        return True
    return any(HIP_RUNTIME.match(name) for name in names(path.parent))


def owner_of(env: Optional[PythonEnvironment], dll: str, path: Optional[Path] = None,
             installed: Optional[dict[str, str]] = None, families: Iterable[str] = ()) -> Owner:
    """Whose `dll` is: the package whose folder holds `path` (where it lies in site-packages), else the package
    on the index that brings it, the environment's own first; else the cited build it comes with. `families`: more
    CUDA majors to prefer (those a pasted text shows)."""
    if dll.lower() == "nvcuda.dll" and is_zluda_file(path):
        return Owner(dll, "zluda", zluda=True)
    found = owners(dll)
    site = env.site_packages if env is not None else None
    installed = installed if installed is not None else installed_versions(site, None) if site else {}
    families = environment_families(env, installed) | set(families)
    rows = [row for row in found.owners if row.source == "pypi"]
    row = _holding(rows, site, path) or _installer(rows, families, installed)
    if row is None:
        cited = next((r for r in found.owners if r.source == "cited"), None)
        return Owner(dll, found.family, origin=cited.build if cited else None,
                     citation=cited.citation if cited else "", clash=clash(found.family, families))
    family = dll_family(dll, row.package) or found.family
    last = row.versions[-1][1] if row.versions else ""
    return Owner(dll, family, row.package, versions_said(row), installed.get(canonical(row.package)),
                 f"{row.package}=={last.split('.')[0]}.*" if last else row.package,
                 install_folder(env, row, dll), clash=clash(family, families))


def versions_said(row: DllOwner) -> str:
    return ", ".join(first if first == last else f"{first} – {last}" for first, last in row.versions)


def _holding(rows: list[DllOwner], site: Optional[Path], path: Optional[Path]) -> Optional[DllOwner]:
    """The package whose wheel puts the file exactly where it lies (its path inside site-packages)."""
    if site is None or path is None:
        return None
    try:
        inside = path.relative_to(site).as_posix().lower()
    except ValueError:
        return None
    return next((row for row in rows if inside in (p.lower() for p in row.paths)), None)


def _private(row: DllOwner) -> bool:
    """A copy kept inside the package's own folder for itself (ctranslate2\\cudnn64_9.dll, torch\\lib): not a
    package to install for another's sake."""
    tops = {p.split("/", 1)[0].lower() for p in row.paths}
    return bool(tops) and tops <= {canonical(row.package).replace("-", "_"), canonical(row.package)}


def _installer(rows: list[DllOwner], families: set[str], installed: dict[str, str]) -> Optional[DllOwner]:
    """The package to install for it: one installed already, else one of the environment's CUDA, else the first
    that brings it for others (the index lists them by name)."""
    shared = [row for row in rows if not _private(row)]

    def rank(row: DllOwner) -> tuple[int, int]:
        cuda = _PACKAGE_CUDA.match(canonical(row.package))
        agrees = cuda is None or f"cuda-{cuda.group(1)}" in families or not any(f.startswith("cuda-") for f in families)
        return (0 if canonical(row.package) in installed else 1, 0 if agrees else 1)

    return min(shared, key=rank) if shared else None


def install_folder(env: Optional[PythonEnvironment], row: DllOwner, dll: str) -> Optional[Path]:
    """The folder pip puts `dll` in, installing `row`'s package into `env`: a wheel's data folder under the
    environment's prefix (`*.data/data/Library/bin`), anything else under site-packages."""
    if env is None or env.site_packages is None or not row.paths:
        return None
    arm = env.python_cpu_type == 0xAA64
    paths = sorted(row.paths, key=lambda p: ("arm64" in p.lower()) != arm)
    parts = PureWindowsPath(paths[0].replace("/", "\\")).parts[:-1]
    if parts[:1] == ("*.data",) and len(parts) >= 2:
        base = {"data": env.exec_prefix, "scripts": env.exec_prefix / "Scripts"}.get(parts[1].lower(),
                                                                                     env.site_packages)
        parts = parts[2:]
    else:
        base = env.site_packages
    return base.joinpath(*parts) if parts else base


# how the DLL is asked for, in the reader's words: torch's own start, or a package's load by name when it runs
STARTS_TORCH = {"en": "PyTorch cannot start without it", "zh_CN": "没有它 PyTorch 无法启动"}
FAMILY_NAMES = {"cuda": "CUDA", "cudnn": "cuDNN", "rocm": "ROCm (HIP)", "xpu": "Intel XPU (SYCL)",
                "directml": "DirectML", "ffmpeg": "FFmpeg", "openmp": "OpenMP", "zluda": "ZLUDA"}
INSTALL_DLL_PACKAGE = "install-dll-package"


def family_name(family: Optional[str]) -> Optional[str]:
    """"cuda-12" as "CUDA 12", "cudnn-9" as "cuDNN 9" (the same in both languages)."""
    if not family:
        return None
    kind, _, major = family.partition("-")
    return f"{FAMILY_NAMES.get(kind, kind)} {major}".strip()


@dataclass(frozen=True)
class OwnedDll:
    """A missing DLL's owner as a finding says it: its evidence keys, the repairs, the words' variant."""

    evidence: dict
    repairs: list
    variant: Optional[str]


def torch_search_folders(ctx) -> list[Path]:
    """The folders Windows searches for torch\\lib's dependencies, with the `Library\\bin` folders torch adds
    once they exist (where pip puts intel-openmp's, mkl's and Intel's SYCL runtime's DLLs)."""
    context = ctx.loader().context
    env = ctx.env
    more = [env.exec_prefix / "Library" / "bin", env.base_exec_prefix / "Library" / "bin"] if env else []
    return [f for f in (context.app_folder, *context.added_folders, *more, context.system32, *context.path_entries)
            if f is not None]


def _searched(folder: Optional[Path], searched: Iterable[Path]) -> bool:
    return folder is not None and str(folder).lower() in {str(f).lower() for f in searched}


def owned_dll(ctx, dll: str, searched: list[Path], loaded: dict, path: Optional[Path] = None) -> OwnedDll:
    """What a missing `dll` is and what brings it: @package (a pip package puts it in a folder Windows searches
    here, not installed: the install-dll-package repair, offered only when the families agree), @package-elsewhere
    (pip puts it where Windows does not search for it), @family-clash (another CUDA or cuDNN major than the
    environment's), or the plain words with where it comes from."""
    owner = owner_of(ctx.env, dll, path)
    python = ctx.python
    owner_state = ({"en": f"{owner.package} {owner.installed} is installed", "zh_CN": f"已安装 {owner.package} "
                    f"{owner.installed}"} if owner.installed else
                   {"en": f"{owner.package} is not installed", "zh_CN": f"没有安装 {owner.package}"})
    evidence = {**owner.evidence(ctx.display, python), "family_name": family_name(owner.family),
                "clash_name": family_name(owner.clash), "loaded": loaded,
                "owner_state": owner_state if owner.package else None}
    if owner.package is None:
        return OwnedDll(evidence, [], None)
    if owner.clash:
        return OwnedDll(evidence, [], "family-clash")
    if _searched(owner.folder, searched):
        return OwnedDll(evidence, [] if owner.installed else [INSTALL_DLL_PACKAGE], None if owner.installed
                        else "package")
    return OwnedDll(evidence, [], "package-elsewhere")
