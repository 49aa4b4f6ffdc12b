"""Whose a DLL that does not load is, in the diagnosis: the real ctranslate2 4.8.5 wheel (behind faster-whisper and
WhisperX) beside the real torch 2.4.1 wheel. ctranslate2.dll imports no cuBLAS: it loads the CUDA 12 cuBLAS by name
when a model first runs on an NVIDIA card (its cublas_stub.cc), with a plain LoadLibrary, so pip's copy in
site-packages\\nvidia\\cublas\\bin is found only where that folder is on PATH."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from app.engine.pe import read_pe_stream
from app.engine.versions import matches
from app.inventory.machine import DISPLAY_CLASS_KEY
from app.main import main
from app.resources import known_issues
from tests import realfiles
from tests.helpers.ctranslate2 import CTRANSLATE2, SITE, VENV, image_with_ctranslate2

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

CUBLAS_BIN = SITE + r"\nvidia\cublas\bin"
DISPLAY = DISPLAY_CLASS_KEY + r"\0000"


def with_nvidia_card(image):
    image.set_value(DISPLAY, "DriverDesc", "REG_SZ", "NVIDIA GeForce RTX 4070")
    image.set_value(DISPLAY, "ProviderName", "REG_SZ", "NVIDIA")
    image.set_value(DISPLAY, "DriverVersion", "REG_SZ", "32.0.15.6094")
    image.save()
    return image


def cublas_findings(capsys, image, *extra) -> list[dict]:
    capsys.readouterr()
    main(["diagnose", "--root", str(image.root), "--env", VENV, "--json", "-", "--no-redact", *extra])
    out = capsys.readouterr().out
    document = json.loads(out[out.index("{"):])
    return [f for f in document["findings"] if f["code"] == "missing-dll" and f["evidence"]["dll"] == "cublas64_12.dll"]


def test_the_dll_ctranslate2_4_loads_by_name_is_the_one_its_real_dll_names_and_does_not_import():
    (row,) = [r for r in known_issues()["package_run_time_loads"] if matches("4.8.5", r["versions"])]
    with zipfile.ZipFile(realfiles.download(CTRANSLATE2)) as wheel:
        data = wheel.read("ctranslate2/ctranslate2.dll")
    imports = {i.name.lower() for i in read_pe_stream(io.BytesIO(data), with_exports=False).imports}
    assert row["dll"].encode() in data and row["dll"] not in imports and b"cublas64_11.dll" not in data


def test_without_the_cuda_12_cublas_the_diagnosis_names_nvidia_cublas_cu12_and_where_pip_puts_it(tmp_path, capsys):
    image = image_with_ctranslate2(tmp_path / "img")
    assert cublas_findings(capsys, image) == []  # no NVIDIA card: CTranslate2 runs on the CPU, never asks
    (finding,) = cublas_findings(capsys, with_nvidia_card(image))
    evidence = finding["evidence"]
    assert finding["severity"] == "warning" and finding["variant"] == "package-elsewhere"
    assert (evidence["owner"], evidence["family"], evidence["owner_installed"]) == ("nvidia-cublas-cu12", "cuda-12",
                                                                                    None)
    assert evidence["pin"] == "nvidia-cublas-cu12==12.*" and evidence["install_folder"] == CUBLAS_BIN
    assert evidence["command"] == rf'"{VENV}\Scripts\python.exe" -m pip install "nvidia-cublas-cu12==12.*"'
    assert evidence["needed_by"] == ["ctranslate2 4.8.5"] and finding["repairs"] == []
    assert "PyTorch cannot start" not in finding["explanation"] + finding["title"]
    assert "nvidia-cublas-cu12 (CUDA 12)" in finding["title"] and "not installed" in finding["explanation"]
    assert CUBLAS_BIN in finding["action"] and "PATH" in finding["action"]
    (chinese,) = cublas_findings(capsys, image, "--lang", "zh_CN")
    assert "nvidia-cublas-cu12" in chinese["title"] and "没有安装 nvidia-cublas-cu12" in chinese["explanation"]


def test_with_pips_cublas_folder_on_path_the_diagnosis_offers_to_install_the_package(tmp_path, capsys):
    """The folder that faster-whisper's Windows guides put on PATH, with the package not (or no longer) installed:
    pip's copy would be found, so the package repair is offered."""
    image = with_nvidia_card(image_with_ctranslate2(tmp_path / "img"))
    image.set_variable("user", "PATH", CUBLAS_BIN)
    image.save()
    (finding,) = cublas_findings(capsys, image)
    assert finding["variant"] == "package" and finding["repairs"] == ["install-dll-package"]
    assert "Torch DLL Doctor can do it" in finding["action"]
    image.write(CUBLAS_BIN + r"\cublas64_12.dll", b"MZ")  # once it is there, nothing is left to say
    assert cublas_findings(capsys, image) == []


def test_the_package_repairs_plan_names_the_package_its_release_and_size_checked_by_the_index_hash(tmp_path):
    """Planned from PyPI's own page for nvidia-cublas-cu12: the newest CUDA 12 release with a wheel for this
    Windows and this Python, its size, and pip told to take only that wheel's SHA-256."""
    from app.inventory.environment import inspect_environment
    from app.inventory.machine import read_machine_facts
    from app.probes.runner import run_diagnosis
    from app.repair.actions import action_for
    from app.system.offline import OfflineImage

    class RunsPrograms(OfflineImage):  # pip runs: planned as on a computer whose programs can run
        can_run_programs = True

    image = with_nvidia_card(image_with_ctranslate2(tmp_path / "img"))
    image.set_variable("user", "PATH", CUBLAS_BIN)
    system = RunsPrograms(image.root)
    env = inspect_environment(system, image.host(VENV))
    findings = run_diagnosis(system, [env], machine=read_machine_facts(system)).findings
    plan = action_for("install-dll-package").plan(system, env, None, findings, None)
    (change,) = plan.changes
    release = plan.packages.after["nvidia-cublas-cu12"]
    assert change.kind == "install-package" and change.target == "nvidia-cublas-cu12"
    assert release.startswith("12.") and change.value == f"{release} ({change.size / (1 << 20):.1f} MB)"
    assert change.size > 100 << 20 and len(plan.packages.hashes["nvidia-cublas-cu12"]) == 64
    assert plan.packages.before == {} and plan.packages.index == ("--no-deps",)
    assert "--require-hashes" in plan.notes[0]["en"] and "SHA-256" in plan.notes[0]["zh_CN"]
