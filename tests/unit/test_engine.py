"""The engine on small PE files from the writer: every status, every search rule, lazy expansion."""

from __future__ import annotations

import io
import os
import struct

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Export, Import, build_pe
from app.engine.apiset import ApiSetSchema
from app.engine.graph import (
    CHILDREN_ERROR,
    CORRUPT,
    MISSING,
    MISSING_DELAY,
    MISSING_EXPORT,
    OK,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    DependencyGraph,
    PECache,
    Unreadable,
)
from app.engine.pe import ImportedFunction, PEError, read_pe, read_pe_stream
from app.inventory.discovery import discover
from app.inventory.environment import inspect_environment
from app.inventory.search_context import loader_for
from app.probes.runner import run_diagnosis
from app.report.tree_text import render_tree
from app.system.offline import OfflineImage

LIB = r"C:\Users\alice\venv\Lib\site-packages\torch\lib"
PY = r"C:\Python312"
SYS32 = r"C:\Windows\System32"


@pytest.fixture
def image(tmp_path):
    builder = ImageBuilder(tmp_path / "img")
    builder.write(PY + r"\python.exe", build_pe(dll=False))
    builder.venv(r"C:\Users\alice\venv", PY)
    builder.write(r"C:\Users\alice\venv\Scripts\python.exe", build_pe(dll=False))
    builder.torch_version_file(r"C:\Users\alice\venv\Lib\site-packages", "2.4.0+cpu")
    return builder


def dll(builder, windows_path, imports=(), exports=(), **kwargs):
    name = windows_path.rsplit("\\", 1)[1]
    return builder.write(windows_path, build_pe(imports=imports, exports=exports, dll_name=name, **kwargs))


def graph_of(builder, *roots):
    system = OfflineImage(builder.root)
    env = inspect_environment(system, builder.host(r"C:\Users\alice\venv"))
    graph = DependencyGraph(loader_for(system, env))
    for root in roots:
        graph.add_root(builder.host(root))
    graph.expand_all()
    return graph


def node(graph, name):
    return next(n for n in graph.nodes.values() if n.name.lower() == name.lower())


def exports(*names):
    return [Export(i + 1, n) for i, n in enumerate(names)]


# -- statuses ------------------------------------------------------------------------------------------------
def test_x86_dll_in_an_x64_chain_is_wrong_architecture(image):
    dll(image, LIB + r"\old.dll", machine="x86", exports=exports("f"))
    dll(image, LIB + r"\top.dll", [Import("old.dll", ("f",))])
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "old.dll")) == WRONG_ARCHITECTURE
    assert "x86" in node(graph, "old.dll").reason
    assert graph.status(node(graph, "top.dll")) == CHILDREN_ERROR


def test_missing_export_by_ordinal_is_checked_by_ordinal(image):
    dll(image, LIB + r"\omp.dll", exports=[Export(703, "omp_get_max_threads"), Export(706, "omp_get_num_threads")])
    dll(image, LIB + r"\fbgemm.dll", [Import("omp.dll", (703, 706, 707))])
    graph = graph_of(image, LIB + r"\fbgemm.dll")
    omp = node(graph, "omp.dll")
    assert graph.status(omp) == MISSING_EXPORT
    assert [(m.importer, m.function) for m in omp.missing_exports] == [("fbgemm.dll", ImportedFunction(ordinal=707))]
    assert graph.status(node(graph, "fbgemm.dll")) == CHILDREN_ERROR


def test_missing_export_by_name_lists_the_function_and_importer(image):
    dll(image, LIB + r"\c10.dll", exports=exports("a", "b"))
    dll(image, LIB + r"\torch_cpu.dll", [Import("c10.dll", ("a", "zz"))])
    graph = graph_of(image, LIB + r"\torch_cpu.dll")
    assert [str(m.function) for m in node(graph, "c10.dll").missing_exports] == ["zz"]
    expected = [{"importer": "torch_cpu.dll", "name": "zz", "ordinal": None}]
    assert graph.to_dict()["nodes"][1]["missing_exports"] == expected


def test_forwarded_export_is_followed_to_its_target(image):
    dll(image, LIB + r"\real.dll", exports=exports("f"))
    dll(image, LIB + r"\shim.dll", exports=[Export(1, "f", forwarder="real.f"), Export(2, "g", forwarder="real.g")])
    dll(image, LIB + r"\a.dll", [Import("shim.dll", ("f",))])
    dll(image, LIB + r"\b.dll", [Import("shim.dll", ("g",))])
    graph = graph_of(image, LIB + r"\a.dll", LIB + r"\b.dll")
    assert [str(m.function) for m in node(graph, "shim.dll").missing_exports] == ["g"]  # real.dll has no g
    assert graph.status(node(graph, "a.dll")) == OK  # its f forwards to real.f, which exists
    assert graph.status(node(graph, "b.dll")) == CHILDREN_ERROR


def test_forwarder_loop_is_a_missing_export_of_the_importer_that_asks_not_a_hang(image):
    dll(image, LIB + r"\x.dll", exports=[Export(1, "f", forwarder="y.f"), Export(2, "g")])
    dll(image, LIB + r"\y.dll", exports=[Export(1, "f", forwarder="x.f")])
    dll(image, LIB + r"\top.dll", [Import("x.dll", ("f",))])
    dll(image, LIB + r"\other.dll", [Import("x.dll", ("g",))])
    graph = graph_of(image, LIB + r"\top.dll", LIB + r"\other.dll")
    x = node(graph, "x.dll")
    assert graph.status(x) == MISSING_EXPORT and x.problem is None
    (missing,) = x.missing_exports
    assert (missing.importer, str(missing.function)) == ("top.dll", "f") and "loop" in missing.reason
    assert graph.status(node(graph, "top.dll")) == CHILDREN_ERROR
    assert graph.status(node(graph, "other.dll")) == OK  # g does not loop: x.dll loads fine for it


def test_missing_delay_load_dll_is_a_warning_not_a_children_error(image):
    dll(image, LIB + r"\top.dll", [Import("nvcuda.dll", ("cuInit",), delay=True)])
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "nvcuda.dll")) == MISSING_DELAY
    assert graph.status(node(graph, "top.dll")) == OK
    assert graph.to_dict()["edges"][0]["kind"] == "delay"


def test_import_cycle_terminates_and_both_are_ok(image):
    dll(image, LIB + r"\a.dll", [Import("b.dll", ("fb",))], exports=exports("fa"))
    dll(image, LIB + r"\b.dll", [Import("a.dll", ("fa",))], exports=exports("fb"))
    graph = graph_of(image, LIB + r"\a.dll")
    assert {graph.status(n) for n in graph.nodes.values()} == {OK}
    assert len(graph.nodes) == 2


def test_missing_dll_in_a_cycle_marks_every_member_children_error(image):
    dll(image, LIB + r"\a.dll", [Import("b.dll", ("fb",))], exports=exports("fa"))
    dll(image, LIB + r"\b.dll", [Import("a.dll", ("fa",)), Import("gone.dll", ("x",))], exports=exports("fb"))
    graph = graph_of(image, LIB + r"\a.dll")
    assert graph.status(node(graph, "gone.dll")) == MISSING
    assert graph.status(node(graph, "a.dll")) == graph.status(node(graph, "b.dll")) == CHILDREN_ERROR


@pytest.mark.parametrize("content, reason", [
    (b"", "empty"),
    (b"hello, this is a text file and not a DLL at all" * 4, "no MZ header"),
    (b"MZ" + bytes(62), "without a PE header"),
])
def test_bad_files_are_corrupt_with_a_reason_and_the_scan_goes_on(image, content, reason):
    image.write(LIB + r"\bad.dll", content)
    dll(image, LIB + r"\good.dll", exports=exports("f"))
    dll(image, LIB + r"\top.dll", [Import("bad.dll", ("f",)), Import("good.dll", ("f",))])
    graph = graph_of(image, LIB + r"\top.dll")
    bad = node(graph, "bad.dll")
    assert graph.status(bad) == CORRUPT and reason in bad.reason
    assert graph.status(node(graph, "good.dll")) == OK
    assert graph.status(node(graph, "top.dll")) == CHILDREN_ERROR


def test_truncated_headers_and_outside_pointers_are_pe_errors():
    data = build_pe(imports=[Import("kernel32.dll", ("Sleep",))])
    with pytest.raises(PEError, match="truncated|outside"):
        read_pe_stream(io.BytesIO(data[:0x120]))
    info = read_pe_stream(io.BytesIO(data))
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    import_dir_at = e_lfanew + 24 + 112 + 8  # PE32+ data directory 1
    broken = bytearray(data)
    broken[import_dir_at:import_dir_at + 4] = struct.pack("<I", 0x7FFF0000)
    with pytest.raises(PEError, match="outside"):
        read_pe_stream(io.BytesIO(bytes(broken)))
    assert info.imports[0].name == "kernel32.dll"


def test_absurd_export_count_is_corrupt():
    data = bytearray(build_pe(exports=exports("f")))
    at = data.find(b"test.dll\0")  # the export directory's NumberOfFunctions sits 20 bytes into it
    info = read_pe_stream(io.BytesIO(bytes(data)))
    assert info.exports.names == {"f": 1}
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    export_rva = struct.unpack_from("<I", data, e_lfanew + 24 + 112)[0]
    offset = _offset(data, export_rva)
    data[offset + 20:offset + 24] = struct.pack("<I", 0xFFFFFFF0)
    with pytest.raises(PEError, match="absurd"):
        read_pe_stream(io.BytesIO(bytes(data)))
    assert at > 0


def _nameless_import(data: bytes) -> bytes:
    """The first import entry's Name set to 0: its functions stay, its DLL name is gone."""
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    import_rva = struct.unpack_from("<I", data, e_lfanew + 24 + 112 + 8)[0]
    broken = bytearray(data)
    struct.pack_into("<I", broken, _offset(data, import_rva) + 12, 0)
    return bytes(broken)


@pytest.mark.parametrize("crafted, reason", [
    (lambda: build_pe(imports=[Import("c10.dll", tuple(f"f{i}" for i in range(2000)))], shared_list_copies=3000),
     "reuses the list of functions of import table entry 1"),
    (lambda: _nameless_import(build_pe(imports=[Import("c10.dll", ("f",))])), "names no DLL"),
], ids=["shared-lists", "nameless"])
def test_crafted_import_tables_are_reported_as_a_damaged_dll_not_as_imports(image, crafted, reason):
    image.write(LIB + r"\crafted.dll", crafted())
    dll(image, LIB + r"\top.dll", [Import("crafted.dll", ("f",))])
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "crafted.dll")) == CORRUPT and reason in node(graph, "crafted.dll").reason
    assert [n.name for n in graph.nodes.values()] == ["top.dll", "crafted.dll"]  # no "MZ..." and no c10.dll
    damaged = next(f for f in diagnose(image).findings if f.code == "dll-damaged")
    assert damaged.evidence["dll"] == "crafted.dll" and reason in damaged.evidence["reason"]
    assert damaged.evidence["needed_by"] == ["top.dll"]


def _offset(data: bytes, rva: int) -> int:
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    count, opt_size = struct.unpack_from("<H", data, e_lfanew + 6)[0], struct.unpack_from("<H", data, e_lfanew + 20)[0]
    table = e_lfanew + 24 + opt_size
    for i in range(count):
        vsize, va, raw_size, raw_ptr = struct.unpack_from("<IIII", data, table + 40 * i + 8)
        if va <= rva < va + max(vsize, raw_size):
            return raw_ptr + rva - va
    raise AssertionError("rva in no section")


# -- search rules ----------------------------------------------------------------------------------------------
def test_dll_found_only_on_path_is_fragile(image):
    dll(image, r"C:\Tools\bin\helper.dll", exports=exports("h"))
    image.add_to_path(r"C:\Tools\bin")
    dll(image, LIB + r"\top.dll", [Import("helper.dll", ("h",))])
    graph = graph_of(image, LIB + r"\top.dll")
    helper = node(graph, "helper.dll")
    assert graph.status(helper) == OK and helper.resolution.rule == "path-fallback" and helper.resolution.fragile
    rules = [rule for rule, _ in helper.resolution.tried]
    assert rules.index("dll-folder") < rules.index("application-folder") < rules.index("system32") \
        < rules.index("legacy-application-folder") < rules.index("path-fallback")


def test_search_order_dll_folder_then_python_folder_then_system32(image):
    for folder in (LIB, PY, SYS32):
        dll(image, folder + r"\dup.dll", exports=exports("f"))
    dll(image, PY + r"\only_app.dll", exports=exports("f"))
    dll(image, SYS32 + r"\only_app.dll", exports=exports("f"))
    dll(image, LIB + r"\top.dll", [Import("DUP.DLL", ("f",)), Import("only_app.dll", ("f",))])
    graph = graph_of(image, LIB + r"\top.dll")
    assert node(graph, "dup.dll").resolution.rule == "dll-folder"
    assert node(graph, "only_app.dll").resolution.rule == "application-folder"


def test_known_dll_comes_from_system32_even_with_a_copy_beside_the_importer(image):
    dll(image, LIB + r"\kernel32.dll", exports=exports("Sleep"))
    dll(image, SYS32 + r"\kernel32.dll", exports=exports("Sleep"))
    dll(image, LIB + r"\top.dll", [Import("KERNEL32.dll", ("Sleep",))])
    graph = graph_of(image, LIB + r"\top.dll")
    kernel = node(graph, "kernel32.dll")
    assert kernel.resolution.rule == "known-dll" and kernel.path.parent.name == "System32"


def test_windows_component_absent_from_image_is_not_missing(image):
    dll(image, LIB + r"\top.dll", [Import("ADVAPI32.dll", ("RegOpenKeyExW",)), Import("vcruntime140.dll", ("x",))])
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "advapi32.dll")) == OK
    assert graph.status(node(graph, "vcruntime140.dll")) == MISSING  # the VC++ runtime is not "part of Windows"


def _schema(*entries):
    """A version-6 API set schema: (contract, default host, {importer: host})."""
    strings = bytearray()
    records = []

    def put(text):
        at = 28 + 24 * len(entries) + 1000 + len(strings)
        strings.extend(text.encode("utf-16-le"))
        return at, len(text) * 2

    values = bytearray()
    value_base = 28 + 24 * len(entries)
    for contract, host, exceptions in entries:
        name_at, name_len = put(contract)
        hashed = len(contract.rsplit("-", 1)[0]) * 2
        first = value_base + len(values)
        pairs = [("", host)] + list(exceptions.items())
        for importer, target in pairs:
            imp_at, imp_len = put(importer) if importer else (0, 0)
            host_at, host_len = put(target)
            values.extend(struct.pack("<5I", 0, imp_at, imp_len, host_at, host_len))
        records.append(struct.pack("<6I", 0, name_at, name_len, hashed, first, len(pairs)))
    assert len(values) <= 1000
    body = b"".join(records) + bytes(values).ljust(1000, b"\0") + bytes(strings)
    return struct.pack("<7I", 6, 28 + len(body), 0, len(entries), 28, 0, 0) + body


def test_api_set_schema_from_apisetschema_dll_maps_contracts_to_hosts(image):
    schema = _schema(("api-ms-win-core-synch-l1-2-0", "kernelbase.dll", {"special.dll": "kernel32.dll"}),
                     ("api-ms-win-crt-runtime-l1-1-0", "ucrtbase.dll", {}))
    dll(image, SYS32 + r"\apisetschema.dll", extra_sections=((".apiset", schema),))
    dll(image, SYS32 + r"\kernelbase.dll", exports=exports("Sleep"))
    dll(image, LIB + r"\top.dll", [Import("api-ms-win-core-synch-l1-2-1.dll", ("Sleep",)),
                                   Import("api-ms-win-crt-runtime-l1-1-0.dll", ("_initterm",))])
    graph = graph_of(image, LIB + r"\top.dll")
    synch = node(graph, "kernelbase.dll")
    assert synch.resolution.rule == "api-set" and synch.resolution.api_set_host == "kernelbase.dll"
    assert ApiSetSchema.parse(schema).lookup("api-ms-win-core-synch-l1-2-0", "special.dll").host == "kernel32.dll"
    assert graph.status(node(graph, "top.dll")) == OK


def test_crt_contracts_need_a_real_ucrt_on_windows_7(image):
    image.env["windows_version"] = "6.1.7601"
    image.save()
    dll(image, LIB + r"\top.dll", [Import("api-ms-win-crt-runtime-l1-1-0.dll", ("_initterm",))])
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "ucrtbase.dll")) == MISSING
    dll(image, SYS32 + r"\ucrtbase.dll", exports=exports("_initterm"))
    graph = graph_of(image, LIB + r"\top.dll")
    assert graph.status(node(graph, "top.dll")) == OK


# -- laziness, caching, reading --------------------------------------------------------------------------------
def test_children_are_read_only_when_asked_for(image):
    dll(image, LIB + r"\leaf.dll", exports=exports("x"))
    dll(image, LIB + r"\mid.dll", [Import("leaf.dll", ("x",))], exports=exports("m"))
    dll(image, LIB + r"\top.dll", [Import("mid.dll", ("m",))])
    system = OfflineImage(image.root)
    graph = DependencyGraph(loader_for(system, None))
    top = graph.add_root(image.host(LIB + r"\top.dll"))
    assert len(graph.nodes) == 1 and not top.expanded
    (edge,) = graph.children(top)
    assert edge.target.name == "mid.dll" and not edge.target.expanded
    assert "leaf.dll" not in {n.name for n in graph.nodes.values()}
    graph.children(edge.target)
    assert "leaf.dll" in {n.name for n in graph.nodes.values()}


def test_pe_cache_rereads_a_file_only_when_size_or_mtime_change(tmp_path):
    path = tmp_path / "a.dll"
    path.write_bytes(build_pe(exports=exports("one")))
    cache = PECache()
    first = cache.get(path)
    assert cache.get(path) is first
    path.write_bytes(build_pe(exports=exports("one", "two")))
    os.utime(path, ns=(1, 1))
    assert set(cache.get(path).exports.names) == {"one", "two"}


def test_reader_reads_version_linker_and_dependent_load_flags(tmp_path):
    path = tmp_path / "v.dll"
    path.write_bytes(build_pe(file_version=(5, 0, 2024, 320), product_version=(5, 0, 0, 0), linker_version=(14, 29),
                              dependent_load_flags=0x800))
    info = read_pe(path)
    assert (info.file_version, info.product_version) == ("5.0.2024.320", "5.0.0.0")
    assert info.linker_version == (14, 29) and info.dependent_load_flags == 0x800
    assert info.is_pe32_plus and info.is_dll and info.cpu_name == "x64"
    x86 = tmp_path / "x86.dll"
    x86.write_bytes(build_pe(machine="x86", dependent_load_flags=0x2000, imports=[Import("k.dll", ("f", 5))]))
    info = read_pe(x86)
    assert not info.is_pe32_plus and info.dependent_load_flags == 0x2000
    assert info.imports[0].functions == (ImportedFunction(name="f"), ImportedFunction(ordinal=5))


class CountingFile(io.FileIO):
    bytes_read = 0

    def read(self, size=-1):
        data = super().read(size)
        CountingFile.bytes_read += len(data)
        return data


def test_a_4_gib_sparse_dll_reads_the_same_bytes_as_a_4_mib_one(tmp_path):
    from app.demo.pe_writer import write_pe

    counts = []
    for size in (4 << 20, 4 << 30):
        path = write_pe(tmp_path / f"{size}.dll", exports=exports(*[f"f{i}" for i in range(3000)]),
                        imports=[Import("kernel32.dll", tuple(f"k{i}" for i in range(200)))], pad_to=size)
        CountingFile.bytes_read = 0
        with CountingFile(path) as f:
            info = read_pe_stream(f)
        assert info.size == size and len(info.exports.names) == 3000
        counts.append(CountingFile.bytes_read)
    assert counts[0] == counts[1] < 1 << 20


def test_a_missing_export_breaks_only_the_importer_that_needs_it(image):
    dll(image, LIB + r"\base.dll", exports=exports("common"))
    dll(image, LIB + r"\needs_more.dll", [Import("base.dll", ("common", "extra"))], exports=exports("n"))
    dll(image, LIB + r"\needs_common.dll", [Import("base.dll", ("common",))], exports=exports("c"))
    graph = graph_of(image, LIB + r"\needs_more.dll", LIB + r"\needs_common.dll")
    assert graph.status(node(graph, "base.dll")) == MISSING_EXPORT
    assert graph.status(node(graph, "needs_more.dll")) == CHILDREN_ERROR
    assert graph.status(node(graph, "needs_common.dll")) == OK


def test_a_dll_with_a_missing_export_and_a_missing_dependency_breaks_every_importer(image):
    dll(image, LIB + r"\base.dll", [Import("gone.dll", ("x",))], exports=exports("common"))
    dll(image, LIB + r"\needs_more.dll", [Import("base.dll", ("common", "extra"))], exports=exports("n"))
    dll(image, LIB + r"\needs_common.dll", [Import("base.dll", ("common",))], exports=exports("c"))
    graph = graph_of(image, LIB + r"\needs_more.dll", LIB + r"\needs_common.dll")
    assert graph.status(node(graph, "needs_common.dll")) == CHILDREN_ERROR  # base.dll cannot load at all
    assert graph.status(node(graph, "needs_more.dll")) == CHILDREN_ERROR
    base = node(graph, "base.dll")
    assert graph.status(base) == MISSING_EXPORT and graph.children_error(base)  # its own problem, and more
    assert graph.to_dict()["nodes"][base.id]["children_error"]


# chmod 000 stops only other users, and these tests run as root: as root, use other real conditions
def _unreadable_file(path):
    """A file that stat calls a regular file but that cannot be read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        path.write_bytes(build_pe(exports=exports("f")))
        path.chmod(0)
    else:  # Linux's view of this process's memory: opening works, seeking or reading fails (EINVAL)
        path.symlink_to("/proc/self/mem")


def _unlistable_folder(path):
    """A folder entry that is there but cannot be listed."""
    if os.geteuid() != 0:
        path.mkdir(parents=True)
        path.chmod(0)
    else:  # a link to itself fails with "too many levels of symbolic links", as a looping junction does
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(path.name)


def test_a_dll_that_cannot_be_read_is_unreadable_not_corrupt(image):
    _unreadable_file(image.host(LIB + r"\locked.dll"))
    image.mkdir(LIB + r"\folder.dll")  # a root torch would load that is a folder: opening it fails
    dll(image, LIB + r"\good.dll", exports=exports("f"))
    dll(image, LIB + r"\top.dll", [Import("locked.dll", ("f",)), Import("good.dll", ("f",))])
    graph = graph_of(image, LIB + r"\top.dll", LIB + r"\folder.dll")
    locked = node(graph, "locked.dll")
    assert graph.status(locked) == UNREADABLE and "cannot be read" in locked.reason
    assert isinstance(PECache().get(locked.path), Unreadable)
    assert graph.status(node(graph, "folder.dll")) == UNREADABLE
    assert graph.status(node(graph, "good.dll")) == OK
    assert graph.status(node(graph, "top.dll")) == CHILDREN_ERROR
    found = next(f for f in diagnose(image).findings
                 if f.code == "dll-unreadable" and f.evidence["dll"] == "locked.dll")
    assert found.severity == "blocker" and found.repairs == [] and found.evidence["needed_by"] == ["top.dll"]
    assert found.evidence["path"] == LIB + r"\locked.dll" and "cannot be read" in found.evidence["reason"]


def test_a_dll_searched_in_a_folder_that_cannot_be_listed_is_unreadable_not_missing(image):
    _unlistable_folder(image.host(r"C:\Locked"))
    image.add_to_path(r"C:\Gone")  # a folder that does not exist holds nothing: no doubt there
    image.add_to_path(r"C:\Locked")
    dll(image, LIB + r"\top.dll", [Import("helper.dll", ("h",))])
    graph = graph_of(image, LIB + r"\top.dll")
    helper = node(graph, "helper.dll")
    locked = str(image.host(r"C:\Locked"))
    assert graph.status(helper) == UNREADABLE and helper.reason.startswith(f"the folder {locked} could not be read")
    assert [folder for folder, _ in helper.resolution.unreadable] == [locked]
    assert ("path-fallback", locked) in helper.resolution.tried
    assert graph.status(node(graph, "top.dll")) == CHILDREN_ERROR
    found = next(f for f in diagnose(image).findings if f.code == "dll-unreadable")
    assert found.variant == "folder" and found.evidence["path"] == r"C:\Locked"
    assert found.evidence["reason"].startswith(r"the folder C:\Locked could not be read (")
    assert "C:\\Locked" in found.text("en").explanation and found.text("zh_CN").title


def test_the_retry_searches_the_current_folder_after_windows_and_before_path(image):
    venv = r"C:\Users\alice\venv"  # the environment's folder: the live replay's current folder
    dll(image, venv + r"\here.dll", exports=exports("h"))
    dll(image, r"C:\Tools\bin\here.dll", exports=exports("h"))
    image.add_to_path(r"C:\Tools\bin")
    dll(image, LIB + r"\top.dll", [Import("here.dll", ("h",))])
    graph = graph_of(image, LIB + r"\top.dll")
    here = node(graph, "here.dll")
    assert here.resolution.rule == "legacy-current-folder" and here.path == image.host(venv + r"\here.dll")
    assert graph.status(node(graph, "top.dll")) == OK
    rules = [rule for rule, _ in here.resolution.tried]
    assert rules.index("legacy-system32") < rules.index("legacy-windows") < rules.index("legacy-current-folder")
    first_attempt = here.resolution.tried[:rules.index("legacy-application-folder")]
    assert str(image.host(venv)) not in [folder for _, folder in first_attempt]  # 0x1100 skips the current folder
    assert "here.dll  ok  (current folder (retry))" in render_tree(graph)


def diagnose(builder):
    system = OfflineImage(builder.root)
    return run_diagnosis(system, list(discover(system)))


def test_a_dll_linked_at_another_path_is_parsed_once_and_its_info_names_its_own_path(tmp_path):
    """Sixteen environments uv links to one torch: each file is parsed once (by its identity: device, file number,
    size and time), and every link still gets its own path. A copy of its own (pip's) that gives the reader the
    very bytes the first gave it is not parsed again and shares its tables; one that differs has its own."""
    import shutil

    from app.demo.pe_writer import Export, build_pe
    from app.engine.graph import PECache

    first = tmp_path / "a" / "c10.dll"
    first.parent.mkdir()
    first.write_bytes(build_pe(dll_name="c10.dll", exports=[Export(1, "f")]))
    links = []
    for number in range(16):
        link = tmp_path / f"env{number}" / "c10.dll"
        link.parent.mkdir()
        os.link(first, link)
        links.append(link)
    cache = PECache()
    infos = [cache.get(p) for p in [first, *links]]
    assert cache.parsed == 1
    assert [i.path for i in infos] == [str(p) for p in [first, *links]]
    assert len({id(i.exports) for i in infos}) == 1  # one export table in memory
    copy = tmp_path / "copy" / "c10.dll"
    copy.parent.mkdir()
    shutil.copy2(first, copy)
    assert cache.get(copy).exports is infos[0].exports and (cache.parsed, cache.recognised) == (1, 1)
    other = tmp_path / "other" / "c10.dll"
    other.parent.mkdir()
    other.write_bytes(build_pe(dll_name="c10.dll", exports=[Export(1, "g")]))
    assert other.stat().st_size == copy.stat().st_size  # same name and size: checked against the first, then parsed
    assert list(cache.get(other).exports.names) == ["g"] and (cache.parsed, cache.recognised) == (2, 1)


def _big_dll(path):
    """A DLL of 320 KiB whose tables lie in its first 64 KiB and whose last 256 KiB the reader never reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_pe(dll_name="big.dll", imports=[Import("kernel32.dll", ("Sleep", "ExitProcess"))],
                              exports=[Export(n, f"f{n}") for n in range(1, 300)], file_version=(1, 2, 3, 4),
                              extra_sections=(("pad", bytes(range(256)) * 1024),)))
    return path


def _copy_with(source, target, offset, value=0xA5):
    target.parent.mkdir(parents=True, exist_ok=True)
    data = bytearray(source.read_bytes())
    data[offset] ^= value
    target.write_bytes(bytes(data))
    return target


def _read_at(info, offset):
    return any(start <= offset < start + length for start, length in info.read_ranges)


def test_a_copy_damaged_where_the_reader_read_is_parsed_anew_and_reported(tmp_path):
    """pip's copies of one torch: a copy that gives the reader the very bytes of every range the first parse read
    is that parse, checked at the price of reading those ranges again; a copy damaged inside one of them (an import
    descriptor's name pointed out of the file) is parsed on its own and reported, in either order."""
    from tests.helpers.damaged_torch import damage_import_table

    intact = _big_dll(tmp_path / "intact" / "big.dll")
    copy = _copy_with(intact, tmp_path / "copy" / "big.dll", 0, 0)
    damaged = _copy_with(intact, tmp_path / "damaged" / "big.dll", 0, 0)
    damage_import_table(damaged)
    changed = next(i for i, (a, b) in enumerate(zip(intact.read_bytes(), damaged.read_bytes())) if a != b)
    for order in ([intact, copy, damaged], [damaged, intact, copy]):
        cache = PECache()
        found = {path: cache.get(path) for path in order}
        assert _read_at(found[intact], changed)
        assert isinstance(found[damaged], str) and "import table" in found[damaged]
        assert found[copy].exports is found[intact].exports and found[copy].path == str(copy)
        assert (cache.parsed, cache.recognised) == (2, 1)


def test_a_copy_differing_only_where_the_reader_never_read_shares_because_its_own_parse_is_the_same(tmp_path):
    """Why a copy may share a parse: the reader's path through a file is decided by the file's size and the bytes
    it has read so far, so a byte changed anywhere it never read changes nothing it reads. Every byte position of
    the DLL, changed in turn: where the first parse read, the copy is parsed again; elsewhere it shares that parse;
    and either way the answer is the one a parse of that copy alone gives, reads and all."""
    intact = _big_dll(tmp_path / "intact" / "big.dll")
    first = read_pe(intact)
    size = intact.stat().st_size
    positions = sorted({*range(0, 4096, 29), *range(0, size, 2039), size - 1})  # the headers closely
    shared = 0
    for number, offset in enumerate(positions):
        copy = _copy_with(intact, tmp_path / str(number) / "big.dll", offset)
        cache = PECache()
        cache.get(intact)
        found = cache.get(copy)
        try:
            alone = read_pe(copy)
        except PEError as exc:
            assert found == str(exc)
            continue
        assert found == alone and found.read_digest == alone.read_digest
        assert cache.recognised == (not _read_at(first, offset))
        shared += cache.recognised
    assert shared > 100  # the never-read padding


def test_a_dll_damaged_in_the_middle_is_not_taken_for_its_intact_twin(tmp_path):
    """Same size, same first and last 4 KB, an import table damaged between them: two files, two answers, in
    either order."""
    from app.engine.graph import PECache
    from tests.helpers.damaged_torch import damage_import_table

    intact = tmp_path / "intact" / "big.dll"
    intact.parent.mkdir()
    intact.write_bytes(build_pe(dll_name="big.dll", imports=[Import("kernel32.dll", ("Sleep",))],
                                exports=[Export(n, f"f{n}") for n in range(1, 1500)],  # the code: 6 KB ahead
                                extra_sections=(("pad", bytes(8192)),)))
    damaged = tmp_path / "damaged" / "big.dll"
    damaged.parent.mkdir()
    damaged.write_bytes(intact.read_bytes())
    damage_import_table(damaged)
    data, other = intact.read_bytes(), damaged.read_bytes()
    assert len(data) == len(other) and data[:4096] == other[:4096] and data[-4096:] == other[-4096:] != data
    for order in ([intact, damaged], [damaged, intact]):
        cache = PECache()
        found = {path: cache.get(path) for path in order}
        assert isinstance(found[damaged], str) and "import table" in found[damaged]
        assert [d.name for d in found[intact].imports] == ["kernel32.dll"]


def test_nothing_read_of_a_file_before_the_app_changed_files_is_taken_again(tmp_path):
    """A file written again in place with the same size and its time put back keeps its identity: only the app's
    word that it changed files (a repair, an undo, a rollback) has it read again."""
    from app.engine.graph import PECache
    from app.system.once_per_file import OncePerFile, forget_every_file

    def read_all(file):
        return file.read_bytes()

    path = tmp_path / "a.dll"
    path.write_bytes(build_pe(exports=exports("one")))
    stat = path.stat()
    cache, texts = PECache(), OncePerFile(8, by_content=False)
    assert set(cache.get(path).exports.names) == {"one"}
    assert texts.get(path, read_all) == path.read_bytes()
    before = path.read_bytes()
    with open(path, "r+b") as f:  # same size, same file number
        f.write(build_pe(exports=exports("two"))[:len(before)])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert texts.get(path, read_all) == before  # one identity, one answer
    forget_every_file()
    assert set(cache.get(path).exports.names) == {"two"}
    assert texts.get(path, read_all) == path.read_bytes()


def test_copies_asked_for_at_once_from_several_threads_are_still_parsed_once(tmp_path, monkeypatch):
    """The probes of many environments run at once: a copy whose twin is being parsed waits for that parse instead
    of parsing again (16 envs parsed torch_cpu.dll's 240k exports up to 12 extra times, 90 MB more); a parse that
    fails with an OSError lets the next waiter try."""
    import threading
    import time

    from app.demo.pe_writer import Export, build_pe
    from app.engine import graph

    first = tmp_path / "a" / "c10.dll"
    first.parent.mkdir()
    first.write_bytes(build_pe(dll_name="c10.dll", exports=[Export(1, "f")]))
    copies = [first]
    for number in range(8):
        copy = tmp_path / f"env{number}" / "c10.dll"
        copy.parent.mkdir()
        os.link(first, copy)  # as uv links them
        copies.append(copy)
    real_read = graph.read_pe
    calls = []

    def slow_read(path, *args, **kwargs):
        calls.append(path)
        time.sleep(0.2)  # long enough for every thread to ask while the first parse runs
        if len(calls) == 1:
            raise OSError(13, "locked by a scan")
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(graph, "read_pe", slow_read)
    cache = graph.PECache()
    results = {}
    threads = [threading.Thread(target=lambda p=p: results.__setitem__(p, cache.get(p))) for p in copies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads)
    assert len(calls) == 2 and cache.parsed == 1  # the failed parse, then one for all the others
    unreadable = [p for p, r in results.items() if isinstance(r, graph.Unreadable)]
    assert len(unreadable) == 1
    assert all(results[p].path == str(p) for p in copies if p not in unreadable)


def test_export_names_are_looked_up_as_the_loader_does_without_decoding_the_table(tmp_path):
    """A binary search of the sorted names: asking for present names decodes only those; listing decodes all."""
    from app.engine.pe import ExportNames

    path = tmp_path / "many.dll"
    path.write_bytes(build_pe(exports=[Export(i + 1, f"fn{i:05d}") for i in range(3000)]))
    names = read_pe(path).exports.names
    assert isinstance(names, ExportNames)
    assert names["fn01234"] == 1235 and names.get("fn02999") == 3000 and "fn00000" in names
    assert names._decoded is None  # nothing decoded but what was asked for
    assert "fn99999" not in names and names.get("") is None and "fn\u4e00" not in names
    assert len(names) == 3000 and sorted(names)[:2] == ["fn00000", "fn00001"]


def test_a_name_table_out_of_order_still_answers_for_every_name():
    """A linker writes the names sorted; a crafted file may not: a name the search misses is looked up in all."""
    from app.engine.pe import ExportNames

    blob = b"zeta\0alpha\0mid\0"
    names = ExportNames(blob, 100, (100, 105, 111), (1, 2, 3))
    assert (names["zeta"], names["alpha"], names["mid"]) == (1, 2, 3)
    assert dict(names) == {"zeta": 1, "alpha": 2, "mid": 3} and "other" not in names
    unterminated = ExportNames(b"abc", 0, (0,), (7,))
    assert unterminated["abc"] == 7  # as far as the file goes, never an error later in the graph
