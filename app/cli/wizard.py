"""No command: the wizard. Where no window can open, one line says so and points to the command line."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.base import ExitCode
from app.cli.output import Output
from app.i18n import language_for, words


def run(args: argparse.Namespace, qt_arguments: list[str], output: Output) -> int:
    lang = language_for(args.lang)
    try:
        from app.ui.application import debian_package, missing_xcb_libraries, no_window_reason, will_use_xcb
        from app.ui.application import run as run_window
    except ImportError as exc:  # PySide6 missing or its libraries (libGL, libxkbcommon…) not installed
        output.note(words("ui.no_window", lang, reason=str(exc)))
        return ExitCode.ERROR
    reason = no_window_reason() if not args.screenshot_pages and "-platform" not in qt_arguments else None
    if reason:
        output.note(words("ui.no_window", lang, reason=words("ui.no_display", lang)))
        return ExitCode.ERROR
    # Qt aborts (a core dump) when its X11 plugin's libraries are missing: find out first, and say what to install.
    missing = missing_xcb_libraries() if will_use_xcb(qt_arguments) else []
    if missing and not args.screenshot_pages:
        packages = " ".join(dict.fromkeys(debian_package(library) for library in missing))
        output.note(words("ui.no_x11_libraries", lang, libraries=", ".join(missing), packages=packages))
        return ExitCode.ERROR
    if args.screenshot_pages and (missing or no_window_reason()) and "-platform" not in qt_arguments:
        qt_arguments = [*qt_arguments, "-platform", "offscreen"]  # pictures need no screen
    if args.screenshot_pages:
        from app.ui.screenshots import render_all

        return render_all(Path(args.screenshot_pages), args.scale, qt_arguments)
    return run_window(demo=args.demo, root=args.root, env=args.wizard_env, lang=args.lang,
                      first_window_exit=args.first_window_exit, qt_arguments=qt_arguments,
                      first_problem_exit=args.first_problem_exit)
