r"""N environments for the price of one: `diagnose` of a copied drive holding 1, 8 and 16 venvs of the same torch
2.4.0, each in a fresh child process, in one run. Wall time and peak memory (the child's own ru_maxrss), as ratios
against one environment measured in the same run; and how many DLLs were parsed (a distinct file is parsed once,
app/engine/graph.py PECache).

    python benchmarks/bench_many_envs.py [--repeat 3] [--json FILE]

The goal: 16 environments in at most 2x the time of one, and at most 120 MB. By default each venv holds the whole
real wheel (10,644 files) hard-linked, as uv makes them; `--copies` gives each venv its own copy of the whole wheel,
as pip installs it (1.1 GB each: the figure is each further environment's cost, goal at most 100 ms);
`--dlls-only` gives each venv its own copy of torch\lib alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

CHILD = """
import sys, time, io, contextlib, resource
sys.path.insert(0, {repo!r})
start = time.perf_counter()
from app.main import main
from app.engine.graph import SHARED_CACHE
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["diagnose", "--root", {root!r}, "--json", "-", "--quiet"])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(time.perf_counter() - start, peak, getattr(SHARED_CACHE, "parsed", -1), code)
"""


def build(root: Path, copies: int, wheel_tree: Optional[Path] = None, linked: bool = True) -> Path:
    r"""A drive with `copies` venvs of the same torch 2.4.0 (ComfyUI-style). With `wheel_tree` (the real wheel
    unpacked), each site-packages holds every file of the wheel and its real RECORD, hard-linked to the others as
    uv links them (`linked`), or each its own copy as pip writes them; else each venv is its own copy of the
    image's torch\lib and record."""
    from tests.helpers.images import SITE, VENV, build_torch_image

    image = build_torch_image(root)
    venv = image.host(VENV)
    if wheel_tree is not None:
        site = image.host(SITE)
        for name in ("torch", "torch-2.4.0.dist-info"):
            shutil.rmtree(site / name, ignore_errors=True)
        shutil.copytree(wheel_tree, site, copy_function=os.link, dirs_exist_ok=True)
    for number in range(2, copies + 1):
        target = venv.parent.parent / f"ComfyUI-{number}" / "venv"
        if wheel_tree is not None and linked:
            shutil.copytree(venv, target, copy_function=os.link)  # links, as uv makes them
        else:
            shutil.copytree(venv, target, copy_function=shutil.copy2)  # real copies (own inodes, own times)
    return image.root


def measure(root: Path, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), root=str(root))],
                             capture_output=True, text=True, check=True).stdout.split()
        runs.append((float(out[0]), float(out[1]), int(out[2])))
    return {"seconds_median": statistics.median(r[0] for r in runs), "peak_mb_median": statistics.median(
        r[1] for r in runs), "dlls_parsed": runs[0][2], "seconds_all": [r[0] for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--counts", default="1,8,16")
    parser.add_argument("--copies", action="store_true",
                        help="each venv its own copy of the whole wheel, not hard-linked (1.1 GB each)")
    parser.add_argument("--dlls-only", action="store_true",
                        help="each venv a copy of torch\\lib alone (11 DLLs), not the whole wheel hard-linked")
    parser.add_argument("--json", help="where the figures go (benchmarks/results/many_envs*.json by default)")
    args = parser.parse_args()
    mode = "_copies" if args.copies else "_dlls_only" if args.dlls_only else ""
    args.json = args.json or str(REPO / "benchmarks" / "results" / f"many_envs{mode}.json")
    counts = [int(c) for c in args.counts.split(",")]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        wheel_tree = None
        if not args.dlls_only:
            import zipfile

            from tests.realfiles import TORCH_240, download

            wheel_tree = Path(tmp) / "wheel"
            with zipfile.ZipFile(download(TORCH_240)) as wheel:
                wheel.extractall(wheel_tree)
        for count in counts:
            drive = build(Path(tmp) / "drive", count, wheel_tree, linked=not args.copies)
            figures[count] = measure(drive, args.repeat)
            shutil.rmtree(drive)  # one drive at a time: the copies of the whole wheel take 1.1 GB each
    one, last = figures[counts[0]], figures[counts[-1]]
    image = ("copies of one ComfyUI-style venv with the real torch 2.4.0 wheel's 11 DLLs (262 MB each copy)"
             if args.dlls_only else "ComfyUI-style venvs, each holding every file of the real torch 2.4.0 wheel "
             "(10,644 files) and its RECORD, " + ("each its own copy, as pip installs them" if args.copies
                                                  else "hard-linked to each other as uv links them"))
    report = {
        "image": image,
        "each_further_environment_s": (last["seconds_median"] - one["seconds_median"]) / max(1, counts[-1] - counts[0]),
        "environments": {str(c): f for c, f in figures.items()},
        "time_ratio_over_one": {str(c): f["seconds_median"] / one["seconds_median"] for c, f in figures.items()},
        "memory_ratio_over_one": {str(c): f["peak_mb_median"] / one["peak_mb_median"] for c, f in figures.items()},
        "note": "fresh process each run, imports included; peak memory is the child's own ru_maxrss",
        "load_average": list(os.getloadavg()),
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
