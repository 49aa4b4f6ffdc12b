"""The app's repair run by a real second Python process, as a second window or a crash leaves it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.images import VENV

REPO = Path(__file__).resolve().parents[2]
PYTHON = VENV + r"\Scripts\python.exe"
BOOT = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; sys.exit(main(sys.argv[1:]))"


def repair_argv(image, *extra: str) -> list[str]:
    return ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime",
            "--source", "torch-bundled", "--yes", *extra]


def start_paused(image, data_dir: Path, point: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A real second process running the repair, held at `point` until the returned file is created."""
    go = tmp_path / f"go-{point.replace(':', '-')}"
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_PAUSE_AT": point, "TDD_PAUSE_FILE": str(go)}
    process = subprocess.Popen([sys.executable, "-c", BOOT, *repair_argv(image)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    reached = Path(str(go) + ".reached")
    deadline = time.monotonic() + 60
    while not reached.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the repair never reached its pause point"
        time.sleep(0.02)
    return process, go
