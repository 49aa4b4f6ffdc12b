"""Diagnosis benchmark: a full `diagnose` of the real torch 2.4.0 image, without the live replay
(an offline image cannot run programs), in a fresh child process; and in the same run, as a baseline, the
engine alone (the dependency graph of torch\\lib), so the ratio shows what the other probes and reports cost.

    python benchmarks/bench_diagnose.py [--repeat 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

CHILD_DIAGNOSE = """
import sys, time, io, contextlib
sys.path.insert(0, {repo!r})
start = time.perf_counter()
from app.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["diagnose", "--root", {root!r}, "--json", "-", "--quiet"])
print(time.perf_counter() - start, code)
"""



def child(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0])


def main() -> None:
    from benchmarks.bench_engine import CHILD_GRAPH
    from tests.helpers.images import TORCH_LIB, VENV, build_torch_image

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "diagnose.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        image = build_torch_image(Path(tmp) / "image")
        values = {"repo": str(REPO), "root": str(image.root), "venv": VENV, "lib": TORCH_LIB}
        diagnose = [child(CHILD_DIAGNOSE.format(**values)) for _ in range(args.repeat)]
        graph = [child(CHILD_GRAPH.format(**values)) for _ in range(args.repeat)]
    report = {
        "image": "real torch 2.4.0 wheel (11 DLLs, 262 MB) in a ComfyUI-style venv, python.org CPython 3.12.9",
        "diagnose_seconds_median": statistics.median(diagnose),
        "diagnose_seconds_all": diagnose,
        "baseline_engine_graph_seconds_median": statistics.median(graph),
        "ratio_diagnose_over_engine": statistics.median(diagnose) / statistics.median(graph),
        "note": "wall time of a fresh process, imports included; the live replay is not part of it",
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
