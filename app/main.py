"""The entry point (`python -m app`, the .exe, the elevated helper): parse the command line, then run the command,
or open the wizard when there is none. The commands live in app/cli/; DESIGN.md has the contract."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from app.cli.commands import run_command
from app.cli.output import Output
from app.cli.parser import build_parser, split_qt_arguments


def main(argv: Optional[Sequence[str]] = None) -> int:
    ours, qt_arguments = split_qt_arguments(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(ours)
    if sys.stdout and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    if args.command is None:
        from app.cli import wizard

        return int(wizard.run(args, qt_arguments, Output()))
    return int(run_command(args, Output()))
