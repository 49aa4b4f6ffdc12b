"""Why something stopped, in the reader's words: the one place the command line and the wizard get them from.

Every failure the app raises says itself: its class has `text(lang)` (words from resources/ui_text.json, filled
with the values it carries), as `UsageError` does. An OSError says what Windows (or the disk) refused, the raw
message only where nothing plainer fits; anything else is named as it is, inside the caller's sentence.
"""

from __future__ import annotations

import datetime as _dt
import errno
from typing import Optional

from app.i18n import words


def failure_text(error: BaseException, lang: str, otherwise: str = "cli.repair.failed",
                 changes_left: Optional[str] = None) -> str:
    """`otherwise`: the words (with {error}) for a failure that has none of its own; work that changes nothing
    passes "ui.failed", an undo "cli.undo.failed". A repair whose rollback did not finish (`changes_left`, the
    transaction's id: RepairFailed's) says so, and how to undo it, whatever the failure."""
    left = changes_left
    said = getattr(error, "text", None)
    if callable(said):
        return f"{said(lang)}\n{words('repair.changes_left', lang, id=left)}" if left else said(lang)
    reason = os_error_words(error, lang) if isinstance(error, OSError) else f"{error.__class__.__name__}: {error}"
    if left:
        return words("cli.repair.failed_left", lang, error=reason, id=left)
    return words(otherwise, lang, error=reason)


# ERROR_VIRUS_INFECTED, ERROR_VIRUS_DELETED: Microsoft Defender (or another antivirus) stopped the file as it
# was written, or removed it (learn.microsoft.com, System Error Codes 0-499)
VIRUS_ERRORS = (225, 226)


def settle(error: BaseException) -> None:
    """Ask the computer now what a failure's words will need (the Windows error behind an errno 22), on the
    worker's thread, so that the window, which draws the words again and again, never waits on a file."""
    if isinstance(error, OSError):
        refusal_kind(error)


def refusal_kind(error: OSError) -> str:
    """Why Windows (or the disk) refused a change: "virus" (security software stopped or removed the file),
    "vanished" (the file just written was gone before it could take its place: removed by somebody else, security
    software most likely), "denied" (permissions, a file in use, security software), "full", or "other"."""
    if getattr(error, "vanished", False):
        return "vanished"
    winerror = getattr(error, "winerror", None)
    if winerror is None and error.errno == errno.EINVAL and error.filename:
        if not hasattr(error, "_asked_windows"):  # once per failure: its words are drawn again and again
            from app.system.files import windows_error_of  # the C runtime kept only errno 22: ask Windows

            error._asked_windows = windows_error_of(error.filename)
        winerror = error._asked_windows
    if winerror in VIRUS_ERRORS:
        return "virus"
    denied = (errno.EACCES, errno.EPERM, errno.EROFS)
    if isinstance(error, PermissionError) or winerror in (5, 32, 33) or error.errno in denied:
        return "denied"
    if error.errno == errno.ENOSPC or winerror in (39, 112):
        return "full"
    return "other"


def os_error_words(error: OSError, lang: str) -> str:
    """What Windows (or the disk) refused, in the reader's words; the raw message stays in the details."""
    kind = refusal_kind(error)
    if kind == "other":
        return f"{error.__class__.__name__}: {error}"
    if kind == "denied" and not error.filename:
        kind = "denied_somewhere"
    return words(f"repair.os.{kind}", lang, path=error.filename)


def local_time(stamp: Optional[str]) -> str:
    """An ISO stamp (UTC) as the reader's local time of day, "14:05"; "?" when unknown."""
    try:
        return _dt.datetime.fromisoformat(str(stamp)).astimezone().strftime("%H:%M")
    except ValueError:
        return "?"
