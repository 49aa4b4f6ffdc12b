"""LiveWindows' write side for real: Windows CPython under Wine changes the user's registry and variables.

What our code wrote is read back three ways: through LiveWindows, through winreg directly in the same Windows
Python (the raw type), and by Wine's own `reg` tool in another process.
"""

from __future__ import annotations

import json

import pytest

from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

TEST_KEY = r"HKCU\Software\TorchDllDoctorTest"
PRELUDE = r"""
import json, os, sys, tempfile, time, winreg
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.system.base import NeedsElevation, RegistryValue
from app.system.live import LiveWindows
system = LiveWindows()

def raw(path, name):
    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, path, 0, winreg.KEY_READ | winreg.KEY_WOW64_64KEY) as key:
            data, kind = winreg.QueryValueEx(key, name)
    except FileNotFoundError:
        return None
    return [data.hex() if isinstance(data, bytes) else data, kind]

def timed(call, *args):
    start = time.monotonic()
    call(*args)
    return time.monotonic() - start

out = {{}}
"""


def run(lab, body: str) -> dict:
    script = PRELUDE.format(repo=to_windows_path(REPO_ROOT)) + body + "\nprint(json.dumps(out))\n"
    result = lab.run_python(["-c", script], timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def reg_has(lab, key: str, name: str) -> bool:
    return lab.wine_reg(["query", key, "/v", name]) == 0


@pytest.fixture
def clean(lab):
    lab.wine_reg(["delete", r"HKCU\Environment", "/v", "TDD_TEST_VAR", "/f"])
    lab.wine_reg(["delete", r"HKCU\Environment", "/v", "TDD_TEST_KEPT", "/f"])
    lab.wine_reg(["delete", TEST_KEY, "/f"])
    yield
    lab.wine_reg(["delete", r"HKCU\Environment", "/v", "TDD_TEST_VAR", "/f"])
    lab.wine_reg(["delete", r"HKCU\Environment", "/v", "TDD_TEST_KEPT", "/f"])
    lab.wine_reg(["delete", TEST_KEY, "/f"])


def test_a_user_variable_is_set_as_expandable_and_deleted(lab, clean):
    seen = run(lab, r"""
out["seconds"] = timed(system.set_user_variable, "TDD_TEST_VAR", "%USERPROFILE%\\x")
out["raw"] = raw("Environment", "TDD_TEST_VAR")
out["user"] = system.environment("user").get("TDD_TEST_VAR")
out["expanded"] = system.expand(out["user"] or "")
out["REG_EXPAND_SZ"] = winreg.REG_EXPAND_SZ
""")
    assert seen["raw"] == ["%USERPROFILE%\\x", seen["REG_EXPAND_SZ"]]
    assert seen["user"] == "%USERPROFILE%\\x"
    assert seen["expanded"].lower().endswith("\\x") and "%" not in seen["expanded"]
    assert seen["seconds"] < 12  # the WM_SETTINGCHANGE broadcast is bounded, even headless
    assert reg_has(lab, r"HKCU\Environment", "TDD_TEST_VAR")  # another process sees it

    gone = run(lab, r"""
out["seconds"] = timed(system.set_user_variable, "tdd_test_var", None)
out["raw"] = raw("Environment", "TDD_TEST_VAR")
out["user"] = "TDD_TEST_VAR" in system.environment("user")
system.set_user_variable("TDD_TEST_VAR", None)  # already gone: nothing happens
""")
    assert gone["raw"] is None and gone["user"] is False and gone["seconds"] < 12
    assert not reg_has(lab, r"HKCU\Environment", "TDD_TEST_VAR")


def test_an_existing_user_variable_keeps_its_type_and_a_new_one_takes_the_type_asked(lab, clean):
    assert lab.wine_reg(["add", r"HKCU\Environment", "/v", "TDD_TEST_KEPT", "/t", "REG_SZ", "/d", "plain",
                         "/f"]) == 0
    seen = run(lab, r"""
system.set_user_variable("TDD_TEST_KEPT", "%TEMP%\\y")
out["raw"] = raw("Environment", "TDD_TEST_KEPT")
system.set_user_variable("TDD_TEST_VAR", "50%", "REG_SZ")  # new, as an undo brings back a REG_SZ holding a %
out["asked"] = raw("Environment", "TDD_TEST_VAR")
out["REG_SZ"] = winreg.REG_SZ
""")
    assert seen["raw"] == ["%TEMP%\\y", seen["REG_SZ"]]
    assert seen["asked"] == ["50%", seen["REG_SZ"]]


def test_registry_values_round_trip_and_hklm_needs_elevation(lab, clean):
    seen = run(lab, r"""
key = r"HKCU\Software\TorchDllDoctorTest"
values = {"Count": RegistryValue("REG_DWORD", 0xFFFFFFFF), "Lines": RegistryValue("REG_MULTI_SZ", ["a", "b c"]),
          "Big": RegistryValue("REG_QWORD", 1 << 40), "Blob": RegistryValue("REG_BINARY", b"\x00\xff"),
          "Text": RegistryValue("REG_SZ", "中文"), "Path": RegistryValue("REG_EXPAND_SZ", "%TEMP%"),
          "": RegistryValue("REG_SZ", "default")}
for name, value in values.items():
    system.set_registry_value(key, name, value)
out["same"] = system.registry_values(key) == values
out["raw"] = {name: raw(r"Software\TorchDllDoctorTest", name) for name in values}
out["types"] = {name: getattr(winreg, value.type) for name, value in values.items()}
system.set_registry_value(key, "count", None)
system.set_registry_value(key, "Count", None)
system.set_registry_value(key + r"\NoSuchKey", "Count", None)
out["after_delete"] = sorted(system.registry_values(key))
out["no_key_made"] = system.registry_subkeys(key)
refused = []
for machine_key in (r"HKLM\SOFTWARE\TorchDllDoctorTest", r"HKEY_LOCAL_MACHINE\SOFTWARE\TorchDllDoctorTest"):
    for value in (RegistryValue("REG_DWORD", 1), None):
        try:
            system.set_registry_value(machine_key, "Count", value)
        except NeedsElevation as exc:
            refused.append(isinstance(exc, PermissionError))
out["refused"] = refused
out["hklm_untouched"] = system.registry_values(r"HKLM\SOFTWARE\TorchDllDoctorTest") == {}
""")
    assert seen["same"] is True
    assert seen["raw"]["Count"] == [0xFFFFFFFF, seen["types"]["Count"]]
    assert seen["raw"]["Lines"] == [["a", "b c"], seen["types"]["Lines"]]
    assert seen["raw"]["Blob"] == ["00ff", seen["types"]["Blob"]]
    assert seen["raw"]["Big"] == [1 << 40, seen["types"]["Big"]]
    assert seen["raw"]["Text"] == ["中文", seen["types"]["Text"]]
    assert seen["raw"][""] == ["default", seen["types"][""]]
    assert seen["after_delete"] == ["", "Big", "Blob", "Lines", "Path", "Text"]
    assert seen["no_key_made"] == []
    assert seen["refused"] == [True] * 4 and seen["hklm_untouched"] is True
    assert reg_has(lab, TEST_KEY, "Lines") and not reg_has(lab, TEST_KEY, "Count")


def test_files_change_atomically_but_never_in_system32(lab):
    seen = run(lab, r"""
folder = Path(tempfile.mkdtemp())
system.write_file(folder / "a.dll", b"MZ one")
system.copy_file(folder / "a.dll", folder / "b.dll")
system.rename_file(folder / "b.dll", folder / "c.dll")
system.delete_file(folder / "a.dll")
out["left"] = sorted((p.name, p.read_bytes().decode()) for p in folder.iterdir())
refused = []
windows = os.environ["SystemRoot"]
for target in (windows + r"\System32\tdd.dll", windows.lower() + r"\SYSTEM32\drivers\tdd.sys",
               windows + r"\SysWOW64\tdd.dll", windows + r"\Sysnative\tdd.dll", r"c:/windows/system32/tdd.dll"):
    try:
        system.write_file(Path(target), b"MZ")
    except PermissionError as exc:
        refused.append(not isinstance(exc, NeedsElevation) and "System32" in str(exc))
    try:
        system.copy_file(folder / "c.dll", Path(target))
    except PermissionError:
        refused.append(True)
try:
    system.delete_file(Path(windows + r"\System32\kernel32.dll"))
except PermissionError:
    refused.append(True)
out["refused"] = refused
out["exists"] = os.path.exists(windows + r"\System32\tdd.dll")
""")
    assert seen["left"] == [["c.dll", "MZ one"]]
    assert seen["refused"] == [True] * 11 and seen["exists"] is False


def test_a_broadcast_that_never_returns_does_not_hold_the_app(lab, clean):
    """Headless Wine answers WM_SETTINGCHANGE at once; a desktop with a window that never answers is played
    here by a SendMessageTimeoutW that blocks: the change is made and the call returns after the bound."""
    seen = run(lab, r"""
import ctypes, threading
import app.system.live as live
blocked, release = threading.Event(), threading.Event()
def deaf(*args):
    blocked.set()
    release.wait(60)
    return 0
class Deaf:
    SendMessageTimeoutW = staticmethod(deaf)  # a function: takes argtypes and restype like a ctypes one
real_windll = ctypes.WinDLL
ctypes.WinDLL = lambda name, **kwargs: Deaf() if name == "user32" else real_windll(name, **kwargs)
live.BROADCAST_WAIT_S = 1.0
out["seconds"] = timed(system.set_user_variable, "TDD_TEST_VAR", "bounded")
out["blocked"] = blocked.is_set()
out["raw"] = raw("Environment", "TDD_TEST_VAR")
release.set()
""")
    assert seen["blocked"] is True and 0.9 < seen["seconds"] < 5
    assert seen["raw"][0] == "bounded"
