"""Who ships a DLL (app/inventory/dll_index.py) and which runtime it belongs to (app/engine/dll_family.py): the
shipped index answers for the wheels it was made from, a damaged or missing one says "not known", and it is read
only when asked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app.engine.dll_family import dll_family
from app.inventory.dll_index import INDEX_NAME, owners
from app.resources import resources_folder


@pytest.mark.parametrize(("name", "package", "family"), [
    ("cublas64_12.dll", "", "cuda-12"),
    ("cudart64_110.dll", "", "cuda-11"),  # CUDA 11.0's runtime
    ("nvrtc64_112_0.dll", "", "cuda-11"),
    ("nvJitLink_120_0.dll", "", "cuda-12"),
    ("cufft64_11.dll", "nvidia-cufft-cu12", "cuda-12"),  # cuFFT's own 11 is not the CUDA major
    ("cufft64_11.dll", "", "cuda"),
    ("cudnn64_8.dll", "", "cudnn-8"),
    ("cudnn_ops64_9.dll", "", "cudnn-9"),
    ("CUDNN_OPS_INFER64_8.DLL", "", "cudnn-8"),
    ("amdhip64_6.dll", "", "rocm-6"),
    ("c10_hip.dll", "", "rocm"),
    ("sycl8.dll", "", "xpu-8"),
    ("ze_loader.dll", "", "xpu"),
    ("c10_xpu.dll", "", "xpu"),
    ("DirectML.dll", "", "directml"),
    ("avcodec-61.dll", "", "ffmpeg-7"),
    ("avutil-59-0123456789abcdef0123456789abcdef.dll", "", "ffmpeg-7"),  # delvewheel's copy, as av ships it
    ("swresample-5.dll", "", "ffmpeg"),
    ("avcodec-63.dll", "", "ffmpeg"),  # past FFmpeg 8: the release it comes with is not known here
    ("libiomp5md.dll", "", "openmp"),
    ("libomp140.x86_64.dll", "", "openmp"),
    ("vcomp140.dll", "", "openmp"),
    ("some_helper.dll", "nvidia-cuda-runtime-cu12", "cuda-12"),
    ("kernel32.dll", "", None),
    ("Qt6Core.dll", "pyqt6-qt6", None),
])
def test_the_family_comes_from_the_name_or_the_package(name, package, family):
    assert dll_family(name, package) == family


def test_the_shipped_index_names_who_ships_a_dll():
    found = owners(r"C:\env\Lib\site-packages\ctranslate2\CUDNN64_9.DLL")
    assert found.known and found.dll == "cudnn64_9.dll" and found.family == "cudnn-9" and found.made
    by_package = {o.package: o for o in found.owners if o.source == "pypi"}
    assert {"nvidia-cudnn-cu12", "ctranslate2"} <= set(by_package)
    assert by_package["nvidia-cudnn-cu12"].paths == ("nvidia/cudnn/bin/cudnn64_9.dll",)
    assert by_package["ctranslate2"].versions[0][0].startswith("4.")
    cited = [o for o in owners("cublas64_12.dll").owners if o.source == "cited"]  # torch's CUDA builds, by a pattern
    assert cited and cited[0].package == "torch" and "copy.bat@" in cited[0].citation
    assert owners("directml.dll").family == "directml"


def test_a_dll_nobody_ships_is_not_known():
    found = owners("no_such_library_anywhere.dll")
    assert not found.known and found.owners == () and found.family is None


@pytest.mark.parametrize("content", [
    b"", b"{\"made\": \"2026-01-01\", \"dlls\": {", b"\xff\xfe not json", b"[]", b"{\"made\": 1}",
    b"{\"made\": \"x\", \"dlls\": [], \"patterns\": []}",
    b"{\"made\": \"x\", \"dlls\": {\"cudnn64_9.dll\": {\"owners\": [{\"package\": 1}]}}, \"patterns\": []}",
    b"{\"made\": \"x\", \"dlls\": {}, \"patterns\": [{\"patterns\": [3]}]}",
])
def test_a_damaged_index_says_owners_not_known(tmp_path, content):
    damaged = tmp_path / INDEX_NAME
    damaged.write_bytes(content)
    found = owners("cudnn64_9.dll", damaged)
    assert not found.known and found.owners == () and found.family == "cudnn-9"


def test_a_missing_index_says_owners_not_known(tmp_path):
    assert not owners("cublas64_12.dll", tmp_path / INDEX_NAME).known


def test_the_index_is_read_only_when_asked_and_quickly():
    """Importing the loader reads nothing; the first question reads the file and decodes its own row in about 5 ms
    (10 ms allowed here; the assertion is looser, as tests share the machine)."""
    code = ("import time, app.inventory.dll_index as m; assert m._index.cache_info().currsize == 0; "
            "t = time.perf_counter(); m.owners('cudnn64_9.dll'); print(time.perf_counter() - t)")
    took = min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                      .stdout) for _ in range(3))
    assert took < 0.05, f"{took * 1000:.1f} ms"
    size = (resources_folder() / INDEX_NAME).stat().st_size
    assert size < 1 << 20
    assert json.loads((resources_folder() / INDEX_NAME).read_bytes())["wheels"] > 500


def test_a_question_decodes_only_its_own_row(tmp_path):
    """The index is read whole but decoded a row at a time (the whole file took 10-18 ms to decode, more than
    explain's start allows): a row damaged elsewhere leaves the others known."""
    index = tmp_path / INDEX_NAME
    index.write_text('{"dlls":{"cudnn64_9.dll":{"owners":[{"package":"nvidia-cudnn-cu12","paths":["nvidia/cudnn/'
                     'bin/cudnn64_9.dll"],"source":"pypi","versions":[["9.0.0","9.1.0"]]}]},"other.dll":{"owners":'
                     '[{"package": NOT JSON}]}},"made":"2026-01-01","patterns":[]}', encoding="utf-8")
    found = owners("cudnn64_9.dll", index)
    assert found.known and found.owners[0].package == "nvidia-cudnn-cu12" and found.made == "2026-01-01"
    assert not owners("other.dll", index).known
