"""Finish: what was done, Save report…, Undo these changes, and the log folder."""

from __future__ import annotations

import html

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout

from app.repair.run import failure_text
from app.ui.log import log_folder
from app.ui.pages.base import Page, button, named, wrapped
from app.ui.pages.plan import repair_name
from app.ui.repair_run import UndoResult, undo_transactions


class FinishPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.summary = wrapped(selectable=True, name="summary")
        self.result = self.message_label = wrapped(name="finish-result")
        self.save = button("save-report")
        self.undo = button("undo")
        self.logs = button("logs")
        self.save.clicked.connect(self.ask_to_save_report)
        self.undo.clicked.connect(self._undo)
        self.logs.clicked.connect(self._open_logs)
        row = QHBoxLayout()
        for pushed in (self.save, self.undo, self.logs):
            row.addWidget(pushed)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
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
        self.undo.setVisible(bool(transactions) and not self._undone_all)
        self.save.setEnabled(self.session.diagnosis is not None)
        if transactions:
            items = "".join(f"<li>{html.escape(repair_name(t.begin.get('action', '')))} "
                            f"<small>({html.escape(t.id)})</small></li>" for t in transactions)
            self.summary.setText(self.tr("<p>Changes made on this computer:</p><ul>{items}</ul><p>Each one is "
                                         "recorded; “Undo these changes” puts everything back as it was, now or "
                                         "later.</p>").format(items=items))
        elif self.session.diagnosis is not None and not self.session.blockers():
            self.summary.setText(self.tr("Nothing needed repairing: PyTorch should load. Nothing was changed."))
        else:
            self.summary.setText(self.tr("Nothing was changed on this computer."))
        self.result.setText(self._message())

    def _undo(self) -> None:
        self.undo.setEnabled(False)
        transactions = list(reversed(self.session.transactions))
        self.doctor.pool.start(lambda worker: undo_transactions(transactions), returned=self._undone,
                               errored=lambda error: self._undone(UndoResult(error=error)))

    def _undone(self, result: UndoResult) -> None:
        undone = {t.id for t in result.undone}
        self.session.outcomes = [o for o in self.session.outcomes if o.transaction.id not in undone]
        if result.after is not None:
            self.session.after = result.after
        if not result.complete:
            self.undo.setEnabled(True)
            self.said(lambda: failure_text(result.error, self.session.lang))
            self.retranslate()
            return
        self._undone_all = True
        blocked = result.after is not None and self.session.blockers(result.after)
        self.said(lambda: self.tr("Undone: every file and setting is back as it was.") if not blocked else
                   self.tr("Undone: every file and setting is back as it was, and PyTorch does not load again, "
                           "as before the repair."))
        self.undo.hide()

    def _open_logs(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(log_folder())))
