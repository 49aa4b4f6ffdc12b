"""Measure which VC++ runtime DLLs the DLLs of torch\\lib import, per torch release, without downloading wheels.

    python -m tools.measure_runtime_imports [--releases 2.0.1,2.14.1] [--python cp311] [--out FILE]

For each release (default: the newest patch of every minor release from 2.0 that PyPI's JSON API lists), the
win_amd64 wheel of `--python` is read by HTTP ranges (`app.sources.wheel_member.RemoteWheel` over the one
downloader): its central directory, then each DLL of torch\\lib, inflated from its start (a deflated member
cannot be entered in the middle) into a temporary file and read with the app's PE reader (imports and
delay imports, no exports). Every DLL of torch\\lib is read: torch_cpu.dll's import directory sits at about 95%
of the file, so a partial read saves almost nothing on the one DLL that matters most.

The runtime's DLLs are `resources/known_issues.json` "vc_runtime_dlls". Prints, and writes with --out, JSON:
release -> the wheel, its size, the bytes fetched, and each runtime DLL with the torch DLLs that import it
(`--as-data`: only the last, as resources/known_issues.json "vc_runtime_imports" holds it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional
from urllib.parse import urljoin

import requests

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.pe import read_pe_stream
from app.engine.versions import version_tuple
from app.resources import known_issues
from app.sources.wheel_member import RemoteWheel

PROJECT_API = "https://pypi.org/pypi/torch/json"  # every release's files (the per-version page 404s on some mirrors)
MAX_MEMBER = 2 << 30  # torch_cpu.dll is about 250 MB; a CUDA build's torch_cuda.dll about 1 GB
HEADROOM = 8 << 20  # the end records, the central directory and the local headers, beyond the members


def release_files(session: requests.Session) -> dict[str, list[dict]]:
    """PyPI's JSON API: every release of torch and its files (filename, url relative to the page, size)."""
    response = session.get(PROJECT_API, timeout=60)
    response.raise_for_status()
    return response.json()["releases"]


def minor_releases(releases: dict[str, list[dict]], first: str = "2.0") -> list[str]:
    """The newest final patch release of every minor release from `first`."""
    newest: dict[tuple[int, ...], str] = {}
    for version, files in releases.items():
        if not files or not all(part.isdigit() for part in version.split(".")):
            continue  # pre-releases, and versions with no files
        minor = version_tuple(version)[:2]
        if minor >= version_tuple(first)[:2] and (minor not in newest
                                                 or version_tuple(version) > version_tuple(newest[minor])):
            newest[minor] = version
    return [newest[m] for m in sorted(newest)]


def wheel_url(releases: dict[str, list[dict]], version: str, python: str) -> tuple[str, str, int]:
    """(filename, absolute URL, size) of the release's `python` win_amd64 wheel."""
    for entry in releases.get(version, []):
        if entry["filename"].endswith(f"-{python}-{python}-win_amd64.whl"):
            return entry["filename"], urljoin(PROJECT_API, entry["url"]), int(entry["size"])
    raise LookupError(f"torch {version} has no {python} win_amd64 wheel on PyPI")


def measure(releases: dict[str, list[dict]], version: str, python: str, session: requests.Session) -> dict:
    """What one release's torch\\lib imports of the VC++ runtime, and what reading it cost."""
    filename, url, size = wheel_url(releases, version, python)
    runtime = {name.lower() for name in known_issues()["vc_runtime_dlls"]}
    with RemoteWheel(url, budget=size + HEADROOM, session=session) as wheel:
        members = [n for n in wheel.names() if n.startswith("torch/lib/") and n.lower().endswith(".dll")]
        imports: dict[str, list[str]] = {}
        inflated = 0
        for name in members:
            dll = name.rsplit("/", 1)[-1]
            with tempfile.TemporaryFile() as out:
                inflated += wheel.copy(name, out, MAX_MEMBER).size
                info = read_pe_stream(out, dll, with_exports=False)
            for imported in info.imports:
                if imported.name.lower() in runtime:
                    imports.setdefault(imported.name.lower(), []).append(dll)
        return {"wheel": filename, "wheel_bytes": size, "fetched_bytes": wheel.fetched,
                "dlls_read": len(members), "dll_bytes": inflated,
                "runtime_imports": {k: sorted(v, key=str.lower) for k, v in sorted(imports.items())}}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", help="comma-separated torch versions (default: every minor's newest patch)")
    parser.add_argument("--python", default="cp311", help="the wheel's Python tag (cp311 exists for 2.0 to 2.15)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--as-data", action="store_true",
                        help='only release -> runtime_imports: the form of known_issues.json "vc_runtime_imports"')
    args = parser.parse_args(argv)
    session = requests.Session()
    files = release_files(session)
    results = {}
    for version in args.releases.split(",") if args.releases else minor_releases(files):
        results[version] = measure(files, version, args.python, session)
        print(version, json.dumps(results[version]), file=sys.stderr, flush=True)
    if args.as_data:
        results = {version: result["runtime_imports"] for version, result in results.items()}
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
