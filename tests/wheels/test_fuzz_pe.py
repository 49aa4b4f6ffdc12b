"""Fuzzing the PE reader with mutated DLLs: only PEError may come out, and no file may hang the scan.

Mutations aim where parsers break: the headers and every table the reader visits (found from a clean
parse), with boundary values (0, 0x7FFFFFFF, 0xFFFFFFFF, the file size) as well as random bytes, plus
truncation. 10,000 cases over real Microsoft/Intel/torch DLLs (`wheels`), 2,000 over writer-made ones.
Then crafted counts, which random edits never reach: import entries sharing one list of functions, nameless
entries, the file's budget of imported functions and DLLs, and export tables pointing every entry at one string.
"""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.demo.pe_writer import Export, Import, build_pe
from app.engine.pe import MAX_IMPORT_DLLS, MAX_IMPORTED_FUNCTIONS, PEError, read_pe_stream
from tests import realfiles
from tests.helpers.images import real

REAL_CASES = int(os.environ.get("TDD_FUZZ_CASES", "10000"))
WRITER_CASES = 2000
PER_FILE_BUDGET_S = 2.0


def regions(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of the headers and of every data directory the reader visits."""
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    count, opt_size = struct.unpack_from("<H", data, e_lfanew + 6)[0], struct.unpack_from("<H", data, e_lfanew + 20)[0]
    magic = struct.unpack_from("<H", data, e_lfanew + 24)[0]
    dirs_at = e_lfanew + 24 + (112 if magic == 0x20B else 96)
    table = e_lfanew + 24 + opt_size
    sections = [struct.unpack_from("<IIII", data, table + 40 * i + 8) for i in range(count)]

    def offset(rva):
        for _vsize, va, raw_size, raw_ptr in sections:
            if va <= rva < va + raw_size:
                return raw_ptr + rva - va
        return None

    found = [(0, table + 40 * count)]
    for index in (0, 1, 2, 10, 13):
        rva, size = struct.unpack_from("<II", data, dirs_at + 8 * index)
        at = offset(rva) if rva else None
        if at is not None:
            found.append((at, max(64, min(size, 4096))))
    return found


def mutate(data: bytes, choices) -> bytes:
    spots = regions(data)
    buffer = bytearray(data)
    for region, position, kind, value in choices["edits"]:
        start, length = spots[region % len(spots)]
        at = min(start + position % max(length, 1), len(buffer) - 4)
        if kind == "byte":
            buffer[at] = value & 0xFF
        else:
            word = [0, 0x7FFFFFFF, 0xFFFFFFFF, len(data), value & 0xFFFFFFFF, 0x10000][value % 6]
            buffer[at:at + 4] = struct.pack("<I", word)
    if choices["truncate"] is not None:
        del buffer[choices["truncate"] % len(buffer):]
    return bytes(buffer)


mutations = st.fixed_dictionaries({
    "base": st.integers(min_value=0, max_value=1000),
    "edits": st.lists(st.tuples(st.integers(0, 50), st.integers(0, 1 << 16), st.sampled_from(["byte", "dword"]),
                                st.integers(0, 1 << 32)), min_size=1, max_size=6),
    "truncate": st.none() | st.integers(0, 1 << 22),
})


def check_reader(data: bytes) -> None:
    start = time.perf_counter()
    try:
        read_pe_stream(io.BytesIO(data))
    except PEError as exc:
        assert str(exc)  # a reason in words
    assert time.perf_counter() - start < PER_FILE_BUDGET_S


def writer_samples() -> list[bytes]:
    return [
        build_pe(imports=[Import("kernel32.dll", ("Sleep", 12)), Import("nvcuda.dll", ("cuInit",), delay=True)],
                 exports=[Export(1, "a"), Export(2, None), Export(5, "fw", forwarder="other.f")],
                 file_version=(1, 2, 3, 4), dependent_load_flags=0x800),
        build_pe(machine="x86", imports=[Import("a.dll", tuple(range(1, 40)))], exports=[Export(3, "x")],
                 file_version=(5, 0, 2024, 320)),
    ]


@pytest.fixture(scope="module")
def real_samples() -> list[bytes]:
    dlls = real(realfiles.msvc_runtime_dlls)
    chosen = [p for p in dlls if p.name.lower() in ("vcomp140.dll", "msvcp140_1.dll", "vcruntime140_1.dll",
                                                    "concrt140.dll")]
    lib = real(realfiles.torch_lib, realfiles.TORCH_240)
    chosen += [lib / "libiompstubs5md.dll", lib / "shm.dll", lib / "torch_global_deps.dll"]
    return [Path(p).read_bytes() for p in chosen]


@settings(max_examples=WRITER_CASES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(choices=mutations)
def test_mutated_writer_dlls_never_crash_or_hang(choices):
    samples = writer_samples()
    check_reader(mutate(samples[choices["base"] % len(samples)], choices))


@pytest.mark.wheels
@pytest.mark.slow
def test_mutated_real_dlls_never_crash_or_hang(real_samples):
    @settings(max_examples=REAL_CASES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(choices=mutations)
    def run(choices):
        check_reader(mutate(real_samples[choices["base"] % len(real_samples)], choices))

    run()


# -- crafted counts ---------------------------------------------------------------------------------------------
def sections(data: bytes) -> list[tuple[int, int, int, int]]:
    """(virtual address, virtual size, raw size, raw offset) of every section."""
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    count, opt_size = struct.unpack_from("<H", data, e_lfanew + 6)[0], struct.unpack_from("<H", data, e_lfanew + 20)[0]
    table = e_lfanew + 24 + opt_size
    return [struct.unpack_from("<IIII", data, table + 40 * i + 8) for i in range(count)]


def file_offset(data: bytes, rva: int) -> int:
    for _vsize, va, raw_size, raw_ptr in sections(data):
        if va <= rva < va + raw_size:
            return raw_ptr + rva - va
    raise AssertionError(f"rva {rva:#x} in no section")


def descriptor(data: bytes, index: int, delay: bool = False) -> int:
    """File offset of import descriptor `index` (20 bytes), or of delay-load descriptor `index` (32 bytes)."""
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    dirs_at = e_lfanew + 24 + 112  # PE32+
    rva = struct.unpack_from("<I", data, dirs_at + 8 * (13 if delay else 1))[0]
    return file_offset(data, rva + (32 if delay else 20) * index)


def names(count: int, prefix: str = "Function") -> tuple[str, ...]:
    return tuple(f"{prefix}{i:05d}" for i in range(count))


def timed_and_traced(data: bytes):
    """(the result or the PEError, seconds untraced, peak bytes allocated while reading under tracemalloc)."""
    def read():
        try:
            return read_pe_stream(io.BytesIO(data))
        except PEError as exc:
            return exc

    start = time.perf_counter()
    result = read()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, seconds, peak


# 4,001 entries x 6,000 functions: 24 million functions, about 2 minutes and 4 GB before the reader noticed sharing
SHARED_FUNCTIONS, SHARED_COPIES = 6000, 4000


def test_thousands_of_import_entries_sharing_one_list_are_damage_found_in_well_under_a_second():
    alone = build_pe(imports=[Import("kernel32.dll", names(SHARED_FUNCTIONS))])
    info, seconds, _ = timed_and_traced(alone)  # the list itself is sound: read once, it is all there
    assert [len(d.functions) for d in info.imports] == [SHARED_FUNCTIONS] and seconds < 1
    crafted = build_pe(imports=[Import("kernel32.dll", names(SHARED_FUNCTIONS))], shared_list_copies=SHARED_COPIES)
    error, seconds, peak = timed_and_traced(crafted)
    assert isinstance(error, PEError), f"read as {sum(len(d.functions) for d in error.imports)} functions"
    assert "import table entry 2 (kernel32.dll) reuses the list of functions of import table entry 1" in str(error)
    assert seconds < 1 and peak < 50 << 20, (seconds, peak)


def overlap(data: bytes, case: str) -> bytes:
    """Two DLLs of 4 functions each, their lists laid out one after the other; make them overlap."""
    buffer = bytearray(data)
    first, second = descriptor(data, 0), descriptor(data, 1)
    a_list, b_list = struct.unpack_from("<I", data, first)[0], struct.unpack_from("<I", data, second)[0]
    if case == "starts inside":  # b.dll's list begins at a.dll's third function
        struct.pack_into("<I", buffer, second, a_list + 2 * 8)
    else:  # a.dll's list, read second, loses its terminator and runs on into b.dll's
        struct.pack_into("<I", buffer, first, b_list)
        struct.pack_into("<I", buffer, second, a_list)
        first_thunk = struct.unpack_from("<Q", data, file_offset(data, a_list))[0]
        struct.pack_into("<Q", buffer, file_offset(data, a_list + 4 * 8), first_thunk)
    return bytes(buffer)


@pytest.mark.parametrize("case", ["starts inside", "runs into"])
def test_import_lists_that_overlap_are_damage(case):
    data = build_pe(imports=[Import("a.dll", names(4, "a")), Import("b.dll", names(4, "b"))])
    assert [len(d.functions) for d in read_pe_stream(io.BytesIO(data)).imports] == [4, 4]
    with pytest.raises(PEError, match="import table entry 2 .* reuses the list of functions of import table entry 1"):
        read_pe_stream(io.BytesIO(overlap(data, case)))


def test_the_function_budget_is_one_for_the_import_and_delay_tables_together():
    per_dll = 4096
    count = MAX_IMPORTED_FUNCTIONS // per_dll  # 16 lists of 4,096: exactly the budget
    imports = [Import(f"lib{i}.dll", names(per_dll), delay=i % 2 == 1) for i in range(count)]
    info = read_pe_stream(io.BytesIO(build_pe(imports=imports)))
    assert sum(len(d.functions) for d in info.imports) == MAX_IMPORTED_FUNCTIONS
    assert sum(d.delay for d in info.imports) == count // 2
    over = imports + [Import("one_more.dll", ("f",), delay=True)]
    error, seconds, peak = timed_and_traced(build_pe(imports=over))
    assert isinstance(error, PEError) and "absurd number of functions" in str(error)
    assert "one_more.dll" in str(error) and seconds < 2 and peak < 50 << 20


def test_the_dll_budget_is_one_for_the_import_and_delay_tables_together():
    half = MAX_IMPORT_DLLS // 2
    imports = [Import(f"d{i}.dll", ("f",), delay=i >= half) for i in range(2 * half - 2)]  # two terminators
    assert len(read_pe_stream(io.BytesIO(build_pe(imports=imports))).imports) == MAX_IMPORT_DLLS - 2
    error, seconds, _ = timed_and_traced(build_pe(imports=imports + [Import("extra.dll", ("f",), delay=True)]))
    assert isinstance(error, PEError) and "absurd number of DLLs" in str(error) and seconds < 2


def nameless(data: bytes, delay: bool, name_rva: int) -> bytes:
    buffer = bytearray(data)
    struct.pack_into("<I", buffer, descriptor(data, 0, delay) + (4 if delay else 12), name_rva)
    return bytes(buffer)


@pytest.mark.parametrize("delay", [False, True], ids=["import", "delay-load"])
@pytest.mark.parametrize("name_at, reason", [
    ("zero", "lists functions but names no DLL"),  # address 0 would read as a DLL called "MZ\x90"
    ("code", "not a file name"),  # the entry point's machine code
    ("header", "not a file name"),  # the DOS header's message, past "MZ": no NUL for 4 KiB, or control bytes
])
def test_an_import_entry_without_a_dll_name_but_with_functions_is_damage(delay, name_at, reason):
    data = build_pe(imports=[Import("kernel32.dll", ("Sleep",), delay=delay)])
    assert read_pe_stream(io.BytesIO(data)).imports[0].name == "kernel32.dll"
    text_rva = sections(data)[0][1]
    rva = {"zero": 0, "code": text_rva, "header": 0x4E}[name_at]
    with pytest.raises(PEError, match=reason):
        read_pe_stream(io.BytesIO(nameless(data, delay, rva)))


@pytest.mark.parametrize("name", ["a" * 256, "con<1>.dll", "tab\tname.dll", "...", "caf\xe9.dll"])
def test_dll_names_that_are_no_file_name_are_damage(name):
    placeholder = "x" * len(name.encode("latin-1"))
    data = build_pe(imports=[Import(placeholder, ("Sleep",))])
    at = data.find(placeholder.encode() + b"\0")
    crafted = data[:at] + name.encode("latin-1") + data[at + len(placeholder):]
    with pytest.raises(PEError, match="not a file name"):
        read_pe_stream(io.BytesIO(crafted))


def test_export_tables_pointing_every_entry_at_one_long_string_stay_small_and_fast():
    exports = [Export(1, "L" * 4000)] + [Export(i, f"n{i:05d}") for i in range(2, 65536)]
    data = bytearray(build_pe(exports=exports))
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    directory = file_offset(data, struct.unpack_from("<I", data, e_lfanew + 24 + 112)[0])
    n_functions, n_names, functions_rva, names_rva = struct.unpack_from("<4I", data, directory + 20)
    name_rvas = struct.unpack_from(f"<{n_names}I", data, file_offset(data, names_rva))
    long_name = next(r for r in name_rvas if data[file_offset(data, r)] == ord("L"))
    struct.pack_into(f"<{n_names}I", data, file_offset(data, names_rva), *[long_name] * n_names)
    # every address inside the export directory: 65,535 forwarders, all the one 4,000-byte string
    struct.pack_into(f"<{n_functions}I", data, file_offset(data, functions_rva), *[long_name] * n_functions)
    info, seconds, peak = timed_and_traced(bytes(data))
    assert len(info.exports.forwarders) == n_functions == 65535 and list(info.exports.names) == ["L" * 4000]
    assert seconds < 1 and peak < 50 << 20, (seconds, peak)  # 65,535 copies of the string would be 262 MB
