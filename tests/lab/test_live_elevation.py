"""The one elevated step for real: LiveWindows.run_elevated (ShellExecuteExW "runas") run by Windows CPython under
Wine, starting a real Windows stand-in for vc_redist (tests/standin) that writes the registry and a log and exits
with the code the test chose.

What Wine proves and cannot (measured here, Wine 8.0): ShellExecuteExW starts an .exe whatever the verb ("runas",
"open", even an unknown one) and shows no consent prompt; the program gets the same full administrator token
(TokenElevationType 2) as one started without "runas". So these tests prove the call itself (structure layout,
quoting, the process handle, the sliced wait, the exit code, a Stop and a time-out that never end Microsoft's
installer halfway, the installer held from its check to its start, Windows Installer's busy flag, reg.exe
writing machine values, HKLM read back through LiveWindows and read_machine_facts) but not that Windows
elevates, and the user's "No"
(ERROR_CANCELLED) cannot happen under Wine: it is simulated by a ShellExecuteExW stand-in failing with 1223.
"""

from __future__ import annotations

import json
import os

import pytest

from app.system.base import NotAvailable
from app.system.offline import OfflineImage
from tests.helpers.lab import wine_unavailable
from tests.winelab import REPO_ROOT, to_windows_path

RUNTIMES = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
SWITCHES = ["/install", "/quiet", "/norestart", "/log"]

PROLOGUE = r"""
import json, sys, threading, time
sys.path.insert(0, {repo!r})
from app.cancel import Cancelled, CancelToken
from app.system.base import ElevationDeclined, StoppedAfterEnd
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

TIMEOUT = r"""
from app.system.base import StillRunning
start = time.monotonic()
try:
    system.run_elevated(ARGV, 1.0)
except StillRunning as exc:
    out["timeout"] = [str(exc), time.monotonic() - start]
time.sleep(4)  # past the stand-in's 3 s "install": it was not ended, so it finishes
out["x64"] = {k: v.data for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
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
def test_a_timeout_stops_the_waiting_not_the_installer(lab, tmp_path, standin_exe, clean_runtimes):
    out, log = elevated(lab, tmp_path, standin_exe, TIMEOUT, exit=0, sleep_ms=3000)

    message, seconds = out["timeout"]
    assert "vc_redist.x64.exe did not finish within 1 s; it is still running" in message
    assert seconds < 2.5
    assert log is not None and "Exit code: 0x0" in log and out["x64"]["Installed"] == 1


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


# -- what is held is what runs: the installer pinned from its check to its start (elevation.pinned_file) ---------
PINNED = r"""
import ctypes, hashlib, os, shutil, subprocess
from app.system.elevation import pinned_file
INSTALLER = ARGV[0]
folder = os.path.dirname(INSTALLER)
with pinned_file(INSTALLER) as (final, data):
    out["final"] = final
    out["sha256"] = hashlib.sha256(data).hexdigest()
    attempts = {}
    def attempt(name, action):
        try:
            action()
            attempts[name] = "done"
        except OSError as exc:
            attempts[name] = f"refused {getattr(exc, 'winerror', None)}"
    attempt("write", lambda: open(INSTALLER, "r+b").close())
    attempt("replace", lambda: os.replace(INSTALLER + ".other", INSTALLER))
    attempt("rename", lambda: os.rename(INSTALLER, INSTALLER + ".moved"))
    attempt("delete", lambda: os.remove(INSTALLER))
    attempt("read", lambda: open(INSTALLER, "rb").read(2))
    out["attempts"] = attempts
    out["code"] = system.run_elevated([final, "/install", "/quiet", "/norestart"], 60)
out["x64"] = {k: v.data for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
with open(INSTALLER, "r+b"):  # held no more: the file is the user's again
    out["writable_after"] = True
"""

STOP_WHILE_RUNNING = r"""
token = CancelToken()
told = []
threading.Timer(0.5, token.cancel).start()
start = time.monotonic()
try:
    out["code"] = system.run_elevated(ARGV, 60, token, on_stop_asked=lambda: told.append(time.monotonic() - start))
except StoppedAfterEnd as stopped:  # a Cancelled that keeps what the installer said
    out["cancelled_after"] = time.monotonic() - start
    out["stopped_exit_code"] = stopped.exit_code
out["told_after"] = told
out["x64"] = {k: v.data for k, v in system.registry_values(RUNTIMES + "\\x64").items()}
"""

BUSY_FLAG = r"""
import ctypes, subprocess, sys
from ctypes import wintypes
out["busy_before"] = system.installer_busy()
holder = subprocess.Popen([sys.executable, "-c",
    "import ctypes, time; h = ctypes.windll.kernel32.CreateMutexW(None, True, 'Global\\\\_MSIExecute'); "
    "print('held', flush=True); time.sleep(3)"], stdout=subprocess.PIPE, text=True)
out["holder"] = holder.stdout.readline().strip()
out["busy_while_held"] = system.installer_busy()
holder.wait(30)
out["busy_after"] = system.installer_busy()
"""

REG = r"""
from app.system.base import RegistryValue
from app.system.elevation import reg_argv, system_folder
FS = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
MM = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
out["reg"] = reg_argv(system_folder(), FS, "LongPathsEnabled", None)[0]
seen = []
real = system.run_elevated
def counted(argv, timeout, cancel=None, on_stop_asked=lambda: None):
    seen.append(argv[0])
    return real(argv, timeout, cancel, on_stop_asked)
system.run_elevated = counted
before = system.registry_value(MM, "PagingFiles")
for value in (RegistryValue("REG_DWORD", 1), None, RegistryValue("REG_DWORD", 0)):
    system.set_machine_value(FS, "TddTestLongPaths", value)
    now = system.registry_value(FS, "TddTestLongPaths")
    out.setdefault("dword", []).append(None if now is None else now.data)
paging = RegistryValue("REG_MULTI_SZ", ["C:\\pagefile.sys 16384 32768", "?:\\pagefile.sys"])
system.set_machine_value(MM, "TddTestPagingFiles", paging)
out["multi"] = system.registry_value(MM, "TddTestPagingFiles").data
system.set_machine_value(MM, "TddTestPagingFiles", None)
system.set_machine_value(FS, "TddTestLongPaths", None)
out["programs"] = sorted(set(seen))
out["prompts"] = len(seen)
"""


@pytest.mark.wine
@pytest.mark.slow
def test_the_installer_is_held_from_its_check_until_it_has_started(lab, tmp_path, standin_exe, clean_runtimes):
    """While held, no program can write, replace, rename or delete the installer; what was read through the held
    handle is the file that runs (its SHA-256), and it is started by its final path."""
    import hashlib

    (tmp_path / "下载 downloads").mkdir()
    other = tmp_path / "下载 downloads" / "vc_redist.x64.exe.other"
    other.write_bytes(b"MZ another program")
    out, log = elevated(lab, tmp_path, standin_exe, PINNED, exit=0)

    assert out["sha256"] == hashlib.sha256(standin_exe.read_bytes()).hexdigest()
    assert out["final"].lower().endswith("vc_redist.x64.exe") and "下载 downloads" in out["final"]
    attempts = out["attempts"]
    assert attempts["read"] == "done"
    for action in ("write", "replace", "rename", "delete"):
        assert attempts[action].startswith("refused"), (action, attempts)
    assert out["code"] == 0 and out["x64"]["Installed"] == 1, "the held installer could not be started"
    assert out["writable_after"]


@pytest.mark.wine
@pytest.mark.slow
def test_a_stop_while_microsofts_installer_runs_waits_for_it_then_says_cancelled(lab, tmp_path, standin_exe,
                                                                                   clean_runtimes):
    """The installer is never ended halfway (Windows Installer would go on without it): the Stop is said at once,
    honoured once it has ended."""
    out, log = elevated(lab, tmp_path, standin_exe, STOP_WHILE_RUNNING, exit=0, sleep_ms=3000)

    assert "code" not in out, "run_elevated returned instead of raising Cancelled"
    (told,) = out["told_after"]
    assert 0.4 < told < 1.5, "the Stop was not said while the installer ran"
    assert 2.9 < out["cancelled_after"] < 10, "Cancelled came before the installer had ended"
    assert log is not None and "Exit code: 0x0" in log, "the installer was ended halfway"
    assert out["stopped_exit_code"] == 0
    assert out["x64"]["Installed"] == 1


@pytest.mark.wine
@pytest.mark.slow
def test_windows_installers_busy_flag_is_read(lab, tmp_path, standin_exe):
    out, _ = elevated(lab, tmp_path, standin_exe, BUSY_FLAG, exit=0)

    assert out["holder"] == "held"
    assert out == {**out, "busy_before": False, "busy_while_held": True, "busy_after": False}


@pytest.mark.wine
@pytest.mark.slow
def test_machine_values_are_written_by_windows_own_reg_exe_and_read_back(lab, tmp_path, standin_exe):
    """System.set_machine_value on a live Windows: reg.exe from the system folder, started through run_elevated
    (one prompt per value), DWORD, delete and a list with spaces, each read back through winreg."""
    out, _ = elevated(lab, tmp_path, standin_exe, REG, exit=0)

    assert out["reg"].lower() == "c:\\windows\\system32\\reg.exe"
    assert out["programs"] == [out["reg"]] and out["prompts"] == 6
    assert out["dword"] == [1, None, 0]
    assert out["multi"] == ["C:\\pagefile.sys 16384 32768", "?:\\pagefile.sys"]
