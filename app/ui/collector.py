"""Python's cyclic garbage collector, run on the GUI thread only.

Left to itself, the collector runs in whichever thread happens to allocate when a threshold is crossed: a worker
thread would then destroy Qt objects (a closed page's widgets, held in a reference cycle) off the GUI thread, and
Qt crashes. So automatic collection is switched off while the wizard exists, and a timer on the GUI thread
collects instead, generation by generation, as the thresholds say (the pattern Qt for Python's own examples and
pyqtgraph use)."""

from __future__ import annotations

import gc
from typing import Optional

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    _installed: Optional[GuiThreadCollector] = None

    def __init__(self) -> None:
        super().__init__()
        self.threshold = gc.get_threshold()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(INTERVAL_MS)
        gc.disable()

    @classmethod
    def install(cls) -> GuiThreadCollector:
        if cls._installed is None:
            cls._installed = cls()
        return cls._installed

    def check(self) -> None:
        first, second, third = gc.get_count()
        if first > self.threshold[0]:
            generation = 2 if third > self.threshold[2] else 1 if second > self.threshold[1] else 0
            gc.collect(generation)
