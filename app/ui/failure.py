"""Failures shown to people: what happened in their words (app.failures.failure_text, the one place that says
why something stopped), what to do next, and the technical details one click away. The wizard's default error
handler: work started without its own handler ends here, so no failure goes without a word."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QMessageBox, QWidget

from app.failures import failure_text
from app.report.log import log_file, redacted


def failure_words(error: BaseException, lang: str) -> str:
    """Why work that changes nothing (a search, a check, a plan, a report) stopped, in the reader's words."""
    return failure_text(error, lang, otherwise="ui.failed")


def details_of(error: BaseException) -> str:
    """The technical details, redacted as the log writes them, and where the log is."""
    trace = getattr(error, "details", None) or f"{error.__class__.__name__}: {error}"
    where = QCoreApplication.translate("Failure", "The same details are in the log file: {path}").format(
        path=log_file())
    return redacted(f"{trace.rstrip()}\n\n{where}")


class FailureBox(QMessageBox):
    """A failure in plain words; Qt's own "Show Details…" button opens the traceback. Window-modal and opened,
    not exec()'d: the wizard's event loop (and its other workers) go on."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("failure")
        self.setIcon(QMessageBox.Icon.Warning)
        self.setStandardButtons(QMessageBox.StandardButton.Ok)

    def show_failure(self, doing: str, error: BaseException, lang: str) -> None:
        self.setWindowTitle(self.tr("Torch DLL Doctor"))
        self.setText(doing or self.tr("Something did not work."))
        self.setInformativeText(failure_words(error, lang))
        self.setDetailedText(details_of(error))
        self.setAccessibleName(self.text())
        self.open()


def show_failure(parent: QWidget, box: Optional[FailureBox], doing: str, error: BaseException,
                 lang: str) -> FailureBox:
    """Show `error` in `box` (made on first use; a second failure replaces the first one's words)."""
    box = box or FailureBox(parent)
    box.show_failure(doing, error, lang)
    return box
