"""The check that a file may be placed in torch\\lib as libomp140.x86_64.dll (repair `place-libomp140`).

Against the real torch 2.4.0 wheel's torch\\lib (its fbgemm.dll and torch_cpu.dll import libomp140 by number),
its real libiomp5md.dll / libiompstubs5md.dll, Microsoft's real runtime DLLs, and DLLs written by pe_writer."""

from __future__ import annotations

import json
import shutil

import pytest

from app.demo.pe_writer import Export, Import, write_pe
from app.repair.openmp_candidate import (
    CODES,
    LIBOMP140_NAMES,
    MISSING_FUNCTION,
    NOT_A_DLL,
    STUB_RUNTIME,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    WRONG_FUNCTION,
    FunctionGap,
    Refusal,
    check_candidate,
    needed_functions,
    refusal_text,
)
from app.resources import resources_folder
from tests import realfiles
from tests.helpers.images import real

BOTH = ["fbgemm.dll", "torch_cpu.dll"]
CPU_ONLY = ["torch_cpu.dll"]
FIVE = dict(LIBOMP140_NAMES)


@pytest.fixture(scope="module")
def torch_lib():
    return real(realfiles.torch_lib, realfiles.TORCH_240)


def runtime(path, names=FIVE, *, machine="x64", dll_name="libomp.dll", extra=(), **kwargs):
    """A DLL exporting `names` ({number: name or None}) plus named extras at numbers from 1000 up."""
    exports = [Export(n, name) for n, name in names.items()]
    exports += [Export(1000 + i, name) for i, name in enumerate(extra)]
    return write_pe(path, machine=machine, dll_name=dll_name, exports=exports, **kwargs)


def codes(check):
    return [r.code for r in check.reasons]


# --- what torch\lib asks for ------------------------------------------------------------------------------

@pytest.mark.wheels
def test_needed_functions_of_the_real_torch_240_lib(torch_lib):
    assert needed_functions(torch_lib) == {703: BOTH, 706: BOTH, 707: BOTH, 710: CPU_ONLY, 717: CPU_ONLY}


@pytest.mark.wheels
def test_real_torch_241_lib_needs_nothing_from_libomp140():
    assert needed_functions(real(realfiles.torch_lib, realfiles.TORCH_241)) == {}


def test_needed_functions_matches_the_dll_name_in_any_case_and_reads_names_and_delay_loads(tmp_path):
    write_pe(tmp_path / "a.dll", imports=[Import("LIBOMP140.X86_64.DLL", (703, "omp_get_wtime"))])
    write_pe(tmp_path / "B.DLL", imports=[Import("libomp140.x86_64.dll", (703,), delay=True)])
    write_pe(tmp_path / "c.dll", imports=[Import("libomp.dll", (999,))])  # another DLL: not counted
    (tmp_path / "notes.dll").write_text("not a DLL")  # unreadable ones are skipped
    assert needed_functions(tmp_path) == {703: ["a.dll", "B.DLL"], "omp_get_wtime": ["a.dll"]}


# --- the real runtimes --------------------------------------------------------------------------------------

@pytest.mark.wheels
def test_real_intel_runtime_passes_against_real_torch_240(torch_lib):
    check = check_candidate(torch_lib / "libiomp5md.dll", torch_lib)
    assert check.ok and check.reasons == []
    assert set(check.needed) == {703, 706, 707, 710, 717}
    assert check.forwarded == {}


@pytest.mark.wheels
def test_real_stub_is_refused(torch_lib):
    check = check_candidate(torch_lib / "libiompstubs5md.dll", torch_lib)
    assert not check.ok and codes(check) == [STUB_RUNTIME]  # it has all five numbers: only the stub mark refuses
    assert check.reasons[0].values["internal_name"] == "libiompstubs5md.dll"


@pytest.mark.wheels
@pytest.mark.parametrize("name", ["libiomp5md.dll", "libomp140.x86_64.dll"])
def test_real_stub_is_refused_under_another_name(torch_lib, tmp_path, name):
    renamed = shutil.copyfile(torch_lib / "libiompstubs5md.dll", tmp_path / name)
    check = check_candidate(renamed, torch_lib)
    assert codes(check) == [STUB_RUNTIME]
    assert "libiompstubs5md.dll" in refusal_text(check.reasons[0], "en")


@pytest.mark.wheels
def test_real_microsoft_dlls_are_refused(torch_lib):
    dlls = {p.name: p for p in real(realfiles.msvc_runtime_dlls)}
    # msvcp140.dll has functions at 703...717, but other ones: C++ library functions, not OpenMP's.
    check = check_candidate(dlls["msvcp140.dll"], torch_lib)
    assert codes(check) == [WRONG_FUNCTION]
    assert [g.wanted for g in check.reasons[0].functions] == [703, 706, 707, 710, 717]
    # vcomp140.dll is Microsoft's older OpenMP: omp_get_max_threads by name, but not under number 703.
    check = check_candidate(dlls["vcomp140.dll"], torch_lib)
    assert codes(check) == [MISSING_FUNCTION]  # and not taken for a stub
    assert [g.wanted for g in check.reasons[0].functions] == [703, 706, 707, 710, 717]


# --- written DLLs against the real torch 2.4.0 lib ----------------------------------------------------------

@pytest.mark.wheels
def test_written_runtime_with_the_five_functions_passes(torch_lib, tmp_path):
    assert check_candidate(runtime(tmp_path / "libomp.dll"), torch_lib).ok


@pytest.mark.wheels
def test_x86_dll_is_refused_as_wrong_architecture(torch_lib, tmp_path):
    check = check_candidate(runtime(tmp_path / "libomp.dll", machine="x86"), torch_lib)
    assert codes(check) == [WRONG_ARCHITECTURE]
    assert check.reasons[0].values["cpu"] == "x86"
    assert "x86" in refusal_text(check.reasons[0], "en") and "x86" in refusal_text(check.reasons[0], "zh_CN")


@pytest.mark.wheels
def test_arm64_dll_is_refused_as_wrong_architecture(torch_lib, tmp_path):
    assert codes(check_candidate(runtime(tmp_path / "libomp.dll", machine="arm64"), torch_lib)) == [WRONG_ARCHITECTURE]


@pytest.mark.wheels
def test_missing_717_is_refused_and_named(torch_lib, tmp_path):
    four = {n: name for n, name in FIVE.items() if n != 717}
    check = check_candidate(runtime(tmp_path / "libomp.dll", four), torch_lib)
    assert codes(check) == [MISSING_FUNCTION]
    assert check.reasons[0].functions == (FunctionGap(717, "omp_set_num_threads", None, ("torch_cpu.dll",)),)
    assert "function number 717 (omp_set_num_threads)" in refusal_text(check.reasons[0], "en")
    assert "第 717 号函数（omp_set_num_threads）" in refusal_text(check.reasons[0], "zh_CN")


@pytest.mark.wheels
def test_functions_in_another_order_are_refused(torch_lib, tmp_path):
    swapped = {**FIVE, 703: "omp_get_num_threads", 706: "omp_get_max_threads"}
    check = check_candidate(runtime(tmp_path / "libomp.dll", swapped), torch_lib)
    assert codes(check) == [WRONG_FUNCTION]
    assert check.reasons[0].functions == (
        FunctionGap(703, "omp_get_max_threads", "omp_get_num_threads", tuple(BOTH)),
        FunctionGap(706, "omp_get_num_threads", "omp_get_max_threads", tuple(BOTH)),
    )
    assert ("function number 703 should be omp_get_max_threads but is omp_get_num_threads"
            in refusal_text(check.reasons[0], "en"))


@pytest.mark.wheels
def test_a_function_without_a_name_at_a_needed_number_is_refused(torch_lib, tmp_path):
    check = check_candidate(runtime(tmp_path / "libomp.dll", {**FIVE, 710: None}), torch_lib)
    assert codes(check) == [WRONG_FUNCTION]
    assert check.reasons[0].functions == (FunctionGap(710, "omp_in_parallel", None, tuple(CPU_ONLY)),)
    assert "has no name" in refusal_text(check.reasons[0], "en")


@pytest.mark.wheels
def test_stub_marks_each_refuse_on_their_own(torch_lib, tmp_path):
    # The export table's own name, even with the parallel entry point present.
    named = runtime(tmp_path / "a.dll", dll_name="libiompstubs5md.dll", extra=("__kmpc_fork_call",))
    assert codes(check_candidate(named, torch_lib)) == [STUB_RUNTIME]
    # The Intel/LLVM user API without the parallel entry point, under the real runtime's name.
    hollow = runtime(tmp_path / "b.dll", dll_name="libiomp5md.dll", extra=("kmp_set_blocktime", "kmpc_malloc"))
    assert codes(check_candidate(hollow, torch_lib)) == [STUB_RUNTIME]
    # The same with the parallel entry point is a runtime.
    full = runtime(tmp_path / "c.dll", dll_name="libiomp5md.dll",
                   extra=("kmp_set_blocktime", "kmpc_malloc", "__kmpc_fork_call"))
    assert check_candidate(full, torch_lib).ok


@pytest.mark.wheels
def test_all_problems_are_listed_together(torch_lib, tmp_path):
    bad = runtime(tmp_path / "x.dll", {703: "omp_get_num_threads"}, machine="x86", dll_name="libiompstubs5md.dll")
    assert codes(check_candidate(bad, torch_lib)) == [WRONG_ARCHITECTURE, STUB_RUNTIME, MISSING_FUNCTION,
                                                      WRONG_FUNCTION]


# --- not a DLL ----------------------------------------------------------------------------------------------

@pytest.mark.wheels
def test_text_file_is_not_a_dll(torch_lib, tmp_path):
    text = tmp_path / "libomp140.x86_64.dll"
    text.write_text("This is not a DLL. " * 20)
    check = check_candidate(text, torch_lib)
    assert codes(check) == [NOT_A_DLL] and not check.ok
    assert "no MZ header" in refusal_text(check.reasons[0], "en")


@pytest.mark.wheels
@pytest.mark.parametrize("size", [0, 40, 4096, 300_000])
def test_truncated_real_runtime_is_not_a_dll(torch_lib, tmp_path, size):
    cut = tmp_path / "libiomp5md.dll"
    cut.write_bytes((torch_lib / "libiomp5md.dll").read_bytes()[:size])
    assert codes(check_candidate(cut, torch_lib)) == [NOT_A_DLL]


def test_program_is_not_a_dll(tmp_path):
    exe = write_pe(tmp_path / "omp.exe", dll=False, exports=[Export(n, name) for n, name in FIVE.items()])
    check = check_candidate(exe, tmp_path)
    assert codes(check) == [NOT_A_DLL]
    assert refusal_text(check.reasons[0], "en") == (
        "omp.exe is not a Windows DLL (it is a program, not a DLL), so it cannot stand in for libomp140.x86_64.dll.")
    assert "程序" in refusal_text(check.reasons[0], "zh_CN")


def test_missing_file_and_folder_are_unreadable(tmp_path):
    assert codes(check_candidate(tmp_path / "nowhere.dll", tmp_path)) == [UNREADABLE]
    (tmp_path / "folder.dll").mkdir()
    assert codes(check_candidate(tmp_path / "folder.dll", tmp_path)) == [UNREADABLE]


# --- names, forwarders (a written torch\lib) ----------------------------------------------------------------

def test_name_imports_must_be_exported_by_that_name(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    write_pe(lib / "torch_cpu.dll", imports=[Import("libomp140.x86_64.dll", ("omp_get_wtime", 703, 9999))])
    check = check_candidate(runtime(tmp_path / "libomp.dll"), lib)
    assert codes(check) == [MISSING_FUNCTION]
    assert check.reasons[0].functions == (FunctionGap(9999, None, None, ("torch_cpu.dll",)),
                                          FunctionGap("omp_get_wtime", "omp_get_wtime", None, ("torch_cpu.dll",)))
    text = refusal_text(check.reasons[0], "en")
    assert "function number 9999; the function omp_get_wtime" in text
    # A number outside the table only has to exist; a name has to be there by that name.
    ok = runtime(tmp_path / "ok.dll", {**FIVE, 9999: "anything"}, extra=("omp_get_wtime",))
    assert check_candidate(ok, lib).ok


def test_forwarded_function_counts_as_present_and_is_noted(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    write_pe(lib / "fbgemm.dll", imports=[Import("libomp140.x86_64.dll", (703, 706))])
    exports = [Export(703, "omp_get_max_threads", forwarder="libiomp5md.omp_get_max_threads"),
               Export(706, "omp_get_num_threads")]
    check = check_candidate(write_pe(tmp_path / "fwd.dll", exports=exports), lib)
    assert check.ok
    assert check.forwarded == {703: "libiomp5md.omp_get_max_threads"}


def test_nothing_needed_only_the_file_is_checked(tmp_path):
    assert check_candidate(runtime(tmp_path / "libomp.dll", {}, extra=("f",)), tmp_path).ok
    assert codes(check_candidate(runtime(tmp_path / "x86.dll", machine="x86"), tmp_path)) == [WRONG_ARCHITECTURE]


# --- words --------------------------------------------------------------------------------------------------

SAMPLES = [
    Refusal(UNREADABLE, {"file": "a.dll", "target": "libomp140.x86_64.dll", "detail": "Permission denied"}),
    Refusal(NOT_A_DLL, {"file": "a.dll", "target": "libomp140.x86_64.dll", "detail": "no MZ header"}),
    Refusal(NOT_A_DLL, {"file": "a.exe", "target": "libomp140.x86_64.dll",
                        "detail_key": "repair.candidate.detail.program"}),
    Refusal(WRONG_ARCHITECTURE, {"file": "a.dll", "target": "libomp140.x86_64.dll", "cpu": "x86"}),
    Refusal(STUB_RUNTIME, {"file": "a.dll", "target": "libomp140.x86_64.dll", "internal_name": "libiompstubs5md.dll"}),
    Refusal(MISSING_FUNCTION, {"file": "a.dll", "target": "libomp140.x86_64.dll", "functions": (
        FunctionGap(717, "omp_set_num_threads"), FunctionGap(9999, None),
        FunctionGap("omp_get_wtime", "omp_get_wtime"))}),
    Refusal(WRONG_FUNCTION, {"file": "a.dll", "target": "libomp140.x86_64.dll", "functions": (
        FunctionGap(703, "omp_get_max_threads", "omp_get_num_threads"), FunctionGap(710, "omp_in_parallel"))}),
]


def test_every_code_has_words_in_both_languages():
    texts = json.loads((resources_folder() / "ui_text.json").read_text(encoding="utf-8"))
    for code in CODES:
        entry = texts[f"repair.candidate.{code}"]
        assert entry["en"].strip() and entry["zh_CN"].strip() and entry["en"] != entry["zh_CN"]
    assert {r.code for r in SAMPLES} == set(CODES)


@pytest.mark.parametrize("refusal", SAMPLES, ids=lambda r: r.code)
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_refusal_words_are_filled_and_plain(refusal, lang):
    text = refusal_text(refusal, lang)
    assert "{" not in text and "}" not in text
    assert ("a.exe" if refusal.values["file"] == "a.exe" else "a.dll") in text
    for jargon in ("module", "ordinal", "hresult", "export", "模块", "序号"):
        assert jargon not in text.lower()
    if lang == "zh_CN":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in text)
