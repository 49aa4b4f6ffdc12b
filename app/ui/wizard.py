"""The wizard: its pages by id (nextId() skips what is not needed), its worker pool, and the language switch."""

from __future__ import annotations

import sys
from typing import Optional

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QEvent, QLibraryInfo, QLocale, QTimer, QTranslator
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import QApplication, QMessageBox, QWizard

from app import __version__
from app.probes.base import Program
from app.report.log import log_note
from app.resources import resources_folder
from app.ui.collector import GuiThreadCollector
from app.ui.failure import show_failure
from app.ui.icons import NAMES, icon
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, HISTORY, PLAN, REPAIR, VERIFY, WELCOME
from app.ui.pages.diagnose import DiagnosePage
from app.ui.pages.environments import EnvironmentsPage
from app.ui.pages.findings import FindingsPage
from app.ui.pages.finish import FinishPage
from app.ui.pages.history import HistoryPage
from app.ui.pages.plan import PlanPage
from app.ui.pages.repair import RepairPage
from app.ui.pages.verify import VerifyPage
from app.ui.pages.welcome import WelcomePage
from app.ui.session import Session
from app.ui.workers import WorkerPool

MINIMUM_SIZE = (800, 600)
PAGE_ORDER = {WELCOME: ENVIRONMENTS, HISTORY: ENVIRONMENTS, ENVIRONMENTS: DIAGNOSE, DIAGNOSE: FINDINGS, REPAIR: VERIFY,
              VERIFY: FINISH}

# Qt's own words that its Chinese file (qtbase_zh_CN.qm) lacks: the file dialog's, with their Alt+letters. Our file
# translates them (lupdate finds them here); Qt asks every translator installed, so its dialog is Chinese throughout.
QT_WORDS_QTBASE_LACKS = (QT_TRANSLATE_NOOP("QFileDialog", "&Look in:"),
                         QT_TRANSLATE_NOOP("QFileDialog", "Files of &type:"))


class Translations:
    """Our words (resources/translations/*.qm) and Qt's own (its buttons), swapped together; kept referenced,
    as Qt does not own a translator."""

    def __init__(self, app: QCoreApplication) -> None:
        self.app = app
        self.installed: list[QTranslator] = []

    def use(self, lang: str) -> bool:
        """Switch to `lang`; False when a translation file is missing (the words stay English)."""
        for translator in self.installed:
            self.app.removeTranslator(translator)
        self.installed = []
        QLocale.setDefault(QLocale(QLocale.Language.English) if lang == "en" else QLocale(lang))
        ours, qt = QTranslator(), QTranslator()  # English needs ours for its plural forms ("1 problem") alone
        loaded = [ours.load(str(resources_folder() / "translations" / f"torch_dll_doctor_{lang}.qm"))]
        if lang != "en":
            loaded.append(qt.load(f"qtbase_{lang}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)))
        self.installed = [t for t, ok in zip((ours, qt), loaded) if ok]
        for translator in self.installed:
            self.app.installTranslator(translator)
        return all(loaded)


class DoctorWizard(QWizard):
    def __init__(self, session: Session, translations: Optional[Translations] = None) -> None:
        super().__init__()
        GuiThreadCollector.install()  # before any worker starts: Qt objects die on this thread only
        self.session = session
        self.pool = WorkerPool(self, on_error=self.show_failure)  # work without its own error handler
        self.translations = translations or Translations(QApplication.instance())
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)  # AeroStyle needs a real window handle
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage, True)
        self.setOption(QWizard.WizardOption.HaveHelpButton, False)
        self.setWindowIcon(icon("app"))
        for name in NAMES:  # drawn from SVG once, here, not in the middle of a page change
            icon(name).pixmap(16, 16)
            icon(name).pixmap(32, 32)
        self.setMinimumSize(*MINIMUM_SIZE)
        self.pages = {WELCOME: WelcomePage(), ENVIRONMENTS: EnvironmentsPage(), DIAGNOSE: DiagnosePage(),
                      FINDINGS: FindingsPage(), PLAN: PlanPage(), REPAIR: RepairPage(), VERIFY: VerifyPage(),
                      FINISH: FinishPage(), HISTORY: HistoryPage()}
        for page_id, page in self.pages.items():
            self.setPage(page_id, page)
        self.setStartId(WELCOME)
        self.pages[REPAIR].on_stopped = self._repair_stopped
        self.translations.use(session.lang)
        self.retranslate()
        for page in self.pages.values():  # every page has its words before it is first shown
            page.retranslate()
        self.pages[ENVIRONMENTS].environment_chosen.connect(self._check_early)
        QTimer.singleShot(0, self.head_start)
        self.pool.start(lambda worker: log_note(f"Torch DLL Doctor {__version__}: the wizard started"))

    def head_start(self) -> None:
        """While Welcome is read (from the start, and again after a rollback there): the search begins (or the
        environment named with --env is listed), and with it the checks of the environment it chooses
        (_check_early). Neither changes anything; by the time the person presses Next the first results may be on
        the checklist already."""
        if self.currentId() in (WELCOME, -1):
            self.pages[ENVIRONMENTS].begin()

    def _check_early(self, env) -> None:
        if env is not None and self.currentId() in (WELCOME, -1):  # on the list itself, the person's Next starts
            self.pages[DIAGNOSE].check_early(env)

    failure_box = None

    def showEvent(self, event: QShowEvent) -> None:
        """Once the window exists, Windows' permission prompt gets it as its owner (Session.set_owner_window)."""
        super().showEvent(event)
        if sys.platform == "win32":
            self.session.set_owner_window(int(self.winId()))

    def show_failure(self, error: BaseException, doing: str = "") -> None:
        """A failure in plain words, the details one click away (app/ui/failure.py)."""
        self.failure_box = show_failure(self, self.failure_box, doing, error, self.session.lang)

    def nextId(self) -> int:
        """The page order, owned here: Findings leads to the plan when there is something to offer, else to
        Finish; the plan leads to Repair when something will change, else to Finish (guided steps only)."""
        current = self.currentId()
        if current == WELCOME and self._history_asked:
            return HISTORY
        if current == FINDINGS:
            return PLAN if self.session.has_something_to_offer() else FINISH
        if current == PLAN:
            return REPAIR if self.session.chosen else FINISH
        return PAGE_ORDER.get(current, -1)

    _history_asked = False

    def open_history(self) -> None:
        """From Welcome: the earlier repairs, one page on (Back returns to Welcome, Next goes on to the search)."""
        if self.currentId() != WELCOME:
            return
        self._history_asked = True
        try:
            self.next()
        finally:
            self._history_asked = False

    def cleanupPage(self, page_id: int) -> None:  # noqa: N802 - Qt's name
        """Back from Earlier repairs: Welcome reads the journal again (one may have been undone there)."""
        super().cleanupPage(page_id)
        if page_id == HISTORY:
            self.pages[WELCOME].initializePage()

    def check_again(self, program: Program) -> None:
        """From Findings: the checks once more, as `program` starts (what it imports before torch)."""
        if self.currentId() != FINDINGS:
            return
        self.session.set_program(program)
        self.back()
        self.pages[DIAGNOSE].check_again()

    def set_language(self, lang: str) -> None:
        """Switch every page, Qt's own buttons and the findings' words to `lang`."""
        if lang == self.session.lang:
            return
        self.session.set_language(lang)
        self.translations.use(lang)  # LanguageChange reaches every widget; Qt may post some of them, so:
        self.retranslate()
        for page in self.pages.values():
            page.retranslate()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Torch DLL Doctor"))
        # Qt's own words for its buttons (qtbase_*.qm); QWizard reads them only once, when it is made
        buttons = QWizard.WizardButton
        for which, text in ((buttons.BackButton, "< &Back"), (buttons.NextButton, "&Next >"),
                            (buttons.FinishButton, "&Finish"), (buttons.CancelButton, "Cancel")):
            self.setButtonText(which, QCoreApplication.translate("QWizard", text))
            self.button(which).setAccessibleName(self.button(which).text().replace("&", "").strip("<> "))

    # -- closing -----------------------------------------------------------------------------------------
    def reject(self) -> None:
        """Cancel, Esc or the window's X: a repair under way is stopped and rolled back first, and the window
        closes when that is over; asking again meanwhile changes nothing. Other work is told to stop."""
        run = self.pages[REPAIR].run
        if self.currentId() == REPAIR and run is not None and not run.close():
            return
        if self.told_where_undo_is(self.reject):
            return
        self.pool.cancel_all()
        super().reject()

    def accept(self) -> None:
        """Finish: as a close, once told where Undo stays."""
        if not self.told_where_undo_is(self.accept):
            super().accept()

    undo_note: Optional[QMessageBox] = None

    def told_where_undo_is(self, then) -> bool:
        """The first close after a repair of this session that is still in place: a note says, once, that it can
        be undone later and where; the window closes (`then`) when the note is read. True while it is shown."""
        if self.undo_note is not None or not self.session.transactions:
            return False
        note = QMessageBox(QMessageBox.Icon.Information, self.tr("Torch DLL Doctor"), self.tr(
            "The repairs stay recorded, and you can still undo each one at any time: start Torch DLL Doctor "
            "again and press “See earlier repairs” on the first page."),
            QMessageBox.StandardButton.Ok, self)
        note.setObjectName("undo-note")
        note.finished.connect(lambda _: then())
        self.undo_note = note
        note.open()
        return True

    def _repair_stopped(self) -> None:
        run = self.pages[REPAIR].run
        if run is not None and run.closing:
            self.pool.cancel_all()
            super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:
        run = self.pages[REPAIR].run
        if self.currentId() == REPAIR and run is not None and run.busy:
            event.ignore()
            self.reject()
            return
        super().closeEvent(event)

    def shutdown(self, msecs: int = 15000) -> bool:
        """Stop every worker and wait for them (each ends its child processes first)."""
        done = self.pool.wait(msecs)
        self.session.close()
        return done
