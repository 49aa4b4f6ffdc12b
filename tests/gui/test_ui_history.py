"""Undo that lasts: a repair, the window closed (a note says where Undo stays), a second start of the wizard, the
earlier repairs listed from the journal, and one undone from there after a confirmation that says what changes
back. On the demo computer written out as a copied drive, and on a copied drive with real torch 2.4.0."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWizard

from app.demo.computer import build_demo_image
from app.repair.journal import DONE, ROLLED_BACK, Journal
from app.ui.pages.base import ENVIRONMENTS, FINISH, HISTORY, REPAIR, VERIFY, WELCOME
from tests.helpers.files import hashes
from tests.helpers.images import TORCH_LIB
from tests.helpers.wizard import WAIT_MS, forward, ready, to_plan

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py

WORDS = {"en": {"note": "See earlier repairs", "in place": "Still in place", "what": "What it changed",
                "back": "goes back to how it was", "undone": "Undone", "welcome": "1 repair was made here before",
                "none left": "0 of them still in place"},
         "zh_CN": {"note": "查看以前的修复", "in place": "仍然有效", "what": "它改动了什么",
                   "back": "恢复成原来的样子", "undone": "已撤销", "welcome": "这里以前做过 1 次修复",
                   "none left": "其中 0 次仍然有效"}}


def repair_and_close(qtbot, wizard) -> None:
    """Plan, repair, verify, Finish; then Cancel: the note says where Undo stays, and the window closes once it is
    read. A second Cancel would not show it again."""
    to_plan(qtbot, wizard)
    for page in (REPAIR, VERIFY, FINISH):
        forward(qtbot, wizard, page)
        ready(qtbot, wizard)
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.CancelButton), Qt.MouseButton.LeftButton)
    note = wizard.undo_note
    assert note is not None and note.isVisible() and wizard.isVisible()
    assert WORDS[wizard.session.lang]["note"] in note.text()
    qtbot.mouseClick(note.button(QMessageBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=WAIT_MS)
    assert wizard.told_where_undo_is(lambda: None) is False  # once


def undo_from_history(qtbot, wizard) -> None:
    """Welcome offers the earlier repair; its page lists it as still in place with what it changed; Undo asks
    first, saying what goes back, and then undoes it."""
    words = WORDS[wizard.session.lang]
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(lambda: welcome.earlier.isVisible(), timeout=WAIT_MS)
    assert words["welcome"] in welcome.earlier_text.text()
    qtbot.mouseClick(welcome.see_earlier, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.currentId() == HISTORY, timeout=WAIT_MS)
    history = wizard.pages[HISTORY]
    qtbot.waitUntil(lambda: len(history.undo_buttons) == 1, timeout=WAIT_MS)
    (repair,) = history.repairs
    shown = " ".join(label.text() for label in history.cards.findChildren(type(welcome.earlier_text)))
    assert words["in place"] in shown and words["what"] in shown and "libomp140.x86_64.dll" in shown
    (undo,) = history.undo_buttons.values()
    qtbot.mouseClick(undo, Qt.MouseButton.LeftButton)
    box = history.confirm
    assert box.isVisible() and words["back"] in box.text() and "libomp140.x86_64.dll" in box.text()
    assert "C:\u2060\\\u2060Users" in box.text()  # its paths break between folders only, never after "C:"
    assert repair.transaction.state == DONE  # nothing is undone before the answer
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "…" not in history.result.text(), timeout=WAIT_MS)
    assert words["undone"] in history.result.text(), history.result.text()
    qtbot.waitUntil(lambda: history.repairs and not history.repairs[0].in_place, timeout=WAIT_MS)
    assert history.undo_buttons == {}
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.BackButton), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: words["none left"] in welcome.earlier_text.text(), timeout=WAIT_MS)  # read again
    forward(qtbot, wizard, ENVIRONMENTS)  # and on to the checks


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_demo_computers_repair_is_undone_from_a_second_start_of_the_wizard(tmp_path, open_wizard, qtbot,
                                                                                 lang):
    root = build_demo_image(tmp_path / "demo-drive")
    lib = root / "Users" / "alice" / "ComfyUI" / "venv" / "Lib" / "site-packages" / "torch" / "lib"
    before = hashes(lib)
    repair_and_close(qtbot, open_wizard(root=str(root), lang=lang))
    assert hashes(lib) != before
    undo_from_history(qtbot, open_wizard(root=str(root), lang=lang))
    assert hashes(lib) == before
    (transaction,) = Journal().transactions()
    assert transaction.state == ROLLED_BACK


def test_a_copied_drives_repair_is_undone_from_a_second_start_of_the_wizard(torch_image, open_wizard, qtbot):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    repair_and_close(qtbot, open_wizard(root=str(image.root)))
    undo_from_history(qtbot, open_wizard(root=str(image.root)))
    assert hashes(lib) == before


def test_another_computers_repairs_are_not_listed_and_welcome_offers_none(torch_image, tmp_path, open_wizard, qtbot):
    image = torch_image()
    repair_and_close(qtbot, open_wizard(root=str(image.root)))
    other = build_demo_image(tmp_path / "other-drive")
    wizard = open_wizard(root=str(other))
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(lambda: not welcome.reading.running, timeout=WAIT_MS)
    assert not welcome.earlier.isVisible()
