"""`upgrade-torch` for real in the Windows lab: Windows CPython and the real torch 2.4.0 / 2.4.1 wheels under Wine,
pip run by the environment itself. (Placing the OpenMP runtime for real, from torch's own copy and from the
package index, is proved with the frozen app in tests/lab/test_exe.py.)"""

from __future__ import annotations

import json

import pytest

from tests.helpers.files import hashes
from tests.helpers.lab import lab_env
from tests.helpers.torch_check import MATMUL
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"


def test_upgrade_torch_240_with_the_users_own_pip_settings_then_undo(lab, tmp_path):
    """pip of the environment itself, configured the way a user configures it (here: PIP_NO_INDEX and
    PIP_FIND_LINKS naming a local folder of wheels, as a mirror would be named), upgrades 2.4.0 to 2.4.1."""
    from tests import realfiles
    from tests.winelab import _extract_wheel

    env = lab_env(lab, "upgrade-240", torch_version="2.4.0")
    site = env / "Lib" / "site-packages"
    _extract_wheel(realfiles.download("pip==24.2"), site)
    wheels = [realfiles.download(req) for req in ("torch==2.4.1", "setuptools==75.1.0", "torch==2.4.0")]
    pip_config = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": to_windows_path(wheels[0].parent), "PIP_NO_COMPILE": "1",
                  "TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}

    def app(*argv):
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
        return lab.run_python(["-c", code], env=pip_config, timeout=1200, torch_env=env)

    planned = app("repair", "--env", to_windows_path(env), "--action", "upgrade-torch", "--plan")
    assert planned.returncode == 0 and "torch: 2.4.0 -> 2.4.1" in planned.stdout, planned.stderr[-2000:]
    upgraded = app("repair", "--env", to_windows_path(env), "--action", "upgrade-torch", "--yes", "--json", "-")
    assert upgraded.returncode == 0, upgraded.stderr[-3000:]
    assert "Successfully installed" in upgraded.stderr  # pip's own progress, shown as it comes
    outcome = json.loads(upgraded.stdout[upgraded.stdout.index("{"):])
    assert outcome["state"] == "fixed" and outcome["plan"]["packages"]["before"] == {"torch": "2.4.0"}
    works = lab.run_python(["-c", "import torch; print(torch.__version__, float(torch.ones(3) @ torch.ones(3)))"],
                           torch_env=env)
    assert works.stdout.split() == ["2.4.1+cpu", "3.0"], works.stderr[-2000:]

    undone = app("undo", "--last")
    assert "Undone" in undone.stdout, undone.stderr[-3000:]
    again = lab.run_python(["-c", MATMUL], torch_env=env)
    assert again.returncode != 0 and "WinError 126" in again.stderr and "fbgemm.dll" in again.stderr


# One point in the lab, the one where the undo must run pip again; the point before pip ran (the undo changes
# nothing) is tests/unit/test_packages_change.py's, as each lab kill costs two real pip runs of torch under Wine.
@pytest.mark.parametrize("point", ["change:1"])
def test_upgrade_torch_killed_at_a_journal_point_is_put_back_by_one_undo(lab, tmp_path, point):
    """The fault matrix's upgrade-torch row, in the lab: ended after pip finished but before it was recorded
    (change:1: the undo installs 2.4.0 again). After it, the
    journal says interrupted, and one undo leaves torch 2.4.0 with torch\\lib as it was, byte for byte."""
    from tests import realfiles
    from tests.winelab import _extract_wheel

    env = lab_env(lab, f"upgrade-killed-{point.replace(':', '-')}", torch_version="2.4.0")
    site = env / "Lib" / "site-packages"
    _extract_wheel(realfiles.download("pip==24.2"), site)
    wheels = [realfiles.download(req) for req in ("torch==2.4.1", "setuptools==75.1.0", "torch==2.4.0")]
    journal = tmp_path / "journal"
    pip_config = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": to_windows_path(wheels[0].parent), "PIP_NO_COMPILE": "1",
                  "TDD_DATA_DIR": to_windows_path(journal)}
    lib = site / "torch" / "lib"
    before = hashes(lib)

    def app(*argv, **extra):
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
        return lab.run_python(["-c", code], env={**pip_config, **extra}, timeout=1200, torch_env=env)

    killed = app("repair", "--env", to_windows_path(env), "--action", "upgrade-torch", "--yes", TDD_CRASH_AT=point)
    assert "Recorded as" not in killed.stdout, killed.stdout[-2000:]
    listed = app("history", "--json", "-")
    (item,) = json.loads(listed.stdout[listed.stdout.index("{"):])["transactions"]
    assert item["state"] == "interrupted", item["state"]
    undone = app("undo", "--last")
    assert undone.returncode == 0 and "Undone" in undone.stdout, (undone.stdout[-2000:], undone.stderr[-3000:])
    from app.inventory.packages import installed_versions

    assert installed_versions(site, ["torch"]) == {"torch": "2.4.0"}
    assert hashes(lib) == before
