"""The wizard when work fails or comes back late: every failure says so in plain words and is logged, a stale
worker's result never lands on the page, and findings' cards keep their natural height."""

from __future__ import annotations

import dataclasses
import re
import tempfile
import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QWizard

import app.probes.runner as runner
from app.report.log import log_failure, log_file
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, PLAN
from app.ui.pages.diagnose import CheckState
from app.ui.pages.environments import SearchState
from tests.helpers.wizard import WAIT_MS, forward, ready

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py


def failure_box(qtbot, wizard) -> QMessageBox:
    qtbot.waitUntil(lambda: wizard.failure_box is not None and wizard.failure_box.isVisible(), timeout=WAIT_MS)
    return wizard.failure_box


def logged() -> str:
    return log_file().read_text(encoding="utf-8") if log_file().exists() else ""


def on_demo_environments(qtbot, open_wizard):
    wizard = open_wizard(demo=True)
    forward(qtbot, wizard, ENVIRONMENTS)
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(lambda: page._state == SearchState.DONE and wizard.session.env is not None, timeout=WAIT_MS)
    return wizard, page


# -- A: every failure says something, and is logged -------------------------------------------------------------
def test_a_browse_that_fails_says_so_in_plain_words_and_logs_the_traceback(open_wizard, qtbot, monkeypatch):
    wizard, page = on_demo_environments(qtbot, open_wizard)
    # a name that no folder can have: listing it raises ValueError deep in discovery (the file dialog is replaced,
    # as Vorta's tests replace theirs; the search itself runs for real)
    monkeypatch.setattr("app.ui.pages.environments.QFileDialog.getExistingDirectory",
                        lambda *args, **kwargs: str(wizard.session.system.root / "Users" / "bad\0name"))
    qtbot.mouseClick(page.browse, Qt.MouseButton.LeftButton)
    box = failure_box(qtbot, wizard)
    assert "The folder could not be searched" in box.text()
    assert "Nothing on your computer was changed" in box.informativeText()
    assert "Traceback" in box.detailedText() and "ValueError" in box.detailedText()
    assert "ValueError" in logged() and "_browse" in logged() and " ERROR " in logged()
    box.close()
    for name in ("report.txt", "report.html"):  # the report includes the log's end, in both renderers
        report = wizard.session.system.root.parent / name
        wizard.session.diagnosis = None
        from app.probes.runner import run_diagnosis

        wizard.session.diagnosis = run_diagnosis(wizard.session.system, wizard.session.environments[:1])
        wizard.session.report(str(report))
        text = report.read_text(encoding="utf-8")
        assert ("What went wrong" in text or 'id="log"' in text) and "ValueError" in text and "_browse" in text


def test_a_demo_that_cannot_be_built_says_so_and_logs_it(open_wizard, qtbot, monkeypatch, tmp_path):
    not_a_folder = tmp_path / "tmp-is-a-file"
    not_a_folder.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_folder))  # the demo is built under here: it cannot be
    wizard = open_wizard(demo=True)
    box = failure_box(qtbot, wizard)
    assert "The demo computer could not be made" in box.text()
    assert box.informativeText() and "Traceback" in box.detailedText()
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(page.demo.isEnabled, timeout=WAIT_MS)  # it can be tried again
    assert "open_demo" in logged() or "start_demo" in logged()


def test_a_paste_whose_explanation_fails_says_so_and_logs_it(open_wizard, qtbot, monkeypatch):
    def classify_error(text):  # classify_error is built never to raise; its work is replaced, not the error path
        return {}["no-such-cause"]

    monkeypatch.setattr("app.ui.pages.welcome.classify_error", classify_error)
    wizard = open_wizard()
    wizard.pages[0].paste.setPlainText("OSError: [WinError 126] fbgemm.dll")
    box = failure_box(qtbot, wizard)
    assert "could not be explained" in box.text()
    assert "KeyError" in box.informativeText() and "Nothing on your computer was changed" in box.informativeText()
    assert "KeyError: 'no-such-cause'" in logged()


def test_the_log_redacts_user_names_and_skips_a_stop_the_user_asked_for(data_dir):
    from app.cancel import Cancelled

    try:
        raise PermissionError(13, "Access is denied", r"C:\Users\Alice Smith\ComfyUI\venv\python.exe")
    except PermissionError as error:
        log_failure("work", error, names=["bobby"])
    log_failure("stopped", Cancelled())
    try:
        raise RuntimeError("bobby's folder")
    except RuntimeError as error:
        log_failure("more", error, names=["bobby"])
    text = logged()
    assert log_file().parent == data_dir / "logs"
    assert r"C:\Users\<user>\ComfyUI" in text and "Alice Smith" not in text
    assert "bobby" not in text and "<user>'s folder" in text
    assert "Traceback" in text and "stopped failed" not in text
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ERROR ", text)


def test_a_failed_search_says_why_through_the_failure_words(open_wizard, qtbot):
    wizard, page = on_demo_environments(qtbot, open_wizard)
    page._failed(PermissionError(13, "Access is denied"))
    assert page._state == SearchState.FAILED
    assert page.status.text().startswith("The search stopped before it was done.")
    assert "Nothing on your computer was changed" in page.status.text()


# -- B: a stale worker's result never lands ---------------------------------------------------------------------
def held_diagnosis(monkeypatch):
    """One check of every diagnosis waits until `release` is set, waking when its run is cancelled: a real
    diagnosis of the demo computer that takes as long as the test wants."""
    release = threading.Event()
    target = next(p for p in runner.ALL_PROBES if p.scope == "environment" and not p.needs_live)

    def held(run):
        def waiting(ctx):
            while not release.is_set() and not ctx.cancel.wait(0.02):
                pass
            return run(ctx)
        return waiting

    probes = tuple(dataclasses.replace(p, run=held(p.run)) if p is target else p for p in runner.ALL_PROBES)
    monkeypatch.setattr(runner, "ALL_PROBES", probes)
    return release


def test_back_then_next_during_the_diagnosis_ignores_the_old_runs_result(open_wizard, qtbot, monkeypatch):
    release = held_diagnosis(monkeypatch)
    wizard, _ = on_demo_environments(qtbot, open_wizard)
    forward(qtbot, wizard, DIAGNOSE)
    page = wizard.pages[DIAGNOSE]
    first = page.checklist.run.worker
    assert first is not None and not first.done
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.BackButton), Qt.MouseButton.LeftButton)
    forward(qtbot, wizard, DIAGNOSE)
    second = page.checklist.run.worker
    assert second is not first and first.token.cancelled
    qtbot.waitUntil(lambda: first.done and first not in wizard.pool.running, timeout=WAIT_MS)  # its result came
    assert not second.done and page.checklist.state == CheckState.RUNNING
    assert not page.isComplete() and page.checklist.stop.isEnabled()
    assert page.result.text().startswith("Checking…") and wizard.session.diagnosis is None
    release.set()
    ready(qtbot, wizard)
    assert wizard.session.diagnosis is second.result and second.result.complete
    assert page.result.text().startswith("Done.")
    forward(qtbot, wizard, FINDINGS)


def test_switching_to_the_demo_while_discovery_streams_shows_only_the_demos_environments(
        open_wizard, qtbot, tmp_path):
    from app.demo.image_builder import ImageBuilder

    image = ImageBuilder(tmp_path / "many")  # so many that discovery streams them for a good while
    for number in range(4000):  # streamed for seconds even on a fast disk, with the search begun on Welcome
        image.venv(rf"C:\Users\alice\Documents\envs\env{number:04d}", r"C:\Python312", python_exe=b"MZ")
    wizard = open_wizard(root=str(image.root))
    forward(qtbot, wizard, ENVIRONMENTS)
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(lambda: len(page.model.envs) >= 1, timeout=WAIT_MS)
    old = page.search.worker
    assert old is not None and not old.done  # still streaming
    qtbot.mouseClick(page.demo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.session.source == "demo" and page._state == SearchState.DONE, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: old.done and old not in wizard.pool.running, timeout=WAIT_MS)
    QApplication.processEvents()
    demo_root = wizard.session.system.root
    shown = page.model.envs
    assert shown and all(demo_root in env.exec_prefix.parents for env in shown), [str(e.exec_prefix) for e in shown]
    assert wizard.session.environments == shown


def test_back_then_next_on_the_plan_page_offers_only_the_newest_plans(open_wizard, qtbot):
    wizard, _ = on_demo_environments(qtbot, open_wizard)
    for page_id in (DIAGNOSE, FINDINGS, PLAN):
        forward(qtbot, wizard, page_id)
    page = wizard.pages[PLAN]
    first = page.planning.worker
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.BackButton), Qt.MouseButton.LeftButton)
    assert first.token.cancelled  # left: not wanted any more
    forward(qtbot, wizard, PLAN)
    second = page.planning.worker
    ready(qtbot, wizard)
    qtbot.waitUntil(lambda: first.done and first not in wizard.pool.running, timeout=WAIT_MS)
    assert wizard.session.options is second.result and first.result is not second.result
    first.signals.returned.emit(first.result)  # the old planning's answer, arriving late (queued, as from its thread)
    qtbot.wait(50)
    assert wizard.session.options is second.result
    assert wizard.session.chosen and all(any(o is c for o in second.result) for c in wizard.session.chosen)


# -- D: a card keeps its natural height -------------------------------------------------------------------------
def test_a_findings_card_has_no_gap_between_its_sections_in_a_shown_window(open_wizard, qtbot):
    wizard, _ = on_demo_environments(qtbot, open_wizard)
    wizard.resize(800, 600)
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    page = wizard.pages[FINDINGS]
    assert not page.tree.isVisible()  # the cards have all the height to share out
    for lang in ("en", "zh_CN"):
        wizard.set_language(lang)  # the cards are made again, in that language: wait for their layout
        qtbot.wait(100)
        cards = [page.cards_layout.itemAt(i).widget() for i in range(page.cards_layout.count() - 1)]
        spacing = max(12, page.style().layoutSpacing(*([QLabel().sizePolicy().controlType()] * 2),
                                                       Qt.Orientation.Vertical))
        assert cards
        for card in cards:
            labels = [label for label in card.findChildren(QLabel) if label.wordWrap()]
            assert len(labels) >= 2
            for above, below in zip(labels, labels[1:]):
                gap = below.y() - (above.y() + above.heightForWidth(above.width()))
                assert 0 <= gap <= spacing, (lang, above.text()[:40], gap)
    wizard.set_language("en")


def test_the_demos_skipped_live_check_speaks_of_the_demo_not_a_copied_drive(open_wizard, qtbot):
    wizard, _ = on_demo_environments(qtbot, open_wizard)
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    page = wizard.pages[FINDINGS]
    for lang, words in (("en", "The demo computer is a built-in example"), ("zh_CN", "演示电脑只是一个内置的示例")):
        wizard.set_language(lang)
        shown = " ".join(label.text() for label in page.cards.findChildren(QLabel))
        assert words in shown and "copied Windows drive" not in shown
    wizard.set_language("en")


# -- E: the environments page speaks in whole sentences ---------------------------------------------------------
def test_the_environments_status_is_whole_sentences_with_plural_counts(open_wizard, qtbot):
    wizard, page = on_demo_environments(qtbot, open_wizard)
    count = len(page.model.envs)
    assert page.status.text() == (f"{count} installations found. Select one and press Next." if count > 1 else
                                  "1 installation found. Select it and press Next.")
    assert page.computer.text() == "This is the demo computer: a built-in example, so nothing real is changed."
    wizard.set_language("zh_CN")
    assert page.status.text() == f"找到 {count} 个安装。选择一个，然后点击“下一步”。"
    assert page.computer.text().startswith("这是演示电脑")
    wizard.set_language("en")


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_search_that_ran_out_of_time_says_so_and_offers_browse(torch_image, open_wizard, qtbot, monkeypatch, lang):
    import app.ui.session as session_module

    real = session_module.discover
    monkeypatch.setattr(session_module, "discover", lambda system, **kw: real(system, **{**kw, "budget_s": 0.0}))
    image = torch_image()
    wizard = open_wizard(root=str(image.root), lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(lambda: page._state == SearchState.DONE, timeout=WAIT_MS)
    status = page.status.text()
    if lang == "en":
        assert status.startswith("The search ran out of time") and "Browse" in status
    else:
        assert status.startswith("查找在看完所有文件夹之前就超时了") and "浏览" in status
