"""Engine benchmarks, each measured in a fresh child process for an honest peak RSS.

1. The full dependency graph, with export checks, of the real torch 2.4.0 `torch\\lib` in an offline image.
2. Reading a 4 GiB sparse DLL against a 4 MiB one with the same tables: the cost must not grow with size.
3. The baseline, in the same run: pefile's default full parse of `torch_cpu.dll`.
4. A crafted DLL: 4,001 import entries sharing one list of 6,000 functions, against the same DLL with
   one entry, read in the same run. Before the reader noticed shared lists it returned 24 million functions:
   116 s and 4.0 GB peak RSS here (23-32 s and 3-4 GB on a quieter machine). Now it is a PEError.

    python benchmarks/bench_engine.py [--repeat N] [--skip-baseline] [--json FILE]

Figures are reported as medians and as ratios against the baseline, since the machines are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

CHILD_GRAPH = """
import sys, time, resource
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.inventory.search_context import loader_for
from app.inventory.environment import inspect_environment
from app.engine.graph import DependencyGraph
from app.system.offline import OfflineImage
start = time.perf_counter()
system = OfflineImage(Path({root!r}))
env = inspect_environment(system, system.host_path({venv!r}))
graph = DependencyGraph(loader_for(system, env))
for dll in sorted(system.host_path({lib!r}).glob("*.dll")):
    graph.add_root(dll)
graph.expand_all()
statuses = graph.statuses()
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, len(graph.nodes))
"""

CHILD_BASELINE_RSS = """
import resource, sys
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

CHILD_PEFILE = """
import sys, time, resource
import pefile
start = time.perf_counter()
pe = pefile.PE({path!r})
elapsed = time.perf_counter() - start
pe.close()
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

CHILD_SPARSE = """
import sys, time
sys.path.insert(0, {repo!r})
from app.engine.pe import read_pe
times = []
for _ in range({repeat}):
    start = time.perf_counter()
    info = read_pe({path!r})
    times.append(time.perf_counter() - start)
times.sort()
print(times[len(times) // 2], info.size, len(info.exports.names))
"""


CHILD_CRAFTED = """
import sys, time, resource
sys.path.insert(0, {repo!r})
from app.engine.pe import PEError, read_pe
times = []
for _ in range({repeat}):
    start = time.perf_counter()
    try:
        functions = sum(len(d.functions) for d in read_pe({path!r}).imports)
    except PEError:
        functions = -1
    times.append(time.perf_counter() - start)
times.sort()
print(times[len(times) // 2], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, functions)
"""


def child(code: str) -> list[float]:
    return timed_child(code)[1]


def timed_child(code: str) -> tuple[float, list[float]]:
    """The whole process's wall time (start, imports, work, exit) and what it printed."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - started, [float(x) for x in out.split()]


def bench_graph(repeat: int) -> dict:
    from tests.helpers.images import TORCH_LIB, VENV, build_torch_image

    with tempfile.TemporaryDirectory() as tmp:
        image = build_torch_image(Path(tmp) / "image")
        dlls = list(image.host(TORCH_LIB).glob("*.dll"))
        lib_bytes = sum(p.stat().st_size for p in dlls)
        timed = [timed_child(CHILD_GRAPH.format(repo=str(REPO), root=str(image.root), venv=VENV, lib=TORCH_LIB))
                 for _ in range(repeat)]
        runs = [printed for _, printed in timed]
    interpreter_rss = child(CHILD_BASELINE_RSS)[0]
    return {
        "torch_lib_dlls": len(dlls),
        "torch_lib_bytes": lib_bytes,
        "graph_nodes": int(runs[0][2]),
        "seconds_median": statistics.median(r[0] for r in runs),
        "process_seconds_median": statistics.median(seconds for seconds, _ in timed),
        "peak_rss_bytes_median": statistics.median(r[1] for r in runs),
        "interpreter_rss_bytes": interpreter_rss,
    }


def bench_sparse(repeat: int) -> dict:
    from app.demo.pe_writer import Export, Import, write_pe

    exports = [Export(ordinal=i, name=f"function_{i:05d}") for i in range(1, 5001)]
    imports = [Import("kernel32.dll", tuple(f"Win32Function{i}" for i in range(300)))]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, size in (("4MiB", 4 << 20), ("4GiB", 4 << 30)):
            path = Path(tmp) / f"{label}.dll"
            write_pe(path, imports=imports, exports=exports, pad_to=size)
            median, file_size, names = child(CHILD_SPARSE.format(repo=str(REPO), path=str(path), repeat=repeat))
            results[label] = {"seconds_median": median, "file_bytes": int(file_size), "exports": int(names)}
    results["ratio_4GiB_over_4MiB"] = results["4GiB"]["seconds_median"] / results["4MiB"]["seconds_median"]
    return results


def bench_crafted(repeat: int) -> dict:
    from app.demo.pe_writer import Import, write_pe

    functions = tuple(f"Function{i:05d}" for i in range(6000))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, copies in (("one_entry", 0), ("shared_by_4001_entries", 4000)):
            path = write_pe(Path(tmp) / f"{label}.dll", imports=[Import("kernel32.dll", functions)],
                            shared_list_copies=copies)
            median, rss, read = child(CHILD_CRAFTED.format(repo=str(REPO), path=str(path), repeat=repeat))
            results[label] = {"seconds_median": median, "peak_rss_bytes": rss, "file_bytes": path.stat().st_size,
                              "outcome": "damaged (PEError)" if read < 0 else f"{int(read)} functions"}
    results["interpreter_rss_bytes"] = child(CHILD_BASELINE_RSS)[0]
    crafted, normal = results["shared_by_4001_entries"], results["one_entry"]
    results["ratio_time_crafted_over_one_entry"] = crafted["seconds_median"] / normal["seconds_median"]
    results["ratio_rss_crafted_over_one_entry"] = crafted["peak_rss_bytes"] / normal["peak_rss_bytes"]
    return results


def bench_pefile_baseline(runs: int) -> dict:
    from tests import realfiles

    path = realfiles.torch_lib(realfiles.TORCH_240) / "torch_cpu.dll"
    timed = [timed_child(CHILD_PEFILE.format(path=str(path))) for _ in range(runs)]
    return {"file": "torch_cpu.dll", "file_bytes": path.stat().st_size, "runs": runs,
            "seconds": statistics.median(printed[0] for _, printed in timed),
            "process_seconds": statistics.median(seconds for seconds, _ in timed),
            "peak_rss_bytes": statistics.median(printed[1] for _, printed in timed)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--baseline-runs", type=int, default=3, help="pefile's parse takes ~16 s a run")
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "engine.json"))
    args = parser.parse_args()
    started = time.time()
    report: dict = {"graph": bench_graph(args.repeat), "sparse": bench_sparse(200), "crafted": bench_crafted(51)}
    if not args.skip_baseline:
        report["pefile_baseline"] = base = bench_pefile_baseline(args.baseline_runs)
        graph = report["graph"]
        report["ratios"] = {
            "graph_time_vs_pefile_one_dll": graph["seconds_median"] / base["seconds"],
            # whole processes, start and imports included: how many times faster the graph of every DLL is
            "pefile_process_over_graph_process": base["process_seconds"] / graph["process_seconds_median"],
            "graph_rss_vs_pefile_one_dll": graph["peak_rss_bytes_median"] / base["peak_rss_bytes"],
        }
    report["wall_seconds"] = time.time() - started
    report["load_average"] = list(os.getloadavg())
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
