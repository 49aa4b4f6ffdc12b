"""The README's test command runs the fast suite: the Windows lab's tests are skipped with how to run them, and run
when asked for (--lab, or -m wine: CI's lanes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "tests/lab/test_winelab.py", "-p", "no:cacheprovider",
                           "-q", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_default_run_skips_the_lab_and_says_how_to_run_it():
    result = _pytest()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "python -m pytest --lab" in result.stdout and " passed" not in result.stdout
    assert "tests of the Windows lab not run" in result.stdout


def test_a_run_that_leaves_the_lab_out_itself_is_not_told_to_run_it():
    result = subprocess.run([sys.executable, "-m", "pytest", "tests/lab/test_winelab.py", "-p", "no:cacheprovider",
                             "-q", "-m", "not wine"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "deselected" in result.stdout and "Windows lab not run" not in result.stdout, result.stdout
