"""`--screenshot-pages DIR`: the wizard on the demo computer, driven from Welcome to Finish as a user would
(diagnose, open the dependency tree, repair, verify), then started again to its Earlier repairs page; each page
(and the technical details' own window) saved as PNG in English and Chinese, at 100% and 200% scale (each scale in
its own process: Qt reads the scale factor once, at start)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication, QWizard

from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, HISTORY, PLAN, REPAIR, VERIFY, WELCOME
from app.ui.wizard import DoctorWizard

PAGE_NAMES = {WELCOME: "welcome", ENVIRONMENTS: "environments", DIAGNOSE: "diagnose", FINDINGS: "findings",
              PLAN: "plan", REPAIR: "repair", VERIFY: "verify", FINISH: "finish", HISTORY: "history"}
SCALES = (1, 2)
LOOK_MS = 5
EXAMPLE_ERROR = ('OSError: [WinError 126] The specified module could not be found. Error loading '
                 '"C:\\Users\\alice\\ComfyUI\\venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its '
                 'dependencies.')


def wait_until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Let the event loop run until `condition()` holds, looked at every LOOK_MS from the event loop itself (a
    nested loop: it never sleeps, so a user's click or a repaint waits for nothing of ours)."""
    if condition():
        return
    loop, timer, outcome = QEventLoop(), QTimer(), []
    deadline = time.monotonic() + timeout

    def look() -> None:
        try:
            if condition():
                outcome.append(None)
            elif time.monotonic() > deadline:
                outcome.append(TimeoutError("the wizard did not get there in time"))
        except Exception as exc:  # noqa: BLE001 - raised again below, outside the event loop
            outcome.append(exc)
        if outcome:
            loop.quit()

    timer.setInterval(LOOK_MS)
    timer.timeout.connect(look)
    timer.start()
    loop.exec()
    timer.stop()
    if outcome and outcome[0] is not None:
        raise outcome[0]


def settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def drive(wizard: DoctorWizard, at_page: Callable[[int], None] = lambda page_id: None,
          expand_everything: bool = False) -> None:
    """Click through the whole wizard on the computer it looks at (the demo computer, or a copied drive), taking
    the recommended repairs; `at_page(id)` runs once each page is ready. On the findings the dependency tree is
    opened ("problems only"; with `expand_everything`, every node of the whole tree)."""
    wizard.show()
    welcome = wizard.pages[WELCOME]
    welcome.paste.setPlainText(EXAMPLE_ERROR)
    wait_until(lambda: welcome.explanation.isVisible())
    at_page(WELCOME)
    next_button = wizard.button(QWizard.WizardButton.NextButton)
    commit_button = wizard.button(QWizard.WizardButton.CommitButton)
    repair = wizard.pages[REPAIR]
    while wizard.currentId() != FINISH:  # where Next leads is the wizard's own choice (pages may be skipped)
        current = wizard.currentPage()
        wait_until(current.isComplete)
        before = wizard.currentId()
        (commit_button if current.isCommitPage() else next_button).click()
        wait_until(lambda left=before: wizard.currentId() != left)
        page_id = wizard.currentId()
        wait_until(lambda at=page_id: wizard.currentPage().isComplete() or at == REPAIR and repair.state == "failed")
        if page_id == REPAIR and repair.state == "failed":
            at_page(page_id)  # what the failure looked like; then the user's choice: skip it and go on
            repair.skip.click()
            wait_until(repair.isComplete)
        if page_id == FINDINGS:  # each a click of its own, with the event loop turning between them
            settle()
            findings = wizard.pages[FINDINGS]
            findings.details.setChecked(True)
            settle()
            tree = findings.tree
            if expand_everything:
                tree.problems_only.setChecked(False)
                settle()
            tree.view.expandAll()
            settle()
            missing = _find(tree, "libomp140.x86_64.dll")
            if missing is not None:
                tree.view.setCurrentIndex(missing)
        settle()
        at_page(page_id)


def _find(tree, name: str):
    from PySide6.QtCore import Qt

    matches = tree.filter.match(tree.filter.index(0, 0), Qt.ItemDataRole.DisplayRole, name, 1,
                                Qt.MatchFlag.MatchRecursive | Qt.MatchFlag.MatchFixedString)
    return matches[0] if matches else None


def render_pages(folder: Path, scale: float) -> list[Path]:
    """This process's part: every page of a run on the demo computer, in both languages, at `scale`."""
    from app.ui.application import new_wizard

    folder.mkdir(parents=True, exist_ok=True)
    wizard = new_wizard(demo=True, lang="en")
    written: list[Path] = []

    def shooter(shown: DoctorWizard) -> Callable[[int], None]:
        def shoot(page_id: int) -> None:
            details = shown.pages[FINDINGS].details_window
            for lang in ("en", "zh_CN"):  # the same page, redrawn in the other language
                shown.set_language(lang)
                settle()
                name = f"{page_id + 1}-{PAGE_NAMES[page_id]}"
                pictures = [(name, shown)] + ([(f"{name}-details", details)] if details.isVisible() else [])
                for picture, window in pictures:
                    path = folder / f"{picture}-{lang}@{scale:g}x.png"
                    window.grab().save(str(path))
                    written.append(path)
            shown.set_language("en")
            settle()
        return shoot

    try:
        drive(wizard, shooter(wizard))
        again = DoctorWizard(wizard.session)  # a second start, on the same computer and its journal
        try:
            to_history(again, shooter(again))
        finally:
            again.pool.wait()
    finally:
        wizard.shutdown()
    return written


def to_history(wizard: DoctorWizard, at_page: Callable[[int], None]) -> None:
    """From Welcome, which offers the earlier repairs, to their page."""
    wizard.show()
    welcome, history = wizard.pages[WELCOME], wizard.pages[HISTORY]
    wait_until(welcome.earlier.isVisible)
    welcome.see_earlier.click()
    wait_until(lambda: wizard.currentId() == HISTORY and bool(history.repairs))
    settle()
    at_page(HISTORY)
    wizard.hide()


def render_all(folder: Path, scale: Optional[float], qt_arguments: list[str]) -> int:
    """With `scale`, render at that scale in this process; without, start one process per scale."""
    from app.ui.application import application

    if scale is not None:
        app = application(qt_arguments)
        from PySide6.QtGui import QFontDatabase

        if not QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese):
            print("No font for Chinese is installed (on Linux: fonts-wqy-microhei; or set TDD_FONT_DIR): the "
                  "Chinese pages would show empty boxes.", file=sys.stderr)
            return 3
        from app.ui.wizard import Translations

        check = Translations(app)
        complete = check.use("zh_CN")
        check.use("en")
        if not complete:  # pictures of untranslated pages would only mislead
            print("The Chinese translation (ours or Qt's) could not be loaded.", file=sys.stderr)
            return 4
        written = render_pages(folder, scale)
        print("\n".join(str(p) for p in written))
        app.quit()
        return 0
    this_app = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "app"]
    root = Path(__file__).resolve().parent.parent.parent
    for each in SCALES:
        env = dict(os.environ, QT_SCALE_FACTOR=str(each))
        done = subprocess.run([*this_app, "--screenshot-pages", str(folder), "--scale", str(each), *qt_arguments],
                              env=env, timeout=600, cwd=root)
        if done.returncode != 0:
            return done.returncode
    return 0
