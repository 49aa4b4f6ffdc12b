"""Newer setups on the live side, in the Windows lab (Windows CPython under Wine): Smart App Control's state written
with reg.exe into the lab's own prefix and read back through LiveWindows (winreg, the 64-bit view) and the machine
facts; IsWow64Process2 read through ctypes, which under Wine on an x64 host gives the native machine AMD64."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

CI_POLICY = r"HKLM\SYSTEM\CurrentControlSet\Control\CI\Policy"
SCRIPT = r"""
import json, sys
sys.path.insert(0, {repo!r})
from app.inventory.machine import CI_POLICY_KEY, read_machine_facts
from app.system.live import LiveWindows
system = LiveWindows()
value = system.registry_value(CI_POLICY_KEY, "VerifiedAndReputablePolicyState")
print(json.dumps({{"value": None if value is None else [value.type, value.data],
                  "state": read_machine_facts(system).smart_app_control,
                  "native": system.native_machine(), "architecture": system.architecture}}))
"""


def reg(lab, *argv):
    lab.ensure()
    return subprocess.run(["wine", "reg", *argv], env=lab.base_env(), capture_output=True, timeout=120)


def read_back(lab, tmp_path):
    script = tmp_path / "read.py"
    script.write_text(SCRIPT.format(repo=to_windows_path(REPO_ROOT)), encoding="utf-8")
    result = lab.run_python([script], timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("value", "state"), [(1, "on"), (2, "evaluation"), (0, "off")])
def test_smart_app_control_state_written_with_reg_exe_is_read_through_live_windows(lab, tmp_path, value, state):
    written = reg(lab, "add", CI_POLICY, "/v", "VerifiedAndReputablePolicyState", "/t", "REG_DWORD", "/d",
                  str(value), "/f")
    assert written.returncode == 0, written.stderr
    try:
        seen = read_back(lab, tmp_path)
    finally:
        reg(lab, "delete", CI_POLICY, "/v", "VerifiedAndReputablePolicyState", "/f")
    assert seen["value"] == ["REG_DWORD", value] and seen["state"] == state


def test_without_the_value_the_state_is_unknown(lab, tmp_path):
    reg(lab, "delete", CI_POLICY, "/v", "VerifiedAndReputablePolicyState", "/f")
    assert read_back(lab, tmp_path)["state"] is None


def test_is_wow64_process2_gives_the_native_machine_amd64_under_wine(lab, tmp_path):
    seen = read_back(lab, tmp_path)
    assert seen["native"] == "AMD64"  # read from IsWow64Process2, not the GetNativeSystemInfo fallback
    assert seen["architecture"] == "AMD64"
