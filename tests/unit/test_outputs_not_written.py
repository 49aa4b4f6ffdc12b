"""--json and --report to a place that cannot take the file (denied, a full disk): one plain line, exit 2, and no
half-written file; never "internal error". The full disk is a real one: a small tmpfs would need root, so Linux's
/dev/full (every write ends in ENOSPC) stands in, through a folder link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*argv: str, data: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TDD_DATA_DIR": str(data)})


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_folder_that_denies_writing_is_said_in_words(tmp_path):
    """A folder nobody may write to: for an ordinary user its permissions say so; root writes anywhere, so there the
    folder is made immutable (chattr +i, which root obeys too)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    root = os.geteuid() == 0
    if root and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not possible on this file system")
    try:
        done = run("diagnose", "--demo", "--quiet", "--json", str(folder / "out.json"), data=tmp_path / "data")
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    assert done.returncode == 2, (done.stdout[-500:], done.stderr)
    assert "could not be written" in done.stderr and "internal error" not in done.stderr.lower()
    assert list(folder.iterdir()) == []


def test_a_full_disk_is_said_in_words_and_leaves_no_half_file(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    for option in ("--json", "--report"):
        done = run("diagnose", "--demo", "--quiet", option, "/dev/full", data=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "could not be written" in done.stderr and "internal error" not in done.stderr.lower(), done.stderr
