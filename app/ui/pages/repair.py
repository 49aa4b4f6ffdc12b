"""Repair: draws the repair run (app/ui/repair_run.py): each chosen repair in turn, with download bytes, speed and
time left, then verify and place or install; a log, collapsed. Stop rolls back. A failure is said in plain words
with Retry, Skip and Roll back; a rollback that could not put everything back is said as such."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QVBoxLayout, QWidget

from app.i18n import words
from app.repair.names import repair_name
from app.report.units import download_line
from app.ui.pages.base import Page, button, card, icon_label, named, wrapped
from app.ui.repair_run import Phase, Recorded, RepairRun, RunState


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
    def state(self) -> RunState:
        return self.run.state if self.run is not None else RunState.IDLE

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

    def _phase_words(self, item) -> str:
        phase = item.phase
        if phase == Phase.DOWNLOADING and item.progress is not None:
            return self.tr("downloading {detail}").format(detail=download_line(item.progress, self.session.lang))
        return {
            Phase.WAITING: self.tr("waiting"),
            Phase.APPLYING: self.tr("working…"),
            Phase.DOWNLOADING: self.tr("downloading…"),
            Phase.VERIFYING: self.tr("checking that PyTorch loads…"),
            Phase.ROLLING_BACK: self.tr("putting everything back…"),
            Phase.DONE: self.tr("done"),
            Phase.STILL_BLOCKED: self.tr("done, but PyTorch still does not load"),
            Phase.RESTART_NEEDED: self.tr("done: Windows must restart to finish it"),
            Phase.UNCHECKED: self.tr("done, but the check afterwards could not finish"),
            Phase.FAILED: self.tr("failed, and put back as it was"),
            Phase.SKIPPED: self.tr("skipped"),
            Phase.ROLLED_BACK: self.tr("rolled back"),
            Phase.NOT_ROLLED_BACK: self.tr("could not be put back completely"),
            Phase.INSTALLER_RUNNING: self.tr("not finished: Microsoft's installer is still running"),
        }[phase]

    def _status_words(self) -> str:
        state = self.state
        if state == RunState.RUNNING and any(item.option.plan.runs_installer for item in self.run.items):
            return self.tr("Working. You can stop at any time: whatever was changed is put back. Microsoft's "
                           "installer, once it runs, is let finish, and the runtime it installs stays.")
        if state == RunState.RUNNING:
            return self.tr("Working. You can stop at any time: whatever was changed is put back.")
        if state == RunState.ROLLING_BACK:
            if self.run.closing:
                return self.tr("Putting everything back as it was… The window closes by itself when that is done.")
            return self.tr("Putting everything back as it was…")
        if state == RunState.ROLLED_BACK and self.run.installer_running is not None:
            return self.tr("Stopped. What the repairs changed was put back, but Microsoft's installer is still "
                           "running (below: what to do).")
        if state == RunState.ROLLED_BACK and self.run.left_installed:
            said = self.tr("Stopped. Everything the repairs changed was put back as it was, except Microsoft's "
                           "Visual C++ runtime, now installed ({runtimes}): its installer had already run, and it "
                           "stays because other programs share it.").format(
                runtimes=", ".join(self.run.left_installed))
            if self.run.left_needs_restart:
                said += " " + words("repair.left_installed.restart", self.session.lang)
            return said
        if state == RunState.ROLLED_BACK:
            return self.tr("Stopped. Everything the repairs changed was put back as it was.")
        if state == RunState.ROLLBACK_STOPPED:
            return self.tr("Stopped, but not everything could be put back. What is still changed is recorded: "
                           "you can undo it later from the first page or with “undo”.")
        if state == RunState.DONE and self.run.restart_needed:
            return self.tr("All chosen repairs are done. Windows needs a restart before they take effect: "
                           "restart when the assistant is done, then check again.")
        if state == RunState.DONE:
            return self.tr("All chosen repairs are done. Press Next to check PyTorch again.")
        return ""

    def _draw(self) -> None:
        run = self.run
        if run is None:
            return
        from app.ui.icons import icon as load

        for row, item in zip(self.rows, run.items):
            row["name"].setText(repair_name(item.action, self.session.lang))
            row["state"].setText(self._phase_words(item))
            icon = {Phase.DONE: "ok", Phase.STILL_BLOCKED: "warning", Phase.RESTART_NEEDED: "warning",
                    Phase.UNCHECKED: "warning",
                    Phase.FAILED: "problem", Phase.NOT_ROLLED_BACK: "problem", Phase.SKIPPED: "waiting",
                    Phase.ROLLED_BACK: "waiting", Phase.WAITING: "waiting",
                    Phase.INSTALLER_RUNNING: "warning"}.get(item.phase, "running")
            row["icon"].setPixmap(load(icon).pixmap(16, 16))
            bar = row["bar"]
            if item.phase == Phase.DOWNLOADING and item.progress is not None and item.progress.total:
                bar.setRange(0, 1000)
                bar.setValue(int(1000 * item.progress.done / item.progress.total))
            elif item.phase in (Phase.APPLYING, Phase.VERIFYING, Phase.ROLLING_BACK, Phase.DOWNLOADING):
                bar.setRange(0, 0)
            else:
                bar.setRange(0, 1)
                bar.setValue(1 if item.phase in (Phase.DONE, Phase.STILL_BLOCKED, Phase.RESTART_NEEDED,
                                                 Phase.UNCHECKED) else 0)
        for line in run.log[self._logged:]:
            self.log.appendPlainText(self.tr("Recorded as {id}.").format(id=line.transaction_id)
                                     if isinstance(line, Recorded) else line)
        self._logged = len(run.log)
        state = run.state
        self.status.setText(self._status_words())
        failed = state in (RunState.FAILED, RunState.ROLLBACK_STOPPED) and run.error is not None
        failed = failed or (state == RunState.ROLLED_BACK and run.installer_running is not None)
        self.error_text.setText(run.failure_words() if failed else "")
        self.error.setVisible(failed)
        self.retry.setVisible(run.can_retry)
        self.skip.setVisible(state == RunState.FAILED)
        self.roll_back.setVisible(state == RunState.FAILED)
        self.stop.setEnabled(state == RunState.RUNNING)
        self.set_ready(state in (RunState.DONE, RunState.ROLLED_BACK, RunState.ROLLBACK_STOPPED))

    # -- the user's answers ---------------------------------------------------------------------------------
    def _retry(self) -> None:
        self.run.retry()

    def _skip(self) -> None:
        self.run.skip()

    def stop_and_roll_back(self) -> None:
        if self.run is not None:
            self.run.stop()
