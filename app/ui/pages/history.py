"""Earlier repairs: every repair recorded on this computer (or this copied drive), what it changed, when, and
whether it is still in place; each one still in place can be undone, after a confirmation that says what changes
back. Reached from Welcome; Next goes on to the search."""

from __future__ import annotations

import html
from typing import Optional

from PySide6.QtWidgets import QHBoxLayout, QMessageBox, QScrollArea, QVBoxLayout, QWidget

from app.failures import failure_text
from app.repair.names import repair_name
from app.ui.history import EarlierRepair, earlier_repairs
from app.ui.pages.base import (
    Page,
    button,
    card,
    icon_label,
    local_when,
    named,
    path_breaks,
    sentences,
    undone_words,
    wrapped,
)
from app.ui.repair_run import UndoResult, undo_transactions
from app.ui.workers import LatestRun

STATE_ICON = {"done": "ok", "rolled-back": "waiting"}


class HistoryPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.headline = wrapped(name="history-headline")
        self.cards = QWidget()
        self.cards_layout = QVBoxLayout(self.cards)
        self.cards_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.cards)
        self.result = self.message_label = wrapped(selectable=True, name="history-result")
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.result)
        self.repairs: list[EarlierRepair] = []
        self.undo_buttons: dict[str, object] = {}  # by transaction id
        self.confirm: Optional[QMessageBox] = None
        self.reading = LatestRun()
        self._undoing = False
        self.set_ready(True)

    def initializePage(self) -> None:
        self._message = lambda: ""
        self.read_journal()
        self.retranslate()

    def read_journal(self) -> None:
        """The journal, read in a worker (it is files); the page draws what it returns."""
        journal, system = self.session.journal, self.session.system
        self.reading.start(self.doctor.pool, lambda worker: earlier_repairs(journal, system),
                           returned=self._read, doing=self.tr("The record of earlier repairs could not be read."))

    def _read(self, repairs: list[EarlierRepair]) -> None:
        self.repairs = repairs
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Earlier repairs"))
        self.setSubTitle(self.tr("Every repair made here is recorded, and each one still in place can be undone."))
        in_place = sum(1 for r in self.repairs if r.in_place)
        if self.reading.running and not self.repairs:
            self.headline.setText(self.tr("Reading the record of repairs…"))
        elif not self.repairs:
            self.headline.setText(self.tr("No repair has been made here yet."))
        else:
            self.headline.setText(sentences(self.tr("%n repair(s) recorded here.", "", len(self.repairs)),
                                            self.tr("%n of them still in place.", "", in_place)))
        self.result.setText(self._message())
        self._fill_cards()

    def _fill_cards(self) -> None:
        while self.cards_layout.count() > 1:
            widget = self.cards_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.undo_buttons = {}
        for number, repair in enumerate(self.repairs):
            self.cards_layout.insertWidget(number, self._card(repair))

    def _state_words(self, repair: EarlierRepair) -> str:
        return {"done": self.tr("Still in place."),
                "rolled-back": self.tr("Undone: what it changed is back as it was."),
                "kept": self.tr("Its undo stopped, and it was kept as it is."),
                "rollback-stopped": self.tr("Its undo could not finish: the first page offers to try again."),
                "interrupted": self.tr("It did not finish: the first page offers to roll it back."),
                "running": self.tr("It is running in another window now.")}[repair.state.value]

    def _card(self, repair: EarlierRepair) -> QWidget:
        lang = self.session.lang
        frame = card()
        row = QHBoxLayout(frame)
        row.addWidget(icon_label(STATE_ICON.get(repair.state.value, "warning"), tip=lambda: self._state_words(repair)))
        column = QVBoxLayout()
        name = repair_name(repair.action, lang)
        column.addWidget(wrapped(self.tr("{name} — {when}").format(name=name, when=local_when(repair.created)),
                                 bold=True, selectable=True))
        column.addWidget(wrapped(self._state_words(repair)))
        changes = "".join(f"<li>{html.escape(line)}</li>" for line in repair.changes(lang))
        if changes:
            column.addWidget(wrapped(self.tr("<p>What it changed:</p><ul>{changes}</ul>").format(changes=changes),
                                     selectable=True))
        row.addLayout(column, 1)
        if repair.in_place:
            undo = button("undo-" + repair.transaction.id)
            named(undo, self.tr("&Undo…"), self.tr("Undo {name}").format(name=name))
            undo.setEnabled(not self._undoing)
            undo.clicked.connect(lambda _=False, chosen=repair: self.ask_to_undo(chosen))
            row.addWidget(undo)
            self.undo_buttons[repair.transaction.id] = undo
        frame.setAccessibleName(name)
        return frame

    # -- undo, after a confirmation ---------------------------------------------------------------------------
    def ask_to_undo(self, repair: EarlierRepair) -> None:
        """A confirmation that says what changes back; Yes undoes it in a worker."""
        lang = self.session.lang
        lines = "".join(f"<li>{html.escape(path_breaks(line))}</li>" for line in repair.changes(lang))
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("Undo this repair?"), "", parent=self)
        box.setText(self.tr("<p>Undo “{name}” of {when}?</p><p>Everything it changed goes back to how it was "
                            "before:</p><ul>{lines}</ul>").format(
            name=html.escape(repair_name(repair.action, lang)), when=html.escape(local_when(repair.created)),
            lines=lines))
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        yes = box.button(QMessageBox.StandardButton.Yes)
        named(yes, self.tr("&Undo it"), self.tr("Undo this repair"))
        box.buttonClicked.connect(lambda pushed: self._undo(repair) if pushed is yes else None)
        self.confirm = box
        box.open()

    def _undo(self, repair: EarlierRepair) -> None:
        self._undoing = True
        for pushed in self.undo_buttons.values():
            pushed.setEnabled(False)
        self.said(lambda: self.tr("Undoing…"))
        transaction, owner = repair.transaction, self.session.owner_window
        self.doctor.pool.start(lambda worker: undo_transactions([transaction], owner), returned=self._undone,
                               errored=lambda error: self._undone(UndoResult(error=error)))

    def _undone(self, result: UndoResult) -> None:
        self._undoing = False
        self.session.forget_outcomes({t.id for t in result.undone})  # the computer is read afresh after it
        if result.complete:
            self.said(lambda: undone_words(result, self.session))
        else:
            self.said(lambda: failure_text(result.error, self.session.lang, "cli.undo.failed"))
        self.read_journal()
