"""LiveWindows for real: the app's own machine reading and discovery, run by Windows CPython under Wine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time

import pytest

from tests.helpers.lab import wine_unavailable
from tests.winelab import REPO_ROOT, WineLabUnavailable, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUNTIMES = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
SCRIPT = r"""
import json, sys
sys.path.insert(0, {repo!r})
from app.system.live import LiveWindows
from app.inventory.machine import read_machine_facts
from app.inventory.discovery import DiscoveryReport, discover
system = LiveWindows()
facts = read_machine_facts(system)
report = DiscoveryReport()
envs = list(discover(system, drives=["C:"], budget_s=120, report=report))
print(json.dumps({{
    "windows_version": facts.windows_version, "architecture": facts.architecture,
    "fixed_drives": system.fixed_drives(), "code_page": facts.code_page, "ui_language": facts.ui_language,
    "system32": str(facts.system32), "known_dlls": sorted(facts.known_dlls), "long_paths": facts.long_paths_enabled,
    "vc_runtimes": [[e.arch, e.view, e.installed, e.version] for e in facts.vc_runtimes],
    "runtime_dlls": [[d.folder, d.name] for d in facts.runtime_dlls],
    "variables": facts.variables, "path_effective": facts.path_effective, "problems": facts.problems,
    "envs": [{{"python": str(e.python), "kind": e.kind, "version": e.python_version, "machine": e.python_cpu_type,
              "torch": e.torch.version if e.torch else None, "build": e.torch.build if e.torch else None,
              "torch_folder": str(e.torch.folder) if e.torch else None, "found_by": e.found_by, "app": e.app,
              "app_folder": str(e.app_folder)}} for e in envs],
    "visited": report.folders_visited, "out_of_time": report.out_of_time,
}}))
"""


@pytest.fixture(scope="module")
def comfy_venv(lab):
    """A ComfyUI-style venv on the Wine C: drive, whose base is the lab's Windows CPython 3.12 + torch 2.4.0."""
    try:
        base = lab.make_torch_env("live-base", torch_version="2.4.0")
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))
    # a venv of a plain install: a python312._pth beside the DLL would decide for the venv too (getpath.py: a venv
    # "cannot override the library's one")
    with contextlib.suppress(FileNotFoundError):
        (base / "python312._pth").unlink()
    venv = lab.prefix / "drive_c" / "AI" / "ComfyUI" / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    (venv / "Scripts").mkdir(parents=True)
    shutil.copyfile(base / "python.exe", venv / "Scripts" / "python.exe")
    (venv / "pyvenv.cfg").write_text(f"home = {to_windows_path(base)}\ninclude-system-site-packages = false\n"
                                     "version = 3.12.9\n")
    site = venv / "Lib" / "site-packages"
    site.mkdir(parents=True)
    for name in ("torch", "torch-2.4.0.dist-info"):
        subprocess.run(["cp", "-al", str(base / "Lib" / "site-packages" / name), str(site / name)], check=True)
    assert lab.wine_reg(["add", r"HKCU\Software\Wine", "/v", "Version", "/d", "win10", "/f"]) == 0
    yield base, venv
    shutil.rmtree(venv.parent.parent, ignore_errors=True)


def read_live(lab, extra_env=None):
    result = lab.run_python(["-c", SCRIPT.format(repo=to_windows_path(REPO_ROOT))], env=extra_env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def set_vc_runtime(lab, arch, view, present):
    key = f"{RUNTIMES}\\{arch}"
    lab.wine_reg(["delete", key, "/f", f"/reg:{view}"])
    if present:
        values = [("Installed", "REG_DWORD", "1"), ("Version", "REG_SZ", "v14.44.35211.00"),
                  ("Major", "REG_DWORD", "14"), ("Minor", "REG_DWORD", "44"), ("Bld", "REG_DWORD", "35211"),
                  ("Rbld", "REG_DWORD", "0")]
        for name, kind, data in values:
            assert lab.wine_reg(["add", key, "/v", name, "/t", kind, "/d", data, "/f", f"/reg:{view}"]) == 0


def test_live_machine_facts_and_discovery_of_a_venv_torch_install(lab, comfy_venv):
    base, venv = comfy_venv
    for arch in ("x64", "x86", "arm64"):
        for view in (32, 64):
            set_vc_runtime(lab, arch, view, present=False)
    facts = read_live(lab, {"PYTORCH_ENABLE_MPS_FALLBACK": "1", "KMP_DUPLICATE_LIB_OK": "TRUE"})

    assert facts["windows_version"] == "10.0.18362" and facts["architecture"] == "AMD64"  # Wine's "win10"
    assert "C:" in facts["fixed_drives"] and facts["system32"].lower() == r"c:\windows\system32"
    assert "kernel32.dll" in facts["known_dlls"] and facts["code_page"] == 1252
    assert facts["vc_runtimes"] == []  # a machine where the installer never ran
    assert {"PYTORCH_ENABLE_MPS_FALLBACK": "1", "KMP_DUPLICATE_LIB_OK": "TRUE"}.items() <= facts["variables"].items()
    assert any(p.lower() == r"c:\windows\system32" for p in facts["path_effective"])

    (env,) = [e for e in facts["envs"] if e["python"].lower().endswith(r"\ai\comfyui\venv\scripts\python.exe")]
    assert env["kind"] == "venv" and env["version"] == "3.12.9" and env["machine"] == 0x8664
    assert env["torch"] == "2.4.0+cpu" and env["build"] == "CPU"
    assert env["torch_folder"].lower().endswith(r"\ai\comfyui\venv\lib\site-packages\torch")
    assert env["found_by"] == "search" and env["app"] == "ComfyUI"
    assert env["app_folder"].lower() == to_windows_path(base).lower()
    assert not facts["out_of_time"]


def test_vc_runtime_values_written_like_the_real_installer_are_read(lab, comfy_venv):
    set_vc_runtime(lab, "x64", 64, present=True)
    set_vc_runtime(lab, "x86", 32, present=True)
    try:
        facts = read_live(lab)
    finally:
        set_vc_runtime(lab, "x64", 64, present=False)
        set_vc_runtime(lab, "x86", 32, present=False)
    assert sorted(facts["vc_runtimes"]) == [["x64", "64-bit", True, "14.44.35211.0"],
                                            ["x86", "32-bit", True, "14.44.35211.0"]]


TREE = r"""
import sys, threading, time
sys.path.insert(0, {repo!r})
from app.system.process import run_process
mark = {first!r} + {second!r}  # joined here, so only the child's and grandchild's command lines carry it
child = ("import subprocess, sys, time; "
         f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # {{mark}}']); "
         f"time.sleep(300)  # {{mark}}")
threading.Thread(target=run_process, args=([sys.executable, "-c", child], 600), daemon=True).start()
time.sleep(600)
"""


def wait_for(check, seconds):
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.2)
    return check()


def test_a_killed_app_takes_the_programs_it_started_with_it(lab):
    """A repair's pip, and what pip starts, end with the app: the app killed (End task, a crash), Windows ends the job
    it held (KILL_ON_JOB_CLOSE), grandchildren too, so none goes on beside the undo the next start offers. The child
    starts suspended and runs once it is in the job: that it runs at all proves the resume."""
    mark = f"tdd-tree-{os.getpid()}-{time.monotonic_ns()}"
    script = TREE.format(repo=to_windows_path(REPO_ROOT), first=mark[:4], second=mark[4:])
    with lab.started_exe(lab.python_exe(), ["-c", script]) as app:
        try:
            assert wait_for(lambda: len(lab.processes(mark)) == 2, 120), (lab.processes(mark), app.poll())
            app.kill()
            app.wait(timeout=30)
            app.stdout.close()  # not read to the end: what it started may hold them open
            app.stderr.close()
            left = [] if wait_for(lambda: not lab.processes(mark), 30) else lab.processes(mark)
        finally:
            for pid in lab.processes(mark):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
    assert left == [], "the programs the app started went on after it was killed"



TRUST_SCRIPT = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from app.sources.download import DownloadError, download, new_session
url, target = sys.argv[1], Path(sys.argv[2])
try:  # the app's own download, as the wizard makes it: no certificate named
    download(url, target, max_bytes=1 << 20, retries=0)
    fetched = "ok:" + target.read_text(encoding="utf-8")
except DownloadError as error:
    fetched = "error:" + error.code
try:
    new_session().get(url, timeout=60)
    raw = "ok"
except Exception as error:
    raw = repr(error)
print(json.dumps([fetched, raw]))
"""


def test_downloads_are_checked_by_windows_own_certificate_check(lab, tmp_path):
    """Downloads trust what Windows trusts (truststore: CertGetCertificateChain and Windows' SSL policy), never a
    bundle of our own, so a company proxy's root in Windows' store works (proved on a real PC by
    tests/windows/test_on_windows.py; Wine's SSL policy accepts any root, docs/facts.md). What the lab shows: a
    server signed by a fresh root that no bundle holds is fetched by name (certifi would refuse it), and by its IP
    address it is refused by Windows' chain policy itself (Wine's matches no IP address: CERT_E_CN_NO_MATCH),
    said as "tls"."""
    from tests.https_server import HttpsServer

    script = TRUST_SCRIPT.format(repo=to_windows_path(REPO_ROOT))
    variables = {"REQUESTS_CA_BUNDLE": "", "CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "", "HTTPS_PROXY": "",
                 "https_proxy": "", "NO_PROXY": "*"}
    with HttpsServer(tmp_path / "certs") as server:
        server.files["/company.txt"] = b"through the company's proxy"
        answers = {}
        for host in ("localhost", "127.0.0.1"):
            done = lab.run_python(["-c", script, server.url("/company.txt", host=host),
                                   to_windows_path(tmp_path / f"{host}.txt")], env=variables, timeout=300,
                                  torch_env=lab.app_python())
            assert done.returncode == 0, done.stderr[-3000:]
            answers[host] = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers["localhost"] == ["ok:through the company's proxy", "ok"], answers
    fetched, raw = answers["127.0.0.1"]
    assert fetched == "error:tls" and "chain policy error 0x800b010f" in raw.lower(), answers
