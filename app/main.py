"""The command line: `deps`, `diagnose`, `explain`, `repair`, `undo` and `history` (DESIGN.md has the contract)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

from app import __version__
from app.cancel import Cancelled
from app.engine.graph import BLOCKING, DependencyGraph
from app.i18n import pick_language, words
from app.inventory.discovery import discover
from app.inventory.environment import PythonEnvironment, inspect_environment
from app.inventory.search_context import loader_for
from app.probes.error_text import classify_error
from app.probes.runner import ProbeEvent, run_diagnosis
from app.report.document import diagnosis_report, render_report, report_format, text_report
from app.report.tree_text import render_tree
from app.system.base import System
from app.system.offline import OfflineImage

DEPS_SCHEMA = "torch-dll-doctor.deps/1"


class UsageError(Exception):
    """A problem with what the user typed: one line on stderr, in their language (ui_text.json `key`), exit 2."""

    def __init__(self, key: str, **values: object) -> None:
        super().__init__(key)
        self.key, self.values = key, values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app", description="Torch DLL Doctor: find out why PyTorch cannot load its DLLs on Windows.")
    parser.add_argument("--version", action="version", version=f"Torch DLL Doctor {__version__}")
    wizard = parser.add_argument_group("the wizard (no COMMAND)")
    wizard.add_argument("--demo", action="store_true", help="open the wizard on the built-in demo computer")
    wizard.add_argument("--root", metavar="DIR", help="open the wizard on a copied Windows drive at DIR")
    wizard.add_argument("--env", dest="wizard_env", metavar="PATH",
                        help="open the wizard with this Python environment chosen (a folder or its python.exe)")
    wizard.add_argument("--lang", choices=("en", "zh_CN"), help="language (default: the computer's)")
    wizard.add_argument("--screenshot-pages", metavar="DIR",
                        help="save every page of a run on the demo computer as PNG, in both languages, at 100%% "
                             "and 200%% scale, then exit")
    wizard.add_argument("--scale", type=float, help=argparse.SUPPRESS)  # one scale of --screenshot-pages
    wizard.add_argument("--first-window-exit", action="store_true",
                        help="exit as soon as the first window is shown (measures the start time)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    deps = commands.add_parser("deps", help="show the dependency tree of a DLL, or of every DLL in a folder")
    deps.add_argument("path", help="a DLL, or a folder of DLLs such as torch\\lib")
    deps.add_argument("--root", metavar="DIR", help="analyse a copied Windows drive (an offline image) at DIR")
    deps.add_argument("--env", metavar="PATH", help="the Python environment (folder or python.exe) that loads it")
    deps.add_argument("--json", metavar="FILE", help="write JSON to FILE, or to standard output with -")
    deps.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    diagnose = commands.add_parser("diagnose", help="find every PyTorch install and explain why it does not load")
    where = diagnose.add_mutually_exclusive_group()
    where.add_argument("--root", metavar="DIR", help="analyse a copied Windows drive (an offline image) at DIR")
    where.add_argument("--demo", action="store_true", help="analyse the built-in demo computer (works anywhere)")
    diagnose.add_argument("--env", metavar="PATH", action="append", default=[],
                          help="a Python environment (folder or python.exe); repeat for several; default: all found")
    diagnose.add_argument("--json", metavar="FILE", help="write the JSON document to FILE, or to standard output: -")
    diagnose.add_argument("--report", metavar="FILE", help="write a report: FILE.html for a web page, else plain text")
    diagnose.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")
    diagnose.add_argument("--no-redact", action="store_true", help="keep user names in paths")
    diagnose.add_argument("--quiet", action="store_true", help="no progress lines on standard error")

    repair = commands.add_parser("repair", help="repair one environment (asks first; every change can be undone)")
    repair.add_argument("--root", metavar="DIR", help="repair inside a copied Windows drive (an offline image) at DIR")
    repair.add_argument("--env", metavar="PATH", required=True, help="the Python environment (folder or python.exe)")
    repair.add_argument("--action", metavar="ID", required=True,
                        help="place-libomp140 (also: openmp-runtime), upgrade-torch, install-vc-runtime, "
                             "unset-env-var, remove-path-entry, enable-long-paths")
    repair.add_argument("--source", metavar="ID", help="where the file comes from: vs, torch-bundled, intel-openmp")
    repair.add_argument("--plan", action="store_true", help="only show what would change")
    repair.add_argument("--yes", action="store_true", help="make the changes without asking")
    repair.add_argument("--json", metavar="FILE", help="write the outcome as JSON to FILE, or to standard output: -")
    repair.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")
    repair.add_argument("--no-restore-point", action="store_true",
                        help="install-vc-runtime: do not make a System Restore point first")

    step = commands.add_parser("elevated-step")  # hidden: the elevated helper (app/repair/elevated.py)
    step.add_argument("job")

    undo = commands.add_parser("undo", help="undo a repair: every file and setting back as it was")
    which = undo.add_mutually_exclusive_group(required=True)
    which.add_argument("--last", action="store_true", help="the newest repair that is not undone yet")
    which.add_argument("--transaction", metavar="ID", help="a repair from `history`")
    undo.add_argument("--root", metavar="DIR", help="only repairs of the copied Windows drive at DIR")
    undo.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    history = commands.add_parser("history", help="past repairs: when, what, and whether they were undone")
    history.add_argument("--root", metavar="DIR", help="only repairs of the copied Windows drive at DIR")
    history.add_argument("--json", metavar="FILE", help="write JSON to FILE, or to standard output: -")
    history.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    explain = commands.add_parser("explain", help="say in plain words what a Windows error message means")
    explain.add_argument("error", nargs="*", help="the error text (or its number), as pasted; - reads it from "
                         "standard input (any length); empty text: a message and exit 1")
    explain.add_argument("--lang", choices=("en", "zh_CN"), help="language of the answer (default: the computer's)")
    return parser


def open_system(root: Optional[str]) -> System:
    if root:
        if not Path(root).is_dir():
            raise UsageError("error.no_image", path=root)
        return OfflineImage(Path(root))
    if os.name == "nt":
        from app.system.live import LiveWindows

        return LiveWindows()
    raise UsageError("error.not_windows")


def _host(system: System, text: str) -> Path:
    """A path as typed: a file on this machine, or a Windows path inside the image."""
    path = Path(text)
    if not path.exists():
        inside = system.host_path(text)
        if inside is not None and inside.exists():
            return inside
    if not path.exists():
        raise UsageError("error.no_such_path", path=text)
    return path


def _environment_around(system: System, path: Path) -> Optional[PythonEnvironment]:
    """The environment that owns a torch\\lib folder or DLL: walk up until one is found (six levels at most)."""
    folder = path if path.is_dir() else path.parent
    for candidate in [folder, *list(folder.parents)[:6]]:
        env = inspect_environment(system, candidate)
        if env is not None:
            return env
    return None


def run_deps(args: argparse.Namespace) -> int:
    system = open_system(args.root)
    target = _host(system, args.path)
    if args.env:
        env = inspect_environment(system, _host(system, args.env))
        if env is None:
            raise UsageError("error.no_python", path=args.env)
    else:
        env = _environment_around(system, target)
    graph = DependencyGraph(loader_for(system, env))
    dlls = sorted(p for p in target.iterdir() if p.suffix.lower() in (".dll", ".pyd")) if target.is_dir() else [target]
    if not dlls:
        raise UsageError("error.no_dlls", path=args.path)
    for dll in dlls:
        graph.add_root(dll)
    graph.expand_all()
    if args.json:
        document = {"schema": DEPS_SCHEMA, **graph.to_dict(system.windows_path)}
        _write(args.json, json.dumps(document, indent=2, ensure_ascii=False))
    else:
        live = not args.root
        lang = pick_language(args.lang, system.ui_language if live else None, system.code_page if live else None)
        _write("-", render_tree(graph, system.windows_path, lang))
    return 1 if any(graph.status(root) in BLOCKING for root in graph.roots) else 0


def run_diagnose(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        if args.demo:
            from app.demo.computer import build_demo_image

            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tdd-demo-")))
            system: System = OfflineImage(build_demo_image(scratch / "demo"))
            source, root = "demo", None
        else:
            system = open_system(args.root)
            source, root = ("image", str(Path(args.root).resolve())) if args.root else ("live", None)
        lang = pick_language(args.lang, system.ui_language if source == "live" else None,
                             system.code_page if source == "live" else None)
        from app.repair.journal import Journal

        _warn_unfinished(Journal(), lang)

        def say(text: str) -> None:
            if not args.quiet:
                print(text, file=sys.stderr, flush=True)

        if args.env:
            envs = []
            for location in args.env:
                env = inspect_environment(system, _host(system, location))
                if env is None:
                    raise UsageError("error.no_python", path=location)
                envs.append(env)
        else:
            say(words("cli.searching", lang))
            envs = []
            for env in discover(system):
                say("  " + words("cli.found_environment", lang, python=system.windows_path(env.python)))
                envs.append(env)

        def on_event(event: ProbeEvent) -> None:
            if event.state != "started":
                say(words("cli.progress", lang, done=event.done, total=event.total, label=event.probe.label[lang]))

        diagnosis = run_diagnosis(system, envs, on_event=on_event)
        document, trees = diagnosis_report(diagnosis, system, lang=lang, source=source, source_root=root,
                                           redacted=not args.no_redact)
        if args.json:
            _write(args.json, render_report(document, trees, lang, "json"))
        if args.report:
            fmt = "html" if report_format(args.report) == "html" else "text"
            Path(args.report).write_text(render_report(document, trees, lang, fmt), encoding="utf-8")
            say(words("cli.report_written", lang, path=args.report))
        if args.json != "-":
            sys.stdout.write(text_report(document, trees, lang))
        # a diagnosis that could not run every check never says "all clear"
        return 1 if diagnosis.blockers or not diagnosis.complete else 0


def _machine_filter(root: Optional[str]) -> Optional[dict]:
    from app.repair.run import machine_of

    return machine_of(open_system(root)) if root else None


def _warn_unfinished(journal, lang: str) -> None:
    """A repair cut short by a crash is found at the next start and offered for rollback."""
    for transaction in journal.unfinished():
        begin = transaction.begin
        print(words("cli.repair.unfinished", lang, id=transaction.id, action=begin.get("action"),
                    created=begin.get("created")), file=sys.stderr)


def _say_plan(plan, lang: str) -> None:
    print(words("cli.repair.plan", lang, action=plan.action, environment=plan.environment))
    for change in plan.changes:
        print("  - " + words(f"cli.repair.change.{change.kind}", lang, **change.to_dict()))
    for note in plan.notes:
        print("  " + note[lang])
    if plan.download_bytes:
        print("  " + words("cli.repair.download_size", lang, size=_size(plan.download_bytes)))
    print(words("cli.repair.undoable", lang))


def _size(count: float) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e5 else f"{count / 1e3:.0f} KB"


def _download_printer(lang: str):
    """Progress lines on stderr for a download, at most a few a second."""
    last = [0.0]

    def show(event) -> None:
        now = time.monotonic()
        if now - last[0] < 0.5 and event.done != event.total:
            return
        last[0] = now
        print(words("cli.repair.download_progress", lang, done=_size(event.done),
                    total=_size(event.total) if event.total else "?", speed=_size(event.speed),
                    eta=f"{event.eta:.0f} s" if event.eta is not None else "?"), file=sys.stderr, flush=True)

    return show


def run_repair(args: argparse.Namespace) -> int:
    from app.repair.download import DownloadError
    from app.repair.journal import Journal
    from app.repair.plan import PlanRefused
    from app.repair.run import FIXED, FilesInUse, apply_plan, failure_text, plan_repair
    from app.repair.vc_runtime import InstallerFailed

    system = open_system(args.root)
    lang = pick_language(args.lang, *((system.ui_language, system.code_page) if not args.root else (None, None)))
    journal = Journal()
    _warn_unfinished(journal, lang)
    env = inspect_environment(system, _host(system, args.env))
    if env is None:
        raise UsageError("error.no_python", path=args.env)
    try:
        plan, diagnosis = plan_repair(system, env, args.action, args.source)
    except PlanRefused as refused:
        for reason in refused.reasons:
            print(reason[lang], file=sys.stderr)
        return 1
    if args.no_restore_point and plan.download.get("restore_point"):
        from app.repair.vc_runtime import without_restore_point

        plan = without_restore_point(plan)
    _say_plan(plan, lang)
    if args.plan:
        return 0
    if not args.yes:
        if not sys.stdin or not sys.stdin.isatty():
            print(words("cli.repair.needs_yes", lang), file=sys.stderr)
            return 2
        if input(words("cli.repair.confirm", lang)).strip().lower() not in ("y", "yes", "是"):
            print(words("cli.repair.declined", lang))
            return 1
    try:
        outcome = apply_plan(system, env, plan, diagnosis, journal,
                             on_output=lambda line: print("    " + (line[lang] if isinstance(line, dict) else line)
                                                          .rstrip(), file=sys.stderr, flush=True),
                             on_progress=_download_printer(lang))
    except (DownloadError, PlanRefused, InstallerFailed, FilesInUse, OSError, ValueError) as failed:
        if isinstance(failed, InstallerFailed):
            _say_restore_point(journal.last(), lang)
        print(failure_text(failed, lang), file=sys.stderr)  # the same words the wizard shows
        return 1
    _say_restore_point(outcome.transaction, lang)
    left = [p.lead.text(lang).title for p in outcome.problems_left]
    print(words("cli.repair.fixed", lang) if outcome.state == FIXED
          else words("cli.repair.still_blocked", lang, problems="; ".join(left)))
    if any(r.get("outcome") in ("restart-needed", "restart-started") for r in outcome.transaction.records):
        print(words("repair.vc.restart", lang))
    print(words("cli.repair.transaction", lang, id=outcome.transaction.id))
    if args.json:
        _write(args.json, json.dumps({"schema": "torch-dll-doctor.repair/1", "plan": plan.to_dict(),
                                      "transaction": outcome.transaction.id, "state": outcome.state,
                                      "problems_left": [p.lead.code for p in outcome.problems_left]},
                                     indent=2, ensure_ascii=False))
    return 0 if outcome.state == FIXED else 1


def _say_restore_point(transaction, lang: str) -> None:
    """Whether the elevated step made a System Restore point, plainly (also when Windows did not allow one)."""
    for record in transaction.records if transaction is not None else []:
        made = record.get("restore_point") if record.get("kind") == "note" else None
        if made is None:
            continue
        if made["ok"]:
            print(words("repair.restore_point.made", lang))
        else:
            why = str(made.get("detail") or "")
            reason = why.partition(":")[0] if why.partition(":")[0] in ("unavailable", "protection-off") else "error"
            print(words("repair.restore_point.not_allowed", lang,
                        reason=words(f"repair.restore_point.reason.{reason}", lang), detail=why))


def run_elevated_step(args: argparse.Namespace) -> int:
    """The elevated helper: performs only the job it was given (app/repair/elevated.py)."""
    from app.repair.elevated import perform

    return perform(open_system(None), Path(args.job))


def run_undo(args: argparse.Namespace) -> int:
    from app.repair.journal import Journal, RollbackStopped
    from app.repair.run import failure_text, undo

    lang = pick_language(args.lang)
    journal = Journal()
    transaction = journal.last(_machine_filter(args.root)) if args.last else journal.get(args.transaction)
    if transaction is None:
        print(words("cli.undo.none" if args.last else "cli.undo.no_such", lang, id=args.transaction),
              file=sys.stderr)
        return 1
    try:
        after = undo(transaction)
    except RollbackStopped as stopped:
        print(failure_text(stopped, lang), file=sys.stderr)
        return 1
    print(words("cli.undo.done", lang, id=transaction.id))
    return 1 if after.blockers else 0


def run_history(args: argparse.Namespace) -> int:
    from app.repair.journal import Journal

    lang = pick_language(args.lang)
    machine = _machine_filter(args.root)
    items = [t.summary() for t in Journal().transactions() if machine is None or t.machine == machine]
    if args.json:
        _write(args.json, json.dumps({"schema": "torch-dll-doctor.history/1", "transactions": items}, indent=2,
                                     ensure_ascii=False))
        return 0
    if not items:
        print(words("cli.history.empty", lang))
    for item in items:
        print(words("cli.history.line", lang, created=item["created"], id=item["id"], action=item["action"],
                    state=words(f"history.state.{item['state']}", lang), environment=item["environment"]))
    return 0


def run_explain(args: argparse.Namespace) -> int:
    import locale

    from app.probes.error_text import printable

    ui_language, code_page = None, None
    if not args.lang and os.name == "nt":  # the computer's display language, as `diagnose` chooses it
        try:
            system = open_system(None)
            ui_language, code_page = system.ui_language, system.code_page
        except Exception:  # noqa: BLE001 - no live system: LANG decides, as elsewhere
            pass
    lang = pick_language(args.lang, ui_language, code_page)
    if args.error == ["-"]:
        try:
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
        except (OSError, ValueError) as exc:
            print(printable(words("explain.unreadable", lang, error=exc)), file=sys.stderr)
            return 1
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # PowerShell and Notepad write UTF-16
            text = data.decode("utf-16", errors="replace")
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:  # a console's own code page (936 on Chinese Windows)
                text = data.decode(locale.getpreferredencoding(False) or "utf-8", errors="replace")
    else:
        text = " ".join(args.error)
    if not printable(text).strip():
        print(words("explain.empty", lang), file=sys.stderr)
        return 1
    words_of = classify_error(text).text(lang)
    # Nothing from the paste may reach the terminal as an escape sequence or a control character.
    print(printable(words_of["title"]))
    print()
    print(printable(words_of["explanation"]))
    print()
    print(printable(words_of["action"]))
    return 0


def _write(destination: str, text: str) -> None:
    if destination == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(destination).write_text(text + "\n", encoding="utf-8")


QT_OPTIONS = ("-platform", "-style", "-qwindowgeometry")  # Qt's own options, each with a value


def _split_qt_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    ours, qt = [], []
    items = list(argv)
    while items:
        item = items.pop(0)
        if item in QT_OPTIONS and items:
            qt += [item, items.pop(0)]
        else:
            ours.append(item)
    return ours, qt


def run_wizard(args: argparse.Namespace, qt_arguments: list[str]) -> int:
    """No command: the wizard. Where no window can open, one line says so and points to the command line."""
    lang = pick_language(args.lang)
    try:
        from app.ui.application import no_window_reason, run
    except ImportError as exc:  # PySide6 missing or its libraries (libGL, libxkbcommon…) not installed
        print(words("ui.no_window", lang, reason=str(exc)), file=sys.stderr)
        return 2
    reason = no_window_reason() if not args.screenshot_pages and "-platform" not in qt_arguments else None
    if reason:
        print(words("ui.no_window", lang, reason=words("ui.no_display", lang)), file=sys.stderr)
        return 2
    if args.screenshot_pages and no_window_reason() and "-platform" not in qt_arguments:
        qt_arguments = [*qt_arguments, "-platform", "offscreen"]  # pictures need no screen
    return run(demo=args.demo, root=args.root, env=args.wizard_env, lang=args.lang,
               screenshot_pages=args.screenshot_pages,
               scale=args.scale, first_window_exit=args.first_window_exit, qt_arguments=qt_arguments)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    ours, qt_arguments = _split_qt_arguments(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(ours)
    lang = pick_language(getattr(args, "lang", None))
    if sys.stdout and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        commands = {"deps": run_deps, "diagnose": run_diagnose, "explain": run_explain, "repair": run_repair,
                    "undo": run_undo, "history": run_history, "elevated-step": run_elevated_step}
        if args.command is None:
            return run_wizard(args, qt_arguments)
        return commands[args.command](args)
    except UsageError as exc:
        print(words(exc.key, lang, **exc.values), file=sys.stderr)
        return 2
    except Cancelled:
        print(words("error.cancelled", lang), file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 2, never a traceback
        print(words("error.internal", lang, error=f"{exc.__class__.__name__}: {exc}"), file=sys.stderr)
        return 2
