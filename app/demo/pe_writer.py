"""Writes small but valid Windows PE files (DLLs and EXEs) with chosen imports, exports and version info.

Used by the test-suite and the demo machine. Stdlib only. Layout: headers, ``.text`` (entry point and one
tiny stub per exported function), ``.rdata`` (IAT, import/delay-import tables, export directory, load
config), ``.data`` (delay-load IAT and module handles), ``.rsrc`` (version), then any extra sections.
The file-alignment slack after the headers and after each section (beyond its VirtualSize) is filled with
a counting byte pattern rather than zeros, so pefile's "byte 0x00 makes up more than 50% of the file"
heuristic stays quiet for these tiny files; nothing reads that slack. Inputs that are mostly zero-valued
tables (hundreds of empty export slots, many 64-bit ordinal imports) can still trip the heuristic.
"""

from __future__ import annotations

import os
import pathlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass

MACHINES = {"x86": 0x14C, "x64": 0x8664, "arm64": 0xAA64}

FILE_ALIGNMENT, SECTION_ALIGNMENT = 0x200, 0x1000
_CODE, _RDATA, _DATA = 0x60000020, 0x40000040, 0xC0000040  # section characteristics
_HEADERS_END = 0x80 + 4 + 20  # DOS header + stub, "PE\0\0", file header
# Per machine: DllMain returning TRUE, EXE entry returning 0 (both 8 bytes), one export stub returning 0.
_MACHINE_CODE = {
    0x14C: ("b801000000c20c00", "31c0c20400cccccc", "31c0c3cc"),  # mov eax,1; ret 12 | xor eax,eax; ret 4
    0x8664: ("b801000000c3cccc", "31c0c3cccccccccc", "31c0c3cc"),  # mov eax,1; ret | xor eax,eax; ret
    0xAA64: ("20008052c0035fd6", "00008052c0035fd6", "00008052c0035fd6"),  # mov w0,#1; ret | mov w0,#0; ret
}
_DOS = (
    b"MZ" + struct.pack("<13H", 0x90, 3, 0, 4, 0, 0xFFFF, 0, 0xB8, 0, 0, 0, 0x40, 0) + bytes(32)
    + struct.pack("<I", 0x80) + bytes.fromhex("0e1fba0e00b409cd21b8014ccd21")
    + b"This program cannot be run in DOS mode.\r\r\n$" + bytes(7)
)
_SLACK = bytes(range(256))


@dataclass(frozen=True)
class Import:
    """One imported DLL: functions are names (str) or ordinals (int); delay=True uses the delay-load table."""

    dll: str
    functions: tuple[str | int, ...] = ()
    delay: bool = False


@dataclass(frozen=True)
class Export:
    """One exported ordinal, optionally named, optionally forwarded ("dll.func" or "dll.#12")."""

    ordinal: int
    name: str | None = None
    forwarder: str | None = None


class _Section:
    """A section's contents, laid out at a known RVA."""

    def __init__(self, name: str, rva: int, flags: int) -> None:
        """Start an empty section at rva."""
        self.name, self.rva, self.flags, self.buf = name, rva, flags, bytearray()

    def here(self, align: int = 1) -> int:
        """Pad the contents to a multiple of align and return the RVA of the next byte."""
        self.buf += bytes(-len(self.buf) % align)
        return self.rva + len(self.buf)

    def put(self, data: bytes, align: int = 1) -> int:
        """Append data at the next multiple of align and return its RVA."""
        rva = self.here(align)
        self.buf += data
        return rva

    def patch(self, rva: int, data: bytes) -> None:
        """Overwrite already-laid-out bytes at rva."""
        self.buf[rva - self.rva : rva - self.rva + len(data)] = data

    def end(self) -> int:
        """RVA where the next section starts."""
        return _align(self.rva + max(len(self.buf), 1), SECTION_ALIGNMENT)


def _align(value: int, alignment: int) -> int:
    """Round value up to a multiple of alignment."""
    return -(-value // alignment) * alignment


def _slack(length: int) -> bytes:
    """Deterministic, non-zero-heavy filler for file-alignment slack."""
    return (_SLACK * (length // len(_SLACK) + 1))[:length]


def _even(data: bytes) -> bytes:
    """Pad data with one NUL to an even length (hint/name entries are WORD-aligned)."""
    return data + b"\0" * (len(data) & 1)


def _ptrs(values: list, ptr: int) -> bytes:
    """Pack a NUL-terminated array of pointer-sized values."""
    return struct.pack(f"<{len(values) + 1}{'Q' if ptr == 8 else 'I'}", *values, 0)


def _starts(base: int, lengths: list) -> list:
    """RVAs of consecutive blocks of the given byte lengths starting at base."""
    out = []
    for length in lengths:
        out.append(base)
        base += length
    return out


def _import_strings(imports: list, base: int, ordinal_flag: int) -> tuple:
    """Lay out DLL names and hint/name entries at base; return the blob and (name RVA, thunks) per DLL."""
    parts, tables, pos = [], [], base
    for imp in imports:
        if not imp.functions:
            raise ValueError(f"import of {imp.dll!r} lists no functions (the loader and pefile skip it)")
        parts.append(_even(imp.dll.encode("ascii") + b"\0"))
        name_rva, pos, thunks = pos, pos + len(parts[-1]), []
        for func in imp.functions:
            if isinstance(func, int):
                if not 0 <= func <= 0xFFFF:
                    raise ValueError(f"import ordinal {func} of {imp.dll!r} is not a 16-bit value")
                thunks.append(ordinal_flag | func)
            else:
                parts.append(_even(b"\0\0" + func.encode("ascii") + b"\0"))  # hint 0, name, NUL
                thunks.append(pos)
                pos += len(parts[-1])
        tables.append((name_rva, thunks))
    return b"".join(parts), tables


def _export_block(rdata: _Section, exports: list, base: int, dll_name: str, code_rvas: list) -> tuple:
    """Write the export directory with its tables and strings; return (RVA, size)."""
    ordinals = [e.ordinal for e in exports]
    names = [e.name.encode("ascii") for e in exports if e.name is not None]
    if len(set(ordinals)) != len(ordinals) or len(set(names)) != len(names):
        raise ValueError("export ordinals and export names must be unique")
    if base < 1 or min(ordinals) < base or max(ordinals) > 0xFFFF:
        raise ValueError(f"export ordinals must lie in [ordinal base, 65535] with base >= 1 (base {base})")
    count = max(ordinals) - base + 1
    named = sorted((e for e in exports if e.name is not None), key=lambda e: e.name.encode("ascii"))
    forwarded = [e for e in exports if e.forwarder is not None]
    dir_rva = rdata.here(4)
    eat_rva = dir_rva + 40
    names_rva = eat_rva + 4 * count
    ords_rva = names_rva + 4 * len(named)
    strings = [dll_name] + [e.name for e in named] + [e.forwarder for e in forwarded]
    strings = [s.encode("ascii") + b"\0" for s in strings]
    string_rvas = _starts(ords_rva + 2 * len(named), [len(s) for s in strings])
    eat = [0] * count
    for export, rva in code_rvas:
        eat[export.ordinal - base] = rva
    for export, rva in zip(forwarded, string_rvas[1 + len(named) :]):
        eat[export.ordinal - base] = rva  # inside the directory range, so it reads as a forwarder
    head = struct.pack(
        "<IIHHIIIIIII", 0, 0, 0, 0, string_rvas[0], base, count, len(named), eat_rva, names_rva, ords_rva
    )
    block = b"".join(
        [
            head,
            struct.pack(f"<{count}I", *eat),
            struct.pack(f"<{len(named)}I", *string_rvas[1 : 1 + len(named)]),
            struct.pack(f"<{len(named)}H", *(e.ordinal - base for e in named)),
            *strings,
        ]
    )
    return rdata.put(block), len(block)


def _version_node(key: str, value: bytes = b"", children: tuple = (), text: bool = False) -> bytes:
    """One VS_VERSIONINFO-style node: length/value-length/type header, key, value and children."""
    out = bytearray(6) + (key + "\0").encode("utf-16-le")
    if value:
        out += bytes(-len(out) % 4) + value
    for child in children:
        out += bytes(-len(out) % 4) + child
    struct.pack_into("<3H", out, 0, len(out), len(value) // 2 if text else len(value), int(text))
    return bytes(out)


def _version_info(file_version: tuple | None, product_version: tuple | None, dll: bool,
                  company: str | None = None, description: str | None = None, product_name: str | None = None,
                  original_filename: str | None = None) -> bytes:
    """VS_VERSIONINFO with VS_FIXEDFILEINFO, a 040904B0 StringFileInfo and a VarFileInfo translation."""
    words, strings = [], []
    for key, text in (("CompanyName", company), ("FileDescription", description), ("ProductName", product_name),
                      ("OriginalFilename", original_filename)):
        if text is not None:
            strings.append(_version_node(key, (text + "\0").encode("utf-16-le"), text=True))
    for key, version in (("FileVersion", file_version), ("ProductVersion", product_version)):
        if version is not None:
            version = tuple(version)
            if len(version) != 4 or not all(0 <= v <= 0xFFFF for v in version):
                raise ValueError(f"{key} must be four 16-bit numbers, got {version!r}")
            text = ".".join(map(str, version)) + "\0"
            strings.append(_version_node(key, text.encode("utf-16-le"), text=True))
        a, b, c, d = version or (0, 0, 0, 0)
        words += [a << 16 | b, c << 16 | d]
    fixed = struct.pack("<13I", 0xFEEF04BD, 0x10000, *words, 0x3F, 0, 0x40004, 2 if dll else 1, 0, 0, 0)
    table = _version_node("040904B0", children=strings, text=True)
    translation = _version_node("Translation", struct.pack("<2H", 0x409, 1200))
    children = (_version_node("StringFileInfo", children=(table,), text=True),
                _version_node("VarFileInfo", children=(translation,), text=True))
    return _version_node("VS_VERSION_INFO", fixed, children)


def _resource_tree(rva: int, version_info: bytes) -> bytes:
    """Resource directory RT_VERSION(16) / id 1 / language 0x409 -> the version info blob."""
    def level(ident: int, target: int) -> bytes:
        return struct.pack("<IIHHHHII", 0, 0, 0, 0, 0, 1, ident, target)

    return b"".join([level(16, 0x80000018), level(1, 0x80000030), level(0x409, 0x48),
                     struct.pack("<4I", rva + 0x58, len(version_info), 0, 0), version_info])


def build_pe(
    *, machine: str | int = "x64", dll: bool = True, imports: Iterable[Import] = (),
    exports: Iterable[Export] = (), ordinal_base: int | None = None, dll_name: str = "test.dll",
    file_version: tuple[int, int, int, int] | None = None,
    product_version: tuple[int, int, int, int] | None = None, company: str | None = None,
    description: str | None = None, product_name: str | None = None, original_filename: str | None = None,
    linker_version: tuple[int, int] = (14, 38), dependent_load_flags: int | None = None,
    extra_sections: tuple[tuple[str, bytes], ...] = (),
    pad_to: int | None = None, shared_list_copies: int = 0,
) -> bytes:
    """Build a PE image in memory; pad_to is only checked here (write_pe applies it sparsely).

    shared_list_copies > 0 makes a damaged file for reader tests: that many more import descriptors, each a copy
    of the first one, so all of them share its one list of functions.
    """
    machine_id = MACHINES.get(machine) if isinstance(machine, str) else machine
    if machine_id not in _MACHINE_CODE:
        raise ValueError(f"unknown machine {machine!r}; use one of {sorted(MACHINES)}")
    pe64 = machine_id != MACHINES["x86"]
    ptr, ordinal_flag = (8, 1 << 63) if pe64 else (4, 1 << 31)
    imports, exports = tuple(imports), sorted(exports, key=lambda e: e.ordinal)
    regular, delayed = [i for i in imports if not i.delay], [i for i in imports if i.delay]
    dirs = [(0, 0)] * 16
    sections = []

    # .text: the entry point, then a stub for every export that is not a forwarder
    entry_code, exe_code, stub = (bytes.fromhex(h) for h in _MACHINE_CODE[machine_id])
    text = _Section(".text", SECTION_ALIGNMENT, _CODE)
    entry = text.put(entry_code if dll else exe_code)
    code_exports = [e for e in exports if e.forwarder is None]
    code_rvas = list(zip(code_exports, _starts(text.here(), [len(stub)] * len(code_exports))))
    text.put(stub * len(code_exports))
    sections.append(text)

    # .rdata: IAT first (as MSVC does), then names, import descriptors + ILTs, delay descriptors + INTs, ...
    rdata = _Section(".rdata", text.end(), _RDATA)
    iat_lengths = [(len(i.functions) + 1) * ptr for i in regular]
    strings, tables = _import_strings(regular + delayed, rdata.rva + sum(iat_lengths), ordinal_flag)
    regular_tables, delayed_tables = tables[: len(regular)], tables[len(regular) :]
    if regular:
        iat_rvas = _starts(rdata.rva, iat_lengths)
        dirs[12] = (rdata.put(b"".join(_ptrs(t, ptr) for _, t in regular_tables)), sum(iat_lengths))
    rdata.put(strings)
    if shared_list_copies and not regular:
        raise ValueError("shared_list_copies needs a (non-delay) import to copy")
    if regular:
        desc_rva = rdata.here(4)
        descriptor_count = len(regular) + shared_list_copies
        ilt_rvas = _starts(_align(desc_rva + 20 * (descriptor_count + 1), 8), iat_lengths)
        descriptors = [struct.pack("<5I", ilt, 0, 0, name, iat)
                       for (name, _), ilt, iat in zip(regular_tables, ilt_rvas, iat_rvas)]
        rdata.put(b"".join(descriptors + descriptors[:1] * shared_list_copies) + bytes(20))
        rdata.put(b"".join(_ptrs(t, ptr) for _, t in regular_tables), 8)
        dirs[1] = (desc_rva, 20 * (descriptor_count + 1))
    if delayed:
        delay_desc_rva = rdata.put(bytes(32 * (len(delayed) + 1)), 4)  # patched once .data's RVA is known
        dirs[13] = (delay_desc_rva, 32 * (len(delayed) + 1))
        int_lengths = [(len(i.functions) + 1) * ptr for i in delayed]
        int_rvas = _starts(rdata.here(8), int_lengths)
        rdata.put(b"".join(_ptrs(t, ptr) for _, t in delayed_tables))
    if exports:
        base = ordinal_base if ordinal_base is not None else exports[0].ordinal
        dirs[0] = _export_block(rdata, exports, base, dll_name, code_rvas)
    if dependent_load_flags is not None:
        # IMAGE_LOAD_CONFIG_DIRECTORY32/64 up to SEHandlerCount (the classic 0x48 / 0x70 layouts)
        config = bytearray(0x70 if pe64 else 0x48)
        struct.pack_into("<I", config, 0, len(config))
        struct.pack_into("<H", config, 0x4E if pe64 else 0x36, dependent_load_flags)
        dirs[10] = (rdata.put(bytes(config), 8), len(config))
    if rdata.buf:
        sections.append(rdata)

    # .data: delay-load IATs (initially equal to the name tables) and one module-handle slot per DLL
    if delayed:
        data = _Section(".data", sections[-1].end(), _DATA)
        delay_iat_rvas = _starts(data.rva, int_lengths)
        data.put(b"".join(_ptrs(t, ptr) for _, t in delayed_tables))
        hmod_rvas = _starts(data.here(8), [ptr] * len(delayed))
        data.put(bytes(ptr * len(delayed)))
        rdata.patch(delay_desc_rva, b"".join(
            struct.pack("<8I", 1, name, hmod, iat, int_rva, 0, 0, 0)
            for (name, _), hmod, iat, int_rva in zip(delayed_tables, hmod_rvas, delay_iat_rvas, int_rvas)))
        sections.append(data)
    if file_version is not None or product_version is not None:
        rsrc = _Section(".rsrc", sections[-1].end(), _RDATA)
        rsrc.put(_resource_tree(rsrc.rva, _version_info(file_version, product_version, dll, company, description,
                                                               product_name, original_filename)))
        dirs[2] = (rsrc.rva, len(rsrc.buf))
        sections.append(rsrc)
    for name, payload in extra_sections:
        if not payload or len(name.encode("ascii")) > 8:
            raise ValueError(f"extra section {name!r} needs a name of at most 8 bytes and some data")
        extra = _Section(name, sections[-1].end(), _RDATA)
        extra.put(bytes(payload))
        sections.append(extra)

    # headers: file header, optional header (PE32 or PE32+), 16 data directories, section table
    optional_size = (112 if pe64 else 96) + 16 * 8
    headers_size = _align(_HEADERS_END + optional_size + 40 * len(sections), FILE_ALIGNMENT)
    if headers_size > SECTION_ALIGNMENT:
        raise ValueError(f"too many sections ({len(sections)}) for one page of headers")
    raw_sizes = [_align(len(s.buf), FILE_ALIGNMENT) for s in sections]
    raw_offsets = _starts(headers_size, raw_sizes)
    characteristics = 0x0002 | (0x2000 if dll else 0) | (0x0020 if pe64 else 0x0100)
    file_header = struct.pack("<HHIIIHH", machine_id, len(sections), 0, 0, 0, optional_size, characteristics)
    image_base = (0x180000000 if dll else 0x140000000) if pe64 else (0x10000000 if dll else 0x400000)
    os_version = (6, 2) if machine_id == MACHINES["arm64"] else (6, 0)
    dll_characteristics = 0x0140 | (0x0020 if pe64 else 0)  # NX_COMPAT, DYNAMIC_BASE (+ HIGH_ENTROPY_VA)
    sizes = (raw_sizes[0], sum(raw_sizes[1:]), 0, entry, text.rva)
    tail = (
        SECTION_ALIGNMENT, FILE_ALIGNMENT, *os_version, 0, 0, *os_version,  # OS, image, subsystem versions
        0, sections[-1].end(), headers_size, 0, 2 if dll else 3, dll_characteristics,  # ..., CheckSum 0
        0x100000, 0x1000, 0x100000, 0x1000, 0, 16,  # stack and heap reserve/commit, loader flags
    )
    if pe64:
        optional = struct.pack("<HBB5IQ2I6H4I2H4Q2I", 0x20B, *linker_version, *sizes, image_base, *tail)
    else:
        base_of_data = sections[1].rva if len(sections) > 1 else 0
        optional = struct.pack("<HBB9I6H4I2H6I", 0x10B, *linker_version, *sizes, base_of_data, image_base,
                               *tail)
    optional += b"".join(struct.pack("<II", *d) for d in dirs)
    table = b"".join(
        struct.pack("<8s6I2HI", s.name.encode("ascii"), len(s.buf), s.rva, size, offset, 0, 0, 0, 0, s.flags)
        for s, size, offset in zip(sections, raw_sizes, raw_offsets)
    )
    headers = _DOS + b"PE\0\0" + file_header + optional + table
    parts = [headers, _slack(headers_size - len(headers))]
    for section, size in zip(sections, raw_sizes):
        parts += [bytes(section.buf), _slack(size - len(section.buf))]
    image = b"".join(parts)
    if pad_to is not None and pad_to < len(image):
        raise ValueError(f"pad_to={pad_to} is smaller than the image ({len(image)} bytes)")
    return image


def write_pe(path: str | os.PathLike[str], **kwargs) -> pathlib.Path:
    """build_pe() then write; with pad_to, extend the file sparsely (f.truncate) instead of writing zeros."""
    path = pathlib.Path(path)
    image = build_pe(**kwargs)
    with open(path, "wb") as f:
        f.write(image)
        if kwargs.get("pad_to") is not None:
            f.truncate(kwargs["pad_to"])
    return path
