"""The commands by name, and running one: whatever goes wrong ends as one line on stderr, never a traceback."""

from __future__ import annotations

import argparse
import traceback
from typing import Callable, Optional

from app.cancel import Cancelled
from app.cli.base import ExitCode, UsageError
from app.cli.output import Output
from app.i18n import language_for, words

COMMANDS = ("deps", "diagnose", "explain", "repair", "undo", "history")  # app/cli/<name>.py: run(args, output)


def command(name: str) -> Callable[[argparse.Namespace, Output], int]:
    """A command's `run`, its module imported only now (`explain` never waits for what `diagnose` needs); written out,
    not computed, so that PyInstaller sees every one."""
    if name == "deps":
        from app.cli import deps as module
    elif name == "diagnose":
        from app.cli import diagnose as module
    elif name == "explain":
        from app.cli import explain as module
    elif name == "repair":
        from app.cli import repair as module
    elif name == "undo":
        from app.cli import undo as module
    elif name == "history":
        from app.cli import history as module
    else:
        raise KeyError(name)
    return module.run


def run_command(args: argparse.Namespace, output: Optional[Output] = None) -> int:
    """Run `args.command`; a usage error, a cancel or an internal error is one line and exit 2 (repair and undo
    say their own failures, through app.failures.failure_text, and exit 1)."""
    output = output or Output()
    if getattr(args, "json", None) == "-":
        output = output.document_only_on_out()
    lang = language_for(getattr(args, "lang", None))
    try:
        return command(args.command)(args, output)
    except UsageError as exc:
        output.note(exc.text(lang))
    except (Cancelled, KeyboardInterrupt):  # Ctrl+C before anything changes (repair and undo take it themselves)
        output.note(words("error.cancelled", lang))
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 2; the traceback in the log (--debug: here)
        output.note(words("error.internal", lang, error=f"{exc.__class__.__name__}: {exc}"))
        where = _logged(args, exc)
        if where is not None:
            output.note(words("error.internal.logged", lang, path=where))
        if getattr(args, "debug", False):
            output.note(traceback.format_exc().rstrip())
    return ExitCode.ERROR


def _logged(args: argparse.Namespace, error: BaseException) -> Optional[str]:
    """The failure, with its traceback, in the same rotating log the wizard writes (user names redacted, as
    Picard's cli/base.py logs); where it went, or None when no log could be written."""
    from app.report.log import log_failure, log_file  # no Qt there: the log needs only the data folder

    try:
        log_failure(f"the command {args.command}", error)
        return str(log_file()) if log_file().is_file() else None
    except Exception:  # noqa: BLE001 - a log that cannot be written never hides the failure itself
        return None
