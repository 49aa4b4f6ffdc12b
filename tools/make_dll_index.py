"""Make resources/dll_index.json: which Windows wheels on PyPI ship which DLL, read from the wheels themselves.

    python tools/make_dll_index.py

For each package of the AI stack (PACKAGES, and the NVIDIA CUDA libraries in NVIDIA_PACKAGES) the simple API's JSON
page lists the files; every minor release line gives its first and last release, and each of those one win_amd64
wheel (cp312 first) and one win_arm64 wheel where there is one. Only each wheel's central directory is read, by
ranged reads (app/sources/wheel_member.py's RemoteWheel, with its byte budgets), eight wheels at a time; the DLL
names found are kept in .cache/dll_index/ (git-ignored), so a second run reads only what is new. What is not on
PyPI (PyTorch's CUDA and XPU builds on its own index) comes from CITED: each row names the build script it is read
from, by repository, file and commit. Families come from app/engine/dll_family.py, the rule the product uses too.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.engine.dll_family import dll_family  # noqa: E402
from app.sources.download import DownloadError, fetch_page, new_session  # noqa: E402
from app.sources.wheel_member import JSON_ACCEPT, IndexFile, RemoteWheel, parse_index_page, project_url  # noqa: E402

INDEX = "https://pypi.org/simple"
OUTPUT = REPO / "resources" / "dll_index.json"
CACHE = REPO / ".cache" / "dll_index"
WORKERS = 8  # requests at once: polite to PyPI's file host
WHEEL_BUDGET = 48 << 20  # bytes fetched for one wheel's directory at most (torch's is about 3 MB)
MAX_PATHS = 4  # paths kept for one DLL in one package (a DLL moves between folders rarely)
LARGEST_INDEX = 1 << 20

PACKAGES = (
    "torch", "torchvision", "torchaudio", "torchcodec", "onnxruntime", "onnxruntime-gpu", "onnxruntime-directml",
    "ctranslate2", "bitsandbytes", "xformers", "triton-windows", "torch-directml", "intel-openmp", "mkl",
    "intel-sycl-rt", "dpcpp-cpp-rt", "opencv-python", "opencv-python-headless", "pyqt5-qt5", "pyqt6-qt6",
    "pyside6-essentials", "numpy", "scipy", "av", "soundfile",
)
NVIDIA_LIBRARIES = ("cublas", "cudnn", "cuda-runtime", "cuda-nvrtc", "cuda-cupti", "cufft", "curand", "cusolver",
                    "cusparse", "nvjitlink", "npp", "nvjpeg", "nvtx")
# CUDA 13's libraries are published without the suffix (nvidia-cublas 13.x)
NVIDIA_PACKAGES = tuple(f"nvidia-{library}{cuda}" for library in NVIDIA_LIBRARIES
                        for cuda in ("-cu11", "-cu12", "-cu13", ""))

_PYTORCH_COPY = {"repository": "pytorch/pytorch", "file": ".ci/pytorch/windows/internal/copy.bat",
                 "commit": "04dd8db73072a2b109700cf97f10958c9b7ec9ee"}
_BUILDER_COPY = {"repository": "pytorch/builder", "file": "windows/internal/copy.bat",
                 "commit": "0d0876a9b855e95f4a7fd036ee2204bbbae53097"}
_BUILDER_XPU = {"repository": "pytorch/builder", "file": "windows/internal/copy_xpu.bat",
                "commit": "217f2a84bd113059f9d7d4e3fad91107f4bd1eef"}
_CUDA_BUILD = "torch's CUDA builds on download.pytorch.org (torch/lib)"
# What PyTorch's own Windows build scripts copy into torch\lib: exact names, or the script's own wildcards
CITED = (
    {"names": ["nvtoolsext64_1.dll"], "build": _CUDA_BUILD, "citation": _PYTORCH_COPY},
    {"names": ["uv.dll"], "build": "torch's builds on download.pytorch.org (torch/lib)", "citation": _PYTORCH_COPY},
    {"names": ["zlibwapi.dll"], "build": _CUDA_BUILD, "citation": _PYTORCH_COPY},
    {"names": ["libmmd.dll", "svml_dispmd.dll", "sycl8.dll", "ur_adapter_level_zero.dll", "ur_loader.dll",
               "ur_win_proxy_loader.dll"], "build": "torch's XPU builds on download.pytorch.org (torch/lib)",
     "citation": _BUILDER_XPU},
    {"patterns": ["cusparse*64_*.dll", "cublas*64_*.dll", "cudart*64_*.dll", "curand*64_*.dll", "cufft*64_*.dll",
                  "cusolver*64_*.dll", "nvrtc*64_*.dll", "nvjitlink_*.dll", "cudnn*64_*.dll", "cupti64_*.dll",
                  "nvperf_host*.dll", "libiomp*5md.dll"], "build": _CUDA_BUILD, "citation": _PYTORCH_COPY},
    {"patterns": ["cufftw64_*.dll", "nvrtc-builtins64_*.dll"], "build": _CUDA_BUILD, "citation": _BUILDER_COPY},
)

_WHEEL = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)"
                    r"-(?P<platform>[^-]+)\.whl")
_local = threading.local()


def _session():
    if not hasattr(_local, "session"):
        _local.session = new_session()
    return _local.session


def version_key(version: str) -> tuple:
    """A release's order: its numbers, then final after pre-releases ("2.0.0rc1" < "2.0.0" < "2.0.0.post1")."""
    numbers = tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0].split("dev")[0].split("rc")[0]
                                               .split("a")[0].split("b")[0].split("post")[0]))
    return numbers, 0 if re.search(r"(a|b|rc|dev)\d*", version) else 1, version


def is_prerelease(version: str) -> bool:
    return bool(re.search(r"\d(a|b|rc|dev)\d*", version))


def windows_wheels(files: Iterable[IndexFile]) -> dict[str, list[tuple[IndexFile, re.Match]]]:
    """The Windows x64 and ARM64 wheels, by version."""
    found: dict[str, list[tuple[IndexFile, re.Match]]] = {}
    for index_file in files:
        match = _WHEEL.fullmatch(index_file.filename)
        if match and any(p in ("win_amd64", "win_arm64") for p in match["platform"].split(".")):
            found.setdefault(match["version"], []).append((index_file, match))
    return found


def chosen_versions(versions: Iterable[str]) -> list[str]:
    """The first and last release of every minor line (final releases, where the package has any)."""
    versions = list(versions)
    finals = [v for v in versions if not is_prerelease(v)] or versions
    lines: dict[tuple, list[str]] = {}
    for version in sorted(finals, key=version_key):
        lines.setdefault(version_key(version)[0][:2], []).append(version)
    return sorted({v for line in lines.values() for v in (line[0], line[-1])}, key=version_key)


def _preference(match: re.Match) -> tuple:
    python = match["python"].split(".")[-1]
    cpython = int(python[2:]) if python.startswith("cp") and python[2:].isdigit() else 0
    return cpython == 312, match["abi"] == "abi3", cpython


def one_per_platform(wheels: list[tuple[IndexFile, re.Match]]) -> list[IndexFile]:
    """One win_amd64 wheel (cp312 first, then the newest CPython) and one win_arm64 wheel."""
    chosen = []
    for platform in ("win_amd64", "win_arm64"):
        fitting = [(f, m) for f, m in wheels if platform in m["platform"].split(".")]
        if fitting:
            chosen.append(max(fitting, key=lambda pair: _preference(pair[1]))[0])
    return chosen


def wheels_of(package: str) -> list[tuple[str, str, IndexFile]]:
    """(package, version, wheel) for the releases this package's lines are sampled at; none where PyPI has none."""
    try:
        url, kind, body = fetch_page(project_url(INDEX, package), accept=JSON_ACCEPT, max_bytes=64 << 20,
                                     session=_session())
    except DownloadError as exc:
        if exc.code != "not-found":
            print(f"{package}: {exc}", file=sys.stderr)
        return []
    by_version = windows_wheels(parse_index_page(url, kind, body))
    return [(package, version, wheel) for version in chosen_versions(by_version)
            for wheel in one_per_platform(by_version[version])]


def dll_paths(wheel: IndexFile) -> Optional[list[str]]:
    """The DLLs in the wheel's central directory (cached); None when it could not be read."""
    cached = CACHE / f"{wheel.filename}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    try:
        with RemoteWheel(wheel.url, budget=WHEEL_BUDGET, session=_session()) as remote:
            paths = sorted(name for name in remote.names() if name.lower().endswith(".dll"))
    except DownloadError as exc:
        print(f"{wheel.filename}: {exc}", file=sys.stderr)
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(paths), encoding="utf-8")
    return paths


def version_ranges(seen: list[str], sampled: list[str]) -> list[list[str]]:
    """The sampled releases that ship the DLL, as [first, last] runs of neighbouring samples."""
    ranges: list[list[str]] = []
    previous = None
    for version in sampled:
        if version in seen:
            if ranges and previous in seen:
                ranges[-1][1] = version
            else:
                ranges.append([version, version])
        previous = version
    return ranges


def build_index(listings: list[tuple[str, str, list[str]]], made: str) -> dict:
    """The index's data from (package, version, DLL paths) for every wheel read."""
    sampled: dict[str, list[str]] = {}
    found: dict[str, dict[str, dict]] = {}
    for package, version, paths in listings:
        sampled.setdefault(package, []).append(version)
        for path in paths:
            name = path.rsplit("/", 1)[-1].lower()
            owner = found.setdefault(name, {}).setdefault(package, {"versions": set(), "paths": set()})
            owner["versions"].add(version)
            owner["paths"].add(re.sub(r"^[^/]+\.data/", "*.data/", path))  # the folder names the version
    dlls = {}
    for name in sorted(found):
        owners = []
        for package in sorted(found[name]):
            owner = found[name][package]
            order = sorted(set(sampled[package]), key=version_key)
            owners.append({"package": package, "source": "pypi",
                           "versions": version_ranges(sorted(owner["versions"], key=version_key), order),
                           "paths": sorted(owner["paths"])[:MAX_PATHS]})
        entry = {"owners": owners}
        family = dll_family(name) or next(filter(None, (dll_family(name, o["package"]) for o in owners)), None)
        if family:
            entry["family"] = family
        dlls[name] = entry
    add_cited(dlls)
    return {"made": made, "wheels": len(listings), "packages": len(sampled), "dlls": dlls,
            "patterns": [dict(row, source="cited", package="torch") for row in CITED if "patterns" in row]}


def add_cited(dlls: dict) -> None:
    for row in CITED:
        for name in row.get("names", ()):
            entry = dlls.setdefault(name, {"owners": []})
            entry["owners"].append({"package": "torch", "source": "cited", "build": row["build"],
                                    "citation": row["citation"]})
            if "family" not in entry and dll_family(name):
                entry["family"] = dll_family(name)


def read_everything() -> list[tuple[str, str, list[str]]]:
    with ThreadPoolExecutor(WORKERS) as pool:
        wheels = [w for found in pool.map(wheels_of, PACKAGES + NVIDIA_PACKAGES) for w in found]
        print(f"{len(wheels)} wheels to read", file=sys.stderr)
        paths = list(pool.map(lambda w: dll_paths(w[2]), wheels))
    return [(package, version, found) for (package, version, _), found in zip(wheels, paths) if found is not None]


def main() -> int:
    index = build_index(read_everything(), datetime.date.today().isoformat())
    text = json.dumps(index, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    if len(text.encode("utf-8")) > LARGEST_INDEX:
        print(f"the index would be {len(text)} bytes, more than {LARGEST_INDEX}", file=sys.stderr)
        return 1
    OUTPUT.write_text(text + "\n", encoding="utf-8")
    print(f"{OUTPUT.name}: {len(index['dlls'])} DLL names from {index['wheels']} wheels of {index['packages']} "
          f"packages, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
