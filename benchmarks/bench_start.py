"""The wizard's start: importing its modules (what a double-click pays before the first window, less Qt's own start),
against importing Qt's widgets alone in the same kind of process, in the same run. Fresh processes, alternating,
median of --repeat. The wizard's modules must not load the HTTP library (requests, urllib3): only a download does.

    python benchmarks/bench_start.py [--repeat 7] [--json FILE]
"""

from __future__ import annotations

import argparse
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


def timed(code: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.strip()


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
    save_results(args.json, report)


if __name__ == "__main__":
    main()
