"""The in-use check of a folder target (a torch folder set aside, or replaced by pip), against a file target in the
same run. The real torch 2.4.0 wheel, every file extracted (`torch/*`: 10,000+ files in 900+ folders), and a second
process with one DLL of `torch\\lib` mapped, as a running ComfyUI has:

- psutil (Linux, and Windows where the Restart Manager does not answer): `processes_using([torch folder])` against
  `processes_using([torch\\lib\\torch_cpu.dll])`, both naming the holder: every process's memory maps are read
  either way, the folder only adds a prefix test per mapped file;
- the Restart Manager's list (Windows): `_loaded_below(torch folder)`, the walk that collects every DLL and extension
  file below the folder to register, against `os.scandir(torch\\lib)` (what a file target registers beside it).

Alternating, --repeat times after one warm-up, in this process.

    python benchmarks/bench_in_use.py [--repeat 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.repair.in_use import LOADED, _loaded_below, processes_using  # noqa: E402 - after the path is set
from benchmarks import save_results  # noqa: E402
from tests import realfiles  # noqa: E402


def timed(runs: dict, repeat: int) -> dict:
    times: dict[str, list[float]] = {name: [] for name in runs}
    answers = {}
    for number in range(repeat + 1):
        order = list(runs.items()) if number % 2 else list(reversed(runs.items()))
        for name, run in order:
            started = time.perf_counter()
            answers[name] = run()
            if number:
                times[name].append(time.perf_counter() - started)
    return {name: {"median_s": statistics.median(t), "min_s": min(t), "max_s": max(t)} for name, t in times.items()}, \
        answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "in_use.json"))
    args = parser.parse_args()

    torch = realfiles.extract(realfiles.TORCH_240, "torch/*") / "torch"
    files = sum(len(names) for _, _, names in os.walk(torch))
    folders = sum(1 for _ in os.walk(torch))
    dll = torch / "lib" / "asmjit.dll"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import mmap, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); "
        "print('ready', flush=True); sys.stdin.read()"), str(dll)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"

        def named(paths):
            return lambda: [h["pid"] for h in processes_using(paths)].count(holder.pid)

        psutil_times, answers = timed({"folder": named([torch]), "file": named([torch / "lib" / "torch_cpu.dll"])},
                                      args.repeat)
        assert answers == {"folder": 1, "file": 1}, answers
    finally:
        holder.stdin.close()
        holder.wait(10)
    walk_times, listed = timed({
        "walk": lambda: len(_loaded_below({str(torch)})),
        "scandir": lambda: sum(1 for e in os.scandir(torch / "lib") if e.name.lower().endswith(LOADED)),
    }, args.repeat)
    report = {
        "torch": {"files": files, "folders": folders, "loaded_kind_below": listed["walk"],
                  "loaded_kind_in_lib": listed["scandir"]},
        "psutil": {**psutil_times, "ratio": psutil_times["folder"]["median_s"] / psutil_times["file"]["median_s"]},
        "restart_manager_list": {**walk_times,
                                 "ratio": walk_times["walk"]["median_s"] / walk_times["scandir"]["median_s"]},
        "repeat": args.repeat, "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    save_results(args.json, report)
    print(f"torch 2.4.0: {files} files in {folders} folders; {listed['walk']} DLL / extension files below it, "
          f"{listed['scandir']} in torch\\lib")
    print(f"psutil: folder {psutil_times['folder']['median_s'] * 1000:.1f} ms, file "
          f"{psutil_times['file']['median_s'] * 1000:.1f} ms ({report['psutil']['ratio']:.2f}x)")
    print(f"Restart Manager's list: walk {walk_times['walk']['median_s'] * 1000:.1f} ms, torch\\lib alone "
          f"{walk_times['scandir']['median_s'] * 1000:.2f} ms ({report['restart_manager_list']['ratio']:.1f}x)")


if __name__ == "__main__":
    main()
