"""What every page shares: its session and worker pool, and redrawing its words when the language changes."""

from __future__ import annotations

import datetime as _dt
import re
from typing import TYPE_CHECKING, Callable, Optional

from PySide6.QtCore import QCoreApplication, QDateTime, QEvent, QLocale, Qt
from PySide6.QtGui import QClipboard
from PySide6.QtWidgets import QFileDialog, QFrame, QLabel, QPushButton, QSizePolicy, QWizardPage

from app.ui.failure import failure_words
from app.ui.icons import icon

if TYPE_CHECKING:
    from app.ui.session import Session
    from app.ui.wizard import DoctorWizard

WELCOME, ENVIRONMENTS, DIAGNOSE, FINDINGS, PLAN, REPAIR, VERIFY, FINISH, HISTORY = range(9)


class Page(QWizardPage):
    def __init__(self) -> None:
        super().__init__()
        self._ready = False

    @property
    def doctor(self) -> DoctorWizard:
        return self.wizard()  # type: ignore[return-value]

    @property
    def session(self) -> Session:
        return self.doctor.session

    def retranslate(self) -> None:
        """Set every text of the page in the current language (called at start and on a language switch)."""

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange and self.wizard() is not None:
            self.retranslate()
        super().changeEvent(event)

    def set_ready(self, ready: bool) -> None:
        if ready != self._ready:
            self._ready = ready
            self.completeChanged.emit()

    def isComplete(self) -> bool:
        return self._ready

    # -- a line of news under the page's buttons (a report saved, an undo done), said again on a language switch
    message_label: Optional[QLabel] = None
    _message: Callable[[], str] = staticmethod(lambda: "")

    def said(self, message: Callable[[], str]) -> None:
        self._message = message
        if self.message_label is not None:
            self.message_label.setText(message())

    # -- the report: Findings and Finish both offer it ----------------------------------------------------
    def ask_to_save_report(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, QCoreApplication.translate("Report", "Save the report"), "torch-dll-doctor-report.html",
            QCoreApplication.translate("Report", "Web page (*.html);;Text (*.txt);;JSON (*.json)"))
        if path:
            self.save_report(path)

    def save_report(self, path: str) -> None:
        """Write the report (text, HTML or JSON by its name) in a worker; say where, or why not."""
        session = self.session
        diagnosis = session.after or session.diagnosis
        self.doctor.pool.start(
            lambda worker: session.report(path, diagnosis),
            returned=lambda _: self.said(
                lambda: QCoreApplication.translate("Report", "Report saved: {path}").format(path=path)),
            errored=lambda error: self.said(
                lambda: QCoreApplication.translate("Report", "The report could not be saved. {reason}").format(
                    reason=failure_words(error, session.lang))))


def sentences(*texts: str) -> str:
    """Sentences one after another: a space after an English one, none after a Chinese full stop."""
    return "".join(text + ("" if text.endswith(("。", "：", "！")) or number == len(texts) - 1 else " ")
                   for number, text in enumerate(texts))


def undone_words(result, session) -> str:
    """What an undo (app/ui/repair_run.py's UndoResult) left, as it is now: what an installer keeps by design is
    named, and PyTorch that does not load is said to be as before the repair, never "again"."""
    kept = ", ".join(result.left_installed)  # read from the registry by the undo's worker
    if kept:
        return QCoreApplication.translate(
            "Undo", "Undone: every file and setting the repairs changed is back as it was, except Microsoft's Visual "
            "C++ runtime, now installed ({runtimes}): it stays because other programs share it.").format(runtimes=kept)
    if result.after is not None and session.blockers(result.after):
        return QCoreApplication.translate("Undo", "Undone: every file and setting is back as it was. As before the "
                                                  "repair, PyTorch does not load.")
    return QCoreApplication.translate("Undo", "Undone: every file and setting is back as it was.")


# Qt breaks a line only where Unicode allows one: in "C:\\Users\\alice\\..." that is after "C:" alone, and a folder
# name that does not fit is then cut anywhere. A path is shown with word joiners that keep its drive with its first
# folder and its hyphens with what follows, and a zero-width space after each later backslash, so it breaks between
# folders only, never after "C:"; every wrapped label shows its paths so (PathLabel); the clipboard never gets the
# hints (keep_paths_clean).
BREAK_HINTS = "\u2060\u200b"
_PATH = re.compile(r"(?<![\w\\])[A-Za-z]:\\[^\s<>\"]*")
_FOREIGN_HINT = re.compile(r"(?<!\\)\u200b|(?<![:\\-])\u2060")  # a hint where path_breaks never puts one


def path_breaks(text: str) -> str:
    """The text with its Windows paths breakable between folders only (plain text; escape it for rich text)."""
    def hinted(path: str) -> str:  # the drive stays with its first folder ("C:\\Windows"), no break after a
        # hyphen ("site-packages"), one after each later "\\"
        rest = path[3:].replace("-", "-\u2060").replace("\\", "\\\u200b")
        return path[:2] + "\u2060\\\u2060" + rest

    return _PATH.sub(lambda m: hinted(m.group(0)), text)


def without_break_hints(text: str) -> str:
    return text.translate({ord(c): None for c in BREAK_HINTS})


def keep_paths_clean(clipboard: QClipboard) -> None:
    """What the user copies from the wizard's texts reaches the clipboard without the break hints (a path pasted
    into Explorer or a Command Prompt must be the path). Another program's text is left alone: only ours, or a
    text whose hints all stand where path_breaks puts them (some platforms cannot say who owns the clipboard)."""

    def clean() -> None:
        text = clipboard.text()
        if any(c in text for c in BREAK_HINTS) and (clipboard.ownsClipboard() or not _FOREIGN_HINT.search(text)):
            clipboard.setText(without_break_hints(text))

    clipboard.dataChanged.connect(clean)


class PathLabel(QLabel):
    """A label whose Windows paths break between folders only, whatever page sets its text (path_breaks)."""

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        super().setText(path_breaks(text))


def wrapped(text: str = "", *, bold: bool = False, selectable: bool = False, name: Optional[str] = None) -> QLabel:
    label = PathLabel()
    label.setText(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # spare height goes below the text
    policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
    policy.setHeightForWidth(True)  # a new policy forgets the one setWordWrap() made: the label would then
    label.setSizePolicy(policy)  # claim the height its text needs at a third of its width, and leave gaps
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                      | Qt.TextInteractionFlag.TextSelectableByKeyboard)
    if name:
        label.setObjectName(name)
    return label


def named(control, text: str, accessible: str) -> None:
    """A control's words: what it shows (with its Alt+letter), and what a screen reader says for it."""
    control.setText(text)
    control.setAccessibleName(accessible)


def icon_meaning(name: str) -> str:
    """What an icon says, for its tooltip."""
    meanings = {
        "ok": QCoreApplication.translate("Icons", "Fine: nothing wrong was found here."),
        "problem": QCoreApplication.translate("Icons", "A problem: this stops PyTorch from loading."),
        "warning": QCoreApplication.translate("Icons", "A warning: worth a look, though PyTorch may still load."),
        "info": QCoreApplication.translate("Icons", "For your information: nothing to do about it."),
        "running": QCoreApplication.translate("Icons", "Under way."),
        "waiting": QCoreApplication.translate("Icons", "Not started, or nothing to do."),
        "unknown": QCoreApplication.translate("Icons", "Could not be checked completely."),
        "path": QCoreApplication.translate("Icons", "Found only through the PATH setting, Windows' last resort."),
    }
    return meanings.get(name, "")


class IconLabel(QLabel):
    """An icon with a tooltip that says what it means, in the current language; `tip` says it where the icon's
    general meaning would not (a repair still in place)."""

    def __init__(self, name: str, size: int, tip: Optional[Callable[[], str]] = None) -> None:
        super().__init__()
        self.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.show_icon(name, size, tip)

    def show_icon(self, name: str, size: int, tip: Optional[Callable[[], str]] = None) -> None:
        self._tip = tip or (lambda: icon_meaning(name))
        super().setPixmap(icon(name).pixmap(size, size))
        self.setToolTip(self._tip())

    def setPixmap(self, pixmap) -> None:  # noqa: N802 - Qt's name; a picture set without a name says nothing
        self._tip = lambda: ""
        self.setToolTip("")
        super().setPixmap(pixmap)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.LanguageChange:
            self.setToolTip(self._tip())
        super().changeEvent(event)


def icon_label(name: str, size: int = 20, tip: Optional[Callable[[], str]] = None) -> QLabel:
    return IconLabel(name, size, tip)


def button(name: str) -> QPushButton:
    pushed = QPushButton()
    pushed.setObjectName(name)
    return pushed


def card() -> QFrame:
    frame = QFrame()
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    frame.setObjectName("card")
    return frame


def local_when(stamp) -> str:
    """A journal's time stamp as the reader's locale writes a date and time, in local time."""
    try:
        moment = _dt.datetime.fromisoformat(str(stamp))
    except ValueError:
        return "?"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    shown = QDateTime.fromSecsSinceEpoch(int(moment.timestamp()))
    return QLocale().toString(shown, QLocale.FormatType.ShortFormat)
