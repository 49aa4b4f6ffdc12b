"""Cancellation and progress, shared by every layer: the engine, the probes, the system's child processes,
the repairs and the wizard's workers."""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

Progress = Callable[[int, int, str], None]  # (done, total, what is being looked at now)


class Cancelled(Exception):
    """The user (or a time budget) stopped the work; nothing was changed."""

    def text(self, lang: str) -> str:
        from app.i18n import words

        return words("repair.cancelled", lang)


class CancelToken:
    """Set once, never reset. A child token is cancelled with its parent, but cancelling it leaves the parent
    alone: a time budget inside a diagnosis stops its own probes, not the caller's other work."""

    def __init__(self, parent: Optional[CancelToken] = None) -> None:
        self._event = threading.Event()
        self._parent = parent
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self._children: list[CancelToken] = []
        if parent is not None:
            with parent._lock:
                parent._children.append(self)

    def cancel(self) -> None:
        """Set the token, then run the hooks (in this thread): they wake work blocked where it cannot poll."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            hooks, children = list(self._hooks), list(self._children)
        for hook in hooks:
            hook()
        for child in children:
            child.cancel()

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call `hook` when cancelled (now, if already); returns the function that unregisters it."""
        with self._lock:
            if not self.cancelled:
                self._hooks.append(hook)
                return lambda: self._remove(hook)
        hook()
        return lambda: None

    def _remove(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)

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
