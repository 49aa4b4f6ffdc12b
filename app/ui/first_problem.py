"""`--first-problem-exit`: the wizard presses its own Next, as a user would, from Welcome through the chosen
environment to the live checklist and on to Findings, and exits 0 once the first problem is on screen: a check of
the live checklist painted with its problem (each check shows its result as soon as it ends), or the first problem
card of Findings (1 when neither comes within the time limit). It waits, as a person must, for each page to be on
screen and complete before it presses Next, so the page changes, the workers and the probes are the ones a user's
clicks run (the checks begin while Welcome is shown, as for a person).

The times of each step go to standard error, one line: where the time to the first problem goes. They count from
the process's creation where the system tells it (psutil), so the first one is what Python and the imports took."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget, QWizard

from app.probes.finding import BLOCKER, WARNING
from app.ui.models import FAILED, ROLE_ITEM, WARNED
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, WELCOME
from app.ui.wizard import DoctorWizard

TIME_LIMIT_S = 600.0  # the live check's own budget is 180 s; a wizard that has not got there by this never will
PAGE_NAMES = {WELCOME: "welcome", ENVIRONMENTS: "environments", DIAGNOSE: "diagnose", FINDINGS: "findings"}
PROBLEM_SEVERITIES = (BLOCKER, WARNING)
PROBLEM_ROWS = (FAILED, WARNED)  # a check of the checklist that found a problem (a blocker or a warning)


def process_age() -> Optional[float]:
    """Seconds since this process was created (Wine, the bootloader, Python, the imports), or None if unknown."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return max(0.0, time.time() - psutil.Process().create_time())
    except (OSError, psutil.Error):
        return None


class FirstProblemRun(QObject):
    """Drives `wizard` to its first problem card, then ends the event loop with 0; with 1 when the diagnosis
    finds no problem, or when the card has not appeared after `limit_s` seconds. `started`: perf_counter() at
    the start of the wizard's code (application.run)."""

    def __init__(self, wizard: DoctorWizard, started: float, limit_s: float = TIME_LIMIT_S,
                 report: Optional[TextIO] = None) -> None:
        super().__init__(wizard)
        self.wizard = wizard
        self.started = started
        self.report = report if report is not None else sys.stderr  # None when started without a console
        self.code: Optional[int] = None
        self.marks: list[tuple[str, float]] = []
        now, age = time.perf_counter(), process_age()
        if age is not None:  # times count from the process's creation: the first is Python's start and the imports
            code_started = age - (now - started)
            self.started = started - code_started
            self.marks.append(("wizard code started", code_started))
        self._mark("wizard made")
        self._painted: set[int] = set()  # the pages painted since they became the current one
        self._findings = wizard.pages[FINDINGS]
        wizard.currentIdChanged.connect(self._page_changed)
        for page in wizard.pages.values():
            page.installEventFilter(self)
            page.completeChanged.connect(self._soon)
        self._findings.cards.installEventFilter(self)  # each card, as it is added (ChildAdded)
        self._checklist = wizard.pages[DIAGNOSE].checklist.view
        self._checklist.viewport().installEventFilter(self)
        self._checklist.model().modelReset.connect(self._checks_begun)  # a run of the checks starts afresh
        self._limit = QTimer(self, singleShot=True, interval=int(limit_s * 1000))
        self._limit.timeout.connect(self._too_late)
        self._limit.start()

    def _now(self) -> float:
        return time.perf_counter() - self.started

    def _mark(self, what: str) -> None:
        self.marks.append((what, self._now()))

    # -- what the driver watches ---------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.ChildAdded and watched is self._findings.cards:
            child = event.child()
            if isinstance(child, QWidget):
                child.installEventFilter(self)
        elif kind == QEvent.Type.Paint:
            if watched is self.wizard.currentPage() and self.wizard.currentId() not in self._painted:
                self._painted.add(self.wizard.currentId())
                self._mark(f"{PAGE_NAMES.get(self.wizard.currentId(), self.wizard.currentId())} painted")
                self._soon()
            elif self._is_first_problem_card(watched):
                self._mark("first problem card painted")
                self._finish(0)
            elif self._is_checklist_with_a_problem(watched):
                self._mark("first problem on the checklist painted")
                self._finish(0)
        return False

    def _checks_begun(self) -> None:
        if not any(what == "checks begun" for what, _ in self.marks):
            self._mark("checks begun")

    def _is_checklist_with_a_problem(self, widget: QObject) -> bool:
        """The live checklist, on screen, with a check that found a problem (its row says it in plain words)."""
        if self.code is not None or self.wizard.currentId() != DIAGNOSE or widget is not self._checklist.viewport():
            return False
        model = self._checklist.model()
        return widget.isVisible() and any(model.data(model.index(row, 0), ROLE_ITEM) in PROBLEM_ROWS
                                          for row in range(model.rowCount()))

    def _is_first_problem_card(self, widget: QObject) -> bool:
        """The top card of Findings, on screen, while the diagnosis has a problem: cards go by severity, so the
        top one is then a problem (blocker or warning)."""
        if self.code is not None or self.wizard.currentId() != FINDINGS or not isinstance(widget, QWidget):
            return False
        top = self._findings.cards_layout.itemAt(0)
        return top is not None and top.widget() is widget and widget.isVisible() and bool(self._problems())

    def _problems(self) -> list:
        return [p for p in self.wizard.session.problems() if p.severity in PROBLEM_SEVERITIES]

    def _page_changed(self, page_id: int) -> None:
        self._mark(f"{PAGE_NAMES.get(page_id, page_id)} shown")
        if page_id == FINDINGS and self.wizard.session.diagnosis is not None and not self._problems():
            self._finish(1, "the diagnosis found no problem, so no problem card will appear")

    # -- pressing Next ---------------------------------------------------------------------------------------
    def _soon(self) -> None:
        """Never from inside a paint or a page's signal: a person's click comes at a later turn of the loop."""
        QTimer.singleShot(0, self._step)

    def _step(self) -> None:
        page_id, page = self.wizard.currentId(), self.wizard.currentPage()
        if self.code is not None or page is None or page_id == FINDINGS:
            return
        if page_id not in self._painted or not page.isComplete():
            return  # not on screen yet, or still working: a person waits too
        which = QWizard.WizardButton.CommitButton if page.isCommitPage() else QWizard.WizardButton.NextButton
        pressed = self.wizard.button(which)
        if not (pressed.isVisible() and pressed.isEnabled()):
            return
        if page_id == DIAGNOSE:
            self._mark("checks done")
        pressed.click()

    # -- the end -------------------------------------------------------------------------------------------
    def _too_late(self) -> None:
        checklist = self.wizard.pages[DIAGNOSE].checklist
        where = PAGE_NAMES.get(self.wizard.currentId(), self.wizard.currentId())
        self._finish(1, f"no problem card after {self._limit.interval() / 1000:g} s (on the {where} page; the "
                        f"checks: {checklist.state.value})")

    def _finish(self, code: int, why: str = "") -> None:
        if self.code is not None:
            return
        self.code = code
        self._limit.stop()
        if self.report is not None:
            steps = ", ".join(f"{what} {at:.3f}" for what, at in self.marks)
            self.report.write(f"first-problem-exit: {why or 'first problem on screen'} after "
                              f"{self._now():.3f} s ({steps})\n")
            self.report.flush()
        QApplication.exit(code)
