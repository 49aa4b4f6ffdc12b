"""resources/replay_loader.py: torch's DLL loading replayed by the user's own Python.

The first tests run everywhere (no Wine). The rest run the script with real Windows CPython 3.12 and real
torch 2.4.0 under Wine (tests/winelab.py), with the command line the parent uses: ``python.exe -B <script>``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from tests.helpers.lab import chinese_windows, lab_env
from tests.winelab import REPO_ROOT, WineLab, to_windows_path

SCRIPT = REPO_ROOT / "resources" / "replay_loader.py"
MARKER = "TDD-REPLAY-JSON: "
SCHEMA = "torch-dll-doctor.replay/1"


def _load_script_module():
    spec = importlib.util.spec_from_file_location("replay_loader_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # main() runs only under __main__
    return module


# --------------------------------------------------------------------------- everywhere


def test_script_compiles_for_python_38_and_this_python():
    source = SCRIPT.read_text(encoding="utf-8")
    compile(source, str(SCRIPT), "exec")
    ast.parse(source, feature_version=(3, 8))  # the user's Python may be as old as 3.8


def test_parse_output_takes_the_last_marker_line():
    module = _load_script_module()
    assert (module.MARKER, module.SCHEMA) == (MARKER, SCHEMA)
    report = {"schema": SCHEMA, "status": "replayed", "message": "\u627e\u4e0d\u5230\u6a21\u5757\u3002"}
    line = MARKER + json.dumps(report, ensure_ascii=True)
    assert line.isascii()
    stdout = f"torch says hi\r\n{MARKER}{{}}\r\nno newline before{line}\r\n"
    assert module.parse_output(stdout) == report
    assert module.parse_output("nothing here\n") is None


def test_off_windows_it_still_prints_its_line_and_exits_0():
    proc = subprocess.run([sys.executable, "-B", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARKER)]
    assert len(lines) == 1
    report = json.loads(lines[0][len(MARKER) :])
    assert (report["schema"], report["status"], report["internal_error"]) == (SCHEMA, "not_windows", None)


# --------------------------------------------------------------------------- under Wine





def replay(lab: WineLab, torch_env=None, env=None):
    """Run the script as the parent does; returns (report, stdout line list, process)."""
    proc = lab.run_python(["-B", to_windows_path(SCRIPT)], torch_env=torch_env, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    marked = [ln for ln in proc.stdout.splitlines() if MARKER in ln]
    # once after the import, again after the parallel step (an OpenMP abort there still leaves the first)
    assert 1 <= len(marked) <= 2, proc.stdout
    assert all(m.startswith(MARKER) and m.isascii() for m in marked)
    assert proc.stdout.rstrip("\n").splitlines()[-1] == marked[-1]  # the very last output
    report = json.loads(marked[-1][len(MARKER) :])
    assert report["schema"] == SCHEMA
    assert report["internal_error"] is None, report["internal_error"]
    return report, proc


def _by_name(report):
    return {d["name"]: d for d in report["dlls"]}



@pytest.mark.wine
@pytest.mark.slow
def test_seed_240_fails_on_fbgemm_like_torch(lab, seed_env):
    report, proc = replay(lab, seed_env)
    lib = seed_env / "Lib" / "site-packages" / "torch" / "lib"
    assert report["status"] == "replayed"
    assert report["python_version"].startswith("3.12.") and report["bits"] == 64
    assert report["executable"] == to_windows_path(seed_env / "python.exe")
    assert report["torch_dir"] == to_windows_path(lib.parent)
    assert (report["torch_version_text"], report["torch_cuda_text"]) == ("2.4.0+cpu", None)
    assert report["torch_init_variant"] == {"root_bin_dir": False, "vc_arm64_skip": False, "loader_found": True}
    assert report["dll_paths"][0] == to_windows_path(lib)
    assert report["with_load_library_flags"] is True
    assert report["vc_check"] == dict.fromkeys(("vcruntime140.dll", "msvcp140.dll", "vcruntime140_1.dll"))
    assert report["vc_hint"] is False

    first = report["first_failure"]
    assert (first["name"], first["winerror"], first["stage"]) == ("fbgemm.dll", 126, "LoadLibraryW")
    assert first["path"] == to_windows_path(lib / "fbgemm.dll")
    assert first["torch_message"].startswith("[WinError 126] ")
    dlls = _by_name(report)
    fbgemm = dlls["fbgemm.dll"]
    assert (fbgemm["error"], fbgemm["retry_error"], fbgemm["loaded"]) == (126, 126, False)
    assert (fbgemm["stops_torch"], fbgemm["after_failure"]) == (True, False)
    assert fbgemm["message"] and fbgemm["retry_message"]
    cpu = dlls["torch_cpu.dll"]
    assert (cpu["error"], cpu["retry_error"], cpu["loaded"], cpu["after_failure"]) == (126, 126, False, True)
    for name in ("c10.dll", "asmjit.dll"):
        assert dlls[name]["loaded"] and dlls[name]["error"] is None and not dlls[name]["stops_torch"]
    assert [d["name"] for d in report["dlls"] if d["stops_torch"] and not d["after_failure"]] == ["fbgemm.dll"]
    assert report["path_patched"] is True and report["path_patched_by"] == "fbgemm.dll"
    assert to_windows_path(lib / "c10.dll") in report["loaded_modules"]

    imp = report["import"]
    assert (imp["attempted"], imp["ok"], imp["error_type"], imp["winerror"]) == (True, False, "OSError", 126)
    assert "fbgemm.dll" in imp["message"] and imp["message"] == first["torch_message"]
    assert imp["traceback_tail"][-1] == "OSError: " + imp["message"]
    assert 0 < report["elapsed_s"] < 120
    assert '"step": "import"' in proc.stderr  # progress lines


@pytest.mark.wine
@pytest.mark.slow
def test_libomp140_in_place_everything_loads(lab, fixed_env):
    report, _ = replay(lab, fixed_env)
    assert report["first_failure"] is None and report["path_patched"] is False
    assert report["dlls"] and all(d["loaded"] and d["error"] is None for d in report["dlls"])
    assert "libomp140.x86_64.dll" in _by_name(report)
    assert (report["import"]["ok"], report["import"]["version"]) == (True, "2.4.0+cpu")
    assert report["import"]["file"] == to_windows_path(fixed_env / "Lib" / "site-packages" / "torch" / "__init__.py")


@pytest.mark.wine
@pytest.mark.slow
def test_missing_msvcp140_shows_in_vc_check_and_on_c10(lab, fixed_env):
    report, proc = replay(lab, fixed_env, env={"WINEDLLOVERRIDES": "msvcp140=d"})
    vc = report["vc_check"]
    assert vc["msvcp140.dll"]["winerror"] == 126 and vc["msvcp140.dll"]["message"]
    assert vc["msvcp140.dll"]["exception"].startswith("FileNotFoundError: Could not find module 'msvcp140.dll'")
    assert vc["vcruntime140.dll"] is None  # python.org's Python ships its own
    assert report["vc_hint"] is True
    first = report["first_failure"]
    assert (first["name"], first["winerror"]) == ("c10.dll", 126)
    assert report["import"]["winerror"] == 126 and "c10.dll" in report["import"]["message"]
    # torch's own VC++ hint went to stdout before the report line, which is still the last one
    assert "Visual C++ Redistributable is not installed" in proc.stdout


@pytest.mark.wine
@pytest.mark.slow
def test_python_without_torch_reports_it_cleanly(lab):
    report, _ = replay(lab)  # the lab's bare python312/: empty site-packages
    assert report["status"] == "torch_missing"
    assert report["torch_dir"] is None and report["dlls"] == [] and report["import"]["attempted"] is False
    assert to_windows_path(lab.python_dir / "Lib" / "site-packages") in report["sys_path"]


@pytest.mark.wine
@pytest.mark.slow
def test_chinese_messages_and_a_cp936_pipe_keep_the_line_ascii(lab, seed_env):
    # LC_ALL sets Wine's UI language (Chinese messages, code page 936); PYTHONIOENCODING="" undoes the lab's
    # utf-8, so Python writes its pipes in cp936 as on a real Chinese Windows.
    report, _ = replay(lab, seed_env, env=chinese_windows(lab, {"PYTHONIOENCODING": ""}))
    assert report["encodings"]["stdout"] in ("gbk", "cp936")  # Python names code page 936 "gbk"
    first = report["first_failure"]
    assert (first["name"], first["winerror"]) == ("fbgemm.dll", 126)
    assert "\u627e\u4e0d\u5230" in first["message"]  # 找不到
    assert "\u627e\u4e0d\u5230" in report["import"]["message"] and report["import"]["winerror"] == 126


@pytest.mark.wine
@pytest.mark.slow
def test_other_errors_stop_torch_at_once_and_the_rest_is_still_replayed(lab):
    env = lab_env(lab, "replay-bad-dll", torch_version="2.4.0", libomp=True)
    (env / "Lib" / "site-packages" / "torch" / "lib" / "bad_zz.dll").write_bytes(b"MZ not a PE file" + bytes(100))
    report, _ = replay(lab, env)
    first = report["first_failure"]
    assert (first["name"], first["winerror"], first["stage"]) == ("bad_zz.dll", 193, "LoadLibraryExW")
    bad = _by_name(report)["bad_zz.dll"]
    assert (bad["error"], bad["retry_error"], bad["stops_torch"]) == (193, None, True)  # no PATH retry on 193
    assert report["path_patched"] is False
    later = [d for d in report["dlls"] if d["after_failure"]]
    assert later and all(d["loaded"] for d in later)  # everything else loads, and torch would never get there
    assert report["import"]["message"] == first["torch_message"] and report["import"]["winerror"] == 193


@pytest.mark.wine
@pytest.mark.slow
def test_a_dependency_found_only_through_path_shows_as_126_then_loaded(lab, seed_env, tmp_path):
    # libomp140 in a folder on PATH only: LoadLibraryExW (no PATH search) fails, torch's PATH retry finds it
    shutil.copyfile(seed_env / "Lib" / "site-packages" / "torch" / "lib" / "libiomp5md.dll",
                    tmp_path / "libomp140.x86_64.dll")
    report, _ = replay(lab, seed_env, env={"WINEPATH": to_windows_path(tmp_path)})  # Wine appends it to PATH
    assert report["first_failure"] is None and report["path_patched_by"] == "fbgemm.dll"
    fbgemm = _by_name(report)["fbgemm.dll"]
    assert (fbgemm["error"], fbgemm["retry_error"], fbgemm["loaded"], fbgemm["stops_torch"]) == (126, None, True, False)
    assert to_windows_path(tmp_path / "libomp140.x86_64.dll") in report["loaded_modules"]
    assert report["import"]["ok"] is True
