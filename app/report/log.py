"""The wizard's log file: the traceback of every piece of work that failed, user names redacted as in the report.

No Qt here, so it is tested and read without a display. It sits with the report because it redacts as the report
does (app.report.document); the wizard and the command line (an internal error) write it.

    <data folder>/logs/torch-dll-doctor.log   (rotating: 1 MB, then .1 .2 .3)

    2026-12-01 14:05:09,120 ERROR 0.1.0 EnvironmentsPage._browse.<locals>.<lambda> failed
    Traceback (most recent call last):
      ...
    ValueError: scandir: embedded null character in path
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import logging.handlers
import os
import re
import threading
from pathlib import Path
from typing import Iterable, Optional

from app import __version__
from app.cancel import Cancelled
from app.data_folder import data_folder
from app.report.document import redact

LOG_FILE = "torch-dll-doctor.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = f"%(asctime)s %(levelname)s {__version__} %(message)s"

logger = logging.getLogger("torch_dll_doctor")
logger.propagate = False  # our records go to our file, not to whatever the host (pytest, an IDE) configured
_lock = threading.Lock()


def log_folder() -> Path:
    """The folder of the log files (made if missing), for the Finish page's "Open the log folder"."""
    folder = data_folder() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def log_file() -> Path:
    return data_folder() / "logs" / LOG_FILE


def account_names() -> list[str]:
    """This computer's user names as they may appear in a traceback (C:\\Users\\<name>, /home/<name>)."""
    names = {os.environ.get("USERNAME", ""), os.environ.get("USER", "")}
    with contextlib.suppress(KeyError, OSError):  # no name for this account (a container's numeric user)
        names.add(getpass.getuser())
    return sorted(n for n in names if n)


class RedactingFormatter(logging.Formatter):
    """Every line, the traceback included, as the report redacts: profile folders and account names."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(FORMAT)
        self.names = list(names)  # besides this computer's account names (always)

    def format(self, record: logging.LogRecord) -> str:
        return redacted(super().format(record), [*self.names, *getattr(record, "names", ())])


def _handler() -> Optional[logging.Handler]:
    """The file handler for the data folder of now (TDD_DATA_DIR may change between runs of the tests); None when
    the folder cannot be made: a log that cannot be written never stops the wizard."""
    path = log_file()
    with _lock:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path.absolute():
                return handler
            logger.removeHandler(handler)
            handler.close()
        try:
            log_folder()
            handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                           encoding="utf-8", delay=True)
        except OSError:
            return None
        handler.setFormatter(RedactingFormatter())
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        return handler


def log_failure(what: str, error: BaseException, names: Iterable[str] = ()) -> None:
    """Write `error` with its traceback (the worker's `details`, else its own); a stop the user asked for is no
    failure and is not written. `names`: more user names to redact (a copied drive's owner)."""
    if isinstance(error, Cancelled) or _handler() is None:
        return
    details = getattr(error, "details", None)
    if details:
        logger.error("%s failed\n%s", what, details.rstrip(), extra={"names": list(names)})
    else:
        logger.error("%s failed", what, exc_info=(type(error), error, error.__traceback__),
                     extra={"names": list(names)})
    for handler in logger.handlers:
        handler.flush()


def log_note(text: str) -> None:
    """One line of what the app did (the wizard started, a repair undone), so the log folder it points at holds
    the log from the start, not only after a failure."""
    if _handler() is None:
        return
    logger.info("%s", text)
    for handler in logger.handlers:
        handler.flush()


def log_tail(lines: int = 200) -> list[str]:
    """The last `lines` lines of the log file (already redacted when written), for the report; [] without one."""
    try:
        text = log_file().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


# an OSError's message shows its path as repr() does, every backslash doubled: C:\\Users\\alice\\...
_USER_IN_REPR = re.compile(r"(?i)(\\\\Users\\\\)(?!<user>)([^\\/\"'\n\r\t,;]+)")


def redacted(text: str, names: Iterable[str] = ()) -> str:
    """`text` as the log writes it (also for the technical details the wizard shows): the report's redaction,
    and profile folders inside a quoted path."""
    return redact(_USER_IN_REPR.sub(r"\1<user>", text), [*account_names(), *names])
