"""Item models between the session and the views: found environments, the live checklist of checks, and the
dependency tree (read lazily from the graph, one level at a time, as the view asks)."""

from __future__ import annotations

import ntpath
from enum import Enum
from typing import Any, Callable, Optional

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractListModel,
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor

from app.engine.graph import (
    CHILDREN_ERROR,
    CORRUPT,
    MISSING,
    MISSING_DELAY,
    MISSING_EXPORT,
    OK,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    DependencyGraph,
    Edge,
    Node,
)
from app.engine.loader import PATH_FALLBACK
from app.inventory.environment import PythonEnvironment
from app.probes.finding import BLOCKER, INFO, SEVERITY_ORDER, WARNING, Finding
from app.probes.runner import FAILED as PROBE_FAILED
from app.probes.runner import ProbeEvent
from app.ui.icons import icon

Index = QModelIndex | QPersistentModelIndex
NO_PARENT = QModelIndex()  # Qt's default argument: the invisible root
ROLE_ITEM = Qt.ItemDataRole.UserRole + 1


# ---------------------------------------------------------------------------------------------- environments
class EnvironmentModel(QAbstractTableModel):
    """The environments discovery streams in: app, location, Python, PyTorch, and a status badge."""

    COLUMNS = 4

    def __init__(self, display: Callable[[Any], str] = str) -> None:
        super().__init__()
        self.envs: list[PythonEnvironment] = []
        self.display = display

    def add(self, env: PythonEnvironment) -> None:
        self.beginInsertRows(QModelIndex(), len(self.envs), len(self.envs))
        self.envs.append(env)
        self.endInsertRows()

    def clear(self) -> None:
        self.beginResetModel()
        self.envs = []
        self.endResetModel()

    def rowCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.envs)

    def columnCount(self, parent: Index = NO_PARENT) -> int:
        return self.COLUMNS

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return (self.tr("Environment"), self.tr("Python"), self.tr("PyTorch"), self.tr("Location"))[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        env = self.envs[index.row()]
        column = index.column()
        if role == ROLE_ITEM:
            return env
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                if env.app or not env.is_venv:
                    return env.app or self.tr("Python")
                return self.tr("{folder} (virtual environment)").format(folder=env.folder_name)
            if column == 1:
                return env.python_version or self.tr("unknown")
            if column == 2:
                if env.torch is None:
                    return self.tr("No PyTorch")
                return self.tr("{version} ({build})").format(version=env.torch.version or self.tr("unknown"),
                                                         build=env.torch.build)
            return self.display(env.exec_prefix)
        if role == Qt.ItemDataRole.DecorationRole and column == 2:
            return icon("info" if env.torch is not None else "waiting")
        if role == Qt.ItemDataRole.ToolTipRole and column == 2:  # what its icon says
            return (self.tr("PyTorch is installed here: this installation can be checked.") if env.torch is not None
                    else self.tr("No PyTorch here: there is nothing to check in this installation."))
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.display(env.python)
        if role == Qt.ItemDataRole.ForegroundRole and env.torch is None:
            return QBrush(QColor("#7a8796"))
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        env = self.envs[index.row()]
        base = Qt.ItemFlag.ItemIsSelectable if env.torch is not None else Qt.ItemFlag.NoItemFlags
        return base | Qt.ItemFlag.ItemIsEnabled


# ---------------------------------------------------------------------------------------------- checklist
class CheckRow(str, Enum):
    """One check's row in the checklist; the value is its icon's name."""

    RUNNING = "running"
    PASSED = "ok"
    WARNED = "warning"
    FAILED = "problem"
    CRASHED = "unknown"  # the check itself failed, or did not finish
    CONFIRMS = "info"  # what it found is evidence of a cause another check names: one cause, one red cross


RUNNING, PASSED, WARNED, FAILED, CRASHED, CONFIRMS = CheckRow

# A check's label says what it is doing ("Checking the paging file…"); once it is done, its row says it was done.
FINISHED_VERBS = {"en": (("Checking ", "Checked "), ("Looking ", "Looked "), ("Starting ", "Started ")),
                  "zh_CN": (("正在", "已"),)}


def finished_label(label: str, lang: str) -> str:
    """A check's label as done: "Checking the paging file" -> "Checked the paging file"."""
    for running, done in FINISHED_VERBS.get(lang, ()):
        if label.startswith(running):
            return done + label[len(running):]
    return label


class ChecklistModel(QAbstractListModel):
    """One row per check (and environment) of a running diagnosis: running, then ok, warning or problem, with
    its one-line result in the reader's language."""

    def __init__(self, lang: Callable[[], str]) -> None:
        super().__init__()
        self.lang = lang
        self.rows: list[dict] = []
        self._index: dict[tuple, int] = {}

    def clear(self) -> None:
        self.beginResetModel()
        self.rows, self._index = [], {}
        self.endResetModel()

    def update(self, event: ProbeEvent) -> None:
        key = (event.probe.id, event.environment)
        if key not in self._index:
            self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows))
            self._index[key] = len(self.rows)
            self.rows.append({"key": key, "probe": event.probe, "state": RUNNING, "findings": ()})
            self.endInsertRows()
        row = self.rows[self._index[key]]
        if event.state != "started":
            row["findings"] = event.findings
            severities = {f.severity for f in event.findings}
            crashed = event.state == PROBE_FAILED or any(f.code == "check-failed" for f in event.findings)
            row["state"] = (CRASHED if crashed
                            else FAILED if BLOCKER in severities else WARNED if WARNING in severities else PASSED)
        index = self.index(self._index[key])
        self.dataChanged.emit(index, index)

    def stop_running(self) -> None:
        """The diagnosis ended (finished or cancelled): what was still running did not finish."""
        for number, row in enumerate(self.rows):
            if row["state"] == RUNNING:
                row["state"] = CRASHED
                self.dataChanged.emit(self.index(number), self.index(number))

    def settle(self, problems) -> None:
        """After the checks: a check whose problems are all evidence of a cause that another check names (the
        OpenMP file and the known-bad build confirm the missing OpenMP runtime) says so, instead of a red cross
        of its own for the same cause."""
        evidence_of = {id(f): p for p in problems for f in p.evidence}
        for number, row in enumerate(self.rows):
            blockers = [f for f in row["findings"] if f.severity == BLOCKER]
            if row["state"] == FAILED and blockers and all(id(f) in evidence_of for f in blockers):
                row["state"], row["confirms"] = CONFIRMS, evidence_of[id(blockers[0])].lead
                self.dataChanged.emit(self.index(number), self.index(number))
        for problem in problems:
            self._cause_first(problem.lead)

    def _cause_first(self, lead) -> None:
        """The row that names a cause moves up to just above the first row that confirms it; the rest keep their
        order (a row that says "confirms the same cause" never stands before the cause)."""
        cause = next((n for n, row in enumerate(self.rows) if any(f is lead for f in row["findings"])), None)
        first = next((n for n, row in enumerate(self.rows) if row.get("confirms") is lead), None)
        if cause is None or first is None or cause < first:
            return
        self.beginMoveRows(QModelIndex(), cause, cause, QModelIndex(), first)
        self.rows.insert(first, self.rows.pop(cause))
        self._index = {row["key"]: n for n, row in enumerate(self.rows)}
        self.endMoveRows()

    def refresh(self) -> None:
        if self.rows:
            self.dataChanged.emit(self.index(0), self.index(len(self.rows) - 1))

    def rowCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def _result(self, row: dict) -> str:
        lang = self.lang()
        if row["state"] == RUNNING:
            return self.tr("checking…")
        if row["state"] == CRASHED and not row["findings"]:
            return self.tr("did not finish")
        if row["state"] == CONFIRMS:
            return self.tr("confirms the same cause: {title}").format(title=row["confirms"].text(lang).title)
        worst = _worst(row["findings"])
        if worst is None or worst.severity == INFO and row["state"] == PASSED and worst.code != "import-ok":
            return self.tr("no problems found")
        return worst.text(lang).title

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.ToolTipRole):
            check = row["probe"].label[self.lang()].rstrip(".…。 ")
            if row["state"] != RUNNING:
                check = finished_label(check, self.lang())
            return self.tr("{check} — {result}").format(check=check, result=self._result(row))
        if role == Qt.ItemDataRole.DecorationRole:
            return icon(row["state"].value)
        if role == ROLE_ITEM:
            return row["state"]
        return None


def _worst(findings) -> Optional[Finding]:
    order = SEVERITY_ORDER
    return min(findings, key=lambda f: order.get(f.severity, 3), default=None)


# ---------------------------------------------------------------------------------------------- dependency tree
STATUS_ICON = {OK: "ok", MISSING: "problem", MISSING_DELAY: "warning", WRONG_ARCHITECTURE: "problem",
               MISSING_EXPORT: "problem", CORRUPT: "problem", UNREADABLE: "unknown", CHILDREN_ERROR: "warning",
               PATH_FALLBACK: "path"}
STATUS_COLOUR = {MISSING: "#c62828", WRONG_ARCHITECTURE: "#c62828", MISSING_EXPORT: "#c62828",
                 CORRUPT: "#c62828", MISSING_DELAY: "#a86b00", CHILDREN_ERROR: "#a86b00", UNREADABLE: "#5f6b78",
                 PATH_FALLBACK: "#7b2f9e"}


TREE_ROLES = frozenset({Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.DecorationRole,
                        Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole, ROLE_ITEM})
STATUS_BRUSH = {status: QBrush(QColor(colour)) for status, colour in STATUS_COLOUR.items()}


class TreeItem:
    """A place in the tree: a node reached through an edge (None for a root). Children are made when asked."""

    __slots__ = ("node", "edge", "parent", "row", "_children", "expands")

    def __init__(self, node: Node, edge: Optional[Edge], parent: Optional[TreeItem], row: int,
                 expands: bool) -> None:
        self.node, self.edge, self.parent, self.row, self.expands = node, edge, parent, row, expands
        self._children: Optional[list[TreeItem]] = None


class DependencyTreeModel(QAbstractItemModel):
    """The graph as Dependency Walker shows it: each DLL's dependencies below it. A DLL's dependencies are
    listed under its first place in a breadth-first walk from the roots; its other places are leaves, so the
    tree is as large as the graph, not as the number of paths through it (and cycles end)."""

    COLUMNS = 3

    def __init__(self, graph: DependencyGraph, display: Callable[[Any], str], lang: Callable[[], str]) -> None:
        super().__init__()
        self.graph, self.display, self.lang = graph, display, lang
        self.statuses = graph.statuses()
        self.first: dict[int, Optional[Edge]] = {}
        queue = list(graph.roots)
        for root in graph.roots:
            self.first[root.id] = None
        while queue:  # the graph is already read (the diagnosis walked it); this only orders it
            node = queue.pop(0)
            if node.is_leaf:
                continue
            for edge in graph.children(node):
                if edge.target.id not in self.first:
                    self.first[edge.target.id] = edge
                    queue.append(edge.target)
        self.roots = [TreeItem(root, None, None, row, True) for row, root in enumerate(graph.roots)]
        self._words: tuple[str, dict[str, str]] = ("", {})
        self.items_made = len(self.roots)

    # -- the tree --------------------------------------------------------------------------------------
    def _children(self, item: TreeItem) -> list[TreeItem]:
        if item._children is None:
            edges = [] if item.node.is_leaf or not item.expands else self.graph.children(item.node)
            item._children = [TreeItem(e.target, e, item, row, self.first.get(e.target.id) is e)
                              for row, e in enumerate(edges)]
            self.items_made += len(item._children)
        return item._children

    def item(self, index: Index) -> Optional[TreeItem]:
        return index.internalPointer() if index.isValid() else None

    def index(self, row: int, column: int, parent: Index = NO_PARENT) -> QModelIndex:
        items = self._children(self.item(parent)) if parent.isValid() else self.roots
        if 0 <= row < len(items) and 0 <= column < self.COLUMNS:
            return self.createIndex(row, column, items[row])
        return QModelIndex()

    def parent(self, index: Index = NO_PARENT) -> QModelIndex:  # type: ignore[override]
        item = self.item(index)
        if item is None or item.parent is None:
            return QModelIndex()
        return self.createIndex(item.parent.row, 0, item.parent)

    def rowCount(self, parent: Index = NO_PARENT) -> int:
        if parent.column() > 0:
            return 0
        return len(self._children(self.item(parent))) if parent.isValid() else len(self.roots)

    def hasChildren(self, parent: Index = NO_PARENT) -> bool:
        item = self.item(parent)
        if item is None:
            return bool(self.roots)
        return item.expands and not item.node.is_leaf and bool(item.node.edges or not item.node.expanded)

    def columnCount(self, parent: Index = NO_PARENT) -> int:
        return self.COLUMNS

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return (self.tr("DLL"), self.tr("Status"), self.tr("Found by"))[section]
        return None

    # -- what each place shows --------------------------------------------------------------------------
    def status_words(self) -> dict[str, str]:
        lang = self.lang()
        if self._words[0] != lang:  # asked for every visible cell: made once per language
            self._words = (lang, self._status_words())
        return self._words[1]

    def _status_words(self) -> dict[str, str]:
        return {OK: self.tr("found"), MISSING: self.tr("missing"),
                MISSING_DELAY: self.tr("missing (needed only later)"),
                WRONG_ARCHITECTURE: self.tr("wrong type (32-bit / 64-bit)"),
                MISSING_EXPORT: self.tr("missing functions"), CORRUPT: self.tr("damaged"),
                UNREADABLE: self.tr("could not be read"), CHILDREN_ERROR: self.tr("something it needs cannot load"),
                PATH_FALLBACK: self.tr("found only through PATH")}

    def status(self, item: TreeItem) -> str:
        status = self.statuses[item.node]
        resolution = item.node.resolution
        if status == OK and resolution is not None and resolution.rule == PATH_FALLBACK:
            return PATH_FALLBACK
        return status

    def name(self, item: TreeItem) -> str:
        return item.edge.name if item.edge is not None else item.node.name

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if role not in TREE_ROLES:  # most of what a view asks (size hints, fonts...) is not ours: answer fast
            return None
        item = self.item(index)
        if item is None:
            return None
        if role == ROLE_ITEM:
            return item
        status = self.status(item)
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            if column == 0:
                return self.name(item)
            if column == 1:
                return self.status_words()[status]
            return self.rule_words(item)
        if role == Qt.ItemDataRole.DecorationRole and column == 0:
            return icon(STATUS_ICON.get(status, "ok"))
        if role == Qt.ItemDataRole.ForegroundRole and status in STATUS_COLOUR:
            return STATUS_BRUSH[status]
        if role == Qt.ItemDataRole.ToolTipRole and item.node.path is not None:
            return self.display(item.node.path)
        return None

    def rule_words(self, item: TreeItem) -> str:
        from app.i18n import words

        resolution = item.node.resolution
        if resolution is None:
            return self.tr("loaded by PyTorch")
        if resolution.rule is None:
            return ""
        text = words(f"tree.rule.{resolution.rule}", self.lang())
        return text + (self.tr(" (delay-loaded)") if item.edge is not None and item.edge.kind == "delay" else "")


class TreeFilter(QSortFilterProxyModel):
    """"Problems only" and the search field: a place stays when it matches, or something below it does."""

    def __init__(self) -> None:
        super().__init__()
        self.problems_only = False
        self.text = ""
        self.setRecursiveFilteringEnabled(True)

    def set_filter(self, problems_only: bool, text: str) -> None:
        if hasattr(self, "endFilterChange"):  # Qt 6.10+; invalidateFilter() is deprecated there
            self.beginFilterChange()
            self.problems_only, self.text = problems_only, text.strip().lower()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.problems_only, self.text = problems_only, text.strip().lower()
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if not self.problems_only and not self.text:
            return True
        model: DependencyTreeModel = self.sourceModel()  # type: ignore[assignment]
        item = model.item(model.index(source_row, 0, source_parent))
        if item is None:
            return False
        if self.problems_only and model.status(item) == OK:
            return False
        return not self.text or self.text in model.name(item).lower() or (
            item.node.path is not None and self.text in ntpath.basename(str(item.node.path)).lower())
