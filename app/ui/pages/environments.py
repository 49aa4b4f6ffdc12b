"""Choose the environment: they appear while discovery streams them; Browse…, Search everywhere, and (off
Windows, or when nothing is found) a copied Windows drive or the demo computer."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QProgressBar,
    QTreeView,
    QVBoxLayout,
)

from app.cancel import Cancelled
from app.system.offline import OfflineImage
from app.ui.failure import failure_words
from app.ui.models import ROLE_ITEM, EnvironmentModel
from app.ui.pages.base import Page, button, named, wrapped
from app.ui.session import DEMO, IMAGE, environment_at, find_environments, open_demo
from app.ui.workers import LatestRun


class SearchState(str, Enum):
    """Where discovery is on the computer being looked at."""

    IDLE = "idle"
    OPENING = "opening"  # the demo computer is being made
    SEARCHING = "searching"
    DONE = "done"
    FAILED = "failed"


class EnvironmentsPage(Page):
    environment_chosen = Signal(object)  # the environment the checks will look at now (None: none with PyTorch)

    def __init__(self) -> None:
        super().__init__()
        self.model = EnvironmentModel(self._display)
        self.view = QTreeView()
        self.view.setModel(self.model)
        self.view.setRootIsDecorated(False)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.view.header().setStretchLastSection(True)
        self.view.selectionModel().selectionChanged.connect(self._selected)
        self.view.doubleClicked.connect(lambda index: self.doctor.next() if self.isComplete() else None)
        self.computer = wrapped(name="computer")  # which computer: the demo, or a copied drive (hidden on a live one)
        self.status = wrapped(name="search-status")
        self.busy = QProgressBar()  # moves while a search runs: Search everywhere can take minutes
        self.busy.setRange(0, 0)
        self.busy.setTextVisible(False)
        self.busy.setMaximumHeight(8)
        self.busy.hide()
        self.browse = button("browse")
        self.everywhere = button("everywhere")
        self.image = button("image")
        self.demo = button("demo")
        self.browse.clicked.connect(self._browse)
        self.everywhere.clicked.connect(lambda: self._search(everywhere=True))
        self.image.clicked.connect(self._open_image)
        self.demo.clicked.connect(self._open_demo)
        buttons = QHBoxLayout()
        for pushed in (self.browse, self.everywhere, self.image, self.demo):
            buttons.addWidget(pushed)
        buttons.addStretch(1)
        self.explain = wrapped()
        layout = QVBoxLayout(self)
        layout.addWidget(self.explain)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.computer)
        layout.addWidget(self.status)
        layout.addWidget(self.busy)
        layout.addLayout(buttons)
        self.search = LatestRun()  # discovery, or a Browse…: only the newest one's findings are shown
        self.building = LatestRun()  # the demo computer being made
        self._state = SearchState.IDLE
        self._error = None
        self._out_of_time = False  # the last search's time ran out before every place was looked in
        self._listed_at = 0  # the session's count of changes to the computer when the list was begun
        self._everywhere = False  # the last search was Search everywhere: its end says what it found
        self._known: set = set()  # the installations listed before it, to say how many it added

    def _display(self, path) -> str:
        system = self.session.system
        return system.windows_path(Path(path)) if system is not None else str(path)

    def initializePage(self) -> None:
        self.begin()
        self.retranslate()

    def begin(self) -> None:
        """The environment named on the command line (--env) listed and chosen, or the search started: once, when
        the wizard opens (while Welcome is read), again on this page when nothing was found, and again after the
        session changed the computer (what was found before describes it as it was)."""
        if self._listed_at != self.session.changes:
            self._listed_at = self.session.changes
            self.search.drop()
            self.model.clear()
            if not self.session.only:  # the one the user named is read again by the session itself
                self.session.choose_environment(None)
            self.set_ready(False)
        if self.session.only and not self.model.envs:  # chosen on the command line (--env)
            self.model.add(self.session.env)
            self.select(0)
            self._state = SearchState.DONE
        elif self.session.system is not None and not self.session.environments and not self.search.running:
            self._search()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Choose the Python installation"))
        self.setSubTitle(self.tr("Pick the one your AI app uses (ComfyUI, a Stable Diffusion web UI, …)."))
        self.explain.setText(self.tr("Installations appear here as they are found. Only those with PyTorch can "
                                     "be checked."))
        named(self.browse, self.tr("&Browse…"), self.tr("Choose a folder that holds a Python installation"))
        named(self.image, self.tr("Analyse a &copied Windows folder…"), self.tr("Analyse a copied Windows drive"))
        named(self.demo, self.tr("Try the &demo computer"), self.tr("Try the demo computer"))
        self.view.setAccessibleName(self.tr("Python installations found"))
        self.model.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, self.model.COLUMNS - 1)
        self.model.layoutAboutToBeChanged.emit()  # the words in the rows change, not the rows
        self.model.layoutChanged.emit()
        self._show_state()

    def _show_state(self) -> None:
        count = len(self.model.envs)
        nothing = self.session.system is None
        searching = self._state in (SearchState.SEARCHING, SearchState.OPENING)
        off_windows_or_none = nothing or self.session.source in (IMAGE, DEMO) or (
            self._state == SearchState.DONE and not any(e.torch for e in self.model.envs))
        self.image.setVisible(off_windows_or_none)
        self.demo.setVisible(off_windows_or_none)
        self.browse.setEnabled(not nothing and not searching)
        self.everywhere.setEnabled(not nothing and not searching)
        self.busy.setVisible(searching)
        if self._everywhere and searching:  # the button says it runs
            named(self.everywhere, self.tr("&Searching everywhere…"), self.tr("Searching every drive"))
        else:
            named(self.everywhere, self.tr("&Search everywhere"), self.tr("Search every drive, deeper and longer"))
        if nothing:
            text = self.tr("This computer is not running Windows, so there is nothing here to check. Analyse a "
                           "copied Windows drive, or try the demo computer to see how the assistant works.")
        elif self._state == SearchState.OPENING:
            text = self.tr("Making the demo computer…")
        elif searching:
            text = self.tr("Searching… %n found so far.", "", count)
        elif self._state == SearchState.FAILED:
            text = self.tr("The search stopped before it was done. {reason}").format(
                reason=failure_words(self._error, self.session.lang))
        elif not any(e.torch for e in self.model.envs) and self._out_of_time:
            text = self.tr("The search ran out of time before every folder was looked in, and found no Python "
                           "installation with PyTorch. Use Browse… to pick your AI app's folder, or Search "
                           "everywhere, which looks longer.")
        elif not any(e.torch for e in self.model.envs):
            text = self.tr("No Python installation with PyTorch was found. Use Browse… to pick your AI app's "
                           "folder, or Search everywhere.")
        elif self._out_of_time:
            text = self.tr("%n installation(s) found. The search ran out of time before every folder was looked "
                           "in: if your AI app's is not listed, use Browse… to pick its folder.", "", count)
        else:
            text = self.tr("%n installation(s) found. Select one and press Next.", "", count)
        self.status.setText(self._everywhere_words() + text)
        if self.session.source == DEMO:
            self.computer.setText(self.tr("This is the demo computer: a built-in example, so nothing real is "
                                          "changed."))
        elif self.session.source == IMAGE:
            self.computer.setText(self.tr("This is a copied Windows drive: {folder}").format(folder=self.session.root))
        self.computer.setVisible(self.session.source in (IMAGE, DEMO) and not nothing)

    def _everywhere_words(self) -> str:
        """After Search everywhere: that it looked everywhere, and how many installations it added to the list."""
        if not self._everywhere or self._state != SearchState.DONE:
            return ""
        added = sum(1 for env in self.model.envs if env.exec_prefix not in self._known)
        return (self.tr("Search everywhere is done: it found %n more.", "", added) if added else
                self.tr("Search everywhere is done: it found nothing more.")) + " "

    # -- searching ----------------------------------------------------------------------------------------
    def _search(self, everywhere: bool = False, folders: tuple = ()) -> None:
        system = self.session.system
        if system is None:
            return
        self._everywhere = everywhere
        self._known = {env.exec_prefix for env in self.model.envs}
        if not folders:
            self._chose_itself = True  # a new list: the page chooses again until the reader does
            self.model.clear()
            self.session.clear_environments()
            self._listed_at = self.session.changes
        self._state, self._out_of_time = SearchState.SEARCHING, False
        self._show_state()
        self.search.start(
            self.doctor.pool, lambda worker: find_environments(system, worker.token, worker.emit,
                                                               everywhere=everywhere, folders=folders),
            yielded=self._found, returned=self._searched, errored=self._failed)

    def _found(self, env) -> None:
        if any(e.exec_prefix == env.exec_prefix for e in self.model.envs):
            return
        self.model.add(env)
        self.session.add_environment(env)
        if env.torch is not None and (not self.view.selectionModel().hasSelection() or self._rather(env)):
            self._choosing = True  # the page's own choice, not the reader's
            self.select(len(self.model.envs) - 1)
            self._choosing = False
        self._show_state()

    def _rather(self, env) -> bool:
        """While the reader has not chosen: an AI app's environment is chosen rather than a venv or a Python no
        known app names, found before it."""
        chosen = self.session.env
        return self._chose_itself and env.app is not None and chosen is not None and chosen.app is None

    def _searched(self, report) -> None:
        self._state = SearchState.DONE
        self._out_of_time = report.out_of_time
        self._show_state()

    def _failed(self, error) -> None:
        self._state = SearchState.DONE if isinstance(error, Cancelled) else SearchState.FAILED
        self._error = error
        self._show_state()

    def select(self, row: int) -> None:
        self.view.selectionModel().select(self.model.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                          | QItemSelectionModel.SelectionFlag.Rows)
        self.view.setCurrentIndex(self.model.index(row, 0))

    _choosing = False
    _chose_itself = True  # the selection is the page's own, until the reader picks a row

    def _selected(self) -> None:
        self._chose_itself = self._choosing
        rows = self.view.selectionModel().selectedRows()
        env = self.model.data(rows[0], ROLE_ITEM) if rows else None
        chosen = env if env is not None and env.torch is not None else None
        self.session.choose_environment(chosen)
        self.set_ready(self.session.env is not None)
        self.environment_chosen.emit(self.session.env)

    # -- other places ---------------------------------------------------------------------------------------
    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Choose the folder of your AI app or its Python"))
        if not folder:
            return
        system = self.session.system
        self.search.start(self.doctor.pool, lambda worker: environment_at(system, Path(folder)),
                          returned=lambda env: self._browsed(env, folder),
                          doing=self.tr("The folder could not be searched. Choose another folder, or use Search "
                                        "everywhere."))

    def _browsed(self, env, folder: str) -> None:
        if env is None:
            self.status.setText(self.tr("No Python installation was found in {folder}.").format(folder=folder))
            return
        self._found(env)
        self.select([e.exec_prefix for e in self.model.envs].index(env.exec_prefix))

    def _open_image(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Choose the folder that holds the copied drive "
                                                                "(it has a Windows folder inside)"))
        if folder:
            self.open_computer(OfflineImage(Path(folder)), IMAGE, folder)

    def _open_demo(self) -> None:
        self.start_demo()

    def start_demo(self) -> None:
        """Build the demo computer in a worker, then search it like any other."""
        self.search.drop()  # what is still being found on the computer before is not wanted any more
        self._state = SearchState.OPENING
        self.demo.setEnabled(False)
        session = self.session
        self.building.start(self.doctor.pool, lambda worker: open_demo(session),
                            returned=lambda system: self.open_computer(system, DEMO, None),
                            errored=self._demo_failed, finished=lambda: self.demo.setEnabled(True))
        self._show_state()

    def _demo_failed(self, error) -> None:
        self._state = SearchState.IDLE
        self._show_state()
        if isinstance(error, Cancelled):  # the wizard is closing
            return
        self.doctor.show_failure(error, self.tr("The demo computer could not be made. Try again, or analyse a copied "
                                                "Windows drive."))

    def open_computer(self, system, source: str, root) -> None:
        self.search.drop()
        self.session.use(system, source, root)
        self.model.clear()
        self._search()
