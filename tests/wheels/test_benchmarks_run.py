"""The benchmarks of the wizard's stalls, of many environments and of a repair run, each in its own process, and
write their figures. No timing is checked here: the figures are docs/benchmarks.md's, measured on a quiet
machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.wheels, pytest.mark.slow]


def bench(name: str, *argv: str, out: Path) -> dict:
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / name), *argv, "--json", str(out)],
                            capture_output=True, text=True, timeout=600, env=environment, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_wizard_stall_benchmark_runs_and_says_whether_its_goals_are_met(tmp_path):
    figures = bench("bench_wizard.py", "--repeat", "1", out=tmp_path / "wizard.json")
    (run,) = figures["runs"]
    assert run["tree_items"] > 100 and run["ticks"] > 10  # the tree was expanded; the timer ticked all along
    assert {"median_worst_stall_ms", "median_p99_ms", "meets_goal", "load_average"} <= set(figures)


def test_the_many_environments_benchmark_runs_on_hard_linked_copies_of_the_whole_wheel(tmp_path):
    figures = bench("bench_many_envs.py", "--repeat", "1", "--counts", "1,2", out=tmp_path / "many.json")
    assert set(figures["environments"]) == {"1", "2"}
    assert figures["environments"]["2"]["dlls_parsed"] == figures["environments"]["1"]["dlls_parsed"]
    assert "time_ratio_over_one" in figures and "memory_ratio_over_one" in figures
    assert figures["each_further_environment_s"] is not None


def test_the_repair_benchmark_runs_a_repair_and_its_undo_and_finds_torch_as_it_was(tmp_path):
    figures = bench("bench_repair.py", "--repeat", "1", out=tmp_path / "repair.json")
    assert figures["torch_lib_files_identical_after"] == 11
    assert {"repair_seconds_median", "undo_seconds_median", "ratio_undo_over_diagnose"} <= set(figures)


def test_the_restore_benchmark_times_the_whole_command_against_pip_on_the_real_index(tmp_path):
    """An install cut short at a longer path (2,232 of torch 2.4.1's files missing): the repair command and pip's
    reinstall of the same wheel, both from PyPI, once each; skipped when the index cannot be reached."""
    figures = bench("bench_restore.py", "--index", "--repeat", "1", "--stop-at", "270", out=tmp_path / "restore.json")
    if "skipped" in figures:
        pytest.skip(figures["skipped"])
    assert figures["files_written_before_the_cut"] == 8411
    assert len(figures["repair_seconds_all"]) == len(figures["pip_reinstall_seconds_all"]) == 1
    assert figures["ratio_over_pip_reinstall"] > 0 and "load_average" in figures


def test_the_restore_benchmark_times_the_whole_command_against_pip_on_a_local_fast_link(tmp_path):
    """The same from a real HTTPS index on 127.0.0.1 (1 ms before each answer, 500 MB/s): no network needed."""
    figures = bench("bench_restore.py", "--link", "fast", "--repeat", "1", "--stop-at", "270",
                    out=tmp_path / "restore.json")
    assert figures["files_written_before_the_cut"] == 8411 and figures["index"].startswith("https://127.0.0.1")
    assert (figures["latency_s"], figures["rate_bytes_per_s"]) == (0.001, 500e6)
    assert figures["ratio_over_pip_reinstall"] > 0


@pytest.mark.wine
@pytest.mark.parametrize("loads", [False, True])
def test_the_windows_diagnosis_benchmark_runs_against_import_torch_in_the_lab(tmp_path, loads):
    """`diagnose --env` of the lab's torch 2.4.0 by its own Windows Python against `import torch`, once each: broken
    (no libomp140, the blocker found) and loading (--loads)."""
    figures = bench("bench_diagnose_windows.py", "--repeat", "1", *(["--loads"] if loads else []),
                    out=tmp_path / "diagnose_windows.json")
    assert figures["diagnose_seconds_median"] > 0 and figures["import_torch_seconds_median"] > 0
    assert figures["first_problem_seconds_median"] > 0 and "meets_goal" in figures
