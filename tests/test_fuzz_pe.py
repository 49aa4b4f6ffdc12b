"""Fuzzing the PE reader with mutated DLLs: only PEError may come out, and no file may hang the scan.

Mutations aim where parsers break: the headers and every table the reader visits (found from a clean
parse), with boundary values (0, 0x7FFFFFFF, 0xFFFFFFFF, the file size) as well as random bytes, plus
truncation. 10,000 cases over real Microsoft/Intel/torch DLLs (`wheels`), 2,000 over writer-made ones.
"""

from __future__ import annotations

import io
import os
import struct
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.demo.pe_writer import Export, Import, build_pe
from app.engine.pe import PEError, read_pe_stream
from tests import realfiles
from tests.conftest import real

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
