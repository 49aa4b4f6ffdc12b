"""The paging file in the Windows lab (Windows CPython under Wine): LiveWindows reads PagingFiles as `reg add` wrote it,
the commit figures (GlobalMemoryStatusEx), the system drive's free space and whether the setting changed since Windows
started, and the probe turns them into a blocker for a CUDA torch\\lib larger than what can be committed; the CLI's
`repair --action paging-file-system-managed --yes` writes `?:\\pagefile.sys` through Windows' reg.exe (ShellExecuteExW
"runas"), and undo writes the value before back the same way. Read back with `wine reg query`."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.lab import lab_env
from tests.helpers.machine_settings import cli, elevated, journal, query
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]

MM = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
FIXED = r"C:\pagefile.sys 1024 2048"

PROBE_SCRIPT = r"""
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.demo.pe_writer import write_pe
from app.inventory.environment import inspect_environment
from app.inventory.machine import read_machine_facts
from app.probes import paging_file
from app.probes.base import ProbeContext
from app.system.live import LiveWindows

system = LiveWindows()
facts = read_machine_facts(system)
paging = facts.paging
room = paging.memory.commit_limit - paging.memory.commit_total
# a CUDA DLL 1 GB larger than what Windows can still commit (sparse: nothing is written but its headers)
write_pe(Path({dll!r}), dll_name="cudnn_cnn_infer64_8.dll", pad_to=room + (1 << 30))
env = inspect_environment(system, Path({python!r}))
found = list(paging_file.run(ProbeContext(system, facts, env)))
print(json.dumps({{"setting": paging.setting, "pending": paging.pending_restart, "kind": paging.kind,
                  "memory": paging.memory.__dict__, "space": paging.system_drive_space.__dict__,
                  "drive": paging.system_drive, "cuda": env.torch.cuda,
                  "findings": [{{"severity": f.severity, "variant": f.variant, "repairs": f.repairs,
                                "evidence": f.evidence}} for f in found]}}))
"""


@pytest.fixture
def paging_setting(lab):
    """PagingFiles as the lab had it, put back afterwards."""
    before = query(lab, MM, "PagingFiles")
    yield
    if before is None:
        lab.wine_reg(["delete", MM, "/v", "PagingFiles", "/f"])
    else:
        lab.wine_reg(["add", MM, "/v", "PagingFiles", "/t", before[0], "/d", before[1], "/f"])


def test_the_probe_reads_the_live_setting_and_commit_figures(lab, tmp_path, paging_setting):
    env = lab_env(lab, "paging-file-cuda", torch_version="2.4.1")
    torch = env / "Lib" / "site-packages" / "torch"
    version = torch / "version.py"
    text = version.read_text("utf-8").replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.1'")
    version.unlink()  # a hard link into the lab's shared site-packages: replaced, never written through
    version.write_text(text, "utf-8")
    dll = torch / "lib" / "cudnn_cnn_infer64_8.dll"
    assert lab.wine_reg(["add", MM, "/v", "PagingFiles", "/t", "REG_MULTI_SZ", "/d", FIXED, "/f"]) == 0
    script = tmp_path / "probe.py"
    script.write_text(PROBE_SCRIPT.format(repo=to_windows_path(REPO_ROOT), dll=to_windows_path(dll),
                                          python=to_windows_path(env / "python.exe")), encoding="utf-8")
    try:
        result = lab.run_python([script], timeout=600, torch_env=env)
        assert result.returncode == 0, result.stderr[-3000:]
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        dll.unlink(missing_ok=True)
    assert facts["setting"] == [FIXED] and facts["kind"] == "custom" and facts["cuda"] == "12.1"
    assert facts["pending"] is True  # written by `reg add` long after the lab's Windows started
    memory = facts["memory"]
    assert 0 < memory["commit_total"] <= memory["commit_limit"] and memory["physical_total"] > 0
    host = shutil.disk_usage(lab.prefix / "drive_c")
    assert facts["drive"] == "C:" and abs(facts["space"]["total"] - host.total) < (1 << 30)
    (finding,) = facts["findings"]
    assert (finding["severity"], finding["variant"], finding["repairs"]) == (
        "blocker", "custom", ["paging-file-system-managed"])
    assert finding["evidence"]["setting"] == [FIXED]
    assert finding["evidence"]["bytes"]["commit_limit"] == memory["commit_limit"]
    assert finding["evidence"]["largest"][0] == "cudnn_cnn_infer64_8.dll"


@pytest.mark.parametrize("setting", [FIXED, ""], ids=["fixed", "none"])  # "": no paging file at all
def test_the_repair_writes_system_managed_through_reg_exe_and_undo_puts_it_back(
        lab, tmp_path, paging_setting, setting):
    env = lab_env(lab, "paging-file-repair", torch_version="2.4.1")
    assert lab.wine_reg(["add", MM, "/v", "PagingFiles", "/t", "REG_MULTI_SZ", "/d", setting, "/f"]) == 0
    if setting:  # the plan's words once (the empty setting's case is the undo's)
        plan = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action",
                   "paging-file-system-managed", "--plan")
        assert "restart" in plan.stdout and setting in plan.stdout, (plan.stdout[-3000:], plan.stderr[-3000:])
    result = cli(lab, env, tmp_path, "repair", "--env", to_windows_path(env), "--action", "paging-file-system-managed",
                 "--yes")
    assert query(lab, MM, "PagingFiles") == ("REG_MULTI_SZ", "?:\\pagefile.sys"), (result.stdout[-3000:],
                                                                                  result.stderr[-3000:])
    transaction, records = journal(tmp_path)
    (intent,) = [r for r in records if r["kind"] == "intent"]
    assert intent["before"] == {"type": "REG_MULTI_SZ", "data": [setting] if setting else []}
    assert intent["after"] == {"type": "REG_MULTI_SZ", "data": ["?:\\pagefile.sys"]}
    assert any(r["kind"] == "note" and r.get("restart_needed") for r in records)
    (argv,) = elevated(tmp_path)
    assert argv[0].lower().endswith("\\system32\\reg.exe") and argv[1] == "add" and "REG_MULTI_SZ" in argv

    undo = cli(lab, env, tmp_path, "undo", "--last")
    assert "Undone" in undo.stdout, (undo.stdout[-3000:], undo.stderr[-3000:])
    assert query(lab, MM, "PagingFiles") == ("REG_MULTI_SZ", setting)
    assert len(elevated(tmp_path)) == 2  # undo: reg.exe again
