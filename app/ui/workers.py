"""Background work for the wizard: one worker class on the wizard's own thread pool.

As in napari and Picard: a QRunnable whose `run()` catches everything and hands the result, the error, or
streamed items back through a separate signals QObject. Connections are queued, so every handler runs on the
GUI thread; the work itself never touches a widget. Each worker has a CancelToken the work checks."""

from __future__ import annotations

import traceback
from typing import Any, Callable, Optional

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal

from app.cancel import CancelToken


class WorkerSignals(QObject):
    yielded = Signal(object)  # a streamed item: a found environment, a probe event, download progress...
    returned = Signal(object)  # the work's result
    errored = Signal(object)  # the exception (with `details`: the traceback text)
    finished = Signal()  # after returned or errored, always


class Worker(QRunnable):
    """Runs `work(worker)` on a pool thread. The work calls `worker.emit(item)` to stream and checks
    `worker.token` to stop early."""

    def __init__(self, work: Callable[[Worker], Any], token: Optional[CancelToken] = None) -> None:
        super().__init__()
        self.setAutoDelete(False)  # the pool keeps it referenced until `finished` (see WorkerPool)
        self.signals = WorkerSignals()
        self.token = token or CancelToken()
        self._work = work
        self.done = False

    def emit(self, item: object) -> None:
        self.signals.yielded.emit(item)

    def cancel(self) -> None:
        self.token.cancel()

    def run(self) -> None:
        try:
            result = self._work(self)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the page, in words
            exc.details = traceback.format_exc()  # type: ignore[attr-defined]
            self.signals.errored.emit(exc)
        else:
            self.signals.returned.emit(result)
        finally:
            self.done = True
            self.signals.finished.emit()


class WorkerPool(QObject):
    """The wizard's pool. Keeps running workers referenced, cancels them all and waits on close."""

    def __init__(self, parent: Optional[QObject] = None, threads: int = 4) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self.running: set[Worker] = set()

    def start(self, work: Callable[[Worker], Any], *, yielded: Optional[Callable] = None,
              returned: Optional[Callable] = None, errored: Optional[Callable] = None,
              finished: Optional[Callable] = None, token: Optional[CancelToken] = None) -> Worker:
        worker = Worker(work, token)
        queued = Qt.ConnectionType.QueuedConnection  # handlers run on the GUI thread, never on the worker's
        for signal, handler in ((worker.signals.yielded, yielded), (worker.signals.returned, returned),
                                (worker.signals.errored, errored), (worker.signals.finished, finished)):
            if handler is not None:
                signal.connect(handler, queued)
        worker.signals.finished.connect(lambda: self.running.discard(worker), queued)
        self.running.add(worker)
        self.pool.start(worker)
        return worker

    def busy(self) -> bool:
        return any(not w.done for w in self.running)

    def cancel_all(self) -> None:
        for worker in list(self.running):
            worker.cancel()

    def wait(self, msecs: int = 15000) -> bool:
        """Cancel everything and wait for the threads (each ends its child processes first)."""
        self.cancel_all()
        return self.pool.waitForDone(msecs)
