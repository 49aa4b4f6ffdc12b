"""The entry point (`python -m app`, the .exe): parse the command line, then run the command,
or open the wizard when there is none. The commands live in app/cli/; docs/design.md has the contract."""

from __future__ import annotations

import codecs
import os
import sys
from typing import Optional, Sequence

from app.cli.parser import build_parser, split_qt_arguments


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Only what the command asks for is imported: `--version` and `--help` end in the parser, a command imports its
    own module (app/cli/commands.py), and the wizard imports Qt."""
    ours, qt_arguments = split_qt_arguments(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(_pasted_as_text(ours))
    _choose_encodings()
    from app.cli.output import Output

    if args.command is None:
        from app.cli import wizard

        return int(wizard.run(args, qt_arguments, Output()))
    from app.cli.commands import run_command

    return int(run_command(args, Output()))


EXPLAIN_OPTIONS = {"--lang": 1, "--json": 1, "-h": 0, "--help": 0}


def _pasted_as_text(argv: list[str]) -> list[str]:
    """`explain`'s text is the user's paste, whatever it starts with ("-----", "-: ..."): its own options (--lang,
    --help) go first, and every other word after the command is text (after `--`), never an option argparse
    refuses. `-` alone (standard input) stays what it is."""
    at, valued = 0, ("--root", "--env", "--lang", "--screenshot-pages")  # the options before a command, with values
    while at < len(argv) and argv[at].startswith("-"):
        at += 2 if argv[at] in valued else 1
    if at >= len(argv) or argv[at] != "explain":
        return argv
    at += 1
    options, text, rest = [], [], argv[at:]
    i = 0
    while i < len(rest):
        word = rest[i]
        name = word.split("=", 1)[0]
        if name in EXPLAIN_OPTIONS and "=" not in word and i + EXPLAIN_OPTIONS[name] < len(rest):
            options += rest[i:i + 1 + EXPLAIN_OPTIONS[name]]
            i += 1 + EXPLAIN_OPTIONS[name]
            continue
        if name in ("--lang", "--json") and "=" in word:
            options.append(word)
        elif word != "--":
            text.append(word)
        i += 1
    return [*argv[:at], *options, *(["--", *text] if text and text != ["-"] else text)]


def _choose_encodings() -> None:
    """Redirected output in the code page the shell reads it in (app/system/console.py), standard error as
    standard output (`2>&1` is one file); an encoding the user chose (PYTHONIOENCODING, Python's UTF-8 mode) stands
    where Python applied it. A character that encoding cannot write becomes "?": a report is never cut short by
    a folder's name (a Chinese user name on an English Windows). JSON written to `-` is kept readable in every
    code page by app/cli/output.py."""
    from app.system.console import console_output_cp, output_encoding

    asked, _, handler = os.environ.get("PYTHONIOENCODING", "").partition(":")
    for stream in (sys.stdout, sys.stderr):
        if not (stream and hasattr(stream, "reconfigure")):
            continue
        if _chosen_by_user(stream, asked):
            if not handler:  # the user named no handler of their own
                stream.reconfigure(errors="replace")
            continue
        console = stream.isatty() if hasattr(stream, "isatty") else False
        stream.reconfigure(encoding=output_encoding(console, console_output_cp()), errors="replace")


def _chosen_by_user(stream, asked: str) -> bool:
    """The stream's encoding is one the user asked for (``asked``: PYTHONIOENCODING's encoding) and Python applied.
    The frozen app's Python ignores the environment (PyInstaller), so a PYTHONIOENCODING there is only a
    variable: judged by the stream, not by it. Python's own default is not a choice (UTF-8 mode from 3.15)."""
    if asked:
        try:
            return codecs.lookup(asked).name == codecs.lookup(stream.encoding).name
        except (LookupError, TypeError):
            return False
    explicit = "utf8" in sys._xoptions or (os.environ.get("PYTHONUTF8") == "1" and not sys.flags.ignore_environment)
    return explicit and bool(sys.flags.utf8_mode)
