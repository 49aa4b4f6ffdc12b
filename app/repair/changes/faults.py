"""Fault injection for the safety tests, at named journal points ("begin", "intent:1", "change:1", ...):
TDD_CRASH_AT kills the process there (SIGKILL, as a power cut would); TDD_PAUSE_AT holds it there, so that a second
process can try its luck, until the file TDD_PAUSE_FILE appears (it writes TDD_PAUSE_FILE.reached on arrival)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CRASH_AT = "TDD_CRASH_AT"
PAUSE_AT, PAUSE_FILE = "TDD_PAUSE_AT", "TDD_PAUSE_FILE"
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
