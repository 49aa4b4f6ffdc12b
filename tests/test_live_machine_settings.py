"""Machine-wide settings through the elevated helper, in the Windows lab (Windows CPython under Wine): the CLI
`repair --action enable-long-paths --yes` writes HKLM LongPathsEnabled=1 through `elevated-step` (started by
LiveWindows.run_elevated, ShellExecuteExW "runas"), undo writes the value before back through another elevated
step; a dead entry of the machine PATH is removed and put back the same way. Read back with `wine reg query`."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import lab_env
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]

FS = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
ENVIRONMENT = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
DEAD = r"C:\no such folder\dead entry"  # ASCII: `wine reg query` prints in the console code page

SCRIPT = r"""
import sys
sys.path.insert(0, {repo!r})
from app.main import main
raise SystemExit(main({argv!r}))
"""


@pytest.fixture(scope="module")
def env(lab):
    return lab_env(lab, "machine-settings", torch_version="2.4.1")


def cli(lab, env, tmp_path, *argv):
    script = tmp_path / "cli.py"
    script.write_text(SCRIPT.format(repo=to_windows_path(REPO_ROOT), argv=list(argv)), encoding="utf-8")
    return lab.run_python([script], env={"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}, timeout=600,
                          torch_env=env)


def query(lab, key, name):
    """(type, data) from `wine reg query`, or None when the value is absent."""
    lab.ensure()
    result = subprocess.run(["wine", "reg", "query", key, "/v", name], env=lab.base_env(), capture_output=True,
                            timeout=120)
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        parts = line.strip().split(None, 2)
        if len(parts) >= 2 and parts[0].lower() == name.lower():
            return parts[1], parts[2] if len(parts) == 3 else ""
    return None


def journal(tmp_path):
    (transaction,) = (tmp_path / "journal" / "transactions").iterdir()
    return transaction, [json.loads(line) for line in (transaction / "journal.jsonl").read_text("utf-8").splitlines()]


@pytest.mark.parametrize("before", ["0", None])
def test_enable_long_paths_through_the_elevated_helper_and_undo(lab, env, tmp_path, before):
    lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])
    if before is not None:
        lab.wine_reg(["add", FS, "/v", "LongPathsEnabled", "/t", "REG_DWORD", "/d", before, "/f"])
    try:
        result = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "enable-long-paths",
                     "--yes")
        assert "LongPathsEnabled" in result.stdout, (result.stdout[-3000:], result.stderr[-3000:])
        assert query(lab, FS, "LongPathsEnabled") == ("REG_DWORD", "0x1"), result.stderr[-3000:]
        transaction, records = journal(tmp_path)
        (intent,) = [r for r in records if r["kind"] == "intent"]
        assert intent["op"] == "machine-value" and intent["after"] == {"type": "REG_DWORD", "data": 1}
        assert intent["before"] == (None if before is None else {"type": "REG_DWORD", "data": 0})
        results = json.loads((transaction / "elevated" / "elevated-1.json.result.json").read_text("utf-8"))
        assert results["results"] == [{"op": "set-value", "ok": True, "code": None, "detail": ""}]

        undo = cli(lab, env, tmp_path, "undo", "--last")
        assert "Undone" in undo.stdout, (undo.stdout[-3000:], undo.stderr[-3000:])
        assert query(lab, FS, "LongPathsEnabled") == (None if before is None else ("REG_DWORD", "0x0"))
        assert (transaction / "elevated" / "elevated-2.json.result.json").exists()  # undo: another elevated step
    finally:
        lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])


def test_a_dead_machine_path_entry_is_removed_and_put_back(lab, env, tmp_path):
    original = query(lab, ENVIRONMENT, "Path")
    assert original is not None and original[0] == "REG_EXPAND_SZ"
    dead_path = original[1] + ";" + DEAD
    lab.wine_reg(["add", ENVIRONMENT, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", dead_path, "/f"])
    try:
        plan = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "remove-path-entry",
                   "--plan")
        assert "set-machine-value" not in plan.stdout and "whole computer" in plan.stdout, plan.stdout[-3000:]
        result = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "remove-path-entry",
                     "--yes")
        assert query(lab, ENVIRONMENT, "Path") == ("REG_EXPAND_SZ", original[1]), (result.stdout[-3000:],
                                                                                   result.stderr[-3000:])
        undo = cli(lab, env, tmp_path, "undo", "--last")
        assert "Undone" in undo.stdout, (undo.stdout[-3000:], undo.stderr[-3000:])
        assert query(lab, ENVIRONMENT, "Path") == ("REG_EXPAND_SZ", dead_path)
    finally:
        lab.wine_reg(["add", ENVIRONMENT, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", original[1], "/f"])
