"""The technical details: the dependency tree (lazy model), "problems only", a search field, and a detail pane
with the full path, version, the folders searched in order, the rule that found the file, the missing
functions, and which copy PyTorch's own process really loaded."""

from __future__ import annotations

import html
import ntpath
from typing import Optional

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QSplitter,
    QTextBrowser,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.engine.graph import DependencyGraph
from app.engine.pe import ExportTable, ImportedFunction
from app.i18n import words
from app.probes.evidence import Replayed
from app.ui.models import DependencyTreeModel, TreeFilter, TreeItem
from app.ui.pages.base import named


class DependencyTreePanel(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.problems_only = QCheckBox()
        self.search = QLineEdit()
        self.search.setClearButtonEnabled(True)
        self.view = QTreeView()
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.filter = TreeFilter()
        self.view.setModel(self.filter)
        self.problems_only.toggled.connect(self._filter)
        self.search.textChanged.connect(self._filter)
        self.view.selectionModel().currentChanged.connect(lambda current, previous: self.show_detail())
        top = QHBoxLayout()
        top.addWidget(self.problems_only)
        top.addWidget(self.search, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.view)
        splitter.addWidget(self.detail)
        splitter.setSizes([220, 180])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        self.model: Optional[DependencyTreeModel] = None
        self.session = None
        self._drawn_in = ""

    def show_graph(self, session, graph: DependencyGraph) -> None:
        self.session = session
        self.model = DependencyTreeModel(graph, session.system.windows_path, lambda: session.lang)
        self._drawn_in = session.lang
        self.filter.setSourceModel(self.model)
        header = self.view.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # sizing to contents reads every row
        header.setStretchLastSection(True)
        width = self.view.fontMetrics().horizontalAdvance("M")
        self.view.setColumnWidth(0, 22 * width)
        self.view.setColumnWidth(1, 20 * width)
        self.problems_only.blockSignals(True)
        self.problems_only.setChecked(True)
        self.problems_only.blockSignals(False)
        self.retranslate()
        QTimer.singleShot(0, self._first_filter)  # the window redraws between showing the tree and filtering it

    def _first_filter(self) -> None:
        self._filter()
        first = self.filter.index(0, 0)
        if first.isValid() and not self.view.currentIndex().isValid():  # the reader may have picked one already
            self.view.setCurrentIndex(first)

    def retranslate(self) -> None:
        named(self.problems_only, self.tr("&Problems only"), self.tr("Show only DLLs with a problem"))
        self.search.setPlaceholderText(self.tr("Search for a DLL…"))
        self.search.setAccessibleName(self.tr("Search for a DLL"))
        self.view.setAccessibleName(self.tr("Dependency tree"))
        self.detail.setAccessibleName(self.tr("Details of the selected DLL"))
        if self.model is not None and self._drawn_in != self.session.lang:  # a new language: new words
            self._drawn_in = self.session.lang
            self.model.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, self.model.COLUMNS - 1)
            self.model.layoutAboutToBeChanged.emit()  # the words change, not the rows
            self.model.layoutChanged.emit()
        self.show_detail()

    def _filter(self) -> None:
        self.filter.set_filter(self.problems_only.isChecked(), self.search.text())
        if self.problems_only.isChecked() or self.search.text().strip():
            self.view.expandAll()  # what the filter kept is what the reader wants to see

    def current_item(self) -> Optional[TreeItem]:
        index = self.view.currentIndex()
        return self.model.item(self.filter.mapToSource(index)) if index.isValid() and self.model else None

    def show_detail(self) -> None:
        item = self.current_item()
        self.detail.setHtml(self.detail_html(item) if item is not None else "")

    def detail_html(self, item: TreeItem) -> str:
        """The detail pane of one place in the tree."""
        model, session = self.model, self.session
        lang = session.lang
        node, edge = item.node, item.edge
        display = model.display
        rows: list[tuple[str, str]] = []
        rows.append((self.tr("Status"), model.status_words()[model.status(item)]))
        rows.append((self.tr("Full path"), display(node.path) if node.path else self.tr("not found")))
        if node.info is not None:
            rows.append((self.tr("File version"), node.info.file_version or self.tr("unknown")))
            rows.append((self.tr("Type"), node.info.cpu_name))
        if node.resolution is not None:
            rows.append((self.tr("How it was found"), model.rule_words(item) or self.tr(
                "It was not found: none of the folders below holds it")))
            if node.resolution.api_set_host:
                rows.append((self.tr("Stands for"), node.resolution.api_set_host))
        if edge is not None:
            rows.append((self.tr("Needed by"), edge.source.name))
        reason = node.shown_reason(display)
        if reason:
            rows.append((self.tr("Why"), reason))
        exports = node.info.exports if node.info is not None else None
        lacking = [m.function for m in node.missing_exports if edge is None or m.importer == edge.source.name]
        if lacking:
            rows.append((self.tr("Functions that are missing"), self.function_names(lacking, exports)))
        if edge is not None and node.path is None and edge.functions:
            rows.append((self.tr("Functions {importer} needs from it").format(importer=edge.source.name),
                         self.function_names(edge.functions, exports)))
        loaded = self._really_loaded(session, node)
        if loaded:
            rows.append((self.tr("What PyTorch really loaded"), loaded))
        body = "".join(f"<tr><td valign='top'><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>"
                       for k, v in rows)
        searched = ""
        if node.resolution is not None and node.resolution.tried:
            folders = [f"<li>{html.escape(words(f'tree.rule.{rule}', lang))}: {html.escape(display(folder))}</li>"
                       for rule, folder in node.resolution.tried]
            title = self.tr("Folders searched, in order")
            searched = f"<p><b>{html.escape(title)}</b></p><ol>{''.join(folders)}</ol>"
        return f"<h3>{html.escape(model.name(item))}</h3><table cellspacing='4'>{body}</table>{searched}"

    def function_names(self, functions, exports: Optional[ExportTable], shown: int = 40) -> str:
        """Functions by name; one asked for by number is "ordinal 703", with its name where the export table has
        one. The first `shown` of them, then how many more."""
        def one(function: ImportedFunction) -> str:
            if function.name is not None:
                return function.name
            name = exports.name_of(function.ordinal) if exports is not None else None
            return (self.tr("{name} (ordinal {number})").format(name=name, number=function.ordinal) if name else
                    self.tr("ordinal {number}").format(number=function.ordinal))

        text = ", ".join(one(function) for function in functions[:shown])
        more = len(functions) - shown
        return text + (" " + self.tr("and {count} more").format(count=more) if more > 0 else "")

    def _really_loaded(self, session, node) -> Optional[str]:
        """From the live replay: the copy of this DLL PyTorch's process had loaded (issue: Process Monitor's
        evidence), or None when PyTorch was not started."""
        diagnosis = session.after or session.diagnosis
        if diagnosis is None:
            return None
        for finding in diagnosis.findings:
            if finding.code not in ("import-ok", "import-failed"):
                continue
            replayed = Replayed.of(finding)
            loaded = [str(p) for p in replayed.loaded]
            if not loaded:
                return None
            same = [p for p in loaded if ntpath.basename(p).lower() == node.name.lower()]
            copies = {c["dll"].lower(): c for c in replayed.runtime_copies}
            copy = copies.get(node.name.lower())
            if copy is not None:
                version = copy.get("version") or self.tr("unknown")
                if copy.get("agrees") is False:
                    return self.tr("{path} (version {version}), not the copy predicted here ({predicted})").format(
                        path=copy["path"], version=version, predicted=copy.get("predicted"))
                return self.tr("{path} (version {version})").format(path=copy["path"], version=version)
            if same:
                return same[0]
            return self.tr("not loaded by PyTorch's process")
        return None


class TechnicalDetailsWindow(QDialog):
    """The dependency tree in a window of its own, as large as the screen allows: the wizard's 800×600 leaves it
    a few rows. Closing it is the same as Hide technical details."""

    def __init__(self, panel: DependencyTreePanel, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("technical-details")
        self.setSizeGripEnabled(True)
        layout = QVBoxLayout(self)
        layout.addWidget(panel)
        self._sized = False

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The first time: as large as the screen allows up to 1100×800, never smaller than the wizard; then as the
        reader leaves it."""
        if not self._sized:
            self._sized = True
            screen, wizard = self.screen().availableGeometry(), self.parentWidget().window().size()
            self.resize(max(wizard.width(), min(1100, screen.width())),
                        max(wizard.height(), min(800, screen.height())))
        super().showEvent(event)

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Technical details: the DLLs PyTorch loads"))
