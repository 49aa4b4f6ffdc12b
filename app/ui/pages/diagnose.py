"""Diagnose: a live checklist of the checks (running, then ok, warning or problem, each with its one-line
result), overall progress, and Stop."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QListView, QProgressBar, QVBoxLayout, QWidget

from app.cancel import Cancelled
from app.ui.models import ChecklistModel
from app.ui.pages.base import FINDINGS, Page, button, named, wrapped
from app.ui.session import diagnose


class ChecklistPanel(QWidget):
    """The checklist, its progress bar and a Stop button: the Diagnose and Verify pages both run one."""

    def __init__(self, page: Page) -> None:
        super().__init__()
        self.page = page
        self.model = ChecklistModel(lambda: page.session.lang)
        self.view = QListView()
        self.view.setModel(self.model)
        self.view.setUniformItemSizes(True)
        self.progress = QProgressBar()
        self.stop = button("stop")
        self.stop.clicked.connect(self.cancel)
        self.worker = None
        self.state = "idle"  # running, done, cancelled, failed
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
        self.cancel()
        self.model.clear()
        self.progress.setRange(0, 0)
        self.state, self.error, self._cancelled = "running", None, False
        self.stop.setEnabled(True)
        system = self.page.session.system
        self.worker = self.page.doctor.pool.start(
            lambda worker: diagnose(system, env, worker.token, worker.emit),
            yielded=self._event, returned=self._finished, errored=self._failed)

    def cancel(self) -> None:
        if self.worker is not None and self.state == "running":
            self._cancelled = True
            self.worker.cancel()

    def _event(self, event) -> None:
        if self.worker is None:
            return
        self.model.update(event)
        self.progress.setRange(0, max(event.total, 1))
        self.progress.setValue(event.done)

    def _finished(self, diagnosis) -> None:
        self.worker = None
        self.model.stop_running()
        self.stop.setEnabled(False)
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
        self.progress.setValue(self.progress.maximum())
        self.state = "cancelled" if self._cancelled else "done"
        self.on_done(diagnosis)

    def _failed(self, error) -> None:
        self.worker = None
        self.model.stop_running()
        self.stop.setEnabled(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.state = "cancelled" if isinstance(error, Cancelled) else "failed"
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
        self.session.diagnosis = None
        self.set_ready(False)
        self.checklist.start(self.session.env)
        self.retranslate()

    def cleanupPage(self) -> None:  # Back: stop checking
        self.checklist.cancel()

    def nextId(self) -> int:
        return FINDINGS

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
        if state == "running":
            self.result.setText(self.tr("Checking… this takes a few seconds (up to a minute when PyTorch is "
                                        "started for real)."))
        elif state == "done":
            self.result.setText(self.tr("Done. Press Next to see what was found."))
        elif state == "cancelled":
            self.result.setText(self.tr("Stopped. Press Back to choose again, or Next to see what was found so far."))
        elif state == "failed":
            self.result.setText(self.tr("The check could not run: {error}").format(error=self.checklist.error))
        else:
            self.result.setText("")

    def _done(self, diagnosis) -> None:
        self.session.diagnosis = diagnosis
        self.set_ready(diagnosis is not None)
        self.retranslate()
