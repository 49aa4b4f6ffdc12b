"""Machine-wide settings in the Windows lab: the app's CLI run by the lab's Windows Python with every program it has
Windows run elevated noted, `wine reg query` to read a value back, and the journal the run left."""

from __future__ import annotations

import json
import subprocess

from tests.winelab import REPO_ROOT, to_windows_path

FS = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"

CLI_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, {repo!r})
from app.main import main
from app.system.live import LiveWindows
_run_elevated = LiveWindows.run_elevated
def run_elevated(self, argv, timeout, cancel=None, on_stop_asked=lambda: None):  # the real one, each program noted
    with open(os.environ["TDD_TEST_ELEVATED"], "a", encoding="utf-8") as out:
        out.write(json.dumps(argv) + "\n")
    return _run_elevated(self, argv, timeout, cancel, on_stop_asked)
LiveWindows.run_elevated = run_elevated
raise SystemExit(main({argv!r}))
"""

# In a script run by the lab's Windows Python: the real run_elevated, each owner window it is given noted in `owners`
OWNERS_NOTED = r"""
from app.system.live import LiveWindows
owners = []
_run_elevated = LiveWindows.run_elevated
def run_elevated(self, argv, timeout, cancel=None, on_stop_asked=lambda: None):  # the real one, its owner noted
    owners.append(self.owner_window)
    return _run_elevated(self, argv, timeout, cancel, on_stop_asked)
LiveWindows.run_elevated = run_elevated
"""


def cli(lab, env, tmp_path, *argv):
    script = tmp_path / "cli.py"
    script.write_text(CLI_SCRIPT.format(repo=to_windows_path(REPO_ROOT), argv=list(argv)), encoding="utf-8")
    return lab.run_python([script], env={"TDD_DATA_DIR": to_windows_path(tmp_path / "journal"),
                                         "TDD_TEST_ELEVATED": to_windows_path(tmp_path / "elevated.jsonl")},
                          timeout=600, torch_env=env)


def elevated(tmp_path):
    log = tmp_path / "elevated.jsonl"
    return [json.loads(line) for line in log.read_text("utf-8").splitlines()] if log.exists() else []


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
