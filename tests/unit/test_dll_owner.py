"""Whose a DLL that does not load is, and its family against the environment's (app/probes/dll_owner.py), on a
copied drive holding the real torch 2.4.0 torch\\lib: a CUDA 12 library asked for in a CUDA 13 environment is said
as a clash of families and never offered; Intel's SYCL runtime, which pip puts in a folder torch searches, is offered
as the package that brings it; ZLUDA's nvcuda.dll is ZLUDA's, and no NVIDIA driver advice is given."""

from __future__ import annotations

import pytest

from app.demo.pe_writer import Export, Import, build_pe
from app.inventory.environment import inspect_environment
from app.inventory.machine import read_machine_facts
from app.probes import dependencies, gpu
from app.probes.dll_owner import clash, environment_families
from app.probes.runner import run_diagnosis
from app.system.offline import OfflineImage
from tests.helpers.images import SITE, TORCH_LIB, VENV

pytestmark = pytest.mark.usefixtures("data_dir")


def metadata(image, name: str, version: str) -> None:
    image.write(rf"{SITE}\{name.replace('-', '_')}-{version}.dist-info\METADATA",
                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def diagnose(image, *probes):
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    return env, run_diagnosis(system, [env], probes=probes or (dependencies.PROBE,)).findings


def about(findings, code: str, dll: str):
    return [f for f in findings if f.code == code and f.evidence.get("dll") == dll]


def test_a_cuda_12_library_in_a_cuda_13_environment_is_a_clash_of_families_and_never_offered(torch_image):
    image = torch_image()
    image.torch_version_file(SITE, "2.10.0+cu130", cuda="13.0")
    metadata(image, "nvidia-cublas", "13.1.0.3")
    image.write(TORCH_LIB + r"\xformers_ops.dll", build_pe(imports=[Import("cublas64_12.dll", ("cublasCreate_v2",))]))
    env, findings = diagnose(image)
    assert environment_families(env) == {"cuda-13"}
    (finding,) = about(findings, "missing-dll", "cublas64_12.dll")
    assert finding.variant == "family-clash" and finding.repairs == []
    assert (finding.evidence["owner"], finding.evidence["family"], finding.evidence["family_clash"]) == \
        ("nvidia-cublas-cu12", "cuda-12", "cuda-13")
    en, zh = finding.text("en"), finding.text("zh_CN")
    assert en.title == "cublas64_12.dll is a CUDA 12 library; this environment is CUDA 13"
    assert "CUDA 12" in zh.title and "CUDA 13" in zh.title and "PyTorch" not in en.title


@pytest.mark.parametrize(("family", "families", "expected"), [
    ("cuda-12", {"cuda-13"}, "cuda-13"), ("cuda-12", {"cuda-12", "cudnn-9"}, None), ("cuda-12", set(), None),
    ("cudnn-8", {"cuda-12", "cudnn-9"}, "cudnn-9"), ("openmp", {"cuda-13"}, None)])
def test_families_clash_only_within_one_kind(family, families, expected):
    assert clash(family, families) == expected


def test_intels_sycl_runtime_goes_where_torch_searches_so_the_package_is_offered(torch_image):
    image = torch_image()
    image.write(TORCH_LIB + r"\c10_xpu.dll", build_pe(imports=[Import("sycl8.dll", ("sycl_init",))]))
    _, findings = diagnose(image)
    (finding,) = about(findings, "missing-dll", "sycl8.dll")
    assert finding.variant == "package" and finding.repairs == ["install-dll-package"]
    assert (finding.evidence["owner"], finding.evidence["family"]) == ("intel-sycl-rt", "xpu-8")
    assert finding.evidence["install_folder"] == VENV + r"\Library\bin"
    assert "PyTorch cannot start without it" in finding.text("en").explanation


def test_zludas_nvcuda_is_zludas_never_nvidias_driver(torch_image):
    image = torch_image()
    image.torch_version_file(SITE, "2.4.0+cu118", cuda="11.8")
    nvrtc = build_pe(imports=[Import("nvcuda.dll", ("cuInit", "cuLaunchKernel"))])
    image.write(TORCH_LIB + r"\caffe2_nvrtc.dll", nvrtc)
    zluda = r"C:\Users\alice\ZLUDA\.zluda"
    image.write(zluda + r"\nvcuda.dll", build_pe(exports=[Export(1, "cuInit")], dll_name="nvcuda.dll"))
    image.add_to_path(zluda)
    _, findings = diagnose(image, dependencies.PROBE, gpu.PROBE)
    (finding,) = about(findings, "missing-export", "nvcuda.dll")
    assert finding.variant == "zluda" and finding.evidence["family"] == "zluda"
    assert "ZLUDA" in finding.text("en").title and "ZLUDA" in finding.text("zh_CN").title
    assert "NVIDIA's driver is not what is missing" in finding.text("en").explanation
    assert not [f for f in findings if f.code.startswith("gpu-driver")]
    assert read_machine_facts(OfflineImage(image.root)).nvidia_driver is None
