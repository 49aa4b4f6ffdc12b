"""The one elevated step for real: LiveWindows.run_elevated (ShellExecuteExW "runas") run by Windows CPython under
Wine, starting a real Windows stand-in for vc_redist (tests/standin) that writes the registry and a log and exits
with the code the test chose.

What Wine proves and cannot (measured here, Wine 8.0): ShellExecuteExW starts an .exe whatever the verb ("runas",
"open", even an unknown one) and shows no consent prompt; the program gets the same full administrator token
(TokenElevationType 2) as one started without "runas". So these tests prove the call itself (structure layout,
quoting, the process handle, the sliced wait, the exit code, cancel and timeout ending the installer, HKLM writes
read back through LiveWindows and read_machine_facts) but not that Windows elevates, and the user's "No"
(ERROR_CANCELLED) cannot happen under Wine: it is simulated by a ShellExecuteExW stand-in failing with 1223.
"""

from __future__ import annotations

import json
import os

import pytest

from app.system.base import NotAvailable
from app.system.offline import OfflineImage
from tests.conftest import wine_unavailable
from tests.winelab import REPO_ROOT, to_windows_path

RUNTIMES = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
SWITCHES = ["/install", "/quiet", "/norestart", "/log"]

PROLOGUE = r"""
import json, sys, threading, time
sys.path.insert(0, {repo!r})
from app.cancel import Cancelled, CancelToken
from app.system.base import ElevationDeclined
from app.system.live import LiveWindows
from app.inventory.machine import read_machine_facts
ARGV = {argv!r}
RUNTIMES = {runtimes!r}
system = LiveWindows()
out = {{}}
"""

RUN = r"""
start = time.monotonic()
out["code"] = system.run_elevated(ARGV, 60)
out["seconds"] = time.monotonic() - start
out["x64"] = {k: [v.type, v.data] for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
out["x86_32"] = {k: [v.type, v.data] for k, v in
                 system.registry_values(RUNTIMES.replace("SOFTWARE", "SOFTWARE\\WOW6432Node") + "\\x86").items()}
out["vc_runtimes"] = [[e.arch, e.view, e.installed, e.version] for e in read_machine_facts(system).vc_runtimes]
"""

CANCEL = r"""
token = CancelToken()
threading.Timer(0.5, token.cancel).start()
start = time.monotonic()
try:
    out["code"] = system.run_elevated(ARGV, 60, token)
except Cancelled:
    out["cancelled_after"] = time.monotonic() - start
time.sleep(4)  # past the stand-in's 3 s "install": had it survived, it would have logged its exit and written HKLM
out["x64"] = {k: v.data for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
"""

TIMEOUT = r"""
start = time.monotonic()
try:
    system.run_elevated(ARGV, 1.0)
except TimeoutError as exc:
    out["timeout"] = [str(exc), time.monotonic() - start]
time.sleep(4)
"""

ACTIONS = r"""
key = RUNTIMES + "\\x64"
for action in ("/repair", "/uninstall", "/install"):
    argv = [ARGV[0], action, "/passive", "/norestart", ARGV[-2], ARGV[-1] + action[1:] + ".log"]
    out[action] = [system.run_elevated(argv, 60), sorted(system.registry_values(key))]
"""

DECLINED = r"""
import ctypes
from app.system import elevation

class Shell32:  # the consent prompt answered "No": ShellExecuteExW fails with ERROR_CANCELLED (1223)
    def __init__(self):
        self.ShellExecuteExW = self
    def __call__(self, info):
        ctypes.set_last_error(1223)
        return 0

real_windll = ctypes.WinDLL
elevation.ctypes.WinDLL = lambda name, **kw: Shell32() if name == "shell32" else real_windll(name, **kw)
try:
    system.run_elevated(ARGV, 60)
except ElevationDeclined as exc:
    out["declined"] = str(exc)
finally:
    elevation.ctypes.WinDLL = real_windll
for bad in (["vc_redist.x64.exe", "/install"], [], ["C:\\Windows\\System32\\cmd.bat"]):
    try:
        system.run_elevated(bad, 60)
    except ValueError:
        out.setdefault("refused", []).append(bad)
"""


@pytest.fixture(scope="module")
def standin_exe():
    from tests.standin import StandinUnavailable, build_standin

    try:
        return build_standin()
    except StandinUnavailable as exc:
        wine_unavailable(str(exc))


def elevated(lab, tmp_path, standin_exe, body, name="vc_redist.x64.exe", **config):
    """Run `body` in the lab's Windows Python, with ARGV = the stand-in's install command (a log path with a space
    and Chinese characters, to prove the quoting). Returns (the script's output dict, the log's text or None)."""
    from tests.standin import install_standin

    folder = tmp_path / "下载 downloads"
    exe = install_standin(folder, name, **config)
    assert exe.read_bytes() == standin_exe.read_bytes()
    log = tmp_path / "log dir 日志" / "vc_redist x64.log"
    log.parent.mkdir()
    argv = [to_windows_path(exe), *SWITCHES, to_windows_path(log)]
    script = PROLOGUE.format(repo=to_windows_path(REPO_ROOT), argv=argv, runtimes=RUNTIMES) + body + \
        "\nprint(json.dumps(out))\n"
    result = lab.run_python(["-c", script], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:] or (
        "no output at all: the Wine process was killed from outside (another pytest session's lab.shutdown(), "
        "i.e. `wineserver -k`, on the shared prefix? TDD_WINELAB_DIR gives a run its own lab)")
    out = json.loads(result.stdout.strip().splitlines()[-1])
    return out, log.read_text(encoding="utf-8-sig") if log.exists() else None


@pytest.mark.parametrize("code", [0, 3010, 1638, 1618, 1602, 1603])
@pytest.mark.wine
@pytest.mark.slow
def test_run_elevated_returns_the_installers_exit_code(lab, tmp_path, standin_exe, clean_runtimes, code):
    out, log = elevated(lab, tmp_path, standin_exe, RUN, exit=code)

    assert out["code"] == code
    assert log is not None, "the installer did not get its /log argument"
    assert "action=install, ui=quiet, norestart=yes" in log
    assert f"Exit code: {code:#x}, restarting: No" in log
    if code in (0, 3010):
        assert out["x64"] == {"Installed": ["REG_DWORD", 1], "Version": ["REG_SZ", "v14.44.35211.00"],
                              "Major": ["REG_DWORD", 14], "Minor": ["REG_DWORD", 44], "Bld": ["REG_DWORD", 35211],
                              "Rbld": ["REG_DWORD", 0]}
        assert ["x64", "64-bit", True, "14.44.35211.0"] in out["vc_runtimes"]
    else:
        assert out["x64"] == {}, "a failed install wrote the registry"
        assert not [e for e in out["vc_runtimes"] if e[0] == "x64"]
    if code == 1603:
        assert "Error 0x80070643: Failed to install MSI package." in log


@pytest.mark.wine
@pytest.mark.slow
def test_the_x86_installer_writes_the_32_bit_view(lab, tmp_path, standin_exe, clean_runtimes):
    out, log = elevated(lab, tmp_path, standin_exe, RUN, name="vc_redist.x86.exe", exit=0)

    assert out["code"] == 0
    assert out["x64"] == {}
    assert out["x86_32"]["Version"] == ["REG_SZ", "v14.44.35211.00"]
    assert ["x86", "32-bit", True, "14.44.35211.0"] in out["vc_runtimes"]


@pytest.mark.wine
@pytest.mark.slow
def test_repair_and_uninstall_switches(lab, tmp_path, standin_exe, clean_runtimes):
    out, _ = elevated(lab, tmp_path, standin_exe, ACTIONS, exit=0)

    names = ["Bld", "Installed", "Major", "Minor", "Rbld", "Version"]
    assert out == {"/repair": [0, names], "/uninstall": [0, []], "/install": [0, names]}
    logs = sorted(p.name for p in (tmp_path / "log dir 日志").iterdir())
    assert logs == ["vc_redist x64.loginstall.log", "vc_redist x64.logrepair.log", "vc_redist x64.loguninstall.log"]
    text = (tmp_path / "log dir 日志" / "vc_redist x64.loguninstall.log").read_text(encoding="utf-8-sig")
    assert "action=uninstall, ui=passive, norestart=yes" in text
    assert "Deleted the registry key" in text


@pytest.mark.wine
@pytest.mark.slow
def test_cancel_ends_the_installer_and_raises_cancelled(lab, tmp_path, standin_exe, clean_runtimes):
    out, log = elevated(lab, tmp_path, standin_exe, CANCEL, exit=0, sleep_ms=3000)

    assert "code" not in out, "run_elevated returned instead of raising Cancelled"
    assert 0.4 < out["cancelled_after"] < 2.5
    assert log is not None and "Applying for 3000 ms" in log
    assert "Exit code" not in log, "the installer was not ended: it finished its work"
    assert out["x64"] == {}


@pytest.mark.wine
@pytest.mark.slow
def test_timeout_ends_the_installer(lab, tmp_path, standin_exe, clean_runtimes):
    out, log = elevated(lab, tmp_path, standin_exe, TIMEOUT, exit=0, sleep_ms=3000)

    message, seconds = out["timeout"]
    assert "vc_redist.x64.exe did not finish within 1 s" in message
    assert seconds < 2.5
    assert log is not None and "Exit code" not in log


@pytest.mark.wine
@pytest.mark.slow
def test_declined_prompt_and_refused_programs(lab, tmp_path, standin_exe):
    out, log = elevated(lab, tmp_path, standin_exe, DECLINED, exit=0)

    assert out["declined"] == "administrator rights were not given to vc_redist.x64.exe"
    assert log is None, "the installer ran although elevation was declined"
    assert len(out["refused"]) == 3


def test_an_offline_image_runs_nothing_elevated(tmp_path):
    (tmp_path / "Windows" / "System32").mkdir(parents=True)
    with pytest.raises(NotAvailable):
        OfflineImage(tmp_path).run_elevated([r"C:\x\vc_redist.x64.exe", "/install"], 60)


def test_installer_command_quotes_like_the_c_runtime():
    if os.name == "nt":
        pytest.skip("covered by the Wine tests")
    from app.system.elevation import installer_command

    program, parameters = installer_command([r"C:\dl\vc_redist.x64.exe", "/install", "/log", r"C:\a b\日志.log"])
    assert program == r"C:\dl\vc_redist.x64.exe"
    assert parameters == '/install /log "C:\\a b\\日志.log"'
    for bad in ([], ["vc_redist.x64.exe"], [r"C:\x\setup.bat"], [r"C:\x\a.exe", "a\0b"], [r"\\?\C:\x\a.exe"]):
        with pytest.raises(ValueError):
            installer_command(bad)


# -- the elevated helper itself: what it trusts (app/repair/elevated.py) ------------------------------------------
HELPER = r"""
import hashlib, os, shutil
from pathlib import Path
from app.repair.elevated import helper_argv, read_results, run_job
from app.system.files import sha256_of
JOBS = Path(os.environ["TDD_TEST_JOBS"])
INSTALLER = ARGV[0]
calls = []
real_run_elevated = system.run_elevated

def counted(argv, timeout, cancel=None):  # the real LiveWindows.run_elevated, counted (one per permission prompt)
    calls.append(argv)
    before_prompt(argv)
    return real_run_elevated(argv, timeout, cancel)

def before_prompt(argv):
    pass

system.run_elevated = counted

def installer_step(tries=1, wait_s=0, sha256=None):
    return {"op": "run-installer", "installer": INSTALLER, "sha256": sha256 or sha256_of(Path(INSTALLER)),
            "arguments": ARGV[1:], "retry": {"tries": tries, "wait_s": wait_s}}

def x64():
    return {k: v.data for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
"""

RUN_FROM_ADMIN_FOLDER = r"""
seen = []
code, results = run_job(system, JOBS, [installer_step()], 120, on_result=seen.append)
out.update(code=code, results=results, calls=len(calls), x64=x64())
out["admin_folder_left"] = os.path.exists(os.path.dirname(results[0]["installer"]))
"""

BUSY = r"""
seen = []
start = time.monotonic()
code, results = run_job(system, JOBS, [installer_step(tries=3, wait_s=WAIT)], 120, on_result=seen.append)
out.update(code=code, results=results, calls=len(calls), seconds=time.monotonic() - start, x64=x64())
out["states_seen"] = [r[0].get("state") for r in seen]
"""

SWAPPED_JOB = r"""
def before_prompt(argv):  # another program of the user rewrites the job while Windows asks for permission
    job = Path(argv[-2])
    data = json.dumps({"steps": [{"op": "set-value", "key": r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem",
                                  "name": "LongPathsEnabled", "value": {"type": "REG_DWORD", "data": 1}}]})
    job.write_bytes(data.encode("utf-8"))

code, results = run_job(system, JOBS, [installer_step()], 120)
out.update(code=code, results=results, calls=len(calls), x64=x64())
value = system.registry_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled")
out["long_paths"] = None if value is None else value.data
"""

SWAPPED_INSTALLER = r"""
SWAP = os.environ["TDD_TEST_SWAP"]
checked = sha256_of(Path(SWAP if os.environ.get("TDD_TEST_CHECKED") == "swap" else INSTALLER))

def before_prompt(argv):  # another program of the user replaces the checked installer while Windows asks
    shutil.copyfile(SWAP, INSTALLER)

code, results = run_job(system, JOBS, [installer_step(sha256=checked)], 120)
out.update(code=code, results=results, calls=len(calls), x64=x64())
"""

NOT_ALLOWED = r"""
for name, steps in (("unknown-step", [{"op": "run", "argv": [INSTALLER, "/install"]}]),
                    ("unknown-key", [{"op": "set-value", "key": r"HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Run",
                                      "name": "tdd-test", "value": {"type": "REG_SZ", "data": INSTALLER}}])):
    JOBS.mkdir(parents=True, exist_ok=True)
    job = JOBS / (name + ".json")  # written by hand: run_job itself refuses such a job before the prompt
    data = json.dumps({"steps": steps}).encode("utf-8")
    job.write_bytes(data)
    code = system.run_elevated(helper_argv(str(job), hashlib.sha256(data).hexdigest()), 120)
    out[name] = [code, read_results(job)]
value = system.registry_value(r"HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Run", "tdd-test")
out["run_key"] = None if value is None else value.data
out["x64"] = x64()
"""

CANCEL_HELPER = r"""
token = CancelToken()
trace = Path(os.environ["TDD_STANDIN_TRACE"])
cancelled_at = []

def cancel_once_the_installer_ran():  # then the helper waits (1618), or the installer still "installs"
    while not trace.exists() and not token.cancelled:
        time.sleep(0.05)
    time.sleep(1.0)
    cancelled_at.append(time.monotonic())
    token.cancel()

threading.Thread(target=cancel_once_the_installer_ran, daemon=True).start()
try:
    run_job(system, JOBS, [installer_step(tries=3, wait_s=30)], 120, token)
except Cancelled:
    out["cancelled_after"] = time.monotonic() - cancelled_at[0]
time.sleep(5)  # past the stand-in's "install": had it outlived the helper, it would have written HKLM by now
out["x64"] = x64()
out["calls"] = len(calls)
"""


def helper_run(lab, tmp_path, standin_exe, body, installer=None, **standin):
    """Run `body` (after PROLOGUE and HELPER) in the lab's Windows Python with a stand-in signed like Microsoft's
    (tests/standin sign_standin: Wine's WinVerifyTrust accepts it, KNOWLEDGE.md) as INSTALLER and its install
    command as ARGV. The stand-in's settings go through TDD_STANDIN_* (the helper copies only the .exe); its
    trace file says when and from where it ran. Returns (output dict, trace lines, the log's text or None)."""
    from tests.standin import sign_standin

    extra = standin.pop("_env", {})
    downloads = tmp_path / "下载 downloads"
    exe = installer or sign_standin(standin_exe, downloads / "vc_redist.x64.exe")
    log = tmp_path / "log dir 日志" / "vc_redist x64.log"
    log.parent.mkdir(exist_ok=True)
    trace = tmp_path / "trace.txt"
    argv = [to_windows_path(exe), *SWITCHES, to_windows_path(log)]
    script = PROLOGUE.format(repo=to_windows_path(REPO_ROOT), argv=argv, runtimes=RUNTIMES) + HELPER + body + \
        "\nprint(json.dumps(out))\n"
    variables = {"TDD_TEST_JOBS": to_windows_path(tmp_path / "jobs"), "TDD_STANDIN_TRACE": to_windows_path(trace),
                 "TDD_STANDIN_EXIT": "0", **{f"TDD_STANDIN_{k.upper()}": str(v) for k, v in standin.items()}}
    variables.update(extra)
    result = lab.run_python(["-c", script], env=variables, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    lines = trace.read_text(encoding="utf-8-sig").splitlines() if trace.exists() else []
    return out, lines, log.read_text(encoding="utf-8-sig") if log.exists() else None


def runs(lines):
    """(unix time in s, exe path, command line) of each run of the stand-in, from its trace."""
    found = []
    for line in lines:
        _, stamp, rest = line.split(" ", 2)
        exe, _, command = rest.removeprefix("exe=").partition(" cmd=")
        found.append((int(stamp) / 1000, exe, command))
    return found


ADMIN_FOLDER = r"C:\Program Files\TorchDllDoctor\installers" + "\\"  # Wine 8 has no %SystemRoot%\SystemTemp


@pytest.mark.wine
@pytest.mark.slow
def test_the_helper_runs_the_checked_installer_from_an_admin_only_folder(lab, tmp_path, standin_exe, clean_runtimes):
    out, lines, log = helper_run(lab, tmp_path, standin_exe, RUN_FROM_ADMIN_FOLDER)

    assert out["code"] == 0 and out["calls"] == 1
    (result,) = out["results"]
    assert result["ok"] and result["code"] == 0 and [t["code"] for t in result["tries"]] == [0]
    ((_, exe, command),) = runs(lines)
    assert exe.startswith(ADMIN_FOLDER) and exe.endswith("\\vc_redist.x64.exe"), exe
    assert exe == result["installer"]
    assert len(exe[len(ADMIN_FOLDER):].split("\\")[0]) == 16  # a new folder with a random name
    folder = exe.rsplit("\\", 1)[0]
    assert f'/install /quiet /norestart /log "{folder}\\vc_redist x64.log"' in command  # its log there too
    assert not out["admin_folder_left"], "the admin-only folder was not removed"
    assert log is not None and "Exit code: 0x0, restarting: No" in log, "the log was not copied back"
    assert out["x64"]["Version"] == "v14.44.35211.00"


@pytest.mark.wine
@pytest.mark.slow
def test_another_installation_is_waited_for_inside_one_elevated_step(lab, tmp_path, standin_exe, clean_runtimes):
    wait = 2
    state = tmp_path / "busy-once.flag"
    out, lines, _ = helper_run(lab, tmp_path, standin_exe, f"WAIT = {wait}\n" + BUSY, first_exit=1618,
                               state=to_windows_path(state))

    assert out["code"] == 0 and out["calls"] == 1, out  # ONE permission prompt for both tries
    (result,) = out["results"]
    assert [t["code"] for t in result["tries"]] == [1618, 0]
    (first, _, _), (second, _, _) = runs(lines)
    assert second - first >= wait, (first, second)  # the stand-in's own clock: the wait really passed
    assert result["tries"][1]["started"] - result["tries"][0]["ended"] >= wait
    assert "waiting" in out["states_seen"], out["states_seen"]  # what the unelevated side shows meanwhile
    assert out["x64"]["Version"] == "v14.44.35211.00"
    print(f"1618 then 0 in one elevated step: {second - first:.2f} s between the tries, {out['seconds']:.1f} s "
          f"in all, {out['calls']} elevation")


@pytest.mark.wine
@pytest.mark.slow
def test_a_job_changed_while_the_prompt_is_up_is_refused(lab, tmp_path, standin_exe, clean_runtimes):
    fs = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
    lab.wine_reg(["delete", fs, "/v", "LongPathsEnabled", "/f"])
    out, lines, _ = helper_run(lab, tmp_path, standin_exe, SWAPPED_JOB)

    assert out["code"] == 1 and out["calls"] == 1
    (result,) = out["results"]
    assert result["op"] == "job" and not result["ok"]
    assert "the job file changed after it was written" in result["detail"]
    assert out["long_paths"] is None, "the swapped job's step ran"
    assert lines == [] and out["x64"] == {}, "the installer ran"


@pytest.mark.parametrize(("checked", "why"), [
    ("original", "refused: the installer changed after it was checked"),  # another signed file: its hash differs
    ("swap", "refused: the installer is not signed by Microsoft Corporation"),  # the hash fits, no signature
])
@pytest.mark.wine
@pytest.mark.slow
def test_an_installer_swapped_after_its_check_is_refused(lab, tmp_path, standin_exe, clean_runtimes, checked, why):
    from tests.standin import sign_standin

    swap = sign_standin(standin_exe, tmp_path / "other" / "vc_redist.x64.exe") if checked == "original" else \
        standin_exe  # "original": signed too, by another certificate; "swap": the unsigned build
    out, lines, _ = helper_run(lab, tmp_path, standin_exe, SWAPPED_INSTALLER,
                               _env={"TDD_TEST_SWAP": to_windows_path(swap), "TDD_TEST_CHECKED": checked})

    assert out["calls"] == 1
    (result,) = out["results"]
    assert result["op"] == "run-installer" and not result["ok"]
    assert result["detail"].startswith(why), result["detail"]
    assert lines == [] and out["x64"] == {}, "the swapped installer ran"


@pytest.mark.wine
@pytest.mark.slow
def test_an_unknown_step_or_registry_key_is_refused_by_the_helper(lab, tmp_path, standin_exe, clean_runtimes):
    out, lines, _ = helper_run(lab, tmp_path, standin_exe, NOT_ALLOWED)

    for name, why in (("unknown-step", "unknown step 'run'"), ("unknown-key", "is not a value this app changes")):
        code, results = out[name]
        assert code == 1 and [r["op"] for r in results] == ["job"] and why in results[0]["detail"], out[name]
    assert out["run_key"] is None and lines == [] and out["x64"] == {}


@pytest.mark.parametrize(("moment", "standin"), [
    ("waiting", {"first_exit": 1618}),  # the helper waits 30 s for another installation
    ("installing", {"sleep_ms": 4000}),  # the installer runs, as a child of the helper
])
@pytest.mark.wine
@pytest.mark.slow
def test_cancel_ends_the_helper_and_its_installer(lab, tmp_path, standin_exe, clean_runtimes, moment, standin):
    """Cancel (1 s after the stand-in started) ends the helper with TerminateProcess; the job object the helper put
    itself in (elevation.contain_children) ends the installer with it, which would otherwise run on."""
    if "first_exit" in standin:
        standin["state"] = to_windows_path(tmp_path / "busy-once.flag")
    out, lines, _ = helper_run(lab, tmp_path, standin_exe, CANCEL_HELPER, **standin)

    assert out["calls"] == 1
    assert out.get("cancelled_after", 99) < 1.0, out  # run_elevated's wait sees the cancel within a slice
    assert len(runs(lines)) == 1, "the helper tried again after the cancel"
    assert out["x64"] == {}, f"cancelled while {moment}, yet the installer finished"
