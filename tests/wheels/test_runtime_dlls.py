"""The VC++ runtime's DLLs, all of them, each counted as the runtime: one problem, install-vc-runtime.

The list (resources/known_issues.json "vc_runtime_dlls") is checked against the real msvc-runtime wheel's DLLs;
torch 2.14's torch_cpu.dll imports VCRUNTIME140_THREADS.dll (C11 threads, 14.38 and later), so on a 14.29
runtime the missing DLL and "the runtime is too old" are one cause, not two blocking problems."""

from __future__ import annotations

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Export, Import, build_pe
from app.engine.pe import read_pe
from app.inventory.discovery import discover
from app.probes.dependencies import repairs_for
from app.probes.runner import run_diagnosis
from app.resources import known_issues
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import PYTHON_HOME as PY
from tests.helpers.images import SITE, TORCH_LIB, VENV, build_torch_image, real
from tests.helpers.images import TORCH_LIB as LIB

SYS32 = r"C:\Windows\System32"
OLD_RUNTIME = (14, 29, 30133, 0)  # Visual Studio 2019's last runtime: no C11 threads DLL
THREADS = "VCRUNTIME140_THREADS.dll"


def diagnose(image):
    system = OfflineImage(image.root)
    return run_diagnosis(system, list(discover(system)))


@pytest.mark.wheels
def test_the_list_is_every_dll_of_the_current_msvc_runtime_wheel():
    shipped = {p.name.lower() for p in real(realfiles.msvc_runtime_dlls)}
    listed = known_issues()["vc_runtime_dlls"]
    assert sorted(listed) == sorted(shipped)  # the same names, each once, lower case as the probes compare them
    assert {"vcruntime140_threads.dll", "msvcp140_atomic_wait.dll", "msvcp140_codecvt_ids.dll"} <= set(listed)


def test_every_runtime_dll_is_repaired_by_installing_the_runtime():
    for name in known_issues()["vc_runtime_dlls"]:
        assert repairs_for(name.upper()) == ["install-vc-runtime"], name


@pytest.mark.wheels
@pytest.mark.parametrize("torch", [realfiles.TORCH_240, realfiles.TORCH_241])
def test_torch_24x_on_the_current_runtime_has_no_runtime_blocker(tmp_path, torch):
    image = build_torch_image(tmp_path / "image", torch, libomp=torch == realfiles.TORCH_240)
    result = diagnose(image)
    assert [f.code for f in result.findings if f.severity == "blocker"] == []
    # every runtime DLL torch\lib imports is one of the list, and found in System32
    imported = {d.name.lower() for dll in sorted(image.host(TORCH_LIB).glob("*.dll")) for d in read_pe(dll).imports}
    runtime = imported & set(known_issues()["vc_runtime_dlls"])
    assert {"msvcp140.dll", "vcruntime140.dll", "vcruntime140_1.dll"} <= runtime
    assert all(image.host(SYS32 + "\\" + name).exists() for name in runtime)


def old_runtime_machine(root, torch_version: str, runtime_imports: tuple[Import, ...]) -> ImageBuilder:
    """A 14.29 runtime in System32 (registered), and a torch whose torch_cpu.dll imports `runtime_imports`."""
    image = ImageBuilder(root)
    for name in ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"):
        image.write(f"{SYS32}\\{name}", build_pe(dll_name=name, file_version=OLD_RUNTIME,
                                                 exports=[Export(1, "runtime_function")]))
    image.vc_runtime("x64", "14.29.30133")
    image.write(PY + r"\python.exe", build_pe(dll=False))
    image.write(PY + r"\python312.dll", build_pe(dll_name="python312.dll", file_version=(3, 12, 4150, 1013)))
    image.venv(VENV, PY, "3.12.4", python_exe=build_pe(dll=False))
    image.torch_version_file(SITE, torch_version)
    image.write(LIB + r"\c10.dll", build_pe(dll_name="c10.dll", exports=[Export(1, "c10_function")],
                                            imports=[Import("msvcp140.dll", ("runtime_function",))]))
    image.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import("c10.dll", ("c10_function",)), *runtime_imports, Import("kernel32.dll", ("Sleep",))]))
    return image


@pytest.mark.wheels
def test_torch_214_on_a_1429_runtime_is_one_problem_the_runtime(tmp_path):
    # the functions torch_cpu.dll takes from the real C11 threads DLL (msvc-runtime 14.51)
    threads = next(p for p in real(realfiles.msvc_runtime_dlls) if p.name.lower() == THREADS.lower())
    functions = tuple(sorted(n for n in read_pe(threads).exports.names if n.startswith(("cnd_", "mtx_", "thrd_"))))
    assert {"cnd_wait", "mtx_lock", "thrd_create"} <= set(functions)
    image = old_runtime_machine(tmp_path / "img", "2.14.1+cpu", (Import(THREADS, functions),))
    result = diagnose(image)
    blocking = [p for p in result.problems if p.severity == "blocker"]
    assert len(blocking) == 1, [[f.code for f in p.findings] for p in blocking]
    (problem,) = blocking
    assert problem.lead.code == "vc-runtime-too-old" and problem.lead.evidence["found"].startswith("14.29")
    missing = [f for f in problem.evidence if f.code == "missing-dll"]
    assert [f.evidence["dll"].lower() for f in missing] == [THREADS.lower()]
    assert problem.repairs == ["install-vc-runtime"]
    assert all(f.repairs == ["install-vc-runtime"] for f in problem.findings)


@pytest.mark.parametrize("dll", ["msvcp140_atomic_wait.dll", "msvcp140_codecvt_ids.dll", THREADS])
def test_a_newer_runtime_dll_missing_under_an_older_torch_is_the_runtime_too(tmp_path, dll):
    """torch 2.4 has no version rule for the runtime: the missing DLL alone still names the runtime's repair."""
    image = old_runtime_machine(tmp_path / "img", "2.4.1+cpu", (Import(dll, ("some_function",)),))
    problems = [p for p in diagnose(image).problems if p.severity == "blocker"]
    assert [(p.lead.code, p.lead.evidence["dll"].lower(), p.repairs) for p in problems] == [
        ("missing-dll", dll.lower(), ["install-vc-runtime"])]
