"""Words that read right and buttons that answer: the technical details in a window that has room, in plain labels;
plurals by Qt's %n forms in English and Chinese; every icon explained."""

from __future__ import annotations

import os
import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QTextLayout
from PySide6.QtWidgets import QFileDialog, QLabel

from app.demo.computer import build_demo_image
from app.ui.models import ROLE_ITEM, CheckRow
from app.ui.pages.base import (
    BREAK_HINTS,
    DIAGNOSE,
    ENVIRONMENTS,
    FINDINGS,
    FINISH,
    REPAIR,
    VERIFY,
    without_break_hints,
    wrapped,
)
from tests.helpers.images import PYTHON_HOME
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
    wizard.set_language("en" if lang == "zh_CN" else "zh_CN")  # the page's new words leave the window open
    qtbot.wait(50)
    assert window.isVisible() and findings.details.isChecked()
    wizard.set_language(lang)
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


def laid_out(text: str, width: int, font) -> list[str]:
    """The lines Qt makes of `text` at `width` pixels."""
    layout = QTextLayout(text, font)
    layout.beginLayout()
    lines = []
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        lines.append(text[line.textStart():line.textStart() + line.textLength()])
    layout.endLayout()
    return lines


def test_a_path_in_any_wrapped_label_never_breaks_after_its_drive(qapp):
    """Every page's wrapped labels (the findings' cards, Welcome, Finish, Earlier repairs), not the plan alone:
    "C:\\Windows" stays whole at every width, and the label's text copies as the path itself."""
    label = wrapped()
    label.setText("Windows looks in C:\\Windows\\System32 first, then in C:\\Users\\alice\\ComfyUI\\venv\\Scripts")
    text = label.text()
    for width in range(40, 420, 3):
        lines = laid_out(text, width, label.font())
        ends = [line.rstrip(BREAK_HINTS + " ") for line in lines[:-1]]
        assert not [end for end in ends if end.endswith((":", ":\\"))], (width, lines)
    assert without_break_hints(text).endswith("C:\\Users\\alice\\ComfyUI\\venv\\Scripts")


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_finished_checklist_rows_say_their_result_and_the_cause_stands_first(open_wizard, qtbot, lang):
    """Once done, no row says it is still checking; the row that names the cause stands above the rows that confirm
    it."""
    wizard = open_wizard(demo=True, lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    ready(qtbot, wizard)
    model = wizard.pages[DIAGNOSE].checklist.model
    rows = [(model.data(model.index(n)), model.data(model.index(n), ROLE_ITEM)) for n in range(model.rowCount())]
    assert not [text for text, _ in rows if text.startswith(("Checking", "Looking", "Starting", "正在"))]
    states = [state for _, state in rows]
    assert states.index(CheckRow.FAILED) < states.index(CheckRow.CONFIRMS)


def test_finish_on_a_copied_drive_says_the_copied_drive(tmp_path, open_wizard, qtbot):
    wizard = open_wizard(root=str(build_demo_image(tmp_path / "drive")))
    to_finish(qtbot, wizard)
    summary = wizard.pages[FINISH].summary.text()
    assert "Changes made on the copied drive" in summary and "this computer" not in summary


def test_a_venv_is_named_by_its_app_folder_and_an_ai_apps_environment_is_chosen_first(torch_image, open_wizard,
                                                                                         qtbot):
    """A venv under sd-webui, found before ComfyUI's: listed as "sd-webui", ComfyUI's chosen; the blue "i" by each
    PyTorch version says what it means."""
    image = torch_image()
    image.venv(r"C:\Users\alice\Desktop\sd-webui\venv", PYTHON_HOME, "3.12.9", python_exe=b"MZ")
    image.torch_version_file(r"C:\Users\alice\Desktop\sd-webui\venv\Lib\site-packages", "2.4.0+cpu")
    wizard = open_wizard(root=str(image.root))
    forward(qtbot, wizard, ENVIRONMENTS)
    page = wizard.pages[ENVIRONMENTS]
    qtbot.waitUntil(lambda: not page.search.running and len(page.model.envs) == 3, timeout=WAIT_MS)
    names = [page.model.data(page.model.index(row, 0)) for row in range(3)]
    assert names.index("sd-webui (virtual environment)") < names.index("ComfyUI")
    assert wizard.session.env.app == "ComfyUI"
    row = names.index("ComfyUI")
    tip = page.model.data(page.model.index(row, 2), Qt.ItemDataRole.ToolTipRole)
    assert tip == "PyTorch is installed here: this installation can be checked."


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_every_icon_on_the_findings_page_says_what_it_means(open_wizard, qtbot, lang):
    wizard, findings = demo_findings(qtbot, open_wizard, lang)
    icons = [label for label in findings.findChildren(QLabel) if label.pixmap() is not None
             and not label.pixmap().isNull() and label.isVisible()]
    assert icons and all(label.toolTip() for label in icons)
    if lang == "zh_CN":
        assert all(any("\u4e00" <= c <= "\u9fff" for c in label.toolTip()) for label in icons)


def test_qts_own_file_dialog_is_chinese_throughout_in_chinese(open_wizard, qtbot):
    """Qt's dialog (the widget one, as on Linux; Windows' own is Windows' language): qtbase's Chinese words, and
    ours for the two its file lacks ("Look in:", "Files of type:")."""
    wizard = open_wizard(demo=True, lang="zh_CN")
    dialog = QFileDialog(wizard, "x")
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    qtbot.addWidget(dialog)
    dialog.show()
    labels = [label.text() for label in dialog.findChildren(QLabel) if label.text()]
    english = [text for text in labels if re.search("[A-Za-z]", re.sub(r"\(&\w\)", "", text))]  # not "(&L)"
    assert labels and english == []
    assert "查找范围(&L)：" in labels
