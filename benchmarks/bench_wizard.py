"""Wizard responsiveness: the longest event-loop stall during a whole run of the wizard on the real torch
2.4.0 image, from the first window on: discover, diagnose, open the dependency tree and expand every node of it,
repair (the OpenMP runtime from torch's own copy), verify, then undo. A timer that should tick every 5 ms
records how late each tick is; the longest lateness is the longest time the window could not redraw or answer a
click. Goals: the median run's longest stall at most one frame at 60 Hz (16 ms), the median run's p99 at most 8 ms.

Baseline, in the same run and process: the same timer over an idle event loop for as long as the run took (the
machine's own noise: a shared, busy machine shows late ticks even with nothing to do).

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_wizard.py [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TICK_MS = 5


class LateTicks:
    """A QTimer every TICK_MS; `worst` is the longest gap beyond the interval, in ms."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(max(0.0, (now - self.last) * 1000 - TICK_MS))
        self.last = now

    def start(self) -> None:
        self.gaps, self.last = [], time.perf_counter()
        self.timer.start()

    def stop(self) -> dict:
        self.timer.stop()
        ordered = sorted(self.gaps)
        return {"worst_ms": round(ordered[-1], 1), "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1], 1),
                "ticks": len(ordered)}


def one_run(image_root: Path, data_dir: Path) -> tuple[dict, float, dict]:
    from PySide6.QtWidgets import QMessageBox

    from app.ui.application import new_wizard
    from app.ui.pages.base import FINDINGS, FINISH
    from app.ui.screenshots import drive, settle, wait_until

    os.environ["TDD_DATA_DIR"] = str(data_dir)
    wizard = new_wizard(root=str(image_root), lang="en")
    wizard.show()  # the time to the first window is measured apart (bench_exe.py); this is the run after it
    settle()
    ticks = LateTicks()
    ticks.start()
    started = time.perf_counter()
    shown = {}

    def at_page(page_id: int) -> None:
        if page_id == FINDINGS:
            shown["tree_items"] = wizard.pages[FINDINGS].tree.model.items_made
        if page_id == FINISH:
            finish = wizard.pages[FINISH]
            finish.undo.click()  # Undo asks first: answered Yes, as a person would
            wait_until(lambda: finish.confirm is not None and finish.confirm.isVisible())
            finish.confirm.button(QMessageBox.StandardButton.Yes).click()
            wait_until(lambda: "Undone" in finish.result.text())

    drive(wizard, at_page, expand_everything=True)
    elapsed = time.perf_counter() - started
    result = ticks.stop()
    wizard.shutdown()
    wizard.deleteLater()
    return result, elapsed, shown


def idle(seconds: float) -> dict:
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    ticks = LateTicks()
    ticks.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.005)
    return ticks.stop()


def main() -> None:
    from app.ui.application import application
    from tests.helpers.images import build_torch_image

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "wizard.json"))
    args = parser.parse_args()
    app = application([])
    runs, baselines = [], []
    with tempfile.TemporaryDirectory(prefix="tdd-bench-wizard-") as scratch:
        image = build_torch_image(Path(scratch) / "image")
        for number in range(args.repeat):
            result, elapsed, shown = one_run(image.root, Path(scratch) / f"data{number}")
            base = idle(elapsed)
            runs.append({**result, "seconds": round(elapsed, 2), **shown})
            baselines.append(base)
            print(f"run {number + 1}: longest stall {result['worst_ms']} ms (p99 {result['p99_ms']} ms) over "
                  f"{elapsed:.1f} s, {shown.get('tree_items')} tree rows made; idle loop: {base['worst_ms']} ms")
    worst = max(r["worst_ms"] for r in runs)
    summary = {
        "benchmark": "wizard event-loop stall, real torch 2.4.0 image: discover, diagnose, tree expanded, "
                     "repair, verify, undo",
        "tick_ms": TICK_MS, "runs": runs, "idle_baseline": baselines,
        "worst_stall_ms": worst, "median_worst_stall_ms": statistics.median(r["worst_ms"] for r in runs),
        "median_p99_ms": statistics.median(r["p99_ms"] for r in runs),
        "idle_worst_ms": max(b["worst_ms"] for b in baselines),
        "goal_median_worst_ms": 16, "goal_median_p99_ms": 8,
        "meets_goal": statistics.median(r["worst_ms"] for r in runs) <= 16
        and statistics.median(r["p99_ms"] for r in runs) <= 8,
        "load_average": list(os.getloadavg()),
    }
    save_results(args.json, summary)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("runs", "idle_baseline")}, indent=2))
    app.quit()


if __name__ == "__main__":
    main()
