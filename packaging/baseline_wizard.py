"""The size and start-up baseline: a bare PySide6 QWizard, frozen with the same spec options as the app.

benchmarks/bench_exe.py builds it (``TDD_TARGET=baseline`` in build_installer.spec) beside TorchDllDoctor.exe and
compares the zipped dist folders and the time to the first window. It accepts the app's start-up flags:
``--first-window-exit`` (exit 0 as soon as the first window is exposed) and Qt's ``-platform NAME``.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWizard, QWizardPage


class _ExitOnExpose(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Expose and watched.isExposed():
            QTimer.singleShot(0, QApplication.quit)
        return False


def main(argv: list[str]) -> int:
    first_window_exit = "--first-window-exit" in argv
    app = QApplication([a for a in argv if a != "--first-window-exit"])
    wizard = QWizard()
    wizard.setWizardStyle(QWizard.WizardStyle.ModernStyle)  # AeroStyle needs a real HWND (offscreen, Wine)
    wizard.setWindowTitle("Baseline wizard")
    for title in ("Welcome", "Scan", "Result"):
        page = QWizardPage()
        page.setTitle(title)
        layout = QVBoxLayout(page)
        layout.addWidget(QLabel(f"{title} page"))
        wizard.addPage(page)
    if first_window_exit:
        wizard.winId()  # create the native window now, so the filter sees its first expose
        watcher = _ExitOnExpose()
        wizard.windowHandle().installEventFilter(watcher)
    wizard.show()
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
