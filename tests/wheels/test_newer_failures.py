"""The failures of 2025-26 the files show: an RTX 50-series card (its name where Windows records it) beside a CUDA
build older than cu128, and NumPy 2 beside a torch built against NumPy 1 (the real torch 2.2.2 wheel and the real
numpy 2.1.3 wheel). Each is a finding with its evidence and guided steps, in both languages."""

from __future__ import annotations

import json

import pytest

from app.demo.image_builder import ImageBuilder
from app.inventory.machine import DISPLAY_CLASS_KEY
from app.main import main
from tests import realfiles
from tests.helpers.images import pip_install, python_at, real, torch_core, windows_drive

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\ComfyUI\venv"
SITE = VENV + r"\Lib\site-packages"




def drive(root, torch: str) -> ImageBuilder:
    image = windows_drive(root)
    python_at(image, PYTHON)
    image.venv(VENV, PYTHON, "3.12.9", python_exe=(real(realfiles.windows_python) / "python.exe").read_bytes())
    pip_install(image, torch, SITE, keep=torch_core)
    return image


def diagnose(image, capsys, *extra) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), "--env", VENV, "--json", "-", "--no-redact", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_an_rtx_50_card_beside_a_build_older_than_cu128_is_a_blocker_with_its_command(tmp_path, capsys):
    """PyPI's Windows wheels are CPU builds: the real torch 2.4.1 files, with version.py saying cu124 as the CUDA
    wheel's does; the card's name as Windows records it (the display class's DriverDesc)."""
    image = drive(tmp_path / "img", realfiles.TORCH_241)
    image.torch_version_file(SITE, "2.4.1+cu124", cuda="12.4")
    adapter = DISPLAY_CLASS_KEY + r"\0000"
    image.set_value(adapter, "DriverDesc", "REG_SZ", "NVIDIA GeForce RTX 5070 Ti")
    image.set_value(adapter, "ProviderName", "REG_SZ", "NVIDIA")
    image.set_value(adapter, "DriverVersion", "REG_SZ", "32.0.15.7283")
    code, report = diagnose(image, capsys)
    (found,) = [f for f in report["findings"] if f["code"] == "gpu-too-new"]
    assert code == 1 and found["severity"] == "blocker" and found["repairs"] == ["install-torch-for-gpu"]
    assert found["evidence"]["gpu"] == "NVIDIA GeForce RTX 5070 Ti" and found["evidence"]["needed"] == "12.8"
    capsys.readouterr()
    main(["repair", "--root", str(image.root), "--env", VENV, "--action", "install-torch-for-gpu"])
    steps = capsys.readouterr().out
    assert "--index-url https://download.pytorch.org/whl/cu128" in steps
    _, chinese = diagnose(image, capsys, "--lang", "zh_CN")
    assert any("显卡" in f["title"] for f in chinese["findings"] if f["code"] == "gpu-too-new")
    # a card of an older generation: nothing said
    image.set_value(adapter, "DriverDesc", "REG_SZ", "NVIDIA GeForce RTX 4090")
    _, report = diagnose(image, capsys)
    assert not [f for f in report["findings"] if f["code"] == "gpu-too-new"]


def test_numpy_2_beside_a_torch_made_for_numpy_1_is_said_with_its_way_back(tmp_path, capsys):
    image = drive(tmp_path / "img", "torch==2.2.2")
    pip_install(image, "numpy==2.1.3", SITE, keep=lambda name: name.startswith("numpy-"))
    code, report = diagnose(image, capsys)
    (found,) = [f for f in report["findings"] if f["code"] == "numpy-2-too-new"]
    assert found["evidence"]["numpy"] == "2.1.3" and found["evidence"]["torch_made_for_numpy_1"] is True
    assert found["repairs"] == ["install-numpy-1"] and "NumPy 1" in found["title"]
    capsys.readouterr()
    main(["repair", "--root", str(image.root), "--env", VENV, "--action", "install-numpy-1"])
    assert 'pip install "numpy<2"' in capsys.readouterr().out
    # torch 2.4.1 is made for NumPy 2: nothing said
    image = drive(tmp_path / "img2", realfiles.TORCH_241)
    pip_install(image, "numpy==2.1.3", SITE, keep=lambda name: name.startswith("numpy-"))
    _, report = diagnose(image, capsys)
    assert not [f for f in report["findings"] if f["code"] == "numpy-2-too-new"]


def test_bitsandbytes_without_the_gpu_library_for_torchs_cuda_is_said(tmp_path, capsys):
    """The real bitsandbytes 0.45.0 wheel brings GPU libraries up to CUDA 12.6: beside a cu128 torch (the real
    torch 2.4.1 files, version.py saying cu128 as that wheel's does) it has none to load."""
    image = drive(tmp_path / "img", realfiles.TORCH_241)
    image.torch_version_file(SITE, "2.4.1+cu128", cuda="12.8")
    pip_install(image, "bitsandbytes==0.45.0", SITE,
                keep=lambda name: name.startswith("bitsandbytes-") or name.endswith(".dll"))
    code, report = diagnose(image, capsys)
    (found,) = [f for f in report["findings"] if f["code"] == "bitsandbytes-no-gpu-library"]
    assert found["evidence"]["wanted"] == "libbitsandbytes_cuda128.dll" and found["evidence"]["version"] == "0.45.0"
    assert "libbitsandbytes_cuda126.dll" in found["evidence"]["libraries"]
    assert found["repairs"] == ["upgrade-bitsandbytes"]
    capsys.readouterr()
    main(["repair", "--root", str(image.root), "--env", VENV, "--action", "upgrade-bitsandbytes"])
    assert "pip install --upgrade bitsandbytes" in capsys.readouterr().out
    image.torch_version_file(SITE, "2.4.1+cu126", cuda="12.6")  # a CUDA it has a library for: nothing said
    _, report = diagnose(image, capsys)
    assert not [f for f in report["findings"] if f["code"] == "bitsandbytes-no-gpu-library"]
