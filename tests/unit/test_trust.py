"""A diagnosis you can trust: one problem per cause, severity by how torch reaches a DLL, honesty about checks that
did not finish, and cancellation that reaches child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from app.cancel import Cancelled, CancelToken
from app.demo.pe_writer import Export, Import, build_pe
from app.main import main
from app.probes import runner as runner_module
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.causes import group_by_cause, reconcile
from app.probes.every_probe import ALL_PROBES
from app.probes.finding import BLOCKER, INFO, Finding
from app.probes.replay import SCRIPT, _no_report, replay_script
from app.system.process import run_process
from tests.helpers.diagnosis import codes, diagnose, finding
from tests.helpers.pe_machine import LIB, torch

ENV = r"C:\Users\alice\ComfyUI\venv\Scripts\python.exe"
CONDA_BIN = r"C:\Users\alice\ComfyUI\venv\Library\bin"  # torch adds <exec_prefix>\Library\bin


# -- severity follows how torch reaches a DLL ----------------------------------------------------------------
def test_a_dll_missing_below_a_delay_load_is_a_warning_and_exit_0(machine, tmp_path, capsys):
    # torch_cpu -delay-> cudnn64_8 -> zlibwapi (missing): torch starts; only the feature that needs cuDNN fails.
    # cuDNN sits in a folder torch adds (not torch\lib, whose every DLL torch loads at start).
    machine.write(CONDA_BIN + r"\cudnn64_8.dll", build_pe(dll_name="cudnn64_8.dll", exports=[Export(1, "cudnnCreate")],
                                                    imports=[Import("zlibwapi.dll", ("uncompress",))]))
    machine.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import("c10.dll", ("c10_function",)), Import("cudnn64_8.dll", ("cudnnCreate",), delay=True)]))
    result = diagnose(machine)
    assert codes(result, "blocker") == []
    lacking = finding(result, "missing-delay-dll")
    assert (lacking.severity, lacking.evidence["dll"], lacking.evidence["via"]) == (
        "warning", "zlibwapi.dll", ["cudnn64_8.dll"])
    assert "cudnn64_8.dll" in lacking.text("en").explanation
    assert main(["diagnose", "--root", str(machine.root), "--json", "-", "--quiet"]) == 0
    capsys.readouterr()


def test_the_same_dll_also_needed_at_start_stays_a_blocker(machine):
    machine.write(CONDA_BIN + r"\cudnn64_8.dll", build_pe(dll_name="cudnn64_8.dll", exports=[Export(1, "cudnnCreate")],
                                                    imports=[Import("zlibwapi.dll", ("uncompress",))]))
    machine.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import("c10.dll", ("c10_function",)), Import("cudnn64_8.dll", ("cudnnCreate",), delay=True)]))
    machine.write(LIB + r"\c10_cuda.dll", build_pe(dll_name="c10_cuda.dll", imports=[
        Import("cudnn64_8.dll", ("cudnnCreate",))]))  # a root that needs it at load time
    result = diagnose(machine)
    assert finding(result, "missing-dll").evidence["dll"] == "zlibwapi.dll"
    assert "missing-delay-dll" not in codes(result)


# -- the known-bad build follows what the graph shows --------------------------------------------------------------
def test_a_rebuilt_240_that_does_not_need_libomp140_is_not_blocked_by_the_known_bug(machine):
    torch(machine, "2.4.0+cpu")  # version 2.4.0, but its DLLs do not import libomp140
    result = diagnose(machine)
    known = finding(result, "torch-known-bad-build")
    assert (known.severity, known.variant) == ("info", "not-affected") and known.repairs == []
    assert codes(result, "blocker") == []


def test_a_240_that_needs_libomp140_is_blocked_and_grouped_under_the_missing_file(machine):
    torch(machine, "2.4.0+cpu", imports=("c10.dll", "libomp140.x86_64.dll"))
    result = diagnose(machine)
    (problem,) = [p for p in result.problems if p.severity == BLOCKER]
    assert [f.code for f in problem.findings] == ["openmp-runtime-missing", "missing-dll", "torch-known-bad-build"]
    assert problem.repairs == ["place-libomp140", "upgrade-torch"]
    assert problem.lead.text("en").title == "libomp140.x86_64.dll is missing: PyTorch 2.4.0+cpu was shipped without it"


# -- one problem per cause -----------------------------------------------------------------------------------------
def replay_failed(dll: str, winerror: int = 126) -> Finding:
    return Finding("import-failed", BLOCKER, {"dll": dll, "winerror": winerror}, [], ENV)


def test_the_replayed_error_joins_the_cause_below_the_dll_torch_named(machine):
    torch(machine, "2.4.0+cpu", imports=("c10.dll", "libomp140.x86_64.dll"))
    result = diagnose(machine)
    error = replay_failed("torch_cpu.dll")  # torch names the DLL it was loading, not the missing one
    error.environment = result.findings[0].environment
    problems = [p for p in group_by_cause([*result.findings, error], result.graphs) if p.severity == BLOCKER]
    assert len(problems) == 1 and error in problems[0].evidence


def test_an_unexplained_replayed_error_stands_alone():
    vc = Finding("vc-runtime-missing", BLOCKER, {}, ["install-vc-runtime"], ENV)
    msvcp = Finding("missing-dll", BLOCKER, {"dll": "MSVCP140.dll"}, ["install-vc-runtime"], ENV)
    python = Finding("python-32bit", BLOCKER, {}, ["install-64bit-python"], ENV)
    error = replay_failed("fbgemm.dll", 127)
    problems = group_by_cause([vc, msvcp, python, error])
    assert [[f.code for f in p.findings] for p in problems] == [
        ["python-32bit"], ["vc-runtime-missing", "missing-dll"], ["import-failed"]]
    assert problems[1].repairs == ["install-vc-runtime"]


def test_a_successful_import_turns_static_blockers_into_contradicted_warnings():
    missing = Finding("missing-dll", BLOCKER, {"dll": "helper.dll"}, ["reinstall-torch"], ENV)
    ok = Finding("import-ok", INFO, {"version": "2.4.1"}, [], ENV)
    elsewhere = Finding("missing-dll", BLOCKER, {"dll": "helper.dll"}, [], r"C:\Other\python.exe")
    reconcile([missing, ok, elsewhere])
    assert missing.severity == "warning" and missing.evidence["contradicted_by_replay"] is True
    assert elsewhere.severity == BLOCKER  # another environment's import proves nothing here
    (problem, _) = group_by_cause([missing, ok])
    assert problem.contradicted


# -- honest about itself -------------------------------------------------------------------------------------------
def crashing(ctx: ProbeContext):
    raise RuntimeError("boom")
    yield


def test_a_crashed_probe_leaves_the_diagnosis_incomplete_but_the_others_report(machine):
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "helper.dll"))  # helper.dll is missing
    result = diagnose(machine, probes=(*ALL_PROBES, Probe("gpu", ENVIRONMENT, crashing)))
    failed = finding(result, "check-failed")
    assert "boom" in failed.evidence["error"] and not result.complete
    assert finding(result, "missing-dll").evidence["dll"] == "helper.dll"  # the dependencies probe still ran


def test_windows_settings_that_cannot_be_read_leave_the_diagnosis_incomplete(machine, capsys):
    assert main(["diagnose", "--root", str(machine.root), "--quiet"]) == 0  # every check could see
    capsys.readouterr()
    (machine.root / "registry.json").write_text('{"HKLM\\SOFTWARE": {', encoding="utf-8")  # cut short
    assert main(["diagnose", "--root", str(machine.root), "--json", "-", "--quiet"]) == 1
    document = json.loads(capsys.readouterr().out)
    (failed,) = [f for f in document["findings"] if f["code"] == "check-failed"]
    assert document["complete"] is False and failed["variant"] == "settings"
    assert "registry.json could not be read" in failed["evidence"]["error"]
    assert failed["title"] == "Could not read some of Windows' settings"


def test_the_cli_never_exits_0_when_a_check_crashed(machine, monkeypatch, capsys):
    monkeypatch.setattr(runner_module, "ALL_PROBES", (*ALL_PROBES, Probe("gpu", ENVIRONMENT, crashing)))
    assert main(["diagnose", "--root", str(machine.root), "--json", "-", "--quiet"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is False and document["summary"]["blockers"] == 0
    assert main(["diagnose", "--root", str(machine.root), "--quiet"]) == 1
    summary = capsys.readouterr().out.split("Summary\n========\n")[1].splitlines()
    assert summary[0].startswith("Incomplete: checks that could not finish, or could not see everything they "
                                 "check: 1.") and "Could not" in summary[0]
    monkeypatch.setattr(runner_module, "ALL_PROBES", ALL_PROBES)
    assert main(["diagnose", "--root", str(machine.root), "--quiet"]) == 0  # the same machine, every check ran
    capsys.readouterr()


def test_the_time_budget_stops_its_own_probes_not_the_callers_token(machine):
    def slow(ctx):
        ctx.cancel.wait(30)
        return []

    token = CancelToken()
    result = diagnose(machine, probes=(Probe("gpu", ENVIRONMENT, slow),), budget_s=0.3, cancel=token)
    assert not result.complete and not token.cancelled


def test_cancel_returns_only_after_the_probes_have_stopped(machine):
    ended = threading.Event()

    def slow(ctx):
        try:
            ctx.cancel.wait(30)
        finally:
            time.sleep(0.2)  # tidying up, e.g. ending a child process
            ended.set()
        return []

    token = CancelToken()
    threading.Timer(0.3, token.cancel).start()
    with pytest.raises(Cancelled):
        diagnose(machine, probes=(Probe("gpu", ENVIRONMENT, slow),), cancel=token)
    assert ended.is_set()


# -- child processes: bounded, cancellable, never left behind ------------------------------------------------------
TREE = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
       "print(flush=True); time.sleep(60)"


def children_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(os.name == "nt", reason="uses /proc; Windows is covered in the Windows lab")
@pytest.mark.parametrize("stop", ["cancel", "timeout"])
def test_a_stopped_program_ends_with_everything_it_started(stop):
    token = CancelToken()
    seen: list[int] = []

    def watch():  # find the grandchild (the "real python.exe" behind a launcher) while it runs
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not seen:
            for child in children_of(os.getpid()):
                seen.extend(children_of(child))
            time.sleep(0.05)
        if stop == "cancel":
            token.cancel()

    threading.Thread(target=watch).start()
    started = time.monotonic()
    with pytest.raises(Cancelled if stop == "cancel" else TimeoutError):
        run_process([sys.executable, "-c", TREE], timeout=30 if stop == "cancel" else 1.5, cancel=token)
    assert time.monotonic() - started < 10 and seen
    time.sleep(0.2)
    assert not any(alive(pid) for pid in seen)


# -- the replay: what a missing report means -----------------------------------------------------------------------
def step_line(**fields) -> str:
    return replay_script().STEP_MARKER + json.dumps(fields) + "\n"


@pytest.fixture
def ctx(machine):
    from app.inventory.machine import read_machine_facts
    from app.system.offline import OfflineImage

    system = OfflineImage(machine.root)
    return ProbeContext(system, read_machine_facts(system))


def test_a_process_that_died_loading_a_dll_is_a_crash_of_torch_not_a_python_that_cannot_start(ctx):
    stderr = step_line(step="find") + step_line(step="load", index=3, name="fbgemm.dll")
    found = _no_report(ctx, ENV, 0xC0000005, stderr)
    assert (found.code, found.variant, found.evidence["dll"]) == ("import-failed", "crashed", "fbgemm.dll")


def test_our_own_script_failing_is_an_unfinished_check(ctx):
    stderr = (f'Traceback (most recent call last):\n  File "{SCRIPT}", line 3, in <module>\n'
              "SyntaxError: invalid syntax\n")
    found = _no_report(ctx, ENV, 1, stderr)
    assert (found.code, found.severity, found.variant) == ("check-failed", "info", "script")


def test_a_python_that_never_started_is_reported_as_such(ctx):
    found = _no_report(ctx, ENV, 0xC0000135, "")
    assert (found.code, found.variant) == ("import-failed", "no-python")
    assert found.evidence["message"]["en"] == "a DLL that Python itself needs was not found"


def test_a_python_that_ended_well_and_said_nothing_is_an_unfinished_check_not_a_python_that_cannot_start(ctx):
    found = _no_report(ctx, ENV, 0, "")
    assert (found.code, found.severity, found.variant) == ("check-failed", "info", "no-report")
    assert "without an answer" in found.text("en").title and "没有给出结果" in found.text("zh_CN").title
    assert _no_report(ctx, ENV, 0, "Fatal Python error: init_fs_encoding\n").code == "import-failed"


def test_programs_we_start_get_the_users_path_without_the_folders_qt_added_for_itself():
    import PySide6
    import shiboken6

    from app.system.process import users_environment

    qt = os.path.dirname(PySide6.__file__)
    shiboken = os.path.dirname(shiboken6.__file__)
    user = os.pathsep.join([r"/opt/cuda/bin", qt, os.path.join(qt, "lib"), shiboken, "/usr/bin", ""])
    env = users_environment({"PATH": user, "OTHER": "kept"})
    assert env["PATH"].split(os.pathsep) == ["/opt/cuda/bin", "/usr/bin"]  # PySide6 puts its folder first
    assert env["OTHER"] == "kept"
