"""N environments for the price of one: `diagnose` of a copied drive holding 1, 8 and 16 copies of the same torch
environment (the real torch 2.4.0 wheel's DLLs, each copy its own files), each in a fresh child process, in one
run. Wall time and peak memory (the child's own ru_maxrss), as ratios against one environment measured in the
same run; and how many DLLs were parsed (a distinct file is parsed once, app/engine/graph.py PECache).

    python benchmarks/bench_many_envs.py [--repeat 3] [--json FILE]

The goal: 16 environments in at most 3x the time of one, and at most 150 MB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

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


def build(root: Path, copies: int) -> Path:
    """A drive with `copies` venvs of the same torch 2.4.0 (ComfyUI-style), each with its own copy of the files."""
    from tests.conftest import VENV, build_torch_image

    image = build_torch_image(root)
    venv = image.host(VENV)
    for number in range(2, copies + 1):  # real copies (own inodes, own times), not links
        shutil.copytree(venv, venv.parent.parent / f"ComfyUI-{number}" / "venv", copy_function=shutil.copy2)
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
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "many_envs.json"))
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in counts:
            figures[count] = measure(build(Path(tmp) / f"drive-{count}", count), args.repeat)
    one = figures[counts[0]]
    report = {
        "image": "copies of one ComfyUI-style venv with the real torch 2.4.0 wheel's 11 DLLs (262 MB each copy)",
        "environments": {str(c): f for c, f in figures.items()},
        "time_ratio_over_one": {str(c): f["seconds_median"] / one["seconds_median"] for c, f in figures.items()},
        "memory_ratio_over_one": {str(c): f["peak_mb_median"] / one["peak_mb_median"] for c, f in figures.items()},
        "note": "fresh process each run, imports included; peak memory is the child's own ru_maxrss",
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
