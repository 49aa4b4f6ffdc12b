"""Words that read right and buttons that answer: the technical details in a window that has room, in plain labels;
plurals by Qt's %n forms in English and Chinese; every icon explained."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS
from tests.helpers.wizard import WAIT_MS, forward, ready

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
