"""explain says whose each DLL of a pasted text is, from the DLL index (resources/dll_index.json): the packages that
ship it and their releases, its family, and the one command that brings the right one; a file in another package's
folder is that package's, never PyTorch's; and a text that names no PyTorch is not told about PyTorch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.i18n import LANGUAGES
from app.inventory.dll_index import owners
from app.probes.dll_facts import dll_facts, fact_words, shown_packages
from app.probes.dll_owner import family_name
from app.probes.error_text import classify_error


def _explain(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "explain", *argv], capture_output=True, text=True,
                          encoding="utf-8", timeout=60)


def test_a_cudnn_9_file_is_named_with_its_packages_family_and_command_in_the_json_too():
    text = "Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!"
    document = json.loads(_explain(text, "--json", "-").stdout)
    first = document["dlls"][0]
    assert first["dll"] == "cudnn_ops64_9.dll" and first["family"] == "cudnn-9"
    assert any(row.startswith("nvidia-cudnn-cu12 9.") for row in first["shipped_by"])
    assert first["command"] == 'pip install "nvidia-cudnn-cu12==9.*"'
    assert 'pip install "nvidia-cudnn-cu12==9.*"' in document["owners"] and "cuDNN 9" in document["owners"]


def test_the_cuda_line_the_text_shows_chooses_the_package():
    text = "Could not load library cudnn_ops_infer64_8.dll. Error code 126 (torch 2.0.1+cu117)"
    fact = dll_facts(text, "cudnn_ops_infer64_8.dll", None)[0]
    assert fact.family == "cudnn-8" and fact.command == 'pip install "nvidia-cudnn-cu11==8.*"'


@pytest.mark.parametrize("dll, package", [("Qt5Core.dll", "pyqt5-qt5"), ("mkl_core.2.dll", "mkl"),
                                          ("opencv_videoio_ffmpeg4100_64.dll", "opencv-python")])
def test_a_file_the_index_gives_to_another_package_is_never_pytorchs(dll, package):
    cause = classify_error(f"OSError: [WinError 126] The specified module could not be found. "
                           f"Error loading \"{dll}\" or one of its dependencies.")
    assert cause.owner == package
    assert f"for {package}" in cause.text("en")["explanation"] and "PyTorch" not in cause.text("en")["explanation"]


def test_a_file_in_torchvisions_folder_is_torchvisions():
    cause = classify_error(r'OSError: [WinError 126] Error loading "C:\p\Lib\site-packages\torchvision\image.pyd" '
                           r'or one of its dependencies.')
    assert cause.owner == "torchvision"


def test_the_packages_the_wheel_names_and_records_show():
    text = r"Processing c:\dl\torch-2.4.0+cu121-cp311-cp311-win_amd64.whl ... site-packages\numpy-2.1.0.dist-info"
    assert shown_packages(text) == ["torch 2.4.0+cu121", "numpy 2.1.0"]
    assert "torch 2.4.0+cu121" in fact_words([], shown_packages(text), "en")


def test_a_file_no_package_on_pypi_ships_says_where_it_comes_from_with_its_source():
    fact = dll_facts("zlibwapi.dll is missing", "zlibwapi.dll", None)[0]
    words = fact_words([fact], [], "en")
    assert fact.command is None and fact.origin and "download.pytorch.org" in words and "@" in words


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_text_about_something_else_is_not_told_about_pytorch(lang):
    for said in (_explain("The printer is out of paper", "--lang", lang).stdout,
                 _explain("0x8007007E", "--lang", lang).stdout):
        assert "PyTorch" not in said and "ComfyUI" not in said, said


def _first_paragraph(text: str, lang: str = "en") -> str:
    said = classify_error(text).text(lang)
    return said["title"] + " " + said["explanation"]


def test_a_tensorrt_provider_that_failed_is_named_never_called_the_cuda_provider():
    text = (r'[E:onnxruntime:Default, provider_bridge_ort.cc:1992 onnxruntime::TryGetProviderInfo_TensorRT] '
            r'LoadLibrary failed with error 126 "" when trying to load '
            r'"C:\venv\Lib\site-packages\onnxruntime\capi\onnxruntime_providers_tensorrt.dll"')
    for lang in LANGUAGES:
        first = _first_paragraph(text, lang)
        assert "onnxruntime_providers_tensorrt.dll" in first and "providers_cuda" not in first
        assert "CUDA provider" not in first and "CUDA 提供程序" not in first


@pytest.mark.parametrize("text, named, other", [
    ("Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path! (faster_whisper)",
     "cudnn_ops_infer64_8.dll", ("cuDNN 9", "CUDA 12")),
    (r'OSError: [WinError 126] Error loading "C:\p\Lib\site-packages\torch\lib\cudnn_cnn_infer64_8.dll" or one of '
     r"its dependencies.", "cudnn_cnn_infer64_8.dll", ("cuDNN 9", "_9.dll")),
    ("Could not load library cudnn_ops64_9.dll. Error code 126", "cudnn_ops64_9.dll", ("cuDNN 8", "zlibwapi")),
])
def test_a_text_about_one_cudnn_major_is_told_about_that_one_only(text, named, other):
    for lang in LANGUAGES:
        first = _first_paragraph(text, lang)
        assert named in first and not any(word in first for word in other), first


@pytest.mark.parametrize("code, meaning, never", [
    ("193", ("different kind of system", "damaged"), ("not found", "could not find", "missing")),
    ("1114", ("start-up code",), ("not found",)),
    ("126", ("could not find",), ("refused",)),
])
def test_a_bare_code_is_said_by_its_meaning_without_pytorch(code, meaning, never):
    said = classify_error(code).text("en")
    words = said["title"] + " " + said["explanation"] + " " + said["action"]
    assert all(word in words for word in meaning) and not any(word in words for word in never), words
    assert "PyTorch" not in words and "ComfyUI" not in words


_DATA = Path(__file__).parent.parent / "data"
CORPUS = [entry for name in ("pasted_errors.json", "pasted_errors_2025.json")
          for entry in json.loads((_DATA / name).read_text(encoding="utf-8")) if entry.get("dll")]
KNOWN = [entry for entry in CORPUS if owners(entry["dll"]).known]


def test_the_index_knows_the_dlls_of_most_of_the_corpus():
    assert len(KNOWN) >= len(CORPUS) // 2, (len(KNOWN), len(CORPUS))


@pytest.mark.parametrize("entry", KNOWN, ids=[entry["source"][-40:] for entry in KNOWN])
def test_explain_names_the_owner_and_family_of_every_dll_of_the_corpus_the_index_knows(entry):
    cause = classify_error(entry["text"])
    facts = dll_facts(entry["text"], cause.dll, cause.dll_path)
    fact = next(fact for fact in facts if fact.dll.lower() == entry["dll"].lower())
    found = owners(entry["dll"])
    for lang in LANGUAGES:
        words = fact_words(facts, [], lang)
        assert fact.dll in words
        assert any(row.package in words or (row.build and row.build in words) for row in found.owners), words
        if found.family:
            assert family_name(found.family) in words, words
