"""Cancellation and progress, shared by the engine, the probes and (later) the wizard's workers."""

from __future__ import annotations

import threading
from typing import Callable, Optional

Progress = Callable[[int, int, str], None]  # (done, total, what is being looked at now)


class Cancelled(Exception):
    """The user (or a time budget) stopped the work; nothing was changed."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def no_progress(done: int, total: int, label: str) -> None:
    """A progress callback that shows nothing."""


def check(token: Optional[CancelToken]) -> None:
    if token is not None:
        token.check()
