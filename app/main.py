"""The entry point (`python -m app`, the .exe): parse the command line, then run the command,
or open the wizard when there is none. The commands live in app/cli/; DESIGN.md has the contract."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from app.cli.commands import run_command
from app.cli.output import Output
from app.cli.parser import build_parser, split_qt_arguments
from app.system.console import console_output_cp, output_encoding


def main(argv: Optional[Sequence[str]] = None) -> int:
    ours, qt_arguments = split_qt_arguments(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(ours)
    if sys.stdout and hasattr(sys.stdout, "reconfigure"):  # redirected: in the code page the shell reads it in
        console = sys.stdout.isatty() if hasattr(sys.stdout, "isatty") else False
        sys.stdout.reconfigure(encoding=output_encoding(console, console_output_cp()), errors="replace")
    if args.command is None:
        from app.cli import wizard

        return int(wizard.run(args, qt_arguments, Output()))
    return int(run_command(args, Output()))
