"""`explain TEXT|-`: what a pasted Windows error means, the DLL it names, and what to do."""

from __future__ import annotations

import argparse
import json
import locale
import os
from pathlib import Path
from typing import Optional

from app.cli.base import ExitCode, language_for, open_system
from app.cli.output import Output
from app.i18n import words
from app.probes.error_text import ErrorCause, classify_error, printable


def _language(explicit: Optional[str]) -> str:
    """As `diagnose` chooses it: --lang, else this Windows computer's display language, else LANG."""
    if explicit or os.name != "nt":
        return language_for(explicit)
    try:
        system = open_system(None)
    except Exception:  # noqa: BLE001 - no live system: LANG decides, as elsewhere
        return language_for(explicit)
    return language_for(explicit, *system.display_language())


SCHEMA = "torch-dll-doctor.explain/1"
MAX_FILE_BYTES = 4 << 20  # a pasted traceback is kilobytes; a log of megabytes is read from its start


def _decoded(data: bytes) -> str:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # PowerShell and Notepad write UTF-16
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:  # a console's own code page (936 on Chinese Windows)
        return data.decode(locale.getpreferredencoding(False) or "utf-8", errors="replace")


def _names_a_file(argument: str) -> bool:
    """Whether an argument names an existing file. A pasted traceback is text, however it looks: a line break, a
    NUL, or a name the file system refuses (too long: errno 36) means it names no file."""
    if not argument or "\n" in argument or "\x00" in argument or len(argument) > 32767:
        return False
    try:
        return Path(argument).is_file()
    except (OSError, ValueError):
        return False


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    lang = _language(args.lang)
    if args.error == ["-"]:
        if output.shares_shell_console():
            output.note(words("explain.shell_console", lang))
            return ExitCode.ERROR
        try:
            text = _decoded(output.read_bytes())
        except (OSError, ValueError) as exc:
            output.note(printable(words("explain.unreadable", lang, error=exc)))
            return ExitCode.PROBLEM
    elif len(args.error) == 1 and _names_a_file(args.error[0]):  # a file holding the text, as saved
        try:
            with open(args.error[0], "rb") as f:  # a log of gigabytes: only its start is read
                text = _decoded(f.read(MAX_FILE_BYTES))
        except OSError as exc:
            output.note(printable(words("explain.unreadable", lang, error=exc)))
            return ExitCode.PROBLEM
    else:
        text = " ".join(args.error)
    if not printable(text).strip():
        output.note(words("explain.empty", lang))
        return ExitCode.PROBLEM
    return _answer(args, output, text, lang)


def _answer(args: argparse.Namespace, output: Output, text: str, lang: str) -> ExitCode:
    """The cause's words, then whose each DLL of the text is (resources/dll_index.json, read only now)."""
    from app.probes.dll_facts import dll_facts, dotted_module, fact_words, shown_packages
    from app.probes.error_text import import_alone

    cause = classify_error(text)
    words_of = cause.text(lang)
    facts = dll_facts(printable(text), cause.dll, cause.dll_path)
    shown = shown_packages(printable(text))
    module = import_alone(printable(text)) if cause.advice == "import-reason-cut" else None
    module = dotted_module(printable(text), module) if module else None
    words_of["owners"] = fact_words(facts, shown, lang, module)
    if args.json:
        output.document(args.json, _document(cause, words_of, lang, [fact.document() for fact in facts], shown))
    # Nothing from the paste may reach the terminal as an escape sequence or a control character.
    output.line(printable(words_of["title"]))
    for field in ("explanation", "action", "owners"):
        if words_of[field]:
            output.line()
            output.line(printable(words_of[field]))
    return ExitCode.OK


def _document(cause: ErrorCause, words_of: dict[str, str], lang: str, dlls: list[dict], shown: list[str]) -> str:
    """The answer as JSON: what was recognised in the text (the full path redacted as reports redact it), whose
    each DLL is ("dlls") and the packages the text shows ("shown"), and the words in `lang`."""
    from app.report.document import redact

    facts = {name: getattr(cause, name) for name in ("kind", "winerror", "hresult", "dll", "dll_path", "symbol",
                                                      "language", "advice", "owner", "names_torch")}
    facts["dlls"], facts["shown"] = dlls, shown
    return json.dumps({"schema": SCHEMA, "lang": lang, **redact(facts), **words_of}, indent=2, ensure_ascii=False)
