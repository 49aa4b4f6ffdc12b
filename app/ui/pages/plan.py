"""Repair plan: the repairs that fit each problem, the recommended one chosen, each saying exactly what changes
and where, the download size, and whether Windows will ask for permission. A commit page: nothing has changed
until the user presses "Repair now"."""

from __future__ import annotations

import html
from enum import Enum

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QButtonGroup,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
    QWizard,
)

from app.repair.names import repair_name
from app.report.plan_lines import change_lines
from app.ui.failure import failure_words
from app.ui.pages.base import Page, path_breaks, wrapped
from app.ui.session import recommended, repair_options
from app.ui.workers import LatestRun


class PlanState(str, Enum):
    IDLE = "idle"
    PLANNING = "planning"
    READY = "ready"
    FAILED = "failed"


def paths_whole(text: str) -> str:
    """HTML of a text whose Windows paths break only between folders (app/ui/pages/base.py path_breaks)."""
    return html.escape(path_breaks(text))


def guide_html(guide, lang: str) -> str:
    """A guide's steps as a numbered list (their words come from the catalogue, in the reader's language)."""
    return "<ol>" + "".join(f"<li>{paths_whole(step[lang])}</li>" for step in guide.steps) + "</ol>"


def guide_button(guide, lang: str) -> QPushButton:
    """The button that opens the guide's official page in the browser."""
    pushed = QPushButton(guide.link[lang])
    pushed.setObjectName(f"open-{guide.action}")
    pushed.setAccessibleName(guide.link[lang])
    pushed.setToolTip(guide.url[lang])
    pushed.clicked.connect(lambda: QDesktopServices.openUrl(QUrl(guide.url[lang])))
    return pushed


def guide_widget(guide, lang: str) -> QWidget:
    """A guide's steps, then its button."""
    widget = QWidget()
    column = QVBoxLayout(widget)
    column.setContentsMargins(0, 0, 0, 0)
    column.addWidget(wrapped(guide_html(guide, lang), selectable=True))
    row = QHBoxLayout()
    row.addWidget(guide_button(guide, lang))
    row.addStretch(1)
    column.addLayout(row)
    return widget


class PlanPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.setCommitPage(True)
        self.intro = wrapped()
        self.content = QWidget()
        self.content_layout = QVBoxLayout(self.content)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.content)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(scroll, 1)
        self._groups: list[tuple[QButtonGroup, list]] = []
        self.planning = LatestRun()  # Back, then Next: only the newest planning's repairs are offered
        self._state = PlanState.IDLE
        self._error = None

    def initializePage(self) -> None:
        self.set_ready(False)
        self._state = PlanState.PLANNING
        self.session.set_options([], [])
        self.retranslate()
        system, env, diagnosis = self.session.system, self.session.env, self.session.diagnosis
        self.planning.start(self.doctor.pool, lambda worker: repair_options(system, env, diagnosis),
                            returned=self._planned, errored=self._failed)

    def cleanupPage(self) -> None:  # Back: what is still being worked out is not wanted
        self.planning.drop()
        self._state = PlanState.IDLE

    def _planned(self, options) -> None:
        self.session.set_options(options, recommended(options))
        self._state = PlanState.READY
        self.retranslate()

    def _failed(self, error) -> None:
        self._state, self._error = PlanState.FAILED, error
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Choose the repair"))
        self.setSubTitle(self.tr("Nothing has changed yet. Every change below is recorded and can be undone."))
        self.setButtonText(QWizard.WizardButton.CommitButton, self.tr("&Repair now"))
        options = self.session.options
        if self._state == PlanState.PLANNING:
            self.intro.setText(self.tr("Working out the repairs that fit…"))
        elif self._state == PlanState.FAILED:
            self.intro.setText(self.tr("The repairs could not be worked out. {reason} Press Next to finish and save "
                                       "the report.").format(reason=failure_words(self._error, self.session.lang)))
        elif not any(o.possible for o in options):
            self.intro.setText(self.tr("None of the repairs can be done here. The reasons are below. Press Next to "
                                       "finish and save the report."))
        elif not any(o.possible and o.guide is None for o in options):
            self.intro.setText(self.tr("Nothing here can be repaired automatically, but there are steps you can take "
                                       "yourself. They are below, and they stay on the last page. Press Next."))
        else:
            self.intro.setText(self.tr("The recommended repair is chosen for each problem. Press “Repair now” "
                                       "when you are ready."))
        self._fill()

    def _fill(self) -> None:
        while self.content_layout.count():
            widget = self.content_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self._groups = []
        lang = self.session.lang
        chosen = {id(o) for o in [*self.session.chosen, *self.session.guided]}
        problems: dict[int, list] = {}
        for option in self.session.options:
            problems.setdefault(id(option.problem), []).append(option)
        for options in problems.values():
            box = QGroupBox(options[0].problem.lead.text(lang).title)
            inner = QVBoxLayout(box)
            group = QButtonGroup(box)
            for number, option in enumerate(options):
                radio = QRadioButton(repair_name(option.action, self.session.lang))
                radio.setEnabled(option.possible)
                radio.setChecked(id(option) in chosen)
                radio.setAccessibleName(repair_name(option.action, self.session.lang))
                group.addButton(radio, number)
                inner.addWidget(radio)
                if option.guide is not None:
                    detail = guide_widget(option.guide, lang)
                elif option.possible:
                    detail = wrapped(self.plan_html(option.plan, lang), selectable=True)
                else:
                    detail = wrapped(self.tr("Not possible here: {reasons}").format(
                        reasons=" ".join(r[lang] for r in option.refused)), selectable=True)
                    detail.setTextFormat(Qt.TextFormat.PlainText)
                detail.setContentsMargins(24, 0, 0, 8)
                inner.addWidget(detail)
            leave = QRadioButton(self.tr("Leave this as it is"))
            leave.setAccessibleName(self.tr("Leave this problem as it is"))
            leave.setChecked(not any(id(o) in chosen for o in options))
            group.addButton(leave, len(options))
            inner.addWidget(leave)
            group.idToggled.connect(self._chosen)
            self._groups.append((group, options))
            self.content_layout.addWidget(box)
        self.content_layout.addStretch(1)
        self._route()

    def plan_html(self, plan, lang: str) -> str:
        """Exactly what a plan changes and where, its notes, the download, and whether Windows asks permission."""
        items = "".join(f"<li>{paths_whole(line)}</li>" for line in change_lines(plan, lang))
        notes = "".join(f"<p>{paths_whole(note[lang])}</p>" for note in plan.notes)
        extra = []
        if plan.download_bytes:
            extra.append(self.tr("Download: about {size} MB.").format(size=f"{plan.download_bytes / 1e6:.1f}"))
        elif plan.downloads and plan.packages is None:  # pip's packages: its note says where they come from
            extra.append(self.tr("Download: a small file from your package index."))
        if plan.needs_admin:
            extra.append(self.tr("Windows will ask for permission (administrator rights) for this step."))
        else:
            extra.append(self.tr("No administrator rights are needed."))
        return f"<ul>{items}</ul>{notes}<p>{html.escape(' '.join(extra))}</p>"

    def _chosen(self, *_args) -> None:
        chosen = []
        for group, options in self._groups:
            number = group.checkedId()
            if 0 <= number < len(options):
                chosen.append(options[number])
        self.session.choose_repairs(chosen)
        self._route()

    def _route(self) -> None:
        """Next is always possible once planning is over: "Repair now" (a commit) when a repair was chosen, else
        plain Next to Finish."""
        self.setCommitPage(bool(self.session.chosen))
        self.set_ready(self._state in (PlanState.READY, PlanState.FAILED))
