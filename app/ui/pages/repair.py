"""Repair: shows the repair run (app/ui/repair_run.py, its states and words in app/repair/run_model.py): each chosen
repair in turn, with download bytes, speed and time left, then verify and place or install; a log, collapsed, of
what each repair changed. Stop rolls back. A failure is said in plain words with Retry, Skip and Roll back; a
rollback that could not put everything back is said as such; an undo from Finish, once Back returns here."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QVBoxLayout, QWidget

from app.repair.run_model import RepairState
from app.ui.pages.base import Page, button, card, icon_label, named, wrapped
from app.ui.repair_run import RepairRun


class RepairPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.steps = QWidget()
        self.steps_layout = QGridLayout(self.steps)
        self.status = wrapped(name="repair-status")
        self.error = card()
        self.error_text = wrapped(selectable=True)
        self.retry, self.skip, self.roll_back = button("retry"), button("skip"), button("roll-back")
        self.retry.clicked.connect(self._retry)
        self.skip.clicked.connect(self._skip)
        self.roll_back.clicked.connect(self.stop_and_roll_back)
        error_buttons = QHBoxLayout()
        for pushed in (self.retry, self.skip, self.roll_back):
            error_buttons.addWidget(pushed)
        error_buttons.addStretch(1)
        error_layout = QVBoxLayout(self.error)
        row = QHBoxLayout()
        row.addWidget(icon_label("problem"))
        row.addWidget(self.error_text, 1)
        error_layout.addLayout(row)
        error_layout.addLayout(error_buttons)
        self.error.hide()
        self.stop = button("stop-repair")
        self.stop.clicked.connect(self.stop_and_roll_back)
        self.show_log = button("show-log")
        self.show_log.setCheckable(True)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        self.log.hide()
        self.show_log.toggled.connect(self.log.setVisible)
        bottom = QHBoxLayout()
        bottom.addWidget(self.show_log)
        bottom.addStretch(1)
        bottom.addWidget(self.stop)
        layout = QVBoxLayout(self)
        layout.addWidget(self.steps)
        layout.addWidget(self.status)
        layout.addWidget(self.error)
        layout.addWidget(self.log, 1)
        layout.addStretch(0)
        layout.addLayout(bottom)
        self.rows: list[dict] = []
        self.run: Optional[RepairRun] = None
        self._logged = 0
        self.on_stopped = lambda: None

    # -- drawing the run -------------------------------------------------------------------------------------
    def initializePage(self) -> None:
        if self.run is not None and self.run.busy:
            return  # Back/Next cannot reach here while a run is under way; a second call changes nothing
        while self.steps_layout.count():
            widget = self.steps_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.run = RepairRun(self.session, self.doctor.pool.start, changed=self._draw)
        self.run.on_closed = self.on_stopped
        self.rows = []
        for number, _item in enumerate(self.run.items):
            name, state, bar = QLabel(), QLabel(), QProgressBar()
            icon = icon_label("waiting", 16)
            bar.setRange(0, 1)
            bar.setValue(0)
            bar.setTextVisible(False)
            for column, widget in enumerate((icon, name, state, bar)):
                self.steps_layout.addWidget(widget, number, column)
            self.rows.append({"name": name, "state": state, "bar": bar, "icon": icon})
        self.steps_layout.setColumnStretch(2, 1)
        self.log.clear()
        self._logged = 0
        self.set_ready(False)
        self.retranslate()
        self.run.begin()

    @property
    def state(self) -> RepairState:
        return self.run.state if self.run is not None else RepairState.WAITING

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """Shown again (Back from Finish, after an undo there): the run says which of its repairs were undone."""
        super().showEvent(event)
        if self.run is not None:
            self.run.take_undone()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Repairing"))
        self.setSubTitle(self.tr("Every change is recorded first, so it can be undone."))
        named(self.stop, self.tr("S&top and roll back"), self.tr("Stop the repair and put everything back"))
        named(self.show_log, self.tr("Show &details"), self.tr("Show the log of the repair"))
        self.log.setAccessibleName(self.tr("Log of the repair"))
        self.retry.setText(self.tr("&Retry"))
        self.skip.setText(self.tr("S&kip this repair"))
        self.roll_back.setText(self.tr("Roll &back everything"))
        self._draw()

    def _draw(self) -> None:
        """Shows what the run says (app/repair/run_model.py): the words, icons and bars are its own."""
        run = self.run
        if run is None:
            return
        from app.ui.icons import icon as load

        for index, widgets in enumerate(self.rows):
            row = run.row(index)
            widgets["name"].setText(row.name)
            widgets["state"].setText(row.words)
            widgets["icon"].setPixmap(load(row.icon).pixmap(16, 16))
            bar = widgets["bar"]
            if row.done is None:
                bar.setRange(0, 0)
            else:
                bar.setRange(0, 1000)
                bar.setValue(int(1000 * row.done))
        for entry in run.log[self._logged:]:
            self.log.appendPlainText(run.log_text(entry))
        self._logged = len(run.log)
        model = run.model
        self.status.setText(run.status_words())
        failed = model.says_failure and (run.error or run.installer_running) is not None
        self.error_text.setText(run.failure_words() if failed else "")
        self.error.setVisible(failed)
        self.retry.setVisible(model.can_retry)
        self.skip.setVisible(model.asks)
        self.roll_back.setVisible(model.asks)
        self.stop.setEnabled(model.state == RepairState.RUNNING)
        self.set_ready(model.ended)

    # -- the user's answers ---------------------------------------------------------------------------------
    def _retry(self) -> None:
        self.run.retry()

    def _skip(self) -> None:
        self.run.skip()

    def stop_and_roll_back(self) -> None:
        if self.run is not None:
            self.run.stop()
