"""Finish: what was done, Save report…, Undo these changes, and the log folder."""

from __future__ import annotations

import html
import shutil
import sys
from typing import Optional

from PySide6.QtCore import QProcess, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QMessageBox, QScrollArea, QVBoxLayout, QWidget

from app.failures import failure_text
from app.i18n import words
from app.repair.names import repair_name
from app.repair.plan import runs_installer
from app.repair.run_model import what_changes_back
from app.report.log import log_folder
from app.ui.pages.base import Page, button, local_when, named, undone_words, wrapped
from app.ui.pages.plan import guide_widget, paths_whole
from app.ui.repair_run import UndoResult, undo_transactions
from app.ui.session import DEMO, IMAGE, guides_left


class FinishPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.summary = wrapped(selectable=True, name="summary")
        self.result = self.message_label = wrapped(name="finish-result")
        self.save = button("save-report")
        self.undo = button("undo")
        self.logs = button("logs")
        self.save.clicked.connect(self.ask_to_save_report)
        self.undo.clicked.connect(self.ask_to_undo)
        self.confirm = None  # the question asked before an undo (a QMessageBox, window-modal)
        self.logs.clicked.connect(self._open_logs)
        row = QHBoxLayout()
        for pushed in (self.save, self.undo, self.logs):
            row.addWidget(pushed)
        row.addStretch(1)
        self.guides = QWidget()  # the steps the user chose on the plan page, still to be taken
        self.guides.setObjectName("guides")
        self.guides_layout = QVBoxLayout(self.guides)
        self.guides_layout.setContentsMargins(0, 0, 0, 0)
        self.guides_scroll = QScrollArea()
        self.guides_scroll.setWidgetResizable(True)
        self.guides_scroll.setWidget(self.guides)
        self.guides_scroll.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.guides_scroll, 10)  # the steps take the room; the stretch below only what is left
        layout.addLayout(row)
        layout.addWidget(self.result)
        layout.addStretch(1)
        self._undone_all = False
        self.set_ready(True)

    def initializePage(self) -> None:
        self._undone_all, self._message = False, lambda: ""
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Done"))
        self.setSubTitle(self.tr("Thank you for using Torch DLL Doctor."))
        named(self.save, self.tr("&Save report…"), self.tr("Save the report to a file"))
        named(self.undo, self.tr("&Undo these changes"), self.tr("Undo every change the repairs made"))
        named(self.logs, self.tr("Open the &log folder"),
              self.tr("Open the folder with the log of what the assistant did"))
        transactions = self.session.transactions
        undone = [outcome.transaction for outcome in self.session.undone]
        self.undo.setVisible(bool(transactions) and not self._undone_all)
        self.save.setEnabled(self.session.diagnosis is not None)
        demo = self.session.source == DEMO  # the demo computer is not "this computer", nor is a copied drive
        drive = self.session.source == IMAGE
        if transactions or undone:  # each by its name and when; the journal's id is in the report and the log
            def item(t, mark: str = "") -> str:
                return (f"<li>{html.escape(repair_name(t.begin.get('action', ''), self.session.lang))} "
                        f"<small>({html.escape(local_when(t.begin.get('created')))})</small>{mark}</li>")

            items = "".join([item(t) for t in transactions] +
                            [item(t, " — <b>" + html.escape(self.tr("undone")) + "</b>") for t in undone])
            heading = (self.tr("Changes made on the demo computer:") if demo else
                       self.tr("Changes made on the copied drive:") if drive else
                       self.tr("Changes made on this computer:"))
            if not transactions:  # every one undone: no button to point at any more
                text = self.tr("<p>{heading}</p><ul>{items}</ul><p>They were undone: everything they changed is "
                               "back as it was.</p>")
            elif any(runs_installer(t.begin.get("plan") or {}) for t in transactions):
                text = self.tr("<p>{heading}</p><ul>{items}</ul><p>Each one is recorded; “Undo these changes” puts "
                               "everything back as it was, except Microsoft's Visual C++ runtime: it stays installed "
                               "because other programs share it. Later, “See earlier repairs” on the first page "
                               "undoes them too.</p>")
            else:
                text = self.tr("<p>{heading}</p><ul>{items}</ul><p>Each one is recorded; “Undo these changes” puts "
                               "everything back as it was. Later, “See earlier repairs” on the first page undoes "
                               "them too.</p>")
            self.summary.setText(text.format(heading=html.escape(heading), items=items))
        elif self.session.diagnosis is not None and self.session.diagnosis.complete and not self.session.blockers():
            self.summary.setText(self.tr("Nothing needed repairing: PyTorch should load. Nothing was changed."))
        else:
            self.summary.setText(self.tr("Nothing was changed on the demo computer.") if demo else
                                 self.tr("Nothing was changed on the copied drive.") if drive else
                                 self.tr("Nothing was changed on this computer."))
        self.result.setText(self._message())
        self._fill_guides()

    def _fill_guides(self) -> None:
        """The guided steps still to take: each with its steps and the button that opens its page."""
        while self.guides_layout.count():
            widget = self.guides_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        left = guides_left(self.session)
        self.guides_scroll.setVisible(bool(left))
        if not left:
            return
        self.guides_layout.addWidget(wrapped(self.tr("<p><b>Still to do, by you.</b> These steps fix what this "
                                                     "program cannot change. Follow them, then run Torch DLL Doctor "
                                                     "again.</p>"), name="guides-heading"))
        for option in left:
            box = QGroupBox(repair_name(option.action, self.session.lang))
            column = QVBoxLayout(box)
            column.addWidget(wrapped(option.problem.lead.text(self.session.lang).title, bold=True, selectable=True))
            column.addWidget(guide_widget(option.guide, self.session.lang))
            self.guides_layout.addWidget(box)
        self.guides_layout.addStretch(1)

    def ask_to_undo(self) -> None:
        """A question first, that says what changes back (from each repair's journal, newest first); Undo them
        undoes every change of this session in a worker, Keep them changes nothing."""
        lang = self.session.lang
        repairs = "".join(
            f"<p><b>{html.escape(repair_name(t.begin.get('action', ''), lang))}</b></p><ul>"
            + "".join(f"<li>{paths_whole(line)}</li>" for line in what_changes_back(t, lang)) + "</ul>"
            for t in reversed(self.session.transactions))
        box = QMessageBox(QMessageBox.Icon.Question, words("finish.undo.ask", lang), "", parent=self)
        box.setObjectName("undo-question")
        box.setStyleSheet("QLabel#qt_msgbox_label { min-width: 36em; }")  # a path per line, not a word per line
        box.setText(f"<p>{html.escape(words('finish.undo.ask', lang))}</p>"
                    f"<p>{html.escape(words('finish.undo.what', lang))}</p>{repairs}")
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        yes, no = box.button(QMessageBox.StandardButton.Yes), box.button(QMessageBox.StandardButton.No)
        yes.setText(words("finish.undo.yes", lang))
        no.setText(words("finish.undo.no", lang))
        box.buttonClicked.connect(lambda pushed: self._undo() if pushed is yes else None)
        self.confirm = box
        box.open()

    def _undo(self) -> None:
        self.undo.setEnabled(False)
        transactions = list(reversed(self.session.transactions))
        owner = self.session.owner_window  # the wizard's window, for an undo's permission prompt
        self.doctor.pool.start(lambda worker: undo_transactions(transactions, owner), returned=self._undone,
                               errored=lambda error: self._undone(UndoResult(error=error)))

    def _undone(self, result: UndoResult) -> None:
        undone = {t.id for t in result.undone}
        self.session.forget_outcomes(undone)
        if result.after is not None:
            self.session.set_verified(result.after)
        if not result.complete:
            self.undo.setEnabled(True)
            self.said(lambda: failure_text(result.error, self.session.lang, "cli.undo.failed"))
            self.retranslate()
            return
        self._undone_all = True
        self.said(lambda: undone_words(result, self.session))
        self.undo.hide()
        self.retranslate()  # the list says which changes were undone, and points at no button that is gone

    log_box: Optional[QMessageBox] = None

    def _open_logs(self) -> None:
        """The log folder in the file manager: xdg-open on Linux (Qt would only warn without it), Windows' own way
        elsewhere; where neither can, the folder's path in a message with a Copy button."""
        folder = str(log_folder())
        if sys.platform.startswith("linux"):
            opener = shutil.which("xdg-open")
            opened = opener is not None and QProcess.startDetached(opener, [folder])[0]
        else:
            opened = QDesktopServices.openUrl(QUrl.fromLocalFile(folder))
        if opened:
            self.said(lambda: self.tr("The log folder is opening: {folder}").format(folder=folder))
            return
        box = QMessageBox(QMessageBox.Icon.Information, self.tr("The log folder"), self.tr(
            "No file manager could be opened here. The log is in this folder:\n{folder}").format(folder=folder),
            QMessageBox.StandardButton.Close, self)
        copy = box.addButton(self.tr("&Copy"), QMessageBox.ButtonRole.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(folder))
        self.said(lambda: self.tr("The log is in this folder: {folder}").format(folder=folder))
        self.log_box = box
        box.open()
