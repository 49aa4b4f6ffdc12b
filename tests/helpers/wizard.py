"""Driving the wizard as a user does, with pytest-qt's `qtbot`: Next (or the commit button) once a page allows it, and
the way from Welcome to the plan page."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWizard

from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, PLAN

WAIT_MS = 60_000


def forward(qtbot, wizard: QWizard, page_id: int) -> None:
    """Press Next (or the commit button) once the page allows it, and wait for `page_id`."""
    qtbot.waitUntil(lambda: wizard.currentPage().isComplete(), timeout=WAIT_MS)
    buttons = QWizard.WizardButton
    which = buttons.CommitButton if wizard.currentPage().isCommitPage() else buttons.NextButton
    qtbot.mouseClick(wizard.button(which), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.currentId() == page_id, timeout=WAIT_MS)


def ready(qtbot, wizard: QWizard) -> None:
    qtbot.waitUntil(lambda: wizard.currentPage().isComplete(), timeout=WAIT_MS)


def to_plan(qtbot, wizard) -> None:
    """From Welcome to the plan page, as a user clicks: the first environment, its diagnosis, the findings."""
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    for page_id in (DIAGNOSE, FINDINGS, PLAN):
        forward(qtbot, wizard, page_id)
    ready(qtbot, wizard)


def undo_on_finish(qtbot, finish) -> None:
    """Press "Undo these changes" on Finish and answer its question with Undo them."""
    qtbot.mouseClick(finish.undo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: finish.confirm is not None and finish.confirm.isVisible(), timeout=WAIT_MS)
    qtbot.mouseClick(finish.confirm.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
