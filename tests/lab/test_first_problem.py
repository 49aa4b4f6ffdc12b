"""`--first-problem-exit`: the wizard presses its own Next from Welcome to the first problem card and exits 0 there
(benchmarks/bench_first_problem.py times it). Offline on a copied drive with the real torch 2.4.0 DLLs (pytest-qt,
in this process, and `python -m app` in a child), and frozen under Wine on the lab's real torch 2.4.0 install."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from app.ui.application import new_wizard
from app.ui.first_problem import FirstProblemRun
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, WELCOME
from tests import realfiles
from tests.conftest import VENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))


def drive_to_first_problem(qtbot, root: Path, limit_s: float = 120.0):
    """The mode as application.run() sets it up, on the wizard made here: the driver, then show(), then the loop."""
    wizard = new_wizard(root=str(root), env=VENV, lang="en")
    qtbot.addWidget(wizard)
    visited, report = [], io.StringIO()
    wizard.currentIdChanged.connect(visited.append)
    import time

    run = FirstProblemRun(wizard, time.perf_counter(), limit_s=limit_s, report=report)
    wizard.show()
    code = QApplication.exec()
    wizard.shutdown()
    return wizard, run, code, visited, report.getvalue()


def step_times(report: str) -> dict[str, float]:
    return {what: float(at) for what, at in re.findall(r"([a-z][a-z ]+?) (\d+\.\d+)", report.split("(", 1)[1])}


def test_the_wizard_clicks_through_the_live_checklist_to_the_openmp_card_and_exits_0(qtbot, torch_image):
    image = torch_image()
    wizard, run, code, visited, report = drive_to_first_problem(qtbot, image.root)
    assert code == 0 and run.code == 0, report
    assert visited == [WELCOME, ENVIRONMENTS, DIAGNOSE, FINDINGS]  # every page a user passes, none skipped
    checklist = wizard.pages[DIAGNOSE].checklist
    assert checklist.state.value == "done" and checklist.model.rowCount() > 5  # the checklist ran, row by row
    findings = wizard.pages[FINDINGS]
    top = findings.cards_layout.itemAt(0).widget()
    lead = wizard.session.problems()[0]
    assert lead.lead.code == "openmp-runtime-missing" and top.accessibleName() == lead.lead.text("en").title
    times = step_times(report)
    order = ["welcome shown", "welcome painted", "environments shown", "environments painted", "diagnose shown",
             "diagnose painted", "checks done", "findings shown", "findings painted",
             "first problem card painted"]
    times.pop("wizard code started", None)  # how long after the process's creation: pytest's, here
    assert list(times) == ["wizard made", *order], report
    assert [times[s] for s in order] == sorted(times[s] for s in order)  # each Next only after its page was seen


def test_without_a_problem_to_show_the_run_exits_1_on_the_findings_page(qtbot, torch_image):
    image = torch_image(torch=realfiles.TORCH_241)  # 2.4.1 has no known problem; the import cannot run offline
    wizard, run, code, visited, report = drive_to_first_problem(qtbot, image.root)
    assert code == 1 and visited[-1] == FINDINGS
    assert "found no problem" in report and "first problem card painted" not in report


def test_first_problem_exit_from_the_command_line(torch_image, tmp_path):
    """The hidden flag as the .exe gets it: parsed, handed to the wizard, exit 0, one line on standard error."""
    image = torch_image()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TDD_DATA_DIR=str(tmp_path / "cli-data"))
    done = subprocess.run([sys.executable, "-m", "app", "--root", str(image.root), "--env", VENV, "--lang", "en",
                           "--first-problem-exit"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "" and "first-problem-exit: first problem card on screen after" in done.stderr


@pytest.mark.wine
@pytest.mark.wheels
@pytest.mark.slow
def test_frozen_wizard_reaches_the_fbgemm_problem_card_on_the_real_torch_240_install(lab, seed_env, tmp_path):
    from tests.conftest import wine_unavailable
    from tests.winelab import WineLabUnavailable, to_windows_path

    try:
        build = lab.build_exe("app")
        fonts = lab.font_dir()
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))
    env = {"TDD_FONT_DIR": to_windows_path(fonts), "TDD_DATA_DIR": to_windows_path(tmp_path / "data")}
    done = lab.run_exe(build.exe, ["--env", to_windows_path(seed_env), "--lang", "en", "--first-problem-exit",
                                   "-platform", "offscreen"], env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    times = step_times(done.stderr[done.stderr.index("first-problem-exit:"):])
    assert "checks done" in times and times["first problem card painted"] >= times["checks done"]
