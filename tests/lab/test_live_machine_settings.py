"""Machine-wide settings in the Windows lab (Windows CPython under Wine): the CLI `repair --action enable-long-paths
--yes` writes HKLM LongPathsEnabled=1 through Windows' own reg.exe (started by LiveWindows.run_elevated,
ShellExecuteExW "runas"; nothing of ours elevated), undo writes the value before back the same way; a dead entry
of the machine PATH is not changed by the app (its undo could not be held to a value of ours): the plan says to
remove it by hand, and the registry is untouched. Read back with `wine reg query`."""

from __future__ import annotations

import json

import pytest

from tests.helpers.lab import lab_env
from tests.helpers.machine_settings import FS, OWNERS_NOTED, cli, elevated, journal, query
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]

ENVIRONMENT = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
DEAD = r"C:\no such folder\dead entry"  # ASCII: `wine reg query` prints in the console code page


@pytest.fixture(scope="module")
def env(lab):
    return lab_env(lab, "machine-settings", torch_version="2.4.1")


@pytest.mark.parametrize("before", ["0", None])
def test_enable_long_paths_through_windows_reg_exe_and_undo(lab, env, tmp_path, before):
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
        (argv,) = elevated(tmp_path)  # one permission prompt, for Windows' reg.exe and nothing else
        assert argv[0].lower() == "c:\\windows\\system32\\reg.exe"
        assert argv[1:] == ["add", FS, "/v", "LongPathsEnabled", "/t", "REG_DWORD", "/d", "1", "/f", "/reg:64"]

        undo = cli(lab, env, tmp_path, "undo", "--last")
        assert "Undone" in undo.stdout, (undo.stdout[-3000:], undo.stderr[-3000:])
        assert query(lab, FS, "LongPathsEnabled") == (None if before is None else ("REG_DWORD", "0x0"))
        argvs = elevated(tmp_path)  # undo: a second prompt, reg.exe again
        assert len(argvs) == 2 and argvs[1][0] == argv[0]
        assert argvs[1][1] == ("delete" if before is None else "add")
    finally:
        lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])


UNDO_FROM_THE_WIZARD = r"""
import json, sys
sys.path.insert(0, {repo!r})
from app.repair.journal import Journal
from app.ui.repair_run import undo_transactions
""" + OWNERS_NOTED + r"""
result = undo_transactions(list(Journal().transactions()), {owner!r})  # as the Finish page's Undo calls it
print(json.dumps({{"owners": owners, "complete": result.complete}}))
"""


def test_an_undo_from_the_wizard_gives_windows_permission_prompt_the_wizards_window(lab, env, tmp_path):
    """The Finish page's (and the first page's) undo runs reg.exe elevated like the repair: its permission prompt
    must belong to the wizard's window (SHELLEXECUTEINFO.hwnd), not to none, where it can end up a flashing taskbar
    button behind the wizard."""
    lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])
    try:
        result = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "enable-long-paths",
                     "--yes")
        said = (result.returncode, result.stdout[-2000:], result.stderr[-3000:], elevated(tmp_path))
        assert result.returncode == 0, said
        assert query(lab, FS, "LongPathsEnabled") == ("REG_DWORD", "0x1"), said
        script = tmp_path / "undo.py"
        script.write_text(UNDO_FROM_THE_WIZARD.format(repo=to_windows_path(REPO_ROOT), owner=0x5150),
                          encoding="utf-8")
        undone = lab.run_python([script], env={"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")},
                                timeout=600, torch_env=lab.app_python())
        seen = json.loads(undone.stdout.strip().splitlines()[-1])
        assert seen == {"owners": [0x5150], "complete": True}, (undone.stdout[-2000:], undone.stderr[-3000:])
        assert query(lab, FS, "LongPathsEnabled") is None
    finally:
        lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])


def test_a_dead_machine_path_entry_is_left_for_the_user_and_nothing_is_elevated(lab, env, tmp_path):
    original = query(lab, ENVIRONMENT, "Path")
    assert original is not None and original[0] == "REG_EXPAND_SZ"
    dead_path = original[1] + ";" + DEAD
    lab.wine_reg(["add", ENVIRONMENT, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", dead_path, "/f"])
    try:
        plan = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "remove-path-entry",
                   "--plan")
        text = plan.stdout + plan.stderr
        assert "in the computer-wide PATH, not in yours" in text, text[-3000:]
        cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "remove-path-entry", "--yes")
        assert query(lab, ENVIRONMENT, "Path") == ("REG_EXPAND_SZ", dead_path)
        assert elevated(tmp_path) == []
    finally:
        lab.wine_reg(["add", ENVIRONMENT, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", original[1], "/f"])
