"""Diagnose: a live checklist of the checks (running, then ok, warning or problem, each with its one-line
result), overall progress, and Stop."""

from __future__ import annotations

from enum import Enum
from typing import Optional

from PySide6.QtWidgets import QHBoxLayout, QListView, QProgressBar, QVBoxLayout, QWidget

from app.cancel import Cancelled
from app.ui.failure import failure_words
from app.ui.models import ChecklistModel
from app.ui.pages.base import Page, button, named, wrapped
from app.ui.session import diagnose
from app.ui.workers import LatestRun


class CheckState(str, Enum):
    """Where a diagnosis run of the checklist is."""

    IDLE = "idle"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"  # Stop was pressed: what was found so far is kept
    FAILED = "failed"


class ChecklistPanel(QWidget):
    """The checklist, its progress bar and a Stop button: the Diagnose and Verify pages both run one."""

    def __init__(self, page: Page) -> None:
        super().__init__()
        self.page = page
        self.model = ChecklistModel(lambda: page.session.lang)
        self.view = QListView()
        self.view.setModel(self.model)
        self.view.setWordWrap(True)  # a long result wraps, never cut to "…" (800x600, Chinese): and a tooltip says it
        self.view.setResizeMode(QListView.ResizeMode.Adjust)
        self.progress = QProgressBar()
        self.stop = button("stop")
        self.stop.clicked.connect(self.cancel)
        self.run = LatestRun()  # Back, then Next: the old run's late result is dropped, never shown
        self.checking: Optional[tuple] = None  # (environment, program, session.changes) of the latest run
        self.state = CheckState.IDLE
        self.error = None
        self.on_done = lambda diagnosis: None
        self._cancelled = False
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        row.addWidget(self.stop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view, 1)
        layout.addLayout(row)

    def retranslate(self) -> None:
        named(self.stop, self.tr("&Stop"), self.tr("Stop checking"))
        self.view.setAccessibleName(self.tr("Checks and their results"))
        self.progress.setAccessibleName(self.tr("Progress of the checks"))
        self.model.refresh()

    def start(self, env) -> None:
        self.checking = (env, self.page.session.program, self.page.session.changes)
        self.model.clear()
        self.progress.setRange(0, 0)
        self.state, self.error, self._cancelled = CheckState.RUNNING, None, False
        self.stop.setEnabled(True)
        system, program = self.page.session.system, self.page.session.program
        self.run.start(self.page.doctor.pool, lambda worker: diagnose(system, env, program, worker.token,
                                                                      worker.emit),
                       yielded=self._event, returned=self._finished, errored=self._failed)

    def cancel(self) -> None:
        """Stop: the checks end, and what they found so far is still shown."""
        if self.run.running and self.state == CheckState.RUNNING:
            self._cancelled = True
            self.run.stop()

    def checks(self, env, program, changes: int) -> bool:
        """Whether the latest run is of `env` as `program` starts, began after the session's last change to the
        computer (`changes`), and is running or has finished."""
        return (self.checking is not None and self.checking[0] is env and self.checking[1:] == (program, changes)
                and self.state in (CheckState.RUNNING, CheckState.DONE))

    def leave(self) -> None:
        """The page is left (Back): the run stops and nothing it still sends is shown; a later start is afresh."""
        self.checking = None
        self.run.drop()
        if self.state == CheckState.RUNNING:
            self.model.stop_running()
            self.state = CheckState.CANCELLED
            self.stop.setEnabled(False)

    def _event(self, event) -> None:
        self.model.update(event)
        self.progress.setRange(0, max(event.total, 1))
        self.progress.setValue(event.done)

    def _finished(self, diagnosis) -> None:
        self.model.stop_running()
        if diagnosis is not None:
            self.model.settle(diagnosis.problems)
        self.stop.setEnabled(False)
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
        self.progress.setValue(self.progress.maximum())
        self.state = CheckState.CANCELLED if self._cancelled else CheckState.DONE
        self.on_done(diagnosis)

    def _failed(self, error) -> None:
        self.model.stop_running()
        self.stop.setEnabled(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.state = CheckState.CANCELLED if isinstance(error, Cancelled) else CheckState.FAILED
        self.error = error
        self.on_done(None)


class DiagnosePage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.what = wrapped()
        self.checklist = ChecklistPanel(self)
        self.checklist.on_done = self._done
        self.result = wrapped(name="result")
        layout = QVBoxLayout(self)
        layout.addWidget(self.what)
        layout.addWidget(self.checklist, 1)
        layout.addWidget(self.result)

    def initializePage(self) -> None:
        """The checks of the chosen environment; those begun while Welcome was read (check_early) are taken as
        they are when they are of the same environment and program, running or done."""
        if not self.checklist.checks(self.session.env, self.session.program, self.session.changes):
            self.check_early(self.session.env)
        self.retranslate()

    def check_early(self, env) -> None:
        """Begin the checks of `env`; before this page is shown too (they change nothing): Next then shows them as
        far as they have got, and each check's result as soon as it ends."""
        self.session.set_diagnosis(None)
        self.set_ready(False)
        self.checklist.start(env)

    def check_again(self) -> None:
        """The checks once more, whatever ran before (Findings' "check again")."""
        self.checklist.leave()
        self.initializePage()

    def cleanupPage(self) -> None:  # Back: stop checking; a later Next starts afresh
        self.checklist.leave()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Checking PyTorch"))
        self.setSubTitle(self.tr("Each file PyTorch loads is checked, the way Windows would load it. Nothing is "
                                 "changed."))
        env = self.session.env
        if env is not None:
            self.what.setText(self.tr("Checking PyTorch {version} in {folder}").format(
                version=env.torch.version if env.torch else "?",
                folder=self.session.system.windows_path(env.exec_prefix)))
        self.checklist.retranslate()
        state = self.checklist.state
        if state == CheckState.RUNNING:
            self.result.setText(self.tr("Checking… this takes a few seconds (up to a minute when PyTorch is "
                                        "started for real)."))
        elif state == CheckState.DONE:
            self.result.setText(self.tr("Done. Press Next to see what was found."))
        elif state == CheckState.CANCELLED:
            self.result.setText(self.tr("Stopped. Press Back to choose again, or Next to see what was found so far."))
        elif state == CheckState.FAILED:
            self.result.setText(self.tr("The check could not run. {reason}").format(
                reason=failure_words(self.checklist.error, self.session.lang)))
        else:
            self.result.setText("")

    def _done(self, diagnosis) -> None:
        self.session.set_diagnosis(diagnosis)
        self.set_ready(diagnosis is not None)
        self.retranslate()
