"""The diagnosis: every probe's positive and negative case on offline images, the runner, and the CLI."""

from __future__ import annotations

import json
import re
import time

import pytest

from app.cancel import Cancelled, CancelToken
from app.demo.computer import DEMO_TORCH_LIB, build_demo_image
from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Export, Import, build_pe
from app.inventory.discovery import discover
from app.main import main
from app.probes.base import ENVIRONMENT, Probe
from app.probes.finding import catalogue
from app.probes.runner import run_diagnosis
from app.system.offline import OfflineImage
from tests.helpers.diagnosis import codes, diagnose, finding
from tests.helpers.pe_machine import HOME, LIB, PY, SITE, SYS32, VENV, torch, vc_runtime


# -- the healthy baseline ----------------------------------------------------------------------------------------
def test_healthy_machine_has_no_blocker_and_says_the_replay_was_skipped(machine):
    result = diagnose(machine)
    assert codes(result, "blocker") == [] and codes(result, "warning") == []
    assert codes(result) == ["check-skipped"]  # offline: torch was not started
    assert finding(result, "check-skipped").evidence["probe"] == "replay"
    assert result.complete


# -- each probe: positive and negative ---------------------------------------------------------------------------
def test_vc_runtime_absent_is_a_blocker_with_the_install_repair(machine):
    for name in ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"):
        machine.host(f"{SYS32}\\{name}").unlink()
    machine.registry.clear()
    machine.save()
    result = diagnose(machine)
    vc = finding(result, "vc-runtime-missing")
    assert vc.severity == "blocker" and vc.variant == "absent" and vc.repairs == ["install-vc-runtime"]
    assert set(vc.evidence["dlls"]) == {"vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"}
    assert "missing-dll" in codes(result, "blocker")


def test_vc_runtime_found_only_beside_python_is_unregistered_warning(machine):
    for name in ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"):
        machine.host(f"{SYS32}\\{name}").unlink()
    vc_runtime(machine, folder=PY)
    machine.registry.clear()
    machine.save()
    vc = finding(diagnose(machine), "vc-runtime-missing")
    assert vc.severity == "warning" and vc.variant == "unregistered"


@pytest.mark.parametrize("msvcp, blocked", [((14, 38, 33130, 0), True), ((14, 44, 35211, 0), False)])
def test_torch_29_needs_msvcp140_1440(machine, msvcp, blocked):
    torch(machine, "2.9.0+cpu")
    machine.write(SYS32 + r"\msvcp140.dll", build_pe(dll_name="msvcp140.dll", file_version=msvcp,
                                                     exports=[Export(1, "runtime_function")]))
    result = diagnose(machine)
    assert ("vc-runtime-too-old" in codes(result, "blocker")) is blocked
    if blocked:
        assert finding(result, "vc-runtime-too-old").evidence["found"] == "14.38.33130.0"


def test_two_openmp_runtimes_in_reach_is_a_conflict(machine):
    machine.write(LIB + r"\libiomp5md.dll", build_pe(dll_name="libiomp5md.dll"))
    assert "openmp-conflict" not in codes(diagnose(machine))
    machine.write(VENV + r"\Library\bin\libiomp5md.dll", build_pe(dll_name="libiomp5md.dll"))
    conflict = finding(diagnose(machine), "openmp-conflict")
    assert conflict.severity == "warning" and len(conflict.evidence["copies"]) == 2


def test_conda_openmp_next_to_intel_openmp_is_a_conflict(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    vc_runtime(image)
    env = HOME + r"\miniconda3"
    image.write(env + r"\python.exe", build_pe(dll=False))
    image.write(env + r"\conda-meta\openmp-5.0.0-h0.json", "{}")
    image.write(env + r"\conda-meta\intel-openmp-2024.1.0-h57928b3_965.json", "{}")
    image.torch_version_file(env + r"\Lib\site-packages", "2.4.1")
    image.write(env + r"\Lib\site-packages\torch\lib\c10.dll", build_pe(dll_name="c10.dll"))
    system = OfflineImage(image.root)
    result = run_diagnosis(system, list(discover(system)))
    assert "conda: intel-openmp" in finding(result, "openmp-conflict").evidence["copies"]


def test_kmp_duplicate_lib_ok_is_reported_as_unsafe(machine):
    assert "unsafe-env-var" not in codes(diagnose(machine))
    machine.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    unsafe = finding(diagnose(machine), "unsafe-env-var")
    assert unsafe.evidence == {"variable": "KMP_DUPLICATE_LIB_OK", "value": "TRUE"} and unsafe.environment is None


@pytest.mark.parametrize("version, expected", [("2.4.0+cpu", "blocker"), ("2.4.1+cpu", None)])
def test_torch_240_is_a_known_bad_build(machine, version, expected):
    torch(machine, version, imports=("c10.dll", "libomp140.x86_64.dll"))
    result = diagnose(machine)
    found = [f for f in result.findings if f.code == "torch-known-bad-build"]
    assert [f.severity for f in found] == ([expected] if expected else [])
    if expected:
        assert found[0].evidence["fixed_in"] == "2.4.1" and found[0].repairs[0] == "upgrade-torch"


def test_32bit_python_is_a_blocker(machine):
    machine.write(VENV + r"\Scripts\python.exe", build_pe(dll=False, machine="x86"))
    assert "python-32bit" in codes(diagnose(machine), "blocker")


@pytest.mark.parametrize("python, torch_version, unsupported", [
    ("3.13.1", "2.4.0+cpu", True), ("3.12.4", "2.4.0+cpu", False), ("3.8.10", "2.5.1+cpu", True),
    ("3.13.1", "2.6.0+cpu", False), ("3.16.0", "2.4.0", False)])
def test_python_version_outside_what_torch_supports(machine, python, torch_version, unsupported):
    major, minor, micro = (int(x) for x in python.split("."))
    machine.host(PY + r"\python312.dll").unlink()  # the base Python is that version (a venv runs its base's)
    machine.write(PY + rf"\python{major}{minor}.dll", build_pe(dll_name=f"python{major}{minor}.dll",
                                                              file_version=(major, minor, micro * 1000 + 150, 1013)))
    machine.venv(VENV, PY, python)
    torch(machine, torch_version)
    assert ("python-version-unsupported" in codes(diagnose(machine))) is unsupported


def test_dead_and_duplicate_path_entries(machine):
    machine.add_to_path(r"C:\Gone\bin")
    machine.add_to_path(r"C:\WINDOWS\System32\\", scope="user")
    result = diagnose(machine)
    assert finding(result, "path-dead-entry").evidence["entry"] == r"C:\Gone\bin"
    assert finding(result, "path-duplicate-entry").evidence["count"] == 2


def test_quarantined_torch_dll_is_named(machine):
    size = machine.host(LIB + r"\c10.dll").stat().st_size
    machine.write(SITE + r"\torch-2.4.1.dist-info\RECORD",
                  f"torch/lib/c10.dll,sha256=x,{size}\ntorch/lib/gone.dll,sha256=y,1\n")
    files = finding(diagnose(machine), "torch-files-missing")
    assert files.severity == "blocker" and files.evidence["files"] == ["gone.dll"]
    assert "antivirus" in files.text("en").explanation and "杀毒软件" in files.text("zh_CN").explanation


def test_long_paths_disabled_near_the_limit(machine):
    deep = "C:\\Users\\alice\\" + "\\".join(["a-rather-long-folder-name"] * 7)
    machine.venv(deep + r"\venv", PY, python_exe=build_pe(dll=False))
    machine.torch_version_file(deep + r"\venv\Lib\site-packages", "2.4.1")
    machine.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 0)
    assert [f.environment.startswith(deep) for f in diagnose(machine, [deep]).findings
            if f.code == "long-paths-disabled"] == [True]
    machine.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 1)
    assert "long-paths-disabled" not in codes(diagnose(machine, [deep]))


def test_a_venvs_python_on_a_drive_not_held_leaves_its_dlls_unseen_never_missing(machine):
    """torch_python.dll imports python312.dll, which is in the folder of the Python the venv runs: with pyvenv.cfg's
    home on D: (a copied C: drive), it is not "missing" but could not be looked for."""
    machine.write(LIB + r"\torch_python.dll", build_pe(dll_name="torch_python.dll",
                                                       imports=[Import("python312.dll", ("Py_Initialize",))]))
    result = diagnose(machine)
    assert "missing-dll" not in codes(result) and "dll-unreadable" not in codes(result)
    machine.write(VENV + r"\pyvenv.cfg", "home = D:\\Python312\nversion = 3.12.4\n")
    result = diagnose(machine, folders=[VENV])
    unseen = finding(result, "dll-unreadable")
    assert unseen.variant == "unseen" and unseen.evidence["dll"] == "python312.dll"
    assert unseen.evidence["path"] == r"D:\Python312" and "missing-dll" not in codes(result)


def test_path_folders_not_held_are_named_when_a_dll_is_missing(machine):
    """torch's retry searches PATH last: a DLL found nowhere else may be in a PATH folder on D: or a share. Said
    only when one is missing (nothing else depends on PATH)."""
    machine.add_to_path(r"D:\tools")
    machine.add_to_path(r"\\nas\bin", scope="system")
    assert "check-failed" not in codes(diagnose(machine))
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "gone.dll"))
    result = diagnose(machine)
    unseen = finding(result, "check-failed")
    assert unseen.variant == "path-entries-unseen" and unseen.evidence["dlls"] == ["gone.dll"]
    assert set(unseen.evidence["folders"]) == {r"D:\tools", r"\\nas\bin"} and not result.complete
    assert "missing-dll" in codes(result)


def test_non_ascii_install_path(machine):
    other = r"C:\Users\张伟\AI\venv"
    machine.venv(other, PY, python_exe=build_pe(dll=False))
    machine.torch_version_file(other + r"\Lib\site-packages", "2.4.1")
    found = [f for f in diagnose(machine, [other]).findings if f.code == "non-ascii-path"]
    assert len(found) == 1 and found[0].severity == "warning" and "张伟" in found[0].evidence["path"]


@pytest.mark.parametrize("driver, expected", [(None, "gpu-driver-missing"), ("31.0.15.1215", "gpu-driver-too-old"),
                                              ("31.0.15.5222", None)])
def test_cuda_build_and_the_nvidia_driver(machine, driver, expected):
    torch(machine, "2.4.1+cu121", cuda="12.1")
    if driver:
        key = r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}\0000"
        machine.set_value(key, "ProviderName", "REG_SZ", "NVIDIA")
        machine.set_value(key, "DriverVersion", "REG_SZ", driver)
    found = [f.code for f in diagnose(machine).findings if f.code.startswith("gpu-")]
    assert found == ([expected] if expected else [])


@pytest.mark.parametrize("value, malformed", [("max_split_size_mb:abc", True), ("expandable_segments:True", False),
                                              ("garbage_collection_threshold:0.6,max_split_size_mb:128", False),
                                              ("expandable", True), ("colour:blue", True)])
def test_malformed_cuda_alloc_conf(machine, value, malformed):
    machine.set_variable("user", "PYTORCH_CUDA_ALLOC_CONF", value)
    assert ("env-var-malformed" in codes(diagnose(machine))) is malformed


def test_mps_variables_are_irrelevant_on_windows(machine):
    machine.set_variable("user", "PYTORCH_ENABLE_MPS_FALLBACK", "1")
    machine.set_variable("user", "PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.0")
    found = [f for f in diagnose(machine).findings if f.code == "irrelevant-env-var"]
    assert sorted(f.evidence["variable"] for f in found) == ["PYTORCH_ENABLE_MPS_FALLBACK",
                                                            "PYTORCH_MPS_HIGH_WATERMARK_RATIO"]
    assert all(f.severity == "info" for f in found)


def test_dll_found_only_through_path_is_fragile(machine):
    machine.write(r"C:\Tools\bin\helper.dll", build_pe(dll_name="helper.dll", exports=[Export(1, "c10_function")]))
    machine.add_to_path(r"C:\Tools\bin")
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "helper.dll"))
    fragile = finding(diagnose(machine), "path-fragile")
    assert fragile.evidence["dll"] == "helper.dll" and fragile.evidence["path"] == r"C:\Tools\bin"


def test_older_runtime_copy_winning_the_search_is_shadowing(machine):
    machine.write(VENV + r"\Library\bin\msvcp140.dll", build_pe(dll_name="msvcp140.dll", file_version=(14, 29, 1, 0),
                                                               exports=[Export(1, "runtime_function")]))
    shadow = finding(diagnose(machine), "path-shadowing")
    assert shadow.evidence["found"] == "14.29.1.0" and shadow.evidence["better"] == "14.44.35211.0"


def test_wrong_architecture_dll_is_a_blocker(machine):
    machine.write(LIB + r"\c10.dll", build_pe(dll_name="c10.dll", machine="x86", exports=[Export(1, "c10_function")]))
    wrong = finding(diagnose(machine), "wrong-architecture")
    assert wrong.evidence["machine"] == "x86" and wrong.evidence["expected"] == "x64"


# -- the runner ----------------------------------------------------------------------------------------------------
def test_a_probe_that_fails_becomes_an_info_finding_and_the_rest_go_on(machine):
    def broken(ctx):
        raise RuntimeError("boom")
        yield

    from app.probes.every_probe import ALL_PROBES

    events = []
    probes = (*(p for p in ALL_PROBES if p.id != "dependencies"), Probe("dependencies", ENVIRONMENT, broken))
    result = diagnose(machine, probes=probes, on_event=events.append)
    failed = finding(result, "check-failed")
    assert failed.severity == "info" and "boom" in failed.evidence["error"]
    assert not result.complete  # never "all clear" when a check did not run
    assert sorted(e.probe.id for e in events if e.state == "done") == sorted(
        p.id for p in ALL_PROBES if p.id not in ("replay", "dependencies"))  # the others all finished


def test_time_budget_ends_a_slow_probe(machine):
    def slow(ctx):
        while not ctx.cancel.cancelled:
            time.sleep(0.01)
        return []

    started = time.monotonic()
    result = diagnose(machine, probes=(Probe("gpu", ENVIRONMENT, slow),), budget_s=0.3)
    assert time.monotonic() - started < 2 and not result.complete
    assert "did not finish" in finding(result, "check-failed").evidence["error"]


def test_cancelling_stops_the_diagnosis(machine):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        diagnose(machine, cancel=token)


def test_progress_events_cover_every_probe(machine):
    events = []
    diagnose(machine, on_event=events.append)
    done = [e for e in events if e.state != "started"]
    from app.probes.every_probe import ALL_PROBES

    assert done[-1].done == done[-1].total == len(done) == len(ALL_PROBES) - 1  # all but the skipped replay


# -- words -----------------------------------------------------------------------------------------------------
DESIGN_CODES = ["missing-dll", "missing-delay-dll", "wrong-architecture", "missing-export", "vc-runtime-missing",
                "vc-runtime-too-old", "openmp-runtime-missing", "openmp-conflict", "torch-known-bad-build",
                "python-32bit", "torch-files-missing", "path-fragile", "path-shadowing", "path-dead-entry",
                "long-paths-disabled", "non-ascii-path", "gpu-driver-too-old", "irrelevant-env-var", "import-failed",
                "import-ok"]


def test_every_design_code_has_english_and_chinese_words():
    entries = catalogue()
    for code in DESIGN_CODES:
        variants = [key for key in entries if key == code or key.startswith(code + "@")]
        assert variants, code
        for key in variants:
            for lang in ("en", "zh_CN"):
                assert all(entries[key][lang][part].strip() for part in ("title", "explanation", "action")), key
            assert re.search(r"[\u4e00-\u9fff]", entries[key]["zh_CN"]["explanation"]), key


def test_no_finding_says_module_hresult_or_ordinal():
    for key, entry in catalogue().items():
        english = " ".join(entry["en"].values()).lower()
        assert not re.search(r"\bmodules?\b|hresult|ordinal", english), key


# -- the CLI and reports ---------------------------------------------------------------------------------------
def test_diagnose_demo_names_libomp140_first_and_exits_1(capsys):
    code = main(["diagnose", "--demo", "--json", "-", "--quiet"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and document["schema"] == "torch-dll-doctor.diagnosis/2"
    blockers = [f for f in document["findings"] if f["severity"] == "blocker"]
    assert blockers[0]["code"] == "openmp-runtime-missing"
    assert blockers[0]["evidence"]["needed_by"] == ["fbgemm.dll", "torch_cpu.dll"]
    assert blockers[0]["repairs"] == ["place-libomp140", "upgrade-torch"]
    missing = next(f for f in blockers if f["code"] == "missing-dll")
    assert missing["evidence"]["dll"] == "libomp140.x86_64.dll"
    assert missing["evidence"]["torch_stops_at"] == "fbgemm.dll"
    assert {f["code"] for f in blockers} == {"openmp-runtime-missing", "missing-dll", "torch-known-bad-build"}
    # one missing file is one problem: its other findings are its evidence, its repairs listed once
    (problem,) = [p for p in document["problems"] if p["severity"] == "blocker"]
    assert document["summary"]["blockers"] == 1
    assert problem["code"] == "openmp-runtime-missing" and problem["repairs"] == ["place-libomp140", "upgrade-torch"]
    assert "2.4.0" in problem["title"] and "libomp140.x86_64.dll" in problem["title"]
    members = [document["findings"][i] for i in problem["findings"]]
    assert [f["code"] for f in members] == ["openmp-runtime-missing", "missing-dll", "torch-known-bad-build"]
    assert all(f["problem"] == 0 for f in members)
    (env,) = [e for e in document["environments"] if e["torch"]]  # beside the venv's base Python, without torch
    assert env["torch"] == {"version": "2.4.0+cpu", "build": "CPU", "path": env["torch"]["path"]}
    assert env["python_version"] == "3.12.9" and env["python_arch"] == "x64" and env["kind"] == "venv"
    assert document["source"]["kind"] == "demo"
    assert document["dependencies"][0]["environment"] == env["python"]
    assert "alice" not in json.dumps(document)


def test_demo_with_libomp140_placed_exits_0(tmp_path, capsys):
    root = build_demo_image(tmp_path / "demo")
    image = ImageBuilder.__new__(ImageBuilder)
    image.root = root
    lib = image.host(DEMO_TORCH_LIB)
    (lib / "libomp140.x86_64.dll").write_bytes((lib / "libiomp5md.dll").read_bytes())
    code = main(["diagnose", "--root", str(root), "--json", "-", "--quiet"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["summary"]["blockers"] == 0
    assert [f["severity"] for f in document["findings"] if f["code"] == "torch-known-bad-build"] == ["warning"]


def test_text_and_html_reports_in_chinese(tmp_path, capsys):
    text_file, html_file = tmp_path / "report.txt", tmp_path / "report.html"
    main(["diagnose", "--demo", "--lang", "zh_CN", "--report", str(html_file), "--quiet"])
    text = capsys.readouterr().out
    assert "DLL 依赖关系" in text and "缺少 libomp140.x86_64.dll：PyTorch 2.4.0+cpu 的安装包漏掉了它" in text
    assert "1 个导致 PyTorch 无法运行的问题" in text and "同一原因的其他表现" in text
    assert "libomp140.x86_64.dll  缺失" in text and "MISSING" not in text  # the tree, in the reader's words
    page = html_file.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'lang="zh-CN"' in page
    assert "<script" not in page and "http://" not in page and "src=" not in page
    assert "alice" not in page and "&lt;user&gt;" in page
    main(["diagnose", "--demo", "--report", str(text_file), "--no-redact", "--quiet"])
    capsys.readouterr()
    report = text_file.read_text(encoding="utf-8")
    assert "DLL Dependencies" in report and r"C:\Users\alice" in report


def test_usage_errors_exit_2_with_one_line(capsys, tmp_path):
    assert main(["diagnose", "--root", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:")


def test_explain_pasted_chinese_error(capsys):
    assert main(["explain", "无法定位程序输入点 omp_get_max_threads 于动态链接库 fbgemm.dll 上。", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "omp_get_max_threads" in out


# -- damaged input and edge cases ---------------------------------------------------------------------------------
def test_nul_characters_in_image_data_do_not_end_the_diagnosis(machine, capsys):
    machine.add_to_path("C:\\Tools\u0000x\\bin")
    machine.set_value(r"HKCU\Software\Python\PythonCore\3.9\InstallPath", "", "REG_SZ", "C:\\Py\u000039")
    code = main(["diagnose", "--root", str(machine.root), "--json", "-", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["summary"]["blockers"] == 0


def test_a_non_openmp_file_named_libomp140_keeps_the_known_bad_build_a_blocker(machine):
    torch(machine, "2.4.0+cpu", imports=("c10.dll", "libomp140.x86_64.dll"))
    machine.write(LIB + r"\libomp140.x86_64.dll", build_pe(dll_name="libomp140.x86_64.dll"))  # no functions
    result = diagnose(machine)
    assert finding(result, "torch-known-bad-build").severity == "blocker"
    assert finding(result, "missing-export").evidence["dll"] == "libomp140.x86_64.dll"


def test_newer_torch_also_searches_the_environments_bin_folder(machine):
    machine.write(VENV + r"\bin\helper.dll", build_pe(dll_name="helper.dll", exports=[Export(1, "c10_function")]))
    torch(machine, "2.9.0+cpu", imports=("c10.dll", "helper.dll"))
    assert "missing-dll" in codes(diagnose(machine))
    machine.write(SITE + r"\torch\__init__.py", "py_root_bin_path = os.path.join(sys.exec_prefix, 'bin')\n")
    result = diagnose(machine)
    assert "missing-dll" not in codes(result)
    graph = next(iter(result.graphs.values()))
    assert next(n for n in graph.nodes.values() if n.name == "helper.dll").resolution.rule == "added-folder"


def test_32bit_python_gets_one_clear_blocker_not_one_per_dll(machine):
    machine.write(VENV + r"\Scripts\python.exe", build_pe(dll=False, machine="x86"))
    blockers = codes(diagnose(machine), "blocker")
    assert "python-32bit" in blockers and "wrong-architecture" not in blockers


def test_windows_own_arm64_dlls_are_not_wrong_architecture(machine):
    machine.write(SYS32 + r"\kernel32.dll", build_pe(machine="arm64", dll_name="kernel32.dll",
                                                     exports=[Export(1, "Sleep")]))
    assert "wrong-architecture" not in codes(diagnose(machine))


def test_a_newer_copy_on_path_does_not_shadow_windows_own(machine):
    machine.write(r"C:\Tools\msvcp140.dll", build_pe(dll_name="msvcp140.dll", file_version=(14, 50, 1, 0),
                                                     exports=[Export(1, "runtime_function")]))
    machine.add_to_path(r"C:\Tools")
    assert "path-shadowing" not in codes(diagnose(machine))


def test_a_record_that_cannot_be_read_leaves_the_diagnosis_incomplete_never_all_clear(machine):
    # a RECORD zero-filled by a crash: one field longer than csv allows; torch's files were not compared
    machine.write(SITE + r"\torch-2.4.1.dist-info\RECORD", "torch/lib/c10.dll,sha256=x,²\n" + "x" * 200_000 + "\n")
    result = diagnose(machine)
    failed = finding(result, "check-failed")
    assert failed.evidence["probe"] == "integrity" and "could not be read" in failed.evidence["error"]
    assert not result.complete and [f.code for f in result.findings].count("check-failed") == 1
    assert failed.variant == "record-unreadable" and "RECORD" in failed.text("en").explanation
    assert "安装记录无法读取" in failed.text("zh_CN").title


def test_the_record_of_the_installed_version_is_used(machine):
    size = machine.host(LIB + r"\c10.dll").stat().st_size
    machine.write(SITE + r"\torch-2.0.0.dist-info\RECORD", "torch/lib/old.dll,sha256=x,1\n")
    machine.write(SITE + r"\torch-2.4.1.dist-info\RECORD", f"torch/lib/c10.dll,sha256=x,{size}\n")
    assert "torch-files-missing" not in codes(diagnose(machine))


def test_path_entries_on_drives_an_image_does_not_hold_are_not_called_dead(machine):
    machine.add_to_path(r"D:\tools\bin")
    assert "path-dead-entry" not in codes(diagnose(machine))


@pytest.mark.parametrize("value, reported", [("TRUE", True), ("1", True), ("FALSE", False), ("0", False)])
def test_kmp_duplicate_lib_ok_only_when_switched_on(machine, value, reported):
    machine.set_variable("user", "KMP_DUPLICATE_LIB_OK", value)
    assert ("unsafe-env-var" in codes(diagnose(machine))) is reported


def test_missing_function_count_is_per_function_not_per_importer(machine):
    shm = build_pe(dll_name="shm.dll", imports=[Import("c10.dll", ("gone", "c10_function"))])
    machine.write(LIB + r"\shm.dll", shm)
    torch(machine, "2.4.1+cpu")
    machine.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[Import("c10.dll", ("gone",))]))
    assert finding(diagnose(machine), "missing-export").evidence["count"] == 1


def test_a_damaged_dll_reached_only_by_delay_load_is_a_warning(machine):
    machine.write(LIB + r"\optional.dll", b"MZ" + bytes(200))
    machine.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import("c10.dll", ("c10_function",)), Import("optional.dll", ("f",), delay=True)]))
    machine.host(LIB + r"\optional.dll").rename(machine.host(SITE + r"\optional.dll"))  # not a root ...
    machine.write(VENV + r"\Library\bin\optional.dll", b"MZ" + bytes(200))  # ... but found in an added folder
    damaged = finding(diagnose(machine), "dll-damaged")
    assert damaged.severity == "warning"


def test_redaction_keeps_names_with_spaces_and_common_account_names_readable():
    from app.report.document import redact

    assert redact(r"C:\Users\John Smith\ComfyUI", ["John Smith"]) == r"C:\Users\<user>\ComfyUI"
    assert redact(r"the user C:\Users\User\x <user>", ["User"]) == r"the user C:\Users\<user>\x <user>"
    assert redact({r"C:\Users\bob\p": "bob, bobby"}, ["bob"]) == {r"C:\Users\<user>\p": "<user>, bobby"}
    # a Chinese name of two characters, in a process's owner and in a folder named after it (no spaces in Chinese)
    assert redact(r"PC\张伟 holds D:\张伟的桌面\ComfyUI, as C:\Users\张伟\x", ["张伟", "al"]) == \
        r"PC\<user> holds D:\<user>的桌面\ComfyUI, as C:\Users\<user>\x"
    assert redact("al and alice", ["al"]) == "al and alice"  # a short Latin name stays: it would garble words


def test_explain_accepts_any_text(capsys):
    assert main(["explain", "²"]) == 0
    assert main(["explain", "126"]) == 0
    assert "file" in capsys.readouterr().out


def test_a_stuck_probe_does_not_keep_the_program_running(machine):
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).resolve().parents[2])!r})
        from app.probes.base import ENVIRONMENT, Probe
        from app.probes.runner import run_diagnosis
        from app.inventory.discovery import discover
        from app.system.offline import OfflineImage
        system = OfflineImage({str(machine.root)!r})
        stuck = Probe("gpu", ENVIRONMENT, lambda ctx: time.sleep(30) or [])
        result = run_diagnosis(system, list(discover(system)), probes=(stuck,), budget_s=0.5)
        print(result.complete)
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False" and time.monotonic() - started < 10, done.stderr


# -- AMD's ways to run PyTorch: ROCm and ZLUDA ----------------------------------------------------------------------
def test_the_rocm_build_missing_amds_hip_runtime_says_it_comes_with_amds_driver(machine):
    """c10_hip.dll imports amdhip64_7.dll, which AMD's graphics driver puts in System32: the missing file is said to
    come with AMD's driver (never the VC++ runtime or NVIDIA's), with AMD's own page in the guided steps."""
    machine.write(LIB + r"\c10_hip.dll", build_pe(dll_name="c10_hip.dll", imports=[
        Import("amdhip64_7.dll", ("hipMalloc",)), Import("rocblas.dll", ("rocblas_create_handle",))]))
    result = diagnose(machine)
    missing = {f.evidence["dll"]: f for f in result.findings if f.code == "missing-dll"}
    assert missing["amdhip64_7.dll"].variant == "amd-driver" and missing["rocblas.dll"].variant == "hip-sdk"
    assert all(f.repairs == ["update-amd-driver"] for f in missing.values())
    text = missing["amdhip64_7.dll"].text("en")
    assert "AMD's graphics driver" in text.title + text.explanation and "NVIDIA's driver" in text.explanation
    from app.repair.guides import GUIDES

    guide = GUIDES["update-amd-driver"].guide(OfflineImage(machine.root), None, result.machine,
                                              list(missing.values()))
    steps = " ".join(step["en"] for step in guide.steps)
    assert "amd.com" in guide.url["en"] and "HIP SDK" in steps and "amdhip64_7.dll, rocblas.dll" in steps
    # once the driver's file is there, only the HIP SDK's is missing
    machine.write(SYS32 + r"\amdhip64_7.dll", build_pe(dll_name="amdhip64_7.dll", exports=[Export(1, "hipMalloc")]))
    result = diagnose(machine)
    assert [f.evidence["dll"] for f in result.findings if f.code == "missing-dll"] == ["rocblas.dll"]


def test_zludas_stand_ins_are_known_by_their_imports_and_no_nvidia_advice_is_given(machine):
    """A CUDA build whose cublas64_11.dll imports AMD's HIP runtime and rocBLAS: ZLUDA. The NVIDIA driver is not
    looked for (no gpu-driver-missing), ZLUDA is named, and a missing rocBLAS goes to AMD's HIP SDK."""
    torch(machine, "2.3.1+cu118", cuda="11.8")
    machine.write(LIB + r"\cublas64_11.dll", build_pe(dll_name="cublas64_11.dll", imports=[
        Import("amdhip64_6.dll", ("hipMalloc",)), Import("rocblas.dll", ("rocblas_create_handle",))],
        exports=[Export(1, "cublasCreate_v2")]))
    machine.write(SYS32 + r"\amdhip64_6.dll", build_pe(dll_name="amdhip64_6.dll", exports=[Export(1, "hipMalloc")]))
    result = diagnose(machine)
    assert "gpu-driver-missing" not in codes(result)
    zluda = finding(result, "zluda-stand-ins")
    assert zluda.evidence["dlls"] == ["cublas64_11.dll"] and zluda.evidence["needs"] == ["amdhip64_6.dll",
                                                                                       "rocblas.dll"]
    assert finding(result, "missing-dll").variant == "hip-sdk"
    # NVIDIA's own cublas64_11.dll (it imports cudart, not AMD's files) is no stand-in: the NVIDIA check stays
    machine.write(LIB + r"\cublas64_11.dll", build_pe(dll_name="cublas64_11.dll", imports=[
        Import("kernel32.dll", ("Sleep",))], exports=[Export(1, "cublasCreate_v2")]))
    result = diagnose(machine)
    assert "zluda-stand-ins" not in codes(result) and "gpu-driver-missing" in codes(result)
