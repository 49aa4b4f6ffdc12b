"""`repair`: plan one repair of one environment, show it, ask, apply it in a journal transaction, check again."""

from __future__ import annotations

import argparse
import json
import time
from typing import Callable, Optional

from app.cli.base import (
    ExitCode,
    UsageError,
    demo_computer,
    language_for,
    open_system,
    typed_environment,
    warn_unfinished,
)
from app.cli.output import Output
from app.cli.stop import ctrl_c_stops
from app.demo.computer import DEMO_VENV
from app.i18n import words
from app.probes.finding import BLOCKER
from app.repair.names import repair_name
from app.report.plan_lines import change_lines
from app.report.units import download_line, size_text

SCHEMA = "torch-dll-doctor.repair/1"
PROGRESS_EVERY_S = 0.5  # a download's progress line, at most this often (and always its last)
YES = ("y", "yes", "是")


def say_plan(plan, lang: str, output: Output) -> None:
    """What will change, where, from which source, the download, and that it can be undone."""
    output.line(words("cli.repair.plan", lang, action=repair_name(plan.action, lang), environment=plan.environment))
    for line in change_lines(plan, lang):
        output.line("  - " + line)
    for note in plan.notes:
        output.line("  " + note[lang])
    if plan.download_bytes:
        output.line("  " + words("cli.repair.download_size", lang, size=size_text(plan.download_bytes)))
    output.line(words("cli.repair.undoable", lang))


def say_guide(guide, lang: str, output: Output, shown: Callable[[str], str] = lambda text: text) -> None:
    """A guided repair's steps, numbered, and the official page to open (`shown`: redaction, for a report)."""
    from app.repair.guides import guide_lines

    output.line(words("cli.guide.heading", lang, name=repair_name(guide.action, lang)))
    for line in guide_lines(guide, lang):
        output.line(shown(line))


def event_printer(lang: str, output: Output) -> Callable:
    """What a running repair tells, on stderr: the lines a step prints as it goes (pip's, the installer's waits),
    indented, and a download's progress (bytes done of the total, speed, time left) at most every
    PROGRESS_EVERY_S."""
    from app.repair.run import DownloadMoved, OutputLine

    last = [0.0]

    def show(event) -> None:
        if isinstance(event, OutputLine):
            output.note("    " + (event.text[lang] if isinstance(event.text, dict) else event.text).rstrip())
        elif isinstance(event, DownloadMoved):
            progress, now = event.progress, time.monotonic()
            if now - last[0] < PROGRESS_EVERY_S and progress.done != progress.total:
                return
            last[0] = now
            output.note(words("cli.repair.downloading", lang, progress=download_line(progress, lang)))

    return show


def _confirmed(args: argparse.Namespace, lang: str, output: Output) -> ExitCode | None:
    """None when the changes may go ahead; else the exit code of not asking or of a No."""
    if args.yes:
        return None
    if not output.can_ask():
        output.note(words("cli.repair.needs_yes.windowed" if output.shares_shell_console() else "cli.repair.needs_yes",
                          lang))
        return ExitCode.ERROR
    if output.ask(words("cli.repair.confirm", lang)).lower() not in YES:
        output.line(words("cli.repair.declined", lang))
        return ExitCode.PROBLEM
    return None


def outcome_document(plan, state: str, problems_left: list[str], transaction: Optional[str] = None) -> str:
    """The one JSON document of `repair --json` (schema torch-dll-doctor.repair/1), for every way a repair ends."""
    return json.dumps({"schema": SCHEMA, "plan": plan.to_dict(), "transaction": transaction, "state": state,
                       "problems_left": problems_left}, indent=2, ensure_ascii=False)


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    """Plan, show, ask, apply, say: each a step of its own below; the words of a failure are app/failures.py's."""
    from app.failures import failure_text
    from app.repair.actions import ACTIONS
    from app.repair.guides import guide_of
    from app.repair.journal import Journal
    from app.repair.names import ALIASES
    from app.repair.plan import PlanRefused
    from app.repair.run import RepairFailed, apply_plan, plan_repair

    if ALIASES.get(args.action, args.action) not in ACTIONS:  # a repair id that does not exist: a typing mistake
        raise UsageError("repair.refused.unknown_action", action=args.action, actions=", ".join([*ACTIONS, *ALIASES]))
    system = open_system(str(demo_computer()) if args.demo else args.root)
    lang = language_for(args.lang, *system.display_language())
    if not args.env and not args.demo:
        raise UsageError("error.repair_needs_env")
    journal = Journal()
    warn_unfinished(journal, lang, output)
    env = typed_environment(system, args.env or DEMO_VENV)
    try:
        plan, diagnosis = plan_repair(system, env, args.action, args.source)
    except PlanRefused as refused:
        output.note(failure_text(refused, lang))
        return ExitCode.PROBLEM
    guide = guide_of(plan)
    if guide is not None:
        return _guided(args, plan, guide, diagnosis, lang, output)
    say_plan(plan, lang, output)
    if args.plan:
        return ExitCode.OK
    declined = _confirmed(args, lang, output)
    if declined is not None:
        return declined
    try:
        with ctrl_c_stops(lang, output.note) as token:
            outcome = apply_plan(system, env, plan, journal, event_printer(lang, output), token)
    except RepairFailed as failed:  # whatever stopped it, it was rolled back (or says it was not): say why, plainly
        output.note(failure_text(failed, lang))  # the same words the wizard shows
        if failed.left_installed:  # read from the registry after the rollback: what the installer left stays
            output.note(words("repair.left_installed", lang, runtimes=failed.left_installed))
            if failed.restart_needed:
                output.note(words("repair.left_installed.restart", lang))
        return ExitCode.PROBLEM
    except Exception as failed:  # noqa: BLE001 - refused before anything changed (busy, files in use): why
        output.note(failure_text(failed, lang))
        return ExitCode.PROBLEM
    return _say_outcome(args, outcome, lang, output)


def _guided(args: argparse.Namespace, plan, guide, diagnosis, lang: str, output: Output) -> ExitCode:
    """Steps for the user: printed, and nothing was changed (exit 1: the problem stays)."""
    say_guide(guide, lang, output)
    output.line(words("cli.guide.nothing_changed", lang))
    if args.json:
        output.document(args.json, outcome_document(plan, "guided", [p.lead.code for p in diagnosis.problems
                                                                     if p.severity == BLOCKER]))
    return ExitCode.PROBLEM


def _say_outcome(args: argparse.Namespace, outcome, lang: str, output: Output) -> ExitCode:
    """How it ended, from the diagnosis made again; the transaction's id is in the undo line, where it is used."""
    from app.repair.run import FIXED, RESTART_NEEDED, UNCHECKED, unfinished_checks

    left = [p.lead.text(lang).title for p in outcome.problems_left]
    if outcome.state == FIXED:
        output.line(words("cli.repair.fixed", lang))
    elif outcome.state == UNCHECKED:  # nothing seen, but not every check could see: never "nothing stops it"
        output.line(words("cli.repair.unchecked", lang, checks=unfinished_checks(outcome.after, lang) or "-"))
    elif outcome.state == RESTART_NEEDED:  # not a failure: what is left waits for the restart
        output.line(words("cli.repair.restart_needed", lang, problems="; ".join(left)))
    else:
        output.line(words("cli.repair.still_blocked", lang, problems="; ".join(left)))
    if outcome.transaction.restart_needed and outcome.state != RESTART_NEEDED:
        output.line(words("repair.restart", lang))
    output.line(words("cli.repair.transaction", lang, id=outcome.transaction.id))
    if args.json:
        output.document(args.json, outcome_document(outcome.plan, outcome.state.value,
                                                    [p.lead.code for p in outcome.problems_left],
                                                    outcome.transaction.id))
    return ExitCode.OK if outcome.state == FIXED else ExitCode.PROBLEM
