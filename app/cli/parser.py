"""The command line's grammar: the wizard's options and one subcommand per command (docs/design.md, "CLI
contract"), and Qt's own options set apart for the wizard."""

from __future__ import annotations

import argparse
from typing import Sequence

from app import __version__
from app.i18n import started_as


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=started_as(), description="Torch DLL Doctor: find out why PyTorch cannot load its DLLs on Windows.")
    parser.add_argument("--version", action="version", version=f"Torch DLL Doctor {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error, print its traceback too (it is always written to the log)")
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
    wizard.add_argument("--first-problem-exit", action="store_true",  # the wizard presses Next itself (with --env)
                        help=argparse.SUPPRESS)  # and exits once the first problem card is shown: benchmarks, tests
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
    diagnose.add_argument("--everywhere", action="store_true",
                          help="search deeper and longer for environments (the wizard's Search everywhere)")
    diagnose.add_argument("--json", metavar="FILE", help="write the JSON document to FILE, or to standard output: -")
    diagnose.add_argument("--report", metavar="FILE", help="write a report: FILE.html for a web page, else plain text")
    diagnose.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")
    diagnose.add_argument("--no-redact", action="store_true", help="keep user names in paths")
    diagnose.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    diagnose.add_argument("--import-first", metavar="MODULE", action="append", default=[],
                          help="the live check imports MODULE before torch, as your program does (PyQt5); repeatable")
    diagnose.add_argument("--app", metavar="NAME",
                          help="the AI app that shows the error, when it is not the one its folder says: the live "
                               "check imports first what that app is known to (the names are in ai_apps.json)")

    repair = commands.add_parser("repair", help="repair one environment (asks first; every change can be undone)")
    repair_where = repair.add_mutually_exclusive_group()
    repair_where.add_argument("--root", metavar="DIR",
                              help="repair inside a copied Windows drive (an offline image) at DIR")
    repair_where.add_argument("--demo", action="store_true",
                              help="repair the built-in demo computer (kept in the app's data folder until undone)")
    repair.add_argument("--env", metavar="PATH",
                        help="the Python environment (folder or python.exe); with --demo: its ComfyUI venv")
    repair.add_argument("--action", metavar="ID", required=True,
                        help="the repair the diagnosis named (place-libomp140, restore-torch-files, "
                             "install-vc-runtime, upgrade-torch, ...; an unknown id lists them all)")
    repair.add_argument("--source", metavar="ID|PATH",
                        help="where the files come from: vs, torch-bundled, intel-openmp (place-libomp140); "
                             "a .whl file or a folder of wheels (restore-torch-files); local, microsoft, or a "
                             "vc_redist.x64.exe you downloaded from Microsoft, or its folder (install-vc-runtime)")
    repair.add_argument("--plan", action="store_true", help="only show what would change")
    repair.add_argument("--yes", action="store_true", help="make the changes without asking")
    repair.add_argument("--json", metavar="FILE", help="write the outcome as JSON to FILE, or to standard output: -")
    repair.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    undo = commands.add_parser("undo", help="undo a repair: every file and setting back as it was")
    which = undo.add_mutually_exclusive_group(required=True)
    which.add_argument("--last", action="store_true", help="the newest repair that is not undone yet")
    which.add_argument("--transaction", metavar="ID", help="a repair from `history`")
    undo_where = undo.add_mutually_exclusive_group()
    undo_where.add_argument("--root", metavar="DIR", help="only repairs of the copied Windows drive at DIR")
    undo_where.add_argument("--demo", action="store_true", help="only repairs of the built-in demo computer")
    undo.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    history = commands.add_parser("history", help="past repairs: when, what, and whether they were undone")
    history.add_argument("--root", metavar="DIR", help="only repairs of the copied Windows drive at DIR")
    history.add_argument("--json", metavar="FILE", help="write JSON to FILE, or to standard output: -")
    history.add_argument("--lang", choices=("en", "zh_CN"), help="language of the words (default: the computer's)")

    _explain(commands)
    return parser


QT_OPTIONS = ("-platform", "-style", "-qwindowgeometry")  # Qt's own options, each with a value


def split_qt_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Qt's own options (`-platform offscreen`...) go to Qt; the rest is ours."""
    ours, qt = [], []
    items = list(argv)
    while items:
        item = items.pop(0)
        if item in QT_OPTIONS and items:
            qt += [item, items.pop(0)]
        else:
            ours.append(item)
    return ours, qt


def _explain(commands) -> None:
    explain = commands.add_parser("explain", help="say in plain words what a Windows error message means")
    explain.add_argument("error", nargs="*", help="the error text (or its number), as pasted; a file holding it; "
                         "- reads it from standard input (any length); empty text: a message and exit 1")
    explain.add_argument("--lang", choices=("en", "zh_CN"), help="language of the answer (default: the computer's)")
    explain.add_argument("--json", metavar="FILE", help="write the answer as JSON to FILE, or to standard output: -")
