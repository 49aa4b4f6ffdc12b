"""Words that read right and buttons that answer: the technical details in a window that has room, in plain labels;
plurals by Qt's %n forms in English and Chinese; every icon explained."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel

from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, REPAIR, VERIFY
from tests.helpers.wizard import WAIT_MS, forward, ready, to_plan

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py


def demo_findings(qtbot, open_wizard, lang: str = "en"):
    wizard = open_wizard(demo=True, lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    ready(qtbot, wizard)
    forward(qtbot, wizard, FINDINGS)
    return wizard, wizard.pages[FINDINGS]


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_technical_details_open_in_a_window_with_room_and_plain_labels(open_wizard, qtbot, lang):
    """At the wizard's 800×600 the details get a window of their own, larger than the wizard, that the reader can
    resize; the button says Hide while it is open and Show once it is closed; a missing DLL's facts say how it was
    looked for and the functions by ordinal, never "#703"."""
    wizard, findings = demo_findings(qtbot, open_wizard, lang)
    wizard.resize(800, 600)
    show = findings.details.text()
    qtbot.mouseClick(findings.details, Qt.MouseButton.LeftButton)
    window = findings.details_window
    qtbot.waitUntil(window.isVisible, timeout=WAIT_MS)
    assert window.width() >= 800 and window.height() >= 600 and window.isSizeGripEnabled()
    assert findings.details.text() != show and ("Hide" in findings.details.text() or "隐藏" in findings.details.text())
    tree = findings.tree
    assert tree.view.height() >= 12 * tree.view.sizeHintForRow(0)  # inside the page it had room for five
    tree.search.setText("libomp140")
    qtbot.waitUntil(lambda: tree.filter.rowCount() > 0, timeout=WAIT_MS)
    found = tree.filter.match(tree.filter.index(0, 0), Qt.ItemDataRole.DisplayRole, "libomp140.x86_64.dll", 1,
                              Qt.MatchFlag.MatchRecursive | Qt.MatchFlag.MatchFixedString)
    tree.view.setCurrentIndex(found[0])
    detail = tree.detail.toPlainText()
    plain = {"en": ("How it was found", "ordinal 703"), "zh_CN": ("怎样找到的", "序号 703")}[lang]
    assert all(words in detail for words in plain) and "#703" not in detail
    window.close()
    qtbot.waitUntil(lambda: not findings.details.isChecked(), timeout=WAIT_MS)
    assert findings.details.text() == show


@pytest.mark.parametrize(("lang", "headline"), [("en", "1 problem stops PyTorch from loading."),
                                                ("zh_CN", "有 1 个问题导致 PyTorch 无法加载。")])
def test_counts_read_as_whole_words_in_both_languages(open_wizard, qtbot, lang, headline):
    wizard, findings = demo_findings(qtbot, open_wizard, lang)
    assert findings.headline.text() == headline
    shown = " ".join(label.text() for page in wizard.pages.values() for label in page.findChildren(QLabel))
    assert "(s)" not in shown


# -- every button answers ----------------------------------------------------------------------------------------
def test_search_everywhere_shows_that_it_runs_and_then_what_it_found(open_wizard, qtbot):
    wizard = open_wizard(demo=True)
    forward(qtbot, wizard, ENVIRONMENTS)
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(lambda: wizard.session.env is not None and not page.search.running, timeout=WAIT_MS)
    qtbot.mouseClick(page.everywhere, Qt.MouseButton.LeftButton)
    assert page.everywhere.text().replace("&", "") == "Searching everywhere…" and not page.everywhere.isEnabled()
    assert page.busy.isVisible()
    qtbot.waitUntil(lambda: not page.search.running, timeout=WAIT_MS)
    assert page.status.text().startswith("Search everywhere is done: it found nothing more.")
    assert page.everywhere.text().replace("&", "") == "Search everywhere" and not page.busy.isVisible()


def to_finish(qtbot, wizard) -> None:
    to_plan(qtbot, wizard)
    for page in (REPAIR, VERIFY, FINISH):
        forward(qtbot, wizard, page)
        ready(qtbot, wizard)


def test_open_the_log_folder_without_a_file_manager_gives_its_path_to_copy(open_wizard, qtbot, monkeypatch,
                                                                           tmp_path, data_dir):
    """No xdg-open on PATH: the folder's path in a message with Copy; the log there holds the wizard's start."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wizard = open_wizard(demo=True)
    to_finish(qtbot, wizard)
    finish = wizard.pages[FINISH]
    qtbot.mouseClick(finish.logs, Qt.MouseButton.LeftButton)
    box = finish.log_box
    folder = str(data_dir / "logs")
    assert box is not None and box.isVisible() and folder in box.text() and folder in finish.result.text()
    copy = next(b for b in box.buttons() if b.text().replace("&", "") == "Copy")
    qtbot.mouseClick(copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == folder
    assert "the wizard started" in (data_dir / "logs" / "torch-dll-doctor.log").read_text(encoding="utf-8")


def test_open_the_log_folder_runs_xdg_open_with_the_folder(open_wizard, qtbot, monkeypatch, tmp_path, data_dir):
    tools = tmp_path / "bin"
    tools.mkdir()
    told = tmp_path / "xdg-open-was-given"
    opener = tools / "xdg-open"
    opener.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{told}"\n', encoding="utf-8")
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    wizard = open_wizard(demo=True)
    to_finish(qtbot, wizard)
    finish = wizard.pages[FINISH]
    qtbot.mouseClick(finish.logs, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(told.exists, timeout=WAIT_MS)
    assert told.read_text(encoding="utf-8") == str(data_dir / "logs") and finish.log_box is None
    assert "The log folder is opening" in finish.result.text()
