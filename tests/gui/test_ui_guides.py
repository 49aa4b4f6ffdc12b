"""The wizard never dead-ends: a problem with only guided steps (a 32-bit Python) shows them on the plan page, Next
leads to Finish with the steps kept in view and the report, and the button opens the official page (caught with
QDesktopServices.setUrlHandler, as the browser would be handed it)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QLabel, QPushButton, QRadioButton

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, PLAN
from tests.helpers.pe_machine import PY, VENV, torch, vc_runtime
from tests.helpers.wizard import forward, ready

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py

PY32 = PY + "-32"


class Browser(QObject):
    """Stands in for the browser: the URLs the wizard asked to open."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.opened.append(url.toString())


def python_32bit_image(tmp_path) -> ImageBuilder:
    image = ImageBuilder(tmp_path / "img")
    vc_runtime(image)
    image.vc_runtime("x64", "14.44.35211")
    image.write(PY32 + r"\python.exe", build_pe(dll=False, machine="x86"))
    image.venv(VENV, PY32, "3.12.4", python_exe=build_pe(dll=False, machine="x86"))
    torch(image, "2.4.1+cpu")
    return image


def texts(page) -> str:
    return "\n".join(label.text() for label in page.findChildren(QLabel) if label.isVisibleTo(page))


def test_only_guided_steps_lead_to_finish_with_the_guide_its_button_and_the_report(tmp_path, open_wizard, qtbot):
    image = python_32bit_image(tmp_path)
    browser = Browser()
    QDesktopServices.setUrlHandler("https", browser, "open")
    try:
        wizard = open_wizard(root=str(image.root), lang="zh_CN")
        forward(qtbot, wizard, ENVIRONMENTS)
        qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=60_000)
        forward(qtbot, wizard, DIAGNOSE)
        forward(qtbot, wizard, FINDINGS)
        forward(qtbot, wizard, PLAN)
        plan = wizard.pages[PLAN]
        ready(qtbot, wizard)
        assert wizard.session.chosen == [] and [o.action for o in wizard.session.guided] == ["install-64bit-python"]
        assert not plan.isCommitPage()  # no "Repair now": nothing will change
        qtbot.waitUntil(lambda: "py -3.12-64 -m venv" in texts(plan), timeout=10_000)  # labels show on the next turn
        shown = texts(plan)
        radios = [radio.text() for radio in plan.findChildren(QRadioButton)]
        assert "自己安装 64 位 Python（步骤见下）" in radios
        checked = [radio.text() for radio in plan.findChildren(QRadioButton) if radio.isChecked() and radio.isVisible()]
        assert checked == ["自己安装 64 位 Python（步骤见下）"]  # the steps are the recommended choice
        assert "Python 3.12" in shown and "py -3.12-64 -m venv" in shown and "python.org" in shown
        assert plan.findChild(QPushButton, "open-install-64bit-python").text() == "打开 python.org 的 Windows 下载页面"
        wizard.set_language("en")
        radios = [radio.text() for radio in plan.findChildren(QRadioButton)]
        assert "Install 64-bit Python yourself (steps below)" in radios
        assert not [text for text in radios if "install-64bit-python" in text]  # named in words, never by its id
        forward(qtbot, wizard, FINISH)
        finish = wizard.pages[FINISH]
        qtbot.waitUntil(lambda: "Python 3.12" in texts(finish), timeout=10_000)
        assert finish.guides_scroll.isVisible()
        assert "Still to do, by you." in texts(finish) and "Python 3.12" in texts(finish)
        assert "Nothing was changed on the copied drive." in finish.summary.text()
        openers = [b for b in finish.findChildren(QPushButton, "open-install-64bit-python") if b.isVisible()]
        assert len(openers) == 1
        opener = openers[0]
        qtbot.mouseClick(opener, Qt.MouseButton.LeftButton)
        assert browser.opened == ["https://www.python.org/downloads/windows/"]
        report = tmp_path / "report.txt"
        finish.save_report(str(report))
        qtbot.waitUntil(report.exists, timeout=60_000)
        qtbot.waitUntil(lambda: "Report saved" in finish.result.text(), timeout=60_000)
        assert "This Python is 32-bit; PyTorch needs 64-bit" in report.read_text(encoding="utf-8")
    finally:
        QDesktopServices.unsetUrlHandler("https")


def _lines(html_text: str, width: int) -> list[str]:
    """The lines Qt lays the rich text out in at `width` pixels (as a QLabel with word wrap does)."""
    from PySide6.QtGui import QTextDocument

    document = QTextDocument()
    document.setHtml(html_text)
    document.setTextWidth(width)
    document.documentLayout().documentSize()  # lays the text out
    lines = []
    block = document.begin()
    while block.isValid():
        layout = block.layout()
        for number in range(layout.lineCount()):
            line = layout.lineAt(number)
            lines.append(block.text()[line.textStart():line.textStart() + line.textLength()])
        block = block.next()
    return lines


def test_a_long_path_in_the_plans_steps_breaks_only_between_folders_and_copies_as_it_is(qapp):
    """Qt breaks "C:\\Users\\..." only after "C:" and cuts a folder name that does not fit anywhere; the plan's
    changes, notes and guided steps break a path between its folders only, and what is copied from them is the
    path itself."""
    import html

    from app.ui.application import application
    from app.ui.pages.base import BREAK_HINTS, wrapped
    from app.ui.pages.plan import paths_whole

    text = ("Delete the copy in C:\\Users\\alice\\AppData\\Roaming\\Python\\Python312\\site-packages\\torch and then "
            "run C:\\Users\\alice\\ComfyUI\\venv\\Scripts\\python.exe again")

    def cuts(lines):
        """Lines (but the last) that end right after a drive, or inside a word or a folder name."""
        return [line for line in lines[:-1] if line.rstrip(BREAK_HINTS + " ").endswith(":")
                or not line.endswith((" ", "\\\u200b"))]

    widths = range(120, 480, 7)
    assert any(cuts(_lines(html.escape(text), width)) for width in widths)  # Qt's own breaks
    for width in widths:
        lines = _lines(paths_whole(text), width)
        assert not cuts(lines), (width, lines)
    application([])  # the app's own clipboard rule
    label = wrapped(paths_whole(text), selectable=True)
    label.setSelection(0, len(label.text()))
    qapp.clipboard().setText(label.selectedText())  # what Ctrl+C in the label does
    qapp.processEvents()
    assert qapp.clipboard().text() == text
