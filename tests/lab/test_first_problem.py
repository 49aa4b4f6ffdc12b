"""`--first-problem-exit`: the wizard presses its own Next from Welcome until its first problem is on screen (a check
of the live checklist painted with its problem, or Findings' first card) and exits 0 there
(benchmarks/bench_first_problem.py times it). Offline on a copied drive with the real torch 2.4.0 DLLs (pytest-qt,
in this process, and `python -m app` in a child), and frozen under Wine on the lab's real torch 2.4.0 install."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from app.ui.application import new_wizard
from app.ui.first_problem import FirstProblemRun
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, WELCOME
from tests import realfiles
from tests.helpers.images import VENV

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
    run = FirstProblemRun(wizard, time.perf_counter(), limit_s=limit_s, report=report)
    wizard.show()
    code = QApplication.exec()
    wizard.shutdown()
    return wizard, run, code, visited, report.getvalue()


def step_times(report: str) -> dict[str, float]:
    return {what: float(at) for what, at in re.findall(r"([a-z][a-z ]+?) (\d+\.\d+)", report.split("(", 1)[1])}


def slow_check(ctx):
    """A check that takes as long as the live import of torch can (seconds): the others end long before."""
    time.sleep(3)
    yield from ()


def test_the_checks_begin_while_welcome_is_shown_and_the_first_problem_is_on_the_checklist(qtbot, torch_image,
                                                                                         monkeypatch):
    """The checks of the environment named with --env begin while Welcome is read; the live checklist shows each
    check's result as it ends, so the first problem is on screen on the checklist itself, in plain words, while a
    slow check still runs."""
    from app.probes import runner as runner_module
    from app.probes.base import ENVIRONMENT, Probe
    from app.probes.every_probe import ALL_PROBES
    from app.ui.models import FAILED, ROLE_ITEM

    monkeypatch.setattr(runner_module, "ALL_PROBES", (*ALL_PROBES, Probe("gpu", ENVIRONMENT, slow_check)))
    image = torch_image()
    wizard, run, code, visited, report = drive_to_first_problem(qtbot, image.root)
    assert code == 0 and run.code == 0, report
    assert visited == [WELCOME, ENVIRONMENTS, DIAGNOSE]  # every page a user passes, none skipped
    model = wizard.pages[DIAGNOSE].checklist.model
    failed = [model.data(model.index(row, 0)) for row in range(model.rowCount())
              if model.data(model.index(row, 0), ROLE_ITEM) == FAILED]
    assert failed and any("libomp140.x86_64.dll" in text or "OpenMP" in text for text in failed), failed
    times = step_times(report)
    times.pop("wizard code started", None)  # how long after the process's creation: pytest's, here
    assert times["checks begun"] <= times["welcome painted"] < times["environments shown"], report  # on Welcome
    order = ["welcome shown", "welcome painted", "environments shown", "environments painted", "diagnose shown",
             "diagnose painted", "first problem on the checklist painted"]
    assert [times[s] for s in order] == sorted(times[s] for s in order), report  # each Next after its page
    assert "checks done" not in times  # on screen while the slow check still runs (3 s from its start):
    assert times["first problem on the checklist painted"] - times["checks begun"] < 3, report


def test_when_every_check_ends_before_the_checklist_is_painted_the_first_problem_is_findings_first_card(
        qtbot, torch_image):
    """Offline, the checks of a copied drive end in a fraction of a second: whichever comes first, the checklist's
    problem or Findings' first card, is the first problem on screen, and the run goes through every page."""
    image = torch_image()
    wizard, run, code, visited, report = drive_to_first_problem(qtbot, image.root)
    assert code == 0 and run.code == 0, report
    times = step_times(report)
    if "first problem card painted" in times:
        assert visited == [WELCOME, ENVIRONMENTS, DIAGNOSE, FINDINGS] and "checks done" in times
        lead = wizard.session.problems()[0]
        top = wizard.pages[FINDINGS].cards_layout.itemAt(0).widget()
        assert lead.lead.code == "openmp-runtime-missing" and top.accessibleName() == lead.lead.text("en").title
    else:
        assert visited == [WELCOME, ENVIRONMENTS, DIAGNOSE] and "first problem on the checklist painted" in times


def test_the_checks_begun_on_welcome_are_taken_by_the_checklist_not_run_twice(qtbot, torch_image):
    image = torch_image()
    wizard = new_wizard(root=str(image.root), env=VENV, lang="en")
    qtbot.addWidget(wizard)
    wizard.show()
    checklist = wizard.pages[DIAGNOSE].checklist
    qtbot.waitUntil(lambda: checklist.state.value == "done", timeout=60000)  # all on Welcome, nothing pressed
    assert wizard.currentId() == WELCOME and wizard.session.diagnosis is not None
    first = wizard.session.diagnosis
    wizard.next()
    qtbot.waitUntil(lambda: wizard.currentId() == ENVIRONMENTS)
    wizard.next()
    qtbot.waitUntil(lambda: wizard.currentId() == DIAGNOSE)
    assert wizard.pages[DIAGNOSE].isComplete() and wizard.session.diagnosis is first  # taken, not run again
    wizard.back()  # Back, then Next: afresh
    qtbot.waitUntil(lambda: wizard.currentId() == ENVIRONMENTS)
    wizard.next()
    qtbot.waitUntil(lambda: wizard.pages[DIAGNOSE].isComplete(), timeout=60000)
    assert wizard.session.diagnosis is not first
    wizard.shutdown()


def test_without_a_problem_to_show_the_run_exits_1_on_the_findings_page(qtbot, torch_image):
    image = torch_image(torch=realfiles.TORCH_241)  # 2.4.1 has no known problem; the import cannot run offline
    wizard, run, code, visited, report = drive_to_first_problem(qtbot, image.root)
    assert code == 1 and visited[-1] == FINDINGS
    assert "found no problem" in report and "first problem" not in report.replace("no problem", "")


def test_first_problem_exit_from_the_command_line(torch_image, tmp_path):
    """The hidden flag as the .exe gets it: parsed, handed to the wizard, exit 0, one line on standard error."""
    image = torch_image()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TDD_DATA_DIR=str(tmp_path / "cli-data"))
    done = subprocess.run([sys.executable, "-m", "app", "--root", str(image.root), "--env", VENV, "--lang", "en",
                           "--first-problem-exit"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "" and "first-problem-exit: first problem on screen after" in done.stderr


@pytest.mark.wine
@pytest.mark.wheels
@pytest.mark.slow
def test_frozen_wizard_reaches_the_fbgemm_problem_card_on_the_real_torch_240_install(lab, seed_env, tmp_path):
    from tests.helpers.lab import wine_unavailable
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
    # the dependency check names the missing OpenMP runtime long before the live import ends
    assert "first problem on the checklist painted" in times and "checks done" not in times, done.stderr[-3000:]
