"""The new repairs clicked through the wizard as a user would (pytest-qt, offscreen), from Findings to Verify, in
both languages: the extra OpenMP runtime set aside (a conda drive with another real Intel build), and the paging
file handed to Windows, which ends as "restart needed", not as a failure. Then Finish undoes it byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.repair.run_model import RepairState
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, PLAN, REPAIR, VERIFY
from tests.helpers.damaged_torch import broken_image, lib_state, serve
from tests.helpers.duplicate_openmp import CONDA, OTHER_BUILD, SET_ASIDE, conda_image, intel_runtime
from tests.helpers.paging_file import sd_image
from tests.helpers.wizard import WAIT_MS, forward, ready, to_plan, undo_on_finish

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py


def files_of(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.stat().st_size < (64 << 20)}


def repaired(qtbot, wizard):
    """Press "Repair now" and wait until the run is done; the Repair page."""
    forward(qtbot, wizard, REPAIR)
    repair = wizard.pages[REPAIR]
    qtbot.waitUntil(lambda: repair.state == RepairState.DONE, timeout=WAIT_MS)
    return repair


def undone_from_finish(qtbot, wizard) -> None:
    """From Verify (once it has checked) to Finish, then "Undo these changes", and wait until it is done."""
    ready(qtbot, wizard)
    forward(qtbot, wizard, FINISH)
    finish = wizard.pages[FINISH]
    undo_on_finish(qtbot, finish)
    qtbot.waitUntil(lambda: finish.undo.isHidden(), timeout=WAIT_MS)


def shown(page) -> str:
    return " ".join(label.text() for label in page.findChildren(QLabel) if not label.isHidden())


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_extra_openmp_runtime_is_set_aside_from_the_wizard_and_undone(tmp_path, open_wizard, qtbot, lang):
    image = conda_image(tmp_path / "image", intel_runtime(OTHER_BUILD))
    before = files_of(image.root)
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    assert [o.action for o in wizard.session.chosen] == ["remove-duplicate-openmp"]
    plan_words = shown(wizard.pages[PLAN])
    assert "remove-duplicate-openmp" not in plan_words and "KMP_DUPLICATE_LIB_OK=TRUE" not in plan_words
    repaired(qtbot, wizard)
    assert image.host(CONDA + r"\Library\bin" + "\\" + SET_ASIDE).exists()
    assert not image.host(CONDA + r"\Library\bin\libiomp5md.dll").exists()
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    assert not [p for p in wizard.session.blockers(wizard.session.after) if p.lead.code == "openmp-conflict"]
    undone_from_finish(qtbot, wizard)
    assert files_of(image.root) == before


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_paging_file_repair_ends_with_restart_needed_not_a_failure(tmp_path, open_wizard, qtbot, lang):
    image = sd_image(tmp_path / "image")
    registry = (image.root / "registry.json").read_bytes()
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    assert [o.action for o in wizard.session.chosen] == ["paging-file-system-managed"]
    assert wizard.session.chosen[0].plan.needs_admin is False  # a copied drive: registry.json, no elevation
    repair = repaired(qtbot, wizard)
    assert repair.run.model.states[0] == RepairState.RESTART_NEEDED and repair.run.restart_needed
    words = repair.status.text()
    assert (("restart" in words) if lang == "en" else ("重启" in words)), words
    assert not repair.error.isVisible()  # not a failure
    assert b"?:\\\\pagefile.sys" in (image.root / "registry.json").read_bytes()
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    undone_from_finish(qtbot, wizard)
    assert (image.root / "registry.json").read_bytes() == registry



def test_quarantined_truncated_and_empty_torch_files_are_put_back_from_the_wizard(torch_image, server, installed,
                                                                                 wheel, wheel_sha256, open_wizard,
                                                                                 qtbot, monkeypatch):
    for name in ("REQUESTS_CA_BUNDLE", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    server.faults.clear()
    image, original = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    broken = lib_state(image)
    wizard = open_wizard(root=str(image.root))
    to_plan(qtbot, wizard)
    assert [o.action for o in wizard.session.chosen] == ["restore-torch-files"]
    words = shown(wizard.pages[PLAN])
    assert "restore-torch-files" not in words and "Protection history" in words
    repaired(qtbot, wizard)
    assert {name: lib_state(image)[name] for name in original} == original  # every byte back
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    assert wizard.session.blockers(wizard.session.after) == []
    undone_from_finish(qtbot, wizard)
    assert lib_state(image) == broken  # undone: the damaged files are back as they were


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_companion_made_for_another_torch_is_shown_and_its_repair_named_in_words(tmp_path, open_wizard, qtbot,
                                                                                   lang):
    """torchvision 0.20.1 (made for torch 2.5.1) beside torch 2.4.1, on a copied drive: the Findings page shows the
    problem in the reader's words with the function torchvision lacks in C++ form, and the plan names
    match-companions in words and says why it needs the computer itself (pip cannot run inside a copied drive)."""
    from tests import realfiles
    from tests.helpers.images import build_torch_image
    from tests.helpers.site_packages import add_wheel

    image = build_torch_image(tmp_path / "image", realfiles.TORCH_241)
    add_wheel(image, "torchvision==0.20.1")
    image.save()
    wizard = open_wizard(root=str(image.root), lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    cards = shown(wizard.pages[FINDINGS])
    assert "torchvision" in cards and "0.20.1" in cards and "2.4.1" in cards
    problem = next(p for p in wizard.session.problems() if p.lead.code == "companion-mismatch")
    assert "at::SavedTensorDefaultHooks::set_tracing(bool)" in str(problem.lead.evidence)
    forward(qtbot, wizard, PLAN)
    ready(qtbot, wizard)
    option = next(o for o in wizard.session.options if o.action == "match-companions")
    words = shown(wizard.pages[PLAN])
    assert "match-companions" not in words and not option.possible and option.refused
    assert option.refused[0][lang] in words


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_wizard_asks_which_program_shows_the_error_and_checks_again_as_it_starts(tmp_path, open_wizard, qtbot,
                                                                                      lang):
    """torch 2.9.1 beside PyQt5-Qt5 5.15.2's old runtime (the real files): a plain check finds a warning and asks
    which program shows the error; "a program that imports PyQt5 first" runs the checks again as that program
    starts, and the copy becomes the problem that stops PyTorch, with its guided steps; "Check PyTorch alone"
    goes back to the plain check."""
    from PySide6.QtWidgets import QComboBox, QPushButton

    from tests.helpers.images import VENV, build_torch_image
    from tests.helpers.runtime_copies import TORCH_291, add_pyqt5

    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    wizard = open_wizard(root=str(image.root), lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    assert wizard.session.system.windows_path(wizard.session.env.exec_prefix) == VENV
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    findings = wizard.pages[FINDINGS]

    def copy_problem():
        return next(p for p in wizard.session.problems() if p.lead.code == "runtime-copy-too-old")

    assert copy_problem().severity == "warning"
    (which,) = [c for c in findings.findChildren(QComboBox) if c.isVisible()]
    # the known apps that import PyQt5 first (resources/ai_apps.json, each with its source), then any program
    assert [which.itemText(i) for i in range(which.count() - 1)] == ["X-AnyLabeling", "StoManager1"]
    assert "PyQt5" in which.itemText(which.count() - 1)
    which.setCurrentIndex(which.count() - 1 if lang == "en" else 1)  # any program; StoManager1
    (again,) = [b for b in findings.findChildren(QPushButton) if b.isVisible() and b.accessibleName()
                in ("Check again as that program starts", "按那个程序的启动方式再检查一次")]
    qtbot.mouseClick(again, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.currentId() == DIAGNOSE, timeout=WAIT_MS)
    said = wizard.session.program
    assert (said.app, said.imports_first) == ((None, ("PyQt5",)) if lang == "en" else ("StoManager1", ()))
    forward(qtbot, wizard, FINDINGS)
    problem = copy_problem()
    assert problem.severity == "blocker"
    assert problem.lead.variant == ("named-first" if lang == "en" else "app-imports-first")
    cards = shown(findings)
    assert ("Your program imports PyQt5 before PyTorch" if lang == "en" else "StoManager1 在 PyTorch 之前导入 PyQt5") \
        in cards
    assert [c for c in findings.findChildren(QComboBox) if c.isVisible()] == []  # said: no question any more
    forward(qtbot, wizard, PLAN)
    ready(qtbot, wizard)
    assert [o.action for o in wizard.session.guided] == ["load-torch-first"]
    wizard.back()
    qtbot.waitUntil(lambda: wizard.currentId() == FINDINGS, timeout=WAIT_MS)
    alone = next(b for b in findings.findChildren(QPushButton) if b.isVisible()
                 and b.accessibleName() in ("Check again with PyTorch alone", "只用 PyTorch 再检查一次"))
    qtbot.mouseClick(alone, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.currentId() == DIAGNOSE, timeout=WAIT_MS)
    forward(qtbot, wizard, FINDINGS)
    assert wizard.session.program.imports_first == () and copy_problem().severity == "warning"


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_an_old_runtime_copy_beside_python_is_set_aside_from_the_wizard_and_undone(tmp_path, open_wizard, qtbot,
                                                                                   lang):
    """ComfyUI's portable Python with an old msvcp140.dll (and its siblings) that no record lists: the plan names the
    repair in words, the repair renames them in place, Verify finds no problem, Finish undoes it byte for byte."""
    from tests.helpers.runtime_copies import PORTABLE, portable_image

    image = portable_image(tmp_path / "image")
    folder = image.host(PORTABLE)
    before = files_of(folder)
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    assert [o.action for o in wizard.session.chosen] == ["set-aside-runtime-copy"]
    words = shown(wizard.pages[PLAN])
    assert "set-aside-runtime-copy" not in words
    assert (("renamed in place" in words and "System32" in words) if lang == "en" else
            ("原处改名" in words and "System32" in words)), words
    repaired(qtbot, wizard)
    assert not (folder / "msvcp140.dll").exists() and (folder / "vcruntime140.dll").exists()
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    assert wizard.session.blockers(wizard.session.after) == []
    undone_from_finish(qtbot, wizard)
    assert files_of(folder) == before
