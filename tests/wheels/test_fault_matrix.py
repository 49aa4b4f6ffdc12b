"""The fault matrix on copied drives: every action that can run inside one × every journal point, each in a real
process killed there (SIGKILL), or held there while a second process tries to undo it. After each: the next start
finds the state, the journal's state is the truth, and one rollback leaves the drive byte-identical to before
(`torch\\lib`, registry.json, environment.json); or, killed after the repair finished, one undo does."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.demo.pe_writer import Export, build_pe
from app.main import main
from app.repair.journal import DONE, INTERRUPTED, RUNNING, Journal
from tests.helpers.images import PYTHON_HOME, TORCH_LIB, VENV
from tests.helpers.repair_process import BOOT

PYTHON = VENV + r"\Scripts\python.exe"
LIBOMP = TORCH_LIB + r"\libomp140.x86_64.dll"
POINTS = ["begin", "intent:1", "change:1", "applied:1", "finish"]

pytestmark = pytest.mark.usefixtures("data_dir")


def prepare(image, action: str) -> list[str]:
    """Set the drive up so that `action` has something to do; its command line."""
    base = ["repair", "--root", str(image.root), "--env", PYTHON, "--yes"]
    if action == "place-libomp140:create":
        return [*base, "--action", "place-libomp140", "--source", "torch-bundled"]
    if action == "place-libomp140:replace":
        image.write(LIBOMP, build_pe(dll_name="libomp140.x86_64.dll", machine="x86", exports=[Export(703, "x")]))
        return [*base, "--action", "place-libomp140", "--source", "torch-bundled"]
    if action == "unset-env-var":
        image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
        return [*base, "--action", "unset-env-var"]
    if action == "remove-path-entry":
        image.set_variable("user", "PATH", r"C:\Gone\bin;" + PYTHON_HOME)
        return [*base, "--action", "remove-path-entry"]
    if action == "take-out-path-entry":  # a copy of the environment's torch, first on sys.path through PYTHONPATH
        shutil.copytree(image.host(VENV + r"\Lib\site-packages\torch"), image.host(r"C:\Tools\pylibs\torch"))
        image.set_variable("user", "PYTHONPATH", r"C:\Tools\scripts;C:\Tools\pylibs")
        return [*base, "--action", "take-out-path-entry"]
    if action == "enable-long-paths":  # as on Windows, the key is there, and long paths are off
        image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 0)
        image.save()
        return [*base, "--action", "enable-long-paths"]
    raise AssertionError(action)


def state_of(image) -> dict[str, str]:
    """Every byte the repairs may change: torch\\lib's files and the drive's registry and environment."""
    lib = image.host(TORCH_LIB)
    files = [p for p in sorted(lib.iterdir()) if p.is_file() and not p.name.startswith(".")]
    files += [p for p in (image.root / "registry.json", image.root / "environment.json") if p.exists()]
    return {str(p.relative_to(image.root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


ACTIONS = ["place-libomp140:create", "place-libomp140:replace", "unset-env-var", "remove-path-entry",
           "enable-long-paths", "take-out-path-entry"]


@pytest.mark.slow
@pytest.mark.parametrize("action", ACTIONS)
def test_a_kill_at_every_journal_point_is_found_and_one_rollback_restores_every_byte(torch_image, data_dir,
                                                                                     action, capsys):
    image = torch_image(libomp=action not in ("place-libomp140:create", "place-libomp140:replace"))
    argv = prepare(image, action)
    before = state_of(image)
    points = POINTS + (["backup:1"] if action == "place-libomp140:replace" else [])
    for point in points:
        env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_CRASH_AT": point}
        killed = subprocess.run([sys.executable, "-c", BOOT, *argv], env=env, capture_output=True, text=True,
                                timeout=120)
        assert killed.returncode == -9, (action, point, killed.stderr[-2000:])
        journal = Journal()
        newest = next(journal.transactions())
        if point == "finish":  # all was recorded: a finished repair, undone on request
            assert newest.state == DONE and journal.unfinished() == []
            assert main(["undo", "--last"]) == 0
        else:
            assert newest.state == INTERRUPTED, (action, point)  # the lock died with the process
            (unfinished,) = journal.unfinished()
            assert main(["undo", "--transaction", unfinished.id]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert state_of(image) == before, (action, point)
        assert journal.unfinished() == [] and journal.running() == []


@pytest.mark.slow
@pytest.mark.parametrize("action", ["place-libomp140:replace", "unset-env-var", "enable-long-paths",
                                    "take-out-path-entry"])
def test_a_second_process_never_undoes_a_repair_held_at_any_point(torch_image, data_dir, tmp_path, action, capsys):
    image = torch_image(libomp=action != "place-libomp140:replace")
    argv = prepare(image, action)
    before = state_of(image)
    for point in ("begin", "intent:1", "change:1", "applied:1"):
        go = tmp_path / f"go-{point.replace(':', '-')}"
        env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_PAUSE_AT": point, "TDD_PAUSE_FILE": str(go)}
        repair = subprocess.Popen([sys.executable, "-c", BOOT, *argv], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        reached = Path(str(go) + ".reached")
        deadline = time.monotonic() + 60
        while not reached.exists():
            assert repair.poll() is None and time.monotonic() < deadline, repair.communicate()
            time.sleep(0.02)
        held = state_of(image)
        assert next(Journal().transactions()).state == RUNNING
        assert main(["undo", "--last"]) == 1  # refused in words; nothing touched
        assert "Another repair or undo is running right now" in capsys.readouterr().err
        assert state_of(image) == held
        go.write_text("go")
        out, err = repair.communicate(timeout=120)
        assert repair.returncode == 0, (point, err)
        assert next(Journal().transactions()).state == DONE
        assert main(["undo", "--last"]) == 0  # the repair's journal is the truth: its undo restores every byte
        capsys.readouterr()
        assert state_of(image) == before, (action, point)
