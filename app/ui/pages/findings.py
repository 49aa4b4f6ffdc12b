"""Findings: one card per problem, by severity, in plain words ("What this means", "How we can fix it"), then
the technical details (the dependency tree), Copy, and Save report…"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.probes.base import Program
from app.probes.causes import RUNTIME_COPY
from app.probes.finding import BLOCKER, INFO
from app.ui.icons import SEVERITY_ICON
from app.ui.pages.base import Page, button, card, icon_label, named, wrapped
from app.ui.pages.tree import DependencyTreePanel, TechnicalDetailsWindow
from app.ui.session import DEMO, program_choices


class FindingsPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.headline = wrapped(bold=True, name="headline")
        self.cards = QWidget()
        self.cards_layout = QVBoxLayout(self.cards)
        self.cards_layout.addStretch(1)
        # its height comes from the cards' heights for the width they have, not from each label's minimum (the
        # height of its text at a third of the width), so the scroll bar appears only when the cards need it
        self.cards.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.cards)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll = scroll
        self.details = button("details")
        self.details.setCheckable(True)
        self.details.toggled.connect(self._toggle_details)
        self.copy = button("copy")
        self.copy.clicked.connect(self._copy)
        self.save = button("save")
        self.save.clicked.connect(self.ask_to_save_report)
        self.tree = DependencyTreePanel()
        self.details_window = TechnicalDetailsWindow(self.tree, self)
        self.details_window.finished.connect(lambda _: self.details.setChecked(False))
        self.saved = self.message_label = wrapped(name="saved")
        row = QHBoxLayout()
        row.addWidget(self.details)
        row.addStretch(1)
        row.addWidget(self.copy)
        row.addWidget(self.save)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.saved)
        layout.addLayout(row)
        self._graph = None

    def initializePage(self) -> None:
        self._message = lambda: ""
        self.details.setChecked(False)
        diagnosis = self.session.diagnosis
        graph = diagnosis.graphs.get(self.session.system.windows_path(self.session.env.python)) if diagnosis else None
        if graph is None and diagnosis is not None and diagnosis.graphs:
            graph = next(iter(diagnosis.graphs.values()))
        self.details.setEnabled(graph is not None)
        self._graph = graph  # the tree is made when first asked for: most readers never open it
        self.set_ready(True)
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("What we found"))
        self.setSubTitle(self.tr("Problems first. Technical readers can open the dependency tree."))
        self._name_details_button()
        self.details_window.retranslate()
        named(self.copy, self.tr("&Copy"), self.tr("Copy the report"))
        named(self.save, self.tr("Sa&ve report…"), self.tr("Save the report to a file"))
        self.saved.setText(self._message())
        self.tree.retranslate()
        self._fill_cards()

    def _fill_cards(self) -> None:
        while self.cards_layout.count() > 1:
            widget = self.cards_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()  # gone now, not at the next turn of the event loop
                widget.deleteLater()
        if self.session.diagnosis is None:
            return
        problems = [p for p in self.session.problems() if p.severity != INFO or p.lead.code == "import-ok"]
        notes = [p for p in self.session.problems() if p not in problems]
        blockers = [p for p in problems if p.severity == BLOCKER]
        if not self.session.diagnosis.complete:
            self.headline.setText(self.tr("Some checks could not finish or could not see everything, so this list "
                                          "may be incomplete."))
        elif blockers:
            self.headline.setText(self.tr("%n problem(s) stop PyTorch from loading.", "", len(blockers)))
        elif problems:
            self.headline.setText(self.tr("PyTorch should load. There are warnings worth a look."))
        else:
            self.headline.setText(self.tr("No problems found: PyTorch should load."))
        for number, problem in enumerate(problems + notes):
            self.cards_layout.insertWidget(number, self._card(problem))

    def _card(self, problem) -> QWidget:
        lang = self.session.lang
        text = problem.lead.text(lang)
        frame = card()
        row = QHBoxLayout(frame)
        row.addWidget(icon_label(SEVERITY_ICON.get(problem.severity, "info")))
        column = QVBoxLayout()
        column.addWidget(wrapped(text.title, bold=True, selectable=True))
        if problem.contradicted:
            column.addWidget(wrapped(self.tr("PyTorch started anyway when it was tried for real, so this may not "
                                             "matter on this computer."), selectable=True))
        column.addWidget(wrapped(self.tr("<b>What this means:</b> {text}").format(
            text=html.escape(self._explanation(problem, text))), selectable=True))
        if problem.severity != INFO:
            column.addWidget(wrapped(self.tr("<b>How we can fix it:</b> {text}").format(
                text=html.escape(text.action)), selectable=True))
        self._ask_program(problem, column)
        row.addLayout(column, 1)
        frame.setAccessibleName(text.title)
        return frame

    def _ask_program(self, problem, column: QVBoxLayout) -> None:
        """An old runtime copy inside a package matters only in a program that imports that package before
        torch: ask which program shows the error and check again as it starts; once said, offer the plain check."""
        said = self.session.program
        choices = program_choices(problem)
        if not choices and not (said.app or said.imports_first) or problem.lead.code != RUNTIME_COPY:
            return
        row = QHBoxLayout()
        again = QPushButton()
        if choices:
            row.addWidget(wrapped(self.tr("Does PyTorch fail only inside one program? Say which one:")), 1)
            which = QComboBox()
            for program in choices:
                which.addItem(self._program_words(program), program)
            which.setAccessibleName(self.tr("The program that shows the error"))
            row.addWidget(which)
            named(again, self.tr("Check &again as it starts"), self.tr("Check again as that program starts"))
            again.clicked.connect(lambda: self.doctor.check_again(which.currentData()))
        else:
            checked = (self.tr("Checked as {program} starts.").format(program=said.app) if said.app else
                       self.tr("Checked with {modules} imported before PyTorch, as your program does.").format(
                           modules=", ".join(said.imports_first)))
            row.addWidget(wrapped(checked), 1)
            named(again, self.tr("Check PyTorch &alone"), self.tr("Check again with PyTorch alone"))
            again.clicked.connect(lambda: self.doctor.check_again(Program()))
        row.addWidget(again)
        column.addLayout(row)

    def _program_words(self, program: Program) -> str:
        if program.app:
            return program.app
        return self.tr("a program that imports {modules} before PyTorch").format(
            modules=", ".join(program.imports_first))

    def _explanation(self, problem, text) -> str:
        if problem.lead.code == "check-skipped" and self.session.source == DEMO:  # not "a copied Windows drive"
            return self.tr("The demo computer is a built-in example, not a real Windows computer, so PyTorch cannot "
                           "be started on it. On your own computer this check starts PyTorch for real.")
        return text.explanation

    def _toggle_details(self, shown: bool) -> None:
        if shown and self._graph is not None and (self.tree.model is None or self.tree.model.graph is not self._graph):
            self.tree.show_graph(self.session, self._graph)
        self.details_window.setVisible(shown)
        self._name_details_button()

    def _name_details_button(self) -> None:
        """The button says what it does now: show the window, or close it."""
        if self.details.isChecked():
            named(self.details, self.tr("Hide &technical details"), self.tr("Close the window with the dependency "
                                                                            "tree"))
        else:
            named(self.details, self.tr("Show &technical details"), self.tr("Show the dependency tree in a window "
                                                                            "of its own"))

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """Another page, or the wizard closed: the details window goes with this page (looked at once the event
        loop turns: a new title hides and shows the page at once)."""
        QTimer.singleShot(0, lambda: None if self.isVisible() else self.details.setChecked(False))
        super().hideEvent(event)

    # -- the report ----------------------------------------------------------------------------------------
    def _copy(self) -> None:
        """The text report, made in a worker (it reads the log), then put on the clipboard."""
        session = self.session
        self.copy.setEnabled(False)
        self.doctor.pool.start(lambda worker: session.report_text("text", session.diagnosis),
                               returned=self._copied, finished=lambda: self.copy.setEnabled(True),
                               doing=self.tr("The report could not be made. Try Save report… instead."))

    def _copied(self, text: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.said(lambda: self.tr("The report is copied: paste it into a forum post or a message."))
