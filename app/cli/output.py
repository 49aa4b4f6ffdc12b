"""Where a command writes and reads: results on `out`, progress and errors on `err`, answers from `stdin`.

A JSON document asked for on standard output (`--json -`) has standard output to itself: the command's readable
lines then go to standard error (`document_only_on_out`), as diagnose's do, so a script reads one document and a
person still sees what happened and why it ended as it did.

Tests hand in io.StringIO; by default the process's own streams, taken when the Output is made (so pytest's
capsys sees them). A stream may be None (a windowed .exe started without a console): nothing is written then.
A reader that stops reading (`diagnose | head`) never stops the command: what is written after that is dropped,
so a repair always finishes (or rolls back) for its own reasons, never for a closed pipe."""

from __future__ import annotations

import copy
import errno
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Optional, TextIO


class Output:
    def __init__(self, out: Optional[TextIO] = None, err: Optional[TextIO] = None,
                 stdin: Optional[TextIO] = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.stdin = stdin if stdin is not None else sys.stdin
        self.documents = self.out  # where `document(..., "-")` writes

    def document_only_on_out(self) -> Output:
        """The same streams, with the readable result moved to standard error: standard output keeps the one
        document only."""
        moved = copy.copy(self)
        moved.out, moved.documents = self.err, self.out  # None stays None (no console)
        return moved

    def line(self, text: str = "") -> None:
        """One line of the command's result."""
        self._write("out", text)

    def text(self, text: str) -> None:
        """A block of the result that brings its own line ends (a report)."""
        self._write("out", text, end="")

    def note(self, text: str) -> None:
        """Progress, a warning or an error: standard error, at once, so it shows before a long step."""
        self._write("err", text, flush=True)

    def _write(self, which: str, text: str, end: str = "\n", flush: bool = False) -> None:
        stream = getattr(self, which)
        if stream is None:  # a windowed .exe started without a console
            return
        try:
            print(text, end=end, file=stream, flush=flush)
        except OSError as exc:  # the reader has gone: the rest goes nowhere, the command goes on
            if not _reader_gone(exc):
                raise
            _silence(stream)
            setattr(self, which, _Discard())

    def document(self, destination: str, text: str) -> None:
        """A document (JSON...) to a file, or to the result stream with `-`."""
        if destination == "-":
            self._write("documents", text if _is_utf8(self.documents) else ascii_json(text))
            return
        from app.cli.base import NotWritten
        from app.system.files import write_bytes

        target = Path(destination).expanduser().absolute()
        data = (text + "\n").encode("utf-8")
        try:
            if target.exists() and not target.is_file():  # a device or a pipe (NUL, /dev/stdout): written to,
                with open(target, "wb") as f:  # never replaced by a file of that name
                    f.write(data)
            else:
                write_bytes(target, data)  # whole, or not at all
        except OSError as exc:
            raise NotWritten(destination, exc) from exc

    def can_ask(self) -> bool:
        """Whether somebody at a terminal can answer a question: never through a console the windowed .exe only
        borrowed (cmd and PowerShell do not wait for it, so what is typed goes to the shell)."""
        if self.shares_shell_console():
            return False
        isatty = getattr(self.stdin, "isatty", None)
        return bool(isatty and isatty())

    def shares_shell_console(self) -> bool:
        """Whether standard input is the console of the shell that started the windowed TorchDllDoctor.exe
        (packaging/rthook_windows.py attached it): the shell reads that console at the same time."""
        return bool(getattr(sys, "_tdd_borrowed_console", False)) and self.stdin is getattr(sys, "__stdin__", None)

    def ask(self, question: str) -> str:
        """The answer typed after `question`, stripped; empty at the end of input."""
        self._write("out", question, end="", flush=True)
        return (self.stdin.readline() if self.stdin is not None else "").strip()

    def read_bytes(self) -> bytes:
        """All of standard input, as bytes (a console's own encoding is decoded by the caller). OSError from a
        console borrowed from the shell (shares_shell_console), which would fight the shell for every line."""
        if self.stdin is None:
            return b""
        if self.shares_shell_console():
            raise OSError("standard input is the shell's console (TorchDllDoctor-cli.exe reads it)")
        buffer = getattr(self.stdin, "buffer", None)
        return buffer.read() if buffer is not None else self.stdin.read().encode("utf-8")


class _Discard(io.StringIO):
    """Where a stream goes once its reader has gone: written, never kept."""

    def write(self, text: str) -> int:
        return len(text)


def _reader_gone(exc: OSError) -> bool:
    """A pipe whose reader closed it: EPIPE, or EINVAL on Windows (Python's documented behaviour there)."""
    return isinstance(exc, BrokenPipeError) or (os.name == "nt" and exc.errno == errno.EINVAL)


def _silence(stream: Optional[TextIO]) -> None:
    """Point a closed pipe's file descriptor at the null device, so that the interpreter's own flush at exit does
    not fail on it either (Python's documented way for SIGPIPE)."""
    try:
        descriptor = stream.fileno() if stream is not None else None
    except (OSError, ValueError, AttributeError):
        return
    if descriptor is not None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, descriptor)
        os.close(null)


def _is_utf8(stream) -> bool:
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "").replace("_", "")
    return encoding in ("utf8", "utf8sig")


NON_ASCII = re.compile(r"[^\x00-\x7f]")


def ascii_json(text: str) -> str:
    """JSON with every non-ASCII character written as its \\u escape (outside strings JSON has none): the same
    document, readable as UTF-8 by every JSON reader although the stream is in a code page (cp936 redirected),
    and nothing a code page cannot hold (a Hangul folder name) becomes "?"."""
    return NON_ASCII.sub(lambda m: json.dumps(m.group())[1:-1], text)
