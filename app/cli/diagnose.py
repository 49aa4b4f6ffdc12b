"""`diagnose`: find every PyTorch install (or the ones named), run every check, and print or write the report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

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
from app.i18n import words
from app.inventory.discovery import DEFAULT_SEARCH, EVERYWHERE, DiscoveryReport, discover
from app.inventory.runtime_copies import app_entry, known_apps
from app.probes.base import Program
from app.probes.finding import BLOCKER
from app.probes.runner import ProbeEvent, not_seen, run_diagnosis
from app.report.document import diagnosis_report, redact, render_report, report_format, text_report
from app.system.base import System
from app.system.offline import OfflineImage

SEARCH_S = DEFAULT_SEARCH[1]  # how long the search for environments may take (`--env` names one without it)


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    program = named_program(args)  # a mistyped --app is said at once, not after the search
    for target in (args.json, args.report):  # where the outputs go is checked before any work
        check_output_path(target)
    if args.demo:
        system: System = OfflineImage(demo_computer())
        source, root = "demo", None
    else:
        system = open_system(args.root)
        source, root = ("image", str(Path(args.root).resolve())) if args.root else ("live", None)
    lang = language_for(args.lang, *system.display_language())
    from app.repair.journal import Journal

    warn_unfinished(Journal(), lang, output)

    user = system.variable("USERNAME")
    shown = (lambda text: text) if args.no_redact else (lambda text: redact(text, [user] if user else []))

    def say(text: str) -> None:  # people paste the whole terminal into forum posts: these lines are redacted too
        if not args.quiet:
            output.note(shown(text))

    search = DiscoveryReport()
    depth, budget = EVERYWHERE if args.everywhere else (DEFAULT_SEARCH[0], SEARCH_S)
    if args.env:
        envs = [typed_environment(system, location) for location in args.env]
    else:
        say(words("cli.searching", lang))
        envs = []
        for env in discover(system, budget_s=budget, max_depth=depth, report=search):
            say("  " + words("cli.found_environment", lang, python=system.windows_path(env.python)))
            envs.append(env)

    diagnosis = run_diagnosis(system, envs, on_event=progress_lines(envs, lang, say), program=program)
    if search.out_of_time:  # an environment may be missing from the list: never "all clear"
        not_seen(diagnosis, "search", {"seconds": f"{budget:.0f}"})
    if search.problems:  # a launcher's settings file passed over: its environments may be missing
        not_seen(diagnosis, "settings", {"error": "; ".join(search.problems)})
    document, trees = diagnosis_report(diagnosis, system, lang=lang, source=source, source_root=root,
                                       redacted=not args.no_redact)
    if args.json:
        output.document(args.json, render_report(document, trees, lang, "json"))
    if args.report:
        fmt = "html" if report_format(args.report) == "html" else "text"
        output.document(args.report, render_report(document, trees, lang, fmt))
        say(words("cli.report_written", lang, path=args.report))
    if args.json != "-":
        output.text(text_report(document, trees, lang))
        say_guides(system, envs, diagnosis, lang, output, shown=shown)
    if diagnosis.nothing_checked:  # nothing was there to check: said, and an exit code of its own
        output.note(words(f"cli.nothing.{diagnosis.nothing_checked}", lang, pythons=len(envs),
                          root=args.root or "-"))
        return ExitCode.NOTHING
    # a diagnosis that could not run every check never says "all clear"
    if diagnosis.blockers or not diagnosis.complete:
        say_why_problem(diagnosis, lang, output, shown)
        return ExitCode.PROBLEM
    return ExitCode.OK


def progress_lines(envs: list, lang: str, say: Callable[[str], None]) -> Callable[[ProbeEvent], None]:
    """A line as each check ends; with several environments, it names the environment the check belongs to."""
    several = len({env.python for env in envs if env.torch}) > 1

    def on_event(event: ProbeEvent) -> None:
        if event.state != "started":
            line = words("cli.progress", lang, done=event.done, total=event.total, label=event.probe.label[lang])
            if several and event.environment:
                line = words("cli.progress.in", lang, line=line, python=event.environment)
            say(line)

    return on_event


def say_why_problem(diagnosis, lang: str, output: Output, shown) -> None:
    """Exit 1's reason in one line on standard error, whatever goes to standard output (a JSON document too)."""
    stopping = [problem for problem in diagnosis.problems if problem.severity == BLOCKER]  # counted as the report
    if stopping:
        first = stopping[0].lead.text(lang).title
        output.note(shown(words("cli.exit.blockers", lang, count=len(stopping), first=first)))
    else:
        output.note(words("cli.exit.incomplete", lang))


def check_output_path(target) -> None:
    """A file to write: its folder must exist and be a folder (`-` is standard output)."""
    if not target or target == "-":
        return
    folder = Path(target).expanduser().resolve().parent
    if not folder.is_dir():
        raise UsageError("error.output_folder", path=target, folder=str(folder))
    if Path(target).is_dir():
        raise UsageError("error.output_is_folder", path=target)


def named_program(args: argparse.Namespace) -> Program:
    """The program that shows the error, as typed: `--app NAME` (a known AI app) and `--import-first MODULE`."""
    app = None
    if args.app:
        entry = app_entry(args.app)
        if entry is None or not entry.get("imports_first"):  # naming any other app would change nothing
            raise UsageError("error.unknown_app", app=args.app,
                             apps=", ".join(a["name"] for a in known_apps() if a.get("imports_first")))
        app = entry["name"]
    return Program(app, tuple(args.import_first))


def say_guides(system: System, envs: list, diagnosis, lang: str, output: Output,
               shown: Callable[[str], str]) -> None:
    """After the problems: the steps only the user can take (a 64-bit Python, the NVIDIA driver, a fresh start),
    user names hidden as in the report above them."""
    from app.cli.repair import say_guide
    from app.repair.guides import guided_steps

    for problem, guide in guided_steps(system, envs, diagnosis):
        output.line("")
        output.line(shown(words("cli.guide.for_problem", lang, problem=problem.lead.text(lang).title)))
        say_guide(guide, lang, output, shown)
