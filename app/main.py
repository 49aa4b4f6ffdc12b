"""The entry point (`python -m app`, the .exe): parse the command line, then run the command,
or open the wizard when there is none. The commands live in app/cli/; DESIGN.md has the contract."""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

from app.cli.commands import run_command
from app.cli.output import Output
from app.cli.parser import build_parser, split_qt_arguments
from app.system.console import console_output_cp, output_encoding


def main(argv: Optional[Sequence[str]] = None) -> int:
    ours, qt_arguments = split_qt_arguments(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(ours)
    _choose_encodings()
    if args.command is None:
        from app.cli import wizard

        return int(wizard.run(args, qt_arguments, Output()))
    return int(run_command(args, Output()))


def _choose_encodings() -> None:
    """Redirected output in the code page the shell reads it in (app/system/console.py), standard error as
    standard output (`2>&1` is one file); the user's own choice (PYTHONIOENCODING, Python's UTF-8 mode) stands.
    JSON written to `-` is kept readable in every code page by app/cli/output.py."""
    if os.environ.get("PYTHONIOENCODING") or os.environ.get("PYTHONUTF8") or "utf8" in sys._xoptions:
        return  # asked for by the user (not Python's own default, which becomes UTF-8 mode in 3.15)
    for stream in (sys.stdout, sys.stderr):
        if stream and hasattr(stream, "reconfigure"):
            console = stream.isatty() if hasattr(stream, "isatty") else False
            stream.reconfigure(encoding=output_encoding(console, console_output_cp()), errors="replace")
