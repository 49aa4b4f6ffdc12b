"""Background work for the wizard: one worker class on the wizard's own thread pool.

As in napari and Picard: a QRunnable whose `run()` catches everything and hands the result, the error, or
streamed items back through a separate signals QObject. Connections are queued, so every handler runs on the
GUI thread; the work itself never touches a widget. Each worker has a CancelToken the work checks.

Errors always come back: every failure is written to the log file (app/ui/log.py), and a caller that gives no
error handler gets the pool's default (the wizard's: a message in plain words, details one click away)."""

from __future__ import annotations

import traceback
from typing import Any, Callable, Optional

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal

from app.cancel import Cancelled, CancelToken
from app.failures import settle
from app.report.log import log_failure


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
        self.result: Any = None  # what the work returned, kept for whoever asks after `finished`

    @property
    def name(self) -> str:
        """What the log calls this work: its function's qualified name."""
        return getattr(self._work, "__qualname__", repr(self._work))

    def emit(self, item: object) -> None:
        self.signals.yielded.emit(item)

    def cancel(self) -> None:
        self.token.cancel()

    def run(self) -> None:
        try:
            self.result = self._work(self)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the page, in words
            exc.details = traceback.format_exc()  # type: ignore[attr-defined]
            log_failure(self.name, exc)  # here, on the worker's thread: the window never waits on the log file
            settle(exc)  # and never on a file its words need
            self.signals.errored.emit(exc)
        else:
            self.signals.returned.emit(self.result)
        finally:
            self.done = True
            self.signals.finished.emit()


ErrorHandler = Callable[[BaseException, str], None]  # (the error, what the user was doing, in their words)


class WorkerPool(QObject):
    """The wizard's pool. Keeps running workers referenced, cancels them all and waits on close. `on_error` is the
    default error handler, for work started without one (a stop the user asked for never reaches it)."""

    def __init__(self, parent: Optional[QObject] = None, threads: int = 4,
                 on_error: Optional[ErrorHandler] = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self.running: set[Worker] = set()
        self.on_error: ErrorHandler = on_error or (lambda error, doing: None)

    def start(self, work: Callable[[Worker], Any], *, yielded: Optional[Callable] = None,
              returned: Optional[Callable] = None, errored: Optional[Callable] = None,
              finished: Optional[Callable] = None, token: Optional[CancelToken] = None, doing: str = "",
              accept: Optional[Callable[[Worker], bool]] = None) -> Worker:
        """Run `work` on the pool. `doing`: what the user asked for, in their words, for the default error message.
        `accept(worker)`: whether the worker's signals still matter (see LatestRun); the log is written anyway."""
        worker = Worker(work, token)
        if errored is None:
            def errored(error: BaseException) -> None:
                if not isinstance(error, Cancelled):
                    self.on_error(error, doing)

        def guarded(handler: Optional[Callable]) -> Optional[Callable]:
            if handler is None or accept is None:
                return handler
            return lambda *args: handler(*args) if accept(worker) else None

        queued = Qt.ConnectionType.QueuedConnection  # handlers run on the GUI thread, never on the worker's
        for signal, handler in ((worker.signals.yielded, yielded), (worker.signals.returned, returned),
                                (worker.signals.errored, errored), (worker.signals.finished, finished)):
            handler = guarded(handler)
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


class LatestRun:
    """The one piece of work a page waits for (a search, a diagnosis, a plan). Starting another cancels the one
    before, and from then on signals of any worker but the latest are dropped: a cancelled run's late result
    never lands over the new run's, nor on a page that was left."""

    def __init__(self) -> None:
        self.worker: Optional[Worker] = None

    def start(self, pool: WorkerPool, work: Callable[[Worker], Any], *, finished: Optional[Callable] = None,
              **handlers: Any) -> Worker:
        self.drop()

        def ended() -> None:
            if finished is not None:
                finished()
            self.worker = None

        self.worker = pool.start(work, accept=self.is_latest, finished=ended, **handlers)
        return self.worker

    def is_latest(self, worker: Worker) -> bool:
        return worker is self.worker

    @property
    def running(self) -> bool:
        return self.worker is not None

    def stop(self) -> None:
        """Ask the latest run to stop; its end (a partial result, or Cancelled) still comes back."""
        if self.worker is not None:
            self.worker.cancel()

    def drop(self) -> None:
        """Stop the latest run and ignore whatever it still sends."""
        if self.worker is not None:
            self.worker.cancel()
            self.worker = None
