"""The start. The wizard's: importing its modules (what a double-click pays before the first window, less Qt's own
start), against importing Qt's widgets alone in the same kind of process. The command line's: `--version`, a short
`explain` and `history` as whole processes, against a bare Python's start (`python -c pass`); each command imports
only what it needs. Fresh processes, alternating, median of --repeat, in the same run. The wizard's modules must
not load the HTTP library (requests, urllib3): only a download does.

    python benchmarks/bench_start.py [--repeat 7] [--json FILE]
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

from benchmarks import save_results  # noqa: E402 - after the path is set

WIZARD = ("import sys, app.ui.wizard, app.ui.application; "
          "print(sorted(m for m in ('requests', 'urllib3') if m in sys.modules))")
QT_ONLY = "import PySide6.QtWidgets"


COMMANDS = {"version": ["-m", "app", "--version"], "explain": ["-m", "app", "explain", "[WinError 126] fbgemm.dll"],
            "history": ["-m", "app", "history"]}
BARE = ["-c", "pass"]


def timed(code: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.strip()


def process(arguments: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=REPO, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "start.json"))
    args = parser.parse_args()
    timed(WIZARD), timed(QT_ONLY)  # warm-up: the file cache, not the measurement
    wizard, qt = [], []
    for _ in range(args.repeat):
        seconds, loaded = timed(WIZARD)
        if loaded != "[]":
            raise SystemExit(f"the wizard's modules loaded {loaded}")
        wizard.append(seconds)
        qt.append(timed(QT_ONLY)[0])
    report = {"repeat": args.repeat, "wizard_modules_s": round(statistics.median(wizard), 3),
              "qt_widgets_only_s": round(statistics.median(qt), 3)}
    report["ratio"] = round(report["wizard_modules_s"] / report["qt_widgets_only_s"], 2)
    print(f"wizard's modules {report['wizard_modules_s']:.3f} s, Qt's widgets alone {report['qt_widgets_only_s']:.3f} s"
          f": {report['ratio']:.2f}x")
    for arguments in (BARE, *COMMANDS.values()):
        process(arguments)  # warm-up
    runs: dict[str, list[float]] = {name: [] for name in ("bare", *COMMANDS)}
    for _ in range(args.repeat):
        runs["bare"].append(process(BARE))
        for name, arguments in COMMANDS.items():
            runs[name].append(process(arguments))
    bare = statistics.median(runs["bare"])
    report["bare_python_s"] = round(bare, 4)
    for name in COMMANDS:
        seconds = statistics.median(runs[name])
        report[f"cli_{name}_s"], report[f"cli_{name}_ratio"] = round(seconds, 4), round(seconds / bare, 2)
        print(f"{name}: {seconds:.3f} s, {seconds / bare:.2f}x a bare Python ({bare:.3f} s)")
    report["load_average"] = list(os.getloadavg())
    save_results(args.json, report)


if __name__ == "__main__":
    main()
