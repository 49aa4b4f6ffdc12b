"""`diagnose` for real: run by Windows CPython under Wine on the live (Wine) machine, with real torch 2.4.0."""

from __future__ import annotations

import json

import pytest

from tests.helpers.lab import chinese_windows, lab_env
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"


def run_app(lab, argv, **kwargs):
    return lab.run_python(["-c", RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=argv)], timeout=600, **kwargs)


@pytest.fixture(scope="module")
def envs(seed_env, fixed_env):
    return seed_env, fixed_env


def diagnose(lab, env):
    result = run_app(lab, ["diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet"])
    assert result.returncode in (0, 1), result.stderr[-3000:]
    return result.returncode, json.loads(result.stdout)


def by_code(document):
    found = {}
    for finding in document["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found


def test_live_diagnose_replays_winerror_126_on_fbgemm_and_names_libomp140(lab, envs):
    code, document = diagnose(lab, envs[0])
    findings = by_code(document)
    assert code == 1 and document["source"]["kind"] == "live"
    (failed,) = findings["import-failed"]
    assert failed["evidence"]["winerror"] == 126 and failed["evidence"]["dll"] == "fbgemm.dll"
    assert {"dll": "fbgemm.dll", "winerror": 126} in failed["evidence"]["failed_dlls"]
    assert findings["openmp-runtime-missing"][0]["evidence"]["needed_by"] == ["fbgemm.dll", "torch_cpu.dll"]
    assert any(f["evidence"]["dll"] == "libomp140.x86_64.dll" for f in findings["missing-dll"])
    assert findings["torch-known-bad-build"][0]["severity"] == "blocker"
    # one cause: the replayed error is evidence of the missing libomp140, not a second problem
    # (the other blocker is Wine's own: its kernel32.dll lacks four functions python312.dll imports)
    problem, wine = [p for p in document["problems"] if p["severity"] == "blocker"]
    members = {document["findings"][i]["code"] for i in problem["findings"]}
    assert problem["code"] == "openmp-runtime-missing" and "import-failed" in members
    assert wine["code"] == "missing-export" and "kernel32.dll" in wine["title"]
    assert document["summary"]["blockers"] == 2
    (env,) = document["environments"]
    assert env["python_version"] == "3.12.9" and env["torch"]["version"] == "2.4.0+cpu" and env["kind"] == "embedded"


def test_live_diagnose_after_libomp140_is_placed_reports_import_ok(lab, envs):
    code, document = diagnose(lab, envs[1])
    findings = by_code(document)
    assert findings["import-ok"][0]["evidence"]["version"] == "2.4.0+cpu"
    assert "import-failed" not in findings and "openmp-runtime-missing" not in findings
    assert findings["torch-known-bad-build"][0]["severity"] == "warning"
    # Wine 8's kernel32.dll lacks four functions python312.dll imports (Windows 8+ has them). The static check
    # names them, but the real import worked, so it cannot stop torch here: reconciled to a warning that says so.
    assert not [f for f in document["findings"] if f["severity"] == "blocker"]
    (lacking,) = findings["missing-export"]
    assert (lacking["severity"], lacking["evidence"]["dll"], lacking["evidence"]["needed_by"]) == (
        "warning", "kernel32.dll", ["python312.dll"])
    assert lacking["evidence"]["contradicted_by_replay"] is True
    assert {m["function"] for m in lacking["evidence"]["missing"]} == {
        "PssQuerySnapshot", "PssFreeSnapshot", "PssCaptureSnapshot", "CopyFile2"}
    assert any(p["contradicted_by_replay"] for p in document["problems"])
    assert code == 0 and document["complete"]


def test_live_deps_runs_on_the_wine_machine(lab, envs):
    lib = to_windows_path(envs[0] / "Lib" / "site-packages" / "torch" / "lib" / "fbgemm.dll")
    result = run_app(lab, ["deps", lib])
    assert result.returncode == 1, result.stderr[-2000:]
    assert "libomp140.x86_64.dll  MISSING" in result.stdout


def test_a_python_that_cannot_start_is_reported_not_fatal(lab):
    broken = lab_env(lab, "diagnose-no-start", torch_version="2.4.0")
    (broken / "python312.dll").unlink()  # a hard link: the shared base keeps its copy
    code, document = diagnose(lab, broken)
    (failed,) = [f for f in document["findings"] if f["code"] == "import-failed"]
    assert code == 1 and failed["variant"] == "no-python"
    assert failed["evidence"]["exit_code"] == 0xC0000135
    assert failed["evidence"]["message"]["en"] == "a DLL that Python itself needs was not found"
    assert any(f["code"] == "openmp-runtime-missing" for f in document["findings"])  # the static probes still ran


def test_live_diagnose_speaks_chinese_on_a_chinese_windows(lab, seed_env):
    result = run_app(lab, ["diagnose", "--env", to_windows_path(seed_env), "--json", "-", "--quiet"],
                     env=chinese_windows(lab))
    document = json.loads(result.stdout)
    assert document["language"] == "zh_CN" and document["machine"]["code_page"] == 936
    titles = {f["code"]: f["title"] for f in document["findings"]}
    assert titles["openmp-runtime-missing"] == "缺少 libomp140.x86_64.dll：PyTorch 2.4.0+cpu 的安装包漏掉了它"
    (failed,) = [f for f in document["findings"] if f["code"] == "import-failed"]
    assert failed["evidence"]["winerror"] == 126 and "找不到" in failed["evidence"]["message"]


STOP_REPLAY = r"""
import json, sys, threading, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.cancel import Cancelled, CancelToken
from app.inventory.environment import inspect_environment
from app.probes import replay
from app.probes.runner import run_diagnosis
from app.system.live import LiveWindows

system = LiveWindows()
env = inspect_environment(system, Path({env!r}))
replay.TIMEOUT_S = 1.0  # torch takes longer than this to load under Wine
timed_out = run_diagnosis(system, [env], probes=(replay.PROBE,))
token = CancelToken()
threading.Timer(1.0, token.cancel).start()
started = time.monotonic()
try:
    run_diagnosis(system, [env], probes=(replay.PROBE,), cancel=token)
    cancelled = None
except Cancelled:
    cancelled = time.monotonic() - started
print(json.dumps({{"timed_out": [[f.code, f.variant] for f in timed_out.findings],
                  "complete": timed_out.complete, "cancelled_after_s": cancelled}}))
"""


def replay_children(env) -> list[str]:
    """Wine runs Windows programs as Linux processes: any replay child still alive shows in ps."""
    import subprocess

    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "replay_loader" in line and str(env.name) in line]


def test_live_replay_that_times_out_or_is_cancelled_leaves_no_python_behind(lab, seed_env):
    script = STOP_REPLAY.format(repo=to_windows_path(REPO_ROOT), env=to_windows_path(seed_env))
    result = lab.run_python(["-c", script], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    # timed out: an unfinished check, not "this Python cannot start"
    assert outcome["timed_out"] == [["check-failed", "timeout"]] and outcome["complete"] is False
    assert outcome["cancelled_after_s"] is not None and outcome["cancelled_after_s"] < 10
    assert replay_children(seed_env) == []


def test_the_report_names_the_runtime_copies_torch_really_loaded(lab, tmp_path):
    """A msvcp140.dll placed beside python.exe wins the search: the replay's process loaded that copy, the report
    says so with its version, and the static model predicted the same copy."""
    import shutil

    from tests import realfiles

    env = lab_env(lab, "loaded-copies", torch_version="2.4.0", libomp=True)
    beside = env / "msvcp140.dll"
    beside.unlink(missing_ok=True)
    shutil.copyfile(realfiles.msvc_runtime_dlls()[0].parent / "msvcp140.dll", beside)
    result = run_app(lab, ["diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet"])
    document = json.loads(result.stdout)
    (ok,) = by_code(document)["import-ok"]
    copies = {c["dll"].lower(): c for c in ok["evidence"]["runtime_copies"]}
    msvcp = copies["msvcp140.dll"]
    assert msvcp["path"].lower() == to_windows_path(beside).lower(), copies
    assert msvcp["version"] and msvcp["version"].startswith("14.") and msvcp["agrees"] is True
    assert any(c["dll"].lower() == "libomp140.x86_64.dll" for c in copies.values())
    text = run_app(lab, ["diagnose", "--env", to_windows_path(env), "--quiet"]).stdout
    assert "What PyTorch really loaded" in text and to_windows_path(beside) in text
