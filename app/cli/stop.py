"""Ctrl+C at the command line is the wizard's Stop button, not a crash.

Python turns Ctrl+C into KeyboardInterrupt wherever the main thread happens to be: in the middle of a rollback, or
while Microsoft's installer runs (the wait for it would end and the repair be rolled back while the installer goes
on installing). So while a command changes something, Ctrl+C only asks for a Stop, said at once:
- during a repair it cancels the repair's token, so the step under way ends the way the wizard's Stop ends it (a
  download or pip is stopped, Microsoft's installer is let finish) and everything is rolled back;
- during an undo it is said and otherwise ignored: an undo stopped halfway would leave files half put back.
Asking again says again what is happening. Ctrl+Break (and closing the console) still end the process; the journal
then finds the repair interrupted at the next start. Outside these commands Ctrl+C stays KeyboardInterrupt, which
`run_command` says as "stopped, nothing was changed".

For the safety tests, TDD_STOP_FILE names a file whose appearance is a Ctrl+C (app/repair/changes/faults.py).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator

from app.cancel import CancelToken
from app.i18n import words
from app.repair.changes.faults import stop_when_asked


@contextlib.contextmanager
def ctrl_c_stops(lang: str, say: Callable[[str], None], stoppable: bool = True) -> Iterator[CancelToken]:
    """A token that Ctrl+C cancels (`stoppable`), or a Ctrl+C that only says the undo finishes first; `say` writes
    the words (standard error). Off the main thread (a test's worker) nothing is installed: the token is returned."""
    token = CancelToken()
    if threading.current_thread() is not threading.main_thread():
        yield token
        return

    def answer() -> None:
        if not stoppable:
            say(words("cli.stop.undo_finishes", lang))
        elif token.cancelled:
            say(words("cli.stop.already", lang))
        else:
            say(words("cli.stop.asked", lang))
            token.cancel()

    def asked(signum, frame) -> None:
        # A thread of its own: the handler runs between two steps of the main thread, which may hold the token's
        # lock or be writing to standard error (both not reentrant); the thread waits for them instead.
        threading.Thread(target=answer, name="ctrl-c", daemon=True).start()

    previous = signal.signal(signal.SIGINT, asked)
    done = threading.Event()
    stop_when_asked(done, answer)
    try:
        yield token
    finally:
        done.set()
        signal.signal(signal.SIGINT, previous)

