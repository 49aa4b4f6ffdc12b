"""Starting the wizard: the QApplication, fonts, translations, the computer to look at, and the three
non-interactive modes (`--screenshot-pages DIR`, `--first-window-exit`, `--first-problem-exit`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QEvent, QLibraryInfo, QObject, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QApplication

from app.system.offline import OfflineImage
from app.ui.icons import icon
from app.ui.pages.base import ENVIRONMENTS, keep_paths_clean
from app.ui.session import IMAGE, Session, choose_environment, language_for, this_computer
from app.ui.wizard import DoctorWizard

FONT_SUFFIXES = (".ttf", ".ttc", ".otf")


def add_fonts(folder: Optional[str]) -> int:
    """Fonts from `folder` (TDD_FONT_DIR): where Qt finds none of its own, as on the offscreen platform under
    Wine. On Windows and desktop Linux the system's fonts are used and this adds nothing."""
    if not folder or not Path(folder).is_dir():
        return 0
    added = 0
    for path in sorted(Path(folder).rglob("*")):
        if path.suffix.lower() in FONT_SUFFIXES and QFontDatabase.addApplicationFont(str(path)) >= 0:
            added += 1
    return added


GIL_SWITCH_S = 0.001  # the GUI thread waits at most this long for Python workers to hand over (default 5 ms)


def application(qt_arguments: list[str]) -> QApplication:
    sys.setswitchinterval(GIL_SWITCH_S)
    app = QApplication.instance() or QApplication(["TorchDllDoctor", *qt_arguments])
    app.setApplicationName("Torch DLL Doctor")
    app.setOrganizationName("TorchDllDoctor")
    app.setWindowIcon(icon("app"))
    add_fonts(os.environ.get("TDD_FONT_DIR"))
    if not app.property("paths-kept-clean"):
        keep_paths_clean(app.clipboard())
        app.setProperty("paths-kept-clean", True)
    return app


def new_wizard(*, demo: bool = False, root: Optional[str] = None, env: Optional[str] = None,
               lang: Optional[str] = None, session: Optional[Session] = None) -> DoctorWizard:
    """The wizard on this computer, a copied drive (`root`) or the demo computer (built in a worker); with `env`
    (a folder or python.exe, as the user knows it) that environment is chosen and nothing else is searched."""
    session = session or Session()
    if root:
        session.use(OfflineImage(Path(root)), IMAGE, str(Path(root).resolve()))
    elif not demo:
        system, source = this_computer()
        if system is not None:
            session.use(system, source)
    if env and session.system is not None:
        chosen = choose_environment(session.system, env)
        if chosen is not None:
            session.choose_environment(chosen, only=True)
    facts = session.system.display_language() if session.system is not None else ()
    session.set_language(language_for(lang, *facts))
    wizard = DoctorWizard(session)
    if demo:
        wizard.pages[ENVIRONMENTS].start_demo()
    return wizard


class _FirstPaint(QObject):
    """Quits when the wizard has painted itself once: the time to the first window."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            QTimer.singleShot(0, QApplication.quit)
        return False


def run(*, demo: bool, root: Optional[str], env: Optional[str], lang: Optional[str], first_window_exit: bool,
        qt_arguments: list[str], first_problem_exit: bool = False) -> int:
    started = time.perf_counter()
    app = application(qt_arguments)
    wizard = new_wizard(demo=demo, root=root, env=env, lang=lang)
    if first_window_exit:
        watcher = _FirstPaint(wizard)
        wizard.installEventFilter(watcher)
    if first_problem_exit:  # before show(): showing it makes Welcome the current page
        from app.ui.first_problem import FirstProblemRun

        FirstProblemRun(wizard, started)
    wizard.show()
    code = app.exec()
    wizard.shutdown()
    return code


def no_window_reason() -> Optional[str]:
    """Why no window can open here (a Linux box without a display), or None."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        return "no display"
    return None


def will_use_xcb(qt_arguments: list[str]) -> bool:
    """Whether Qt will draw on X11 here: Linux with a DISPLAY, no platform chosen (or xcb chosen first), and not
    a Wayland session, where Qt 6 picks its wayland plugin."""
    if not sys.platform.startswith("linux") or "-platform" in qt_arguments:
        return False
    chosen = os.environ.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return chosen.split(";")[0].split(":")[0] == "xcb"
    if os.environ.get("WAYLAND_DISPLAY") and os.environ.get("XDG_SESSION_TYPE") == "wayland":
        return False
    return bool(os.environ.get("DISPLAY"))


def missing_xcb_libraries() -> list[str]:
    """The libraries (file names) that Qt's X11 plugin needs and the loader cannot find: Qt 6.5+ also needs
    libxcb-cursor0 and others a minimal desktop lacks, and then aborts with a core dump instead of an error.
    Asked of the loader itself (`ldd` on the plugin, with this process's library path), so nothing is loaded into
    this process; [] when all are there or the question cannot be asked (Qt then says its own words)."""
    folder = os.environ.get("QT_QPA_PLATFORM_PLUGIN_PATH") or os.path.join(
        QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath), "platforms")
    plugin = Path(folder) / "libqxcb.so"
    ldd = shutil.which("ldd")
    if not plugin.is_file() or ldd is None:
        return []
    try:
        done = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    missing = re.findall(r"^\s*(\S+) => not found", done.stdout, re.MULTILINE)
    return list(dict.fromkeys(missing))


def debian_package(library: str) -> str:
    """The Debian / Ubuntu package of a library, by Debian's naming rule: libxcb-cursor.so.0 -> libxcb-cursor0,
    libxkbcommon-x11.so.0 -> libxkbcommon-x11-0, libX11-xcb.so.1 -> libx11-xcb1."""
    match = re.fullmatch(r"(.+?)\.so\.(\d+).*", library)
    if not match:
        return library
    base, major = match.group(1).lower(), match.group(2)
    return f"{base}-{major}" if base[-1].isdigit() else f"{base}{major}"
