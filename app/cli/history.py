"""`history`: past repairs, when, what, for which environment, and their state."""

from __future__ import annotations

import argparse
import json

from app.cli.base import ExitCode, language_for, machine_filter
from app.cli.output import Output
from app.i18n import words

SCHEMA = "torch-dll-doctor.history/1"


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    from app.repair.journal import Journal

    lang = language_for(args.lang)
    machine = machine_filter(args.root)
    items = [t.summary() for t in Journal().transactions() if machine is None or t.machine == machine]
    if args.json:
        output.document(args.json, json.dumps({"schema": SCHEMA, "transactions": items}, indent=2,
                                              ensure_ascii=False))
        return ExitCode.OK
    if not items:
        output.line(words("cli.history.empty", lang))
    for item in items:
        output.line(words("cli.history.line", lang, created=item["created"], id=item["id"], action=item["action"],
                          state=words(f"history.state.{item['state']}", lang), environment=item["environment"]))
    return ExitCode.OK
