"""Fault injection for the safety tests, at named journal points ("begin", "intent:1", "change:1", ...):
TDD_CRASH_AT kills the process there (SIGKILL, as a power cut would); TDD_PAUSE_AT holds it there, so that a second
process can try its luck, until the file TDD_PAUSE_FILE appears (it writes TDD_PAUSE_FILE.reached on arrival).
TDD_STOP_FILE: the file's appearance is a Ctrl+C during `repair` / `undo` (app/cli/stop.py), for a program that gets
none (the windowed one-file build under Wine, or started from Explorer)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable

CRASH_AT = "TDD_CRASH_AT"
PAUSE_AT, PAUSE_FILE = "TDD_PAUSE_AT", "TDD_PAUSE_FILE"
STOP_FILE = "TDD_STOP_FILE"
PAUSE_LIMIT_S = 120.0


def crash_point(label: str) -> None:
    if os.environ.get(CRASH_AT) == label:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
    if os.environ.get(PAUSE_AT) == label and os.environ.get(PAUSE_FILE):
        go = Path(os.environ[PAUSE_FILE])
        Path(str(go) + ".reached").write_text(str(os.getpid()), encoding="utf-8")
        deadline = time.monotonic() + PAUSE_LIMIT_S
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.02)


def stop_when_asked(done: threading.Event, stop: Callable[[], None]) -> None:
    """Under TDD_STOP_FILE: a thread that calls `stop` once the file appears, until `done` is set."""
    if not os.environ.get(STOP_FILE):
        return
    asked = Path(os.environ[STOP_FILE])

    def watch() -> None:
        while not done.is_set():
            if asked.exists():
                stop()
                return
            time.sleep(0.1)

    threading.Thread(target=watch, name="stop-file", daemon=True).start()
