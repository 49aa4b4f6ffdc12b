"""`undo`: put every file and setting of a repair back, then say in plain words what state PyTorch is in now."""

from __future__ import annotations

import argparse

from app.cli.base import ExitCode, language_for, machine_filter
from app.cli.output import Output
from app.cli.stop import ctrl_c_stops
from app.i18n import words
from app.probes.finding import BLOCKER


def state_after(after, environment: str, lang: str) -> str:
    """PyTorch as the undo left it: broken again as before the repair (and by what), loading, or not checked."""
    blockers = [p for p in after.problems if p.severity == BLOCKER]
    if blockers:
        return words("cli.undo.state.broken", lang, problems="; ".join(p.lead.text(lang).title for p in blockers))
    if not after.complete:  # the check after the undo could not see everything (or could not read the environment)
        return words("cli.undo.state.unsure", lang)
    if not after.environments:
        return words("cli.undo.state.gone", lang, environment=environment)
    return words("cli.undo.state.loads", lang)


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    from app.failures import failure_text
    from app.repair.journal import KEPT, ROLLED_BACK, Journal
    from app.repair.run import left_installed, undo
    from app.system.identity import system_for

    lang = language_for(args.lang)
    journal = Journal()
    if args.last:
        transaction = journal.last(machine_filter(args.root, args.demo))
        if transaction is None:
            output.note(words("cli.undo.none", lang))
            return ExitCode.PROBLEM  # nothing to undo is not a typing mistake
    else:
        transaction = journal.get(args.transaction)
        if transaction is None:
            output.note(words("cli.undo.no_such", lang, id=args.transaction))
            return ExitCode.ERROR
        if transaction.state in (ROLLED_BACK, KEPT):  # undone before (or kept by choice): nothing is done again
            output.note(words(f"cli.undo.already.{str(transaction.state)}", lang, id=transaction.id))
            return ExitCode.PROBLEM
    try:
        with ctrl_c_stops(lang, output.note, stoppable=False):
            after = undo(transaction)
    except Exception as failed:  # noqa: BLE001 - stopped, refused or busy: nothing overwritten; say why, plainly
        output.note(failure_text(failed, lang, "cli.undo.failed"))
        return ExitCode.PROBLEM
    kept = left_installed(system_for(transaction.machine), transaction)
    if kept:  # what undo leaves by design is said as it is now, never "every change was put back"
        output.line(words("cli.undo.done_kept_runtime", lang, id=transaction.id, runtimes=kept))
    else:
        output.line(words("cli.undo.done", lang, id=transaction.id))
    environment = transaction.begin.get("environment")
    if environment or after.environments:
        output.line(state_after(after, environment or "", lang))
    return ExitCode.OK
