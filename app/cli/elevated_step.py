"""`elevated-step JOB` (hidden): the one elevated helper does only the job it was given (app/repair/elevated.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.base import open_system
from app.cli.output import Output


def run(args: argparse.Namespace, output: Output) -> int:
    """The helper's own exit status (it writes each step's result into the job's folder, where the app reads
    them), not an ExitCode: the app that started it reads it."""
    from app.repair.elevated import perform

    return perform(open_system(None), Path(args.job), args.sha256)
