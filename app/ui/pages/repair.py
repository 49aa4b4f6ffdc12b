"""Repair: each chosen repair in turn, with download bytes, speed and time left, then verify and place or
install; a log, collapsed. Stop rolls back. A failure is said in plain words with Retry, Skip and Roll back."""

from __future__ import annotations

import time

from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QVBoxLayout, QWidget

from app.repair.run import FIXED, apply_plan, failure_text, undo
from app.ui.pages.base import VERIFY, Page, button, card, icon_label, named, wrapped
from app.ui.pages.plan import repair_name

PROGRESS_EVERY_S = 0.1  # at most ten progress updates a second reach the GUI thread


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
        self.current = 0
        self.worker = None
        self.state = "idle"  # running, failed, done, rolling-back, rolled-back
        self._last_progress = 0.0
        self.on_stopped = lambda: None

    # -- steps ----------------------------------------------------------------------------------------------
    def initializePage(self) -> None:
        while self.steps_layout.count():
            widget = self.steps_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.rows = []
        for number, option in enumerate(self.session.chosen):
            name, state, bar = QLabel(), QLabel(), QProgressBar()
            icon = icon_label("waiting", 16)
            bar.setRange(0, 1)
            bar.setValue(0)
            bar.setTextVisible(False)
            for column, widget in enumerate((icon, name, state, bar)):
                self.steps_layout.addWidget(widget, number, column)
            self.rows.append({"option": option, "name": name, "state": state, "bar": bar, "icon": icon,
                              "phase": "waiting", "detail": "", "outcome": None})
        self.steps_layout.setColumnStretch(2, 1)
        self.log.clear()
        self.current = 0
        self.set_ready(False)
        self.retranslate()
        self._run_current()

    def nextId(self) -> int:
        return VERIFY

    def retranslate(self) -> None:
        self.setTitle(self.tr("Repairing"))
        self.setSubTitle(self.tr("Every change is recorded first, so it can be undone."))
        named(self.stop, self.tr("S&top and roll back"), self.tr("Stop the repair and put everything back"))
        named(self.show_log, self.tr("Show &details"), self.tr("Show the log of the repair"))
        self.log.setAccessibleName(self.tr("Log of the repair"))
        self.retry.setText(self.tr("&Retry"))
        self.skip.setText(self.tr("S&kip this repair"))
        self.roll_back.setText(self.tr("Roll &back everything"))
        for row in self.rows:
            row["name"].setText(repair_name(row["option"].action))
            row["state"].setText(self._phase_words(row))
        self._show_status()

    def _phase_words(self, row: dict) -> str:
        phase = row["phase"]
        return {
            "waiting": self.tr("waiting"),
            "applying": self.tr("working…"),
            "downloading": self.tr("downloading {detail}").format(detail=row["detail"]),
            "verifying": self.tr("checking that PyTorch loads…"),
            "rolling-back": self.tr("putting everything back…"),
            "done": self.tr("done"),
            "still-blocked": self.tr("done, but PyTorch still does not load"),
            "failed": self.tr("failed"),
            "skipped": self.tr("skipped"),
            "rolled-back": self.tr("rolled back"),
        }.get(phase, phase)

    def _show_status(self) -> None:
        restart = any(r.get("outcome") in ("restart-needed", "restart-started")
                      for t in self.session.transactions for r in t.records)
        text = {
            "running": self.tr("Working. You can stop at any time: whatever was changed is put back."),
            "failed": "",
            "done": self.tr("All chosen repairs are done. Press Next to check PyTorch again."),
            "rolling-back": self.tr("Putting everything back as it was…"),
            "rolled-back": self.tr("Stopped. Everything the repairs changed was put back as it was."),
        }.get(self.state, "")
        if restart and self.state == "done":
            text += " " + self.tr("Windows needs a restart to finish installing the runtime: restart when the "
                                  "assistant is done, then check again.")
        self.status.setText(text)

    def _set_phase(self, row: dict, phase: str, detail: str = "") -> None:
        row["phase"], row["detail"] = phase, detail
        row["state"].setText(self._phase_words(row))
        icon = {"done": "ok", "still-blocked": "warning", "failed": "problem", "skipped": "waiting",
                "rolled-back": "waiting", "waiting": "waiting"}.get(phase, "running")
        from app.ui.icons import icon as load

        row["icon"].setPixmap(load(icon).pixmap(16, 16))

    def _run_current(self) -> None:
        if self.current >= len(self.rows):
            self.state = "done"
            self.stop.setEnabled(False)
            self.set_ready(True)
            self._show_status()
            return
        row = self.rows[self.current]
        self.state = "running"
        self.error.hide()
        self.retry.show()
        self.skip.show()
        self.stop.setEnabled(True)
        self._set_phase(row, "applying")
        row["bar"].setRange(0, 0)
        self._show_status()
        session, plan = self.session, row["option"].plan
        system, env, diagnosis, journal = session.system, session.env, session.diagnosis, session.journal
        lang = session.lang

        def work(worker):
            def progress(event):
                now = time.monotonic()
                if now - self._last_progress >= PROGRESS_EVERY_S or event.done == event.total:
                    self._last_progress = now
                    worker.emit(("progress", event))

            return apply_plan(system, env, plan, diagnosis, journal,
                              on_step=lambda step: worker.emit(("step", step)),
                              on_output=lambda line: worker.emit(("output", line[lang] if isinstance(line, dict)
                                                                  else line)),
                              on_progress=progress, token=worker.token)

        self.worker = self.doctor.pool.start(work, yielded=self._event, returned=self._applied, errored=self._failed)

    def _event(self, event) -> None:
        kind, value = event
        row = self.rows[self.current]
        if kind == "output":
            self.log.appendPlainText(str(value).rstrip())
        elif kind == "step":
            self._set_phase(row, value)
            row["bar"].setRange(0, 0)
        elif kind == "progress":
            bar = row["bar"]
            if value.total:
                bar.setRange(0, 1000)
                bar.setValue(int(1000 * value.done / value.total))
            speed = f"{value.speed / 1e6:.1f} MB/s"
            eta = self.tr("{seconds} s left").format(seconds=f"{value.eta:.0f}") if value.eta is not None else ""
            size = f"{value.done / 1e6:.1f} / {value.total / 1e6:.1f} MB" if value.total else \
                f"{value.done / 1e6:.1f} MB"
            self._set_phase(row, "downloading", f"{size}, {speed} {eta}".strip())

    def _applied(self, outcome) -> None:
        self.worker = None
        row = self.rows[self.current]
        row["outcome"] = outcome
        self.session.outcomes.append(outcome)
        self.session.diagnosis = outcome.after
        after_env = outcome.after.environments[0] if outcome.after.environments else None
        if after_env is not None:
            self.session.env = after_env
        row["bar"].setRange(0, 1)
        row["bar"].setValue(1)
        self._set_phase(row, "done" if outcome.state == FIXED else "still-blocked")
        self.log.appendPlainText(self.tr("Recorded as {id}.").format(id=outcome.transaction.id))
        self.current += 1
        self._run_current()

    def _failed(self, error) -> None:
        self.worker = None
        row = self.rows[self.current]
        row["bar"].setRange(0, 1)
        row["bar"].setValue(0)
        from app.cancel import Cancelled
        from app.repair.download import DownloadCancelled

        if isinstance(error, (Cancelled, DownloadCancelled)) or self.state == "rolling-back":
            self._set_phase(row, "rolled-back")
            self._roll_back_done_steps()
            return
        self._set_phase(row, "failed")
        self.state = "failed"
        self.stop.setEnabled(False)
        self.error_text.setText(failure_text(error, self.session.lang))
        self.log.appendPlainText(getattr(error, "details", str(error)))
        self.error.show()
        self._show_status()

    # -- the user's answers ---------------------------------------------------------------------------------
    def _retry(self) -> None:
        self._run_current()

    def _skip(self) -> None:
        self._set_phase(self.rows[self.current], "skipped")
        self.current += 1
        self._run_current()

    def stop_and_roll_back(self) -> None:
        """Stop what runs (it rolls itself back), then undo the repairs this run finished, newest first."""
        self.error.hide()
        self.stop.setEnabled(False)
        if self.worker is not None and not self.worker.done:
            self.state = "rolling-back"
            self._show_status()
            self.worker.cancel()  # _failed follows, with the step rolled back
            return
        self.state = "rolling-back"
        self._show_status()
        if self.current < len(self.rows) and self.rows[self.current]["phase"] == "failed":
            self._set_phase(self.rows[self.current], "rolled-back")
        self._roll_back_done_steps()

    def _roll_back_done_steps(self) -> None:
        self.state = "rolling-back"
        self._show_status()
        done = [row for row in self.rows if row["outcome"] is not None]
        transactions = [row["outcome"].transaction for row in reversed(done)]

        def work(worker):
            after = None
            for transaction in transactions:
                after = undo(transaction)
            return after

        self.doctor.pool.start(work, returned=lambda after: self._rolled_back(done, after),
                               errored=self._roll_back_failed)

    def _rolled_back(self, done: list, after) -> None:
        for row in done:
            self._set_phase(row, "rolled-back")
            self.session.outcomes = [o for o in self.session.outcomes if o is not row["outcome"]]
            row["outcome"] = None
        if after is not None:
            self.session.diagnosis = after
            if after.environments:
                self.session.env = after.environments[0]
        self.state = "rolled-back"
        self._show_status()
        self.set_ready(True)  # Next: check PyTorch as it is now
        self.on_stopped()

    def _roll_back_failed(self, error) -> None:
        self.state = "failed"
        self.error_text.setText(failure_text(error, self.session.lang))
        self.retry.hide()
        self.skip.hide()
        self.error.show()
        self._show_status()
        self.on_stopped()
