"""Cancellation and progress, shared by every layer: the engine, the probes, the system's child processes,
the repairs and the wizard's workers."""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

Progress = Callable[[int, int, str], None]  # (done, total, what is being looked at now)


class Cancelled(Exception):
    """The user (or a time budget) stopped the work; nothing was changed."""


class CancelToken:
    """Set once, never reset. A child token is cancelled with its parent, but cancelling it leaves the parent
    alone: a time budget inside a diagnosis stops its own probes, not the caller's other work."""

    def __init__(self, parent: Optional[CancelToken] = None) -> None:
        self._event = threading.Event()
        self._parent = parent

    def cancel(self) -> None:
        self._event.set()

    def child(self) -> CancelToken:
        return CancelToken(self)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early when cancelled; True when cancelled."""
        deadline = time.monotonic() + seconds
        while not self.cancelled:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(left, 0.05))
        return True


def no_progress(done: int, total: int, label: str) -> None:
    """A progress callback that shows nothing."""


def check(token: Optional[CancelToken]) -> None:
    if token is not None:
        token.check()
