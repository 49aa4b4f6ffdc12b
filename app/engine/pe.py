"""The one PE reader: headers and tables of a Windows DLL or EXE, read without reading the whole file.

torch's DLLs reach 1 GB, and pefile's full parse of torch_cpu.dll costs 20 s and 1.2 GB; its fast mode
drops import DLLs past 8,192 symbols and truncates export tables at 8,192 ("Assuming corrupt").
This reader seeks to the few tables it needs, bounds every count, and turns every malformed input
into a PEError with a reason, so a scan of a broken DLL never crashes or hangs.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import BinaryIO, Iterator, Optional, Union

CPU_NAMES = {0x14C: "x86", 0x8664: "x64", 0xAA64: "arm64", 0x1C4: "arm", 0x200: "ia64", 0xA641: "arm64ec"}

# Bounds on what a sane image holds; beyond them the file is reported corrupt instead of read.
MAX_SECTIONS = 96  # the Windows loader's own limit
MAX_IMPORT_DLLS = 4096  # entries of both tables together; the most in 310 real DLLs checked here is 33
MAX_IMPORTED_FUNCTIONS = 1 << 16  # all lists of a file together: ~5x the most in 776 real DLLs (13,598)
MAX_DLL_NAME = 255  # the longest file name Windows allows
MAX_EXPORTS = 1 << 16  # ordinals are 16-bit
MAX_EXPORT_NAMES = 1 << 17
MAX_NAME = 4096
MAX_RESOURCE_ENTRIES = 4096
MAX_VERSION_RESOURCE = 1 << 16
_BLOCK = 1 << 16
_MAX_CACHED_BLOCKS = 256
_MAX_BULK_READ = 64 << 20

PathLike = Union[str, "os.PathLike[str]"]

# A DLL name as a linker writes it: printable ASCII, none of the characters Windows forbids in file names.
_DLL_NAME = re.compile(rb'[^\x00-\x1f\x7f-\xff<>:"|?*]{1,%d}' % MAX_DLL_NAME)


class PEError(Exception):
    """The file is not a readable PE image; str() is the reason, in plain words."""


@dataclass(frozen=True)
class ImportedFunction:
    """One function an importer asks for: by name, or by ordinal when name is None."""

    name: Optional[str] = None
    ordinal: Optional[int] = None

    def __str__(self) -> str:
        return self.name if self.name is not None else f"#{self.ordinal}"


@dataclass(frozen=True)
class ImportedDll:
    name: str
    functions: tuple[ImportedFunction, ...]
    delay: bool = False


class ExportNames(Mapping):
    """The export name table, name -> ordinal, looked up as Windows' loader looks a name up: a binary search of the
    names, which linkers write sorted. A name is decoded only when it is asked for (torch_cpu.dll has 50,000; an
    importer asks for a few hundred); listing the table (a person opening a DLL's exports, a name not found by the
    search in a table that is not sorted) decodes them all, once."""

    def __init__(self, blob: bytes, low: int, rvas: tuple[int, ...], ordinals: tuple[int, ...]) -> None:
        self._blob, self._low, self._rvas, self._ordinals = blob, low, rvas, ordinals
        self._decoded: Optional[dict[str, int]] = None
        self._looked_up: dict[str, int] = {}  # names found so far: the table is shared by every copy of the DLL

    def _raw(self, index: int) -> bytes:
        at = self._rvas[index] - self._low
        stop = self._blob.find(b"\0", at, at + MAX_NAME)
        return self._blob[at:stop if stop >= 0 else at + MAX_NAME]  # unterminated: as far as a name may go

    def __getitem__(self, name: str) -> int:
        found = self._looked_up.get(name)
        if found is not None:
            return found
        found = self._search(name)
        self._looked_up[name] = found
        return found

    def _search(self, name: str) -> int:
        try:
            wanted = name.encode("latin-1")
        except UnicodeEncodeError:
            raise KeyError(name) from None
        low, high = 0, len(self._rvas)
        while low < high:
            middle = (low + high) // 2
            if self._raw(middle) < wanted:
                low = middle + 1
            else:
                high = middle
        if low < len(self._rvas) and self._raw(low) == wanted:
            return self._ordinals[low]
        return self._all()[name]  # not found by the search: certain only once every name was read

    def _all(self) -> dict[str, int]:
        if self._decoded is None:
            texts: dict[int, str] = {}  # by address: crafted tables point thousands of entries at one string
            decoded: dict[str, int] = {}
            for index, rva in enumerate(self._rvas):
                text = texts.get(rva)
                if text is None:
                    text = texts[rva] = self._raw(index).decode("latin-1")
                decoded.setdefault(text, self._ordinals[index])  # the first, as the search finds it
            self._decoded = decoded
        return self._decoded

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"ExportNames({len(self._rvas)} names)"


@dataclass(frozen=True)
class ExportTable:
    dll_name: str
    base: int
    ordinals: frozenset[int]  # ordinals whose address is set
    names: Mapping[str, int]  # name -> ordinal: ExportNames, or a dict where the names lie scattered
    forwarders: dict[int, str]  # ordinal -> "otherdll.function" or "otherdll.#12"

    _asked: dict[int, tuple] = field(default_factory=dict, compare=False, repr=False)

    def not_plain(self, functions: tuple[ImportedFunction, ...]) -> tuple[ImportedFunction, ...]:
        """Those of an importer's `functions` that this DLL does not export as code of its own: missing, or
        forwarded to another DLL. Answered once per importer's list: the tables of a DLL and of its importers are
        shared by every copy of them, so sixteen environments of one torch ask the same question sixteen times."""
        asked = self._asked.get(id(functions))
        if asked is not None and asked[0] is functions:
            return asked[1]
        found = tuple(f for f in functions if (ordinal := self.ordinal_of(f)) is None or ordinal in self.forwarders)
        self._asked[id(functions)] = (functions, found)  # the list itself is kept: its id is never reused
        return found

    def ordinal_of(self, function: ImportedFunction) -> Optional[int]:
        """The ordinal that satisfies this import, or None when the DLL does not export it."""
        if function.name is not None:
            return self.names.get(function.name)
        return function.ordinal if function.ordinal in self.ordinals else None

    def name_of(self, ordinal: int) -> Optional[str]:
        for name, value in self.names.items():
            if value == ordinal:
                return name
        return None


@dataclass(frozen=True)
class PEInfo:
    path: str
    size: int
    cpu_type: int  # the header's Machine field (0x8664 x64, 0x14C x86, 0xAA64 arm64)
    is_pe32_plus: bool
    is_dll: bool
    linker_version: tuple[int, int]
    imports: tuple[ImportedDll, ...]
    exports: Optional[ExportTable]
    file_version: Optional[str]
    product_version: Optional[str]
    dependent_load_flags: int
    warnings: tuple[str, ...] = field(default=())
    company: Optional[str] = None  # the version resource's CompanyName: whose build it is
    description: Optional[str] = None  # its FileDescription, as Explorer's Properties shows it
    product_name: Optional[str] = None  # its ProductName
    original_filename: Optional[str] = None  # its OriginalFilename: the name its maker gave the file
    section_names: tuple[str, ...] = ()  # ".text", ".rsrc", ".wixburn" (a WiX Burn bundle), ...
    # SHA-256 of every range the reader read, with its place: the facts are made of these bytes alone
    read_digest: bytes = field(default=b"", repr=False)
    # those ranges, (offset, length) in the order read: another file that gives the same bytes there is this one
    read_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False, compare=False)

    @property
    def cpu_name(self) -> str:
        return CPU_NAMES.get(self.cpu_type, f"0x{self.cpu_type:04x}")


def read_cpu_type(path: PathLike) -> int:
    """Only the CPU type (the header's Machine field, 2 bytes at e_lfanew + 4): a quick check of python.exe."""
    with open(path, "rb") as f:
        source = _Source(f)
        return _read_headers(source).cpu_type


def read_section(path: PathLike, name: str, limit: int = 16 << 20) -> Optional[bytes]:
    """The raw bytes of one named section (e.g. `.apiset` of apisetschema.dll), or None if absent."""
    with open(path, "rb") as f:
        source = _Source(f)
        headers = _read_headers(source)
        for raw_name, (_, _, raw_ptr, raw_size) in zip(headers.section_names, headers.sections):
            if raw_name.rstrip(b"\0").decode("ascii", "replace") == name:
                return source.read(raw_ptr, min(raw_size, limit), f"the {name} section")
    return None


def read_pe(path: PathLike, *, with_exports: bool = True) -> PEInfo:
    """Read the headers and tables of one PE file. Raises PEError (bad image) or OSError (cannot open)."""
    with open(path, "rb") as f:
        return read_pe_stream(f, str(path), with_exports=with_exports)


def read_pe_stream(f: BinaryIO, path: str = "<stream>", *, with_exports: bool = True) -> PEInfo:
    source = _Source(f)
    try:
        headers = _read_headers(source)
        image = _Image(source, headers)
        warnings: list[str] = []
        imports = image.imports() + image.delay_imports()
        exports = image.exports() if with_exports else None
        versions = image.versions(warnings)
        load_flags = image.dependent_load_flags(warnings)
    except PEError:
        raise
    except (struct.error, ValueError, IndexError, OverflowError, MemoryError) as exc:
        raise PEError(f"the file's tables are damaged ({exc.__class__.__name__}: {exc})") from exc
    return PEInfo(
        path=path,
        size=source.size,
        cpu_type=headers.cpu_type,
        is_pe32_plus=headers.is_pe32_plus,
        is_dll=bool(headers.characteristics & 0x2000),
        linker_version=headers.linker_version,
        imports=tuple(imports),
        exports=exports,
        file_version=versions[0],
        product_version=versions[1],
        dependent_load_flags=load_flags,
        warnings=tuple(warnings),
        company=versions[2],
        description=versions[3],
        product_name=versions[4],
        original_filename=versions[5],
        section_names=tuple(n.rstrip(b"\0").decode("ascii", "replace") for n in headers.section_names),
        read_digest=source.digest.digest(),
        read_ranges=tuple(source.ranges),
    )


def read_pe_as(path: PathLike, known: PEInfo) -> Optional[PEInfo]:
    """`known`'s facts under `path`, when the file there has `known`'s size and gives the very bytes `known`'s file
    gave at every range the reader read of it (by `read_digest`); None when anything differs (then read_pe it).

    Sound because each read of the reader is decided by the file's size and the bytes of the reads before it, and
    nothing else: the same size and the same bytes at the first read give the same second read, and so on, so
    read_pe of this file would make every read `known` made, get the same bytes, and return the same facts. What
    lies outside those ranges was never looked at, so it cannot change them. `known` read without exports gives
    facts without exports. Raises OSError (cannot open)."""
    with open(path, "rb") as f:
        source = _Source(f)
        if source.size != known.size or not known.read_ranges:
            return None
        for offset, length in known.read_ranges:
            source.hashed_read(offset, length)
        if source.digest.digest() != known.read_digest:
            return None
    return replace(known, path=str(path))


def _version_string(data: bytes, key: str) -> Optional[str]:
    """One value of a version resource's string table (a String node: wLength, wValueLength in characters,
    wType, the key in UTF-16, padding to 4 bytes, the value), or None."""
    at = data.find((key + "\0").encode("utf-16-le"))
    while at >= 6 and at % 2:  # a match that starts inside a character is not the key
        at = data.find((key + "\0").encode("utf-16-le"), at + 1)
    if at < 6:
        return None
    (length,) = struct.unpack_from("<H", data, at - 4)
    start = at + 2 * (len(key) + 1)
    start += -(start - (at - 6)) % 4
    value = data[start:start + 2 * length].decode("utf-16-le", "replace").split("\0")[0].strip()
    return value or None


class _Source:
    """Bounded, block-cached reads of a file; never reads more than it is asked for (rounded to 64 KiB)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        f.seek(0, os.SEEK_END)
        self.size = f.tell()
        self.blocks: dict[int, bytes] = {}
        self.digest = hashlib.sha256()  # of every read, with its offset (PEInfo.read_digest)
        self.ranges: list[tuple[int, int]] = []  # every read, in order (PEInfo.read_ranges)

    def hashed_read(self, offset: int, length: int) -> bytes:
        self.f.seek(offset)
        data = self.f.read(length)
        self.digest.update(struct.pack("<QQ", offset, len(data)))
        self.digest.update(data)
        self.ranges.append((offset, len(data)))
        return data

    def read(self, offset: int, length: int, what: str = "a table") -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise PEError(f"{what} points outside the file (offset {offset:#x}, {length} bytes, "
                          f"file is {self.size} bytes)")
        if length > _BLOCK:
            if length > _MAX_BULK_READ:
                raise PEError(f"{what} is implausibly large ({length} bytes)")
            return self.hashed_read(offset, length)
        first, last = offset // _BLOCK, (offset + length - 1) // _BLOCK if length else offset // _BLOCK
        data = b"".join(self._block(i) for i in range(first, last + 1))
        start = offset - first * _BLOCK
        return data[start:start + length]

    def _block(self, index: int) -> bytes:
        block = self.blocks.get(index)
        if block is None:
            if len(self.blocks) >= _MAX_CACHED_BLOCKS:
                self.blocks.clear()
            block = self.blocks[index] = self.hashed_read(index * _BLOCK, _BLOCK)
        return block

    def cstring(self, offset: int, what: str = "a name") -> bytes:
        """The NUL-terminated string at offset (at most MAX_NAME bytes), found inside the cached blocks."""
        if offset < 0 or offset >= self.size:
            raise PEError(f"{what} points outside the file (offset {offset:#x})")
        parts: list[bytes] = []
        room = MAX_NAME + 1  # the name and its NUL
        while room > 0:
            index, start = divmod(offset, _BLOCK)
            block = self._block(index) if offset < self.size else b""
            stop = min(len(block), start + room)
            if stop <= start:
                raise PEError(f"{what} runs past the end of the file")
            end = block.find(b"\0", start, stop)
            if end >= 0:
                parts.append(block[start:end])
                return b"".join(parts)
            parts.append(block[start:stop])
            room -= stop - start
            offset += stop - start
        raise PEError(f"{what} is longer than {MAX_NAME} bytes")


@dataclass(frozen=True)
class _Headers:
    cpu_type: int
    characteristics: int
    is_pe32_plus: bool
    linker_version: tuple[int, int]
    image_base: int
    size_of_headers: int
    directories: tuple[tuple[int, int], ...]
    sections: tuple[tuple[int, int, int, int], ...]  # (virtual address, virtual size, raw offset, raw size)
    section_names: tuple[bytes, ...]


def _read_headers(source: _Source) -> _Headers:
    if source.size == 0:
        raise PEError("the file is empty (0 bytes)")
    if source.size < 64:
        raise PEError(f"the file is too small to be a Windows DLL ({source.size} bytes)")
    dos = source.read(0, 64, "the DOS header")
    if dos[:2] != b"MZ":
        raise PEError("not a Windows DLL or program (no MZ header)")
    (e_lfanew,) = struct.unpack_from("<I", dos, 0x3C)
    if e_lfanew + 24 > source.size:
        raise PEError("MZ header without a PE header (the PE header offset is past the end of the file)")
    head = source.read(e_lfanew, 24, "the PE header")
    if head[:4] != b"PE\0\0":
        raise PEError("MZ header without a PE header (an old DOS program, or a damaged file)")
    machine, n_sections, _, _, _, opt_size, characteristics = struct.unpack_from("<HHIIIHH", head, 4)
    if n_sections > MAX_SECTIONS:
        raise PEError(f"absurd section count ({n_sections})")
    opt_offset = e_lfanew + 24
    if opt_size < 2:
        raise PEError("the optional header is missing")
    opt = source.read(opt_offset, opt_size, "the optional header (truncated headers)")
    (magic,) = struct.unpack_from("<H", opt, 0)
    if magic == 0x10B:
        is_plus, dir_count_at, image_base_fmt, image_base_at = False, 92, "<I", 28
    elif magic == 0x20B:
        is_plus, dir_count_at, image_base_fmt, image_base_at = True, 108, "<Q", 24
    else:
        raise PEError(f"unknown optional header type ({magic:#x})")
    if opt_size < dir_count_at + 4:
        raise PEError("the optional header is truncated")
    (image_base,) = struct.unpack_from(image_base_fmt, opt, image_base_at)
    (size_of_headers,) = struct.unpack_from("<I", opt, 60)
    (dir_count,) = struct.unpack_from("<I", opt, dir_count_at)
    dir_count = min(dir_count, 16, (opt_size - dir_count_at - 4) // 8)
    directories = tuple(struct.unpack_from("<II", opt, dir_count_at + 4 + 8 * i) for i in range(dir_count))
    table = source.read(opt_offset + opt_size, 40 * n_sections, "the section table (truncated headers)")
    sections = tuple(
        (va, vsize, raw_ptr, raw_size)
        for vsize, va, raw_size, raw_ptr in (struct.unpack_from("<IIII", table, 40 * i + 8) for i in range(n_sections))
    )
    names = tuple(table[40 * i:40 * i + 8] for i in range(n_sections))
    return _Headers(machine, characteristics, is_plus, (opt[2], opt[3]), image_base, size_of_headers,
                    directories, sections, names)


class _Image:
    def __init__(self, source: _Source, headers: _Headers) -> None:
        self.src = source
        self.h = headers
        self.thunk_size, self.ordinal_flag = (8, 1 << 63) if headers.is_pe32_plus else (4, 1 << 31)
        self.last_section = headers.sections[0] if headers.sections else (0, 0, 0, 0)
        # Shared by the import and delay tables: what is left of the file's budget, and the lists read so far
        # (sorted starts, their ends and their entries), so a list read twice is found before it is walked again.
        self.descriptors_left = MAX_IMPORT_DLLS
        self.functions_left = MAX_IMPORTED_FUNCTIONS
        self.list_starts: list[int] = []
        self.list_ends: list[int] = []
        self.list_owners: list[str] = []
        # Names by address: a crafted table pointing every entry at one 4 KiB string costs one string, not 65,536.
        self.import_names: dict[int, str] = {}

    def directory(self, index: int) -> tuple[int, int]:
        return self.h.directories[index] if index < len(self.h.directories) else (0, 0)

    def offset(self, rva: int, what: str) -> int:
        va, _, raw_ptr, raw_size = self.last_section  # tables and names sit together: try the last hit first
        if 0 <= rva - va < raw_size:
            return raw_ptr + (rva - va)
        for section in self.h.sections:
            va, vsize, raw_ptr, raw_size = section
            if va <= rva < va + max(vsize, raw_size) and rva - va < raw_size:
                self.last_section = section
                return raw_ptr + (rva - va)
        if 0 <= rva < self.h.size_of_headers:
            return rva
        raise PEError(f"{what} points outside the file (address {rva:#x} is in no section)")

    def read(self, rva: int, length: int, what: str) -> bytes:
        return self.src.read(self.offset(rva, what), length, what)

    def cstring(self, rva: int, what: str) -> bytes:
        return self.src.cstring(self.offset(rva, what), what)

    def _thunks(self, rva: int, what: str):
        """Yield the thunks of one lookup table up to its zero terminator, 512 at a time, within the file's budget."""
        fmt = "<%dQ" if self.thunk_size == 8 else "<%dI"
        while True:
            offset = self.offset(rva, what)
            batch = min(512, (self.src.size - offset) // self.thunk_size)
            if batch <= 0:
                raise PEError(f"{what} runs past the end of the file")
            for thunk in struct.unpack(fmt % batch, self.src.read(offset, batch * self.thunk_size, what)):
                if thunk == 0:
                    return
                self.functions_left -= 1
                if self.functions_left < 0:
                    raise PEError(f"the import tables list an absurd number of functions "
                                  f"(over {MAX_IMPORTED_FUNCTIONS}, {what} among them)")
                yield thunk
            rva += batch * self.thunk_size

    def _functions(self, table_rva: int, dll: str, entry: str) -> tuple[ImportedFunction, ...]:
        what = f"the import list for {dll}"
        owner = f"{entry} ({dll})"
        self._check_unshared(table_rva, table_rva + 1, owner)
        functions = []
        for thunk in self._thunks(table_rva, what):
            if thunk & self.ordinal_flag:
                functions.append(ImportedFunction(ordinal=thunk & 0xFFFF))
            else:
                name_rva = (thunk & 0x7FFFFFFF) + 2
                name = self.import_names.get(name_rva)
                if name is None:
                    name = self.import_names[name_rva] = self.cstring(name_rva, what).decode("latin-1")
                functions.append(ImportedFunction(name=name))
        if functions:  # empty lists cost nothing to read again, so they may share a terminator
            end = table_rva + len(functions) * self.thunk_size
            at = self._check_unshared(table_rva, end, owner)
            self.list_starts.insert(at, table_rva)
            self.list_ends.insert(at, end)
            self.list_owners.insert(at, owner)
        return tuple(functions)

    def _check_unshared(self, start: int, end: int, owner: str) -> int:
        """Raise if [start, end) overlaps a list already read; else the index where it sorts among them."""
        at = bisect.bisect_right(self.list_starts, start)
        if at and start < self.list_ends[at - 1]:
            other = self.list_owners[at - 1]
        elif at < len(self.list_starts) and self.list_starts[at] < end:
            other = self.list_owners[at]
        else:
            return at
        raise PEError(f"the import tables are damaged: {owner} reuses the list of functions of {other} "
                      f"(at address {start:#x})")

    def _descriptor(self, table: str) -> None:
        self.descriptors_left -= 1
        if self.descriptors_left < 0:
            raise PEError(f"the import tables name an absurd number of DLLs (over {MAX_IMPORT_DLLS}, "
                          f"counting {table})")

    def _dll_name(self, rva: int, entry: str) -> str:
        if rva <= 0:  # address 0 is the DOS header: "MZ..." is no DLL's name
            raise PEError(f"{entry} lists functions but names no DLL (damaged import table)")
        raw = self.cstring(rva, f"the DLL name of {entry}")
        if not _DLL_NAME.fullmatch(raw) or not raw.strip(b". "):
            raise PEError(f"{entry} names no DLL: its name field points at {raw[:24]!r}, not a file name "
                          f"(damaged import table)")
        return raw.decode("ascii")

    def imports(self) -> list[ImportedDll]:
        rva, size = self.directory(1)
        if not rva:
            return []
        result = []
        for i in range(MAX_IMPORT_DLLS + 1):
            self._descriptor("the import table")
            lookup, _, _, name_rva, first_thunk = struct.unpack(
                "<IIIII", self.read(rva + 20 * i, 20, "the import table"))
            if name_rva == 0 and first_thunk == 0:
                break
            entry = f"import table entry {i + 1}"
            name = self._dll_name(name_rva, entry)
            if not (lookup or first_thunk):
                raise PEError(f"{entry} ({name}) has no list of functions (damaged import table)")
            result.append(ImportedDll(name, self._functions(lookup or first_thunk, name, entry)))
        return result

    def delay_imports(self) -> list[ImportedDll]:
        rva, size = self.directory(13)
        if not rva:
            return []
        result = []
        for i in range(MAX_IMPORT_DLLS + 1):
            self._descriptor("the delay-load table")
            attrs, name_rva, _, _, names_rva, _, _, _ = struct.unpack(
                "<8I", self.read(rva + 32 * i, 32, "the delay-load table"))
            if name_rva == 0 and names_rva == 0:
                break
            if not attrs & 1:  # old Visual C++ 6 format: virtual addresses instead of RVAs
                name_rva -= self.h.image_base if name_rva else 0
                names_rva -= self.h.image_base if names_rva else 0
            entry = f"delay-load table entry {i + 1}"
            name = self._dll_name(name_rva, entry)
            functions = self._functions(names_rva, name, entry) if names_rva else ()
            result.append(ImportedDll(name, functions, delay=True))
        return result

    def exports(self) -> Optional[ExportTable]:
        dir_rva, dir_size = self.directory(0)
        if not dir_rva:
            return None
        header = self.read(dir_rva, 40, "the export table")
        name_rva, base, n_functions, n_names, functions_rva, names_rva, ordinals_rva = struct.unpack_from(
            "<7I", header, 12)
        if n_functions > MAX_EXPORTS or n_names > MAX_EXPORT_NAMES:
            raise PEError(f"the export table has absurd counts ({n_functions} functions, {n_names} names)")
        dll_name = self.cstring(name_rva, "the export table's DLL name").decode("ascii", "replace") if name_rva else ""
        addresses = struct.unpack(f"<{n_functions}I", self.read(functions_rva, 4 * n_functions, "the export table"))
        ordinals: set[int] = set()
        forwarders: dict[int, str] = {}
        texts: dict[int, str] = {}  # by address, read once: crafted tables point thousands of entries at one string
        for index, address in enumerate(addresses):
            if not address:
                continue
            ordinal = base + index
            ordinals.add(ordinal)
            if dir_rva <= address < dir_rva + dir_size:
                text = texts.get(address)
                if text is None:
                    text = texts[address] = self.cstring(address, "an export forwarder").decode("ascii", "replace")
                forwarders[ordinal] = text
        names: Mapping[str, int] = {}
        if n_names:
            name_rvas = struct.unpack(f"<{n_names}I", self.read(names_rva, 4 * n_names, "the export name table"))
            indexes = struct.unpack(f"<{n_names}H", self.read(ordinals_rva, 2 * n_names, "the export index table"))
            if max(indexes) >= n_functions:
                raise PEError("the export table names a function that does not exist")
            blob = self._names_blob(name_rvas)
            if blob is not None:
                names = ExportNames(blob, min(name_rvas), name_rvas, tuple(base + index for index in indexes))
            else:
                names = self._scattered_names(name_rvas, indexes, base)
        return ExportTable(dll_name, base, frozenset(ordinals), names, forwarders)

    def _scattered_names(self, rvas: tuple[int, ...], indexes: tuple[int, ...], base: int) -> dict[str, int]:
        """Names that do not lie together in one section (never in a linker's output): each read where it is."""
        names: dict[str, int] = {}
        texts: dict[int, str] = {}
        for name_at, index in zip(rvas, indexes):
            name = texts.get(name_at)
            if name is None:
                name = texts[name_at] = self.cstring(name_at, "an export name").decode("latin-1")
            names.setdefault(name, base + index)
        return names

    def _names_blob(self, rvas: tuple[int, ...]) -> Optional[bytes]:
        """All export names in one read, when they are packed together in one section (as linkers write them)."""
        low, high = min(rvas), max(rvas)
        start = self.offset(low, "the export names")
        span = high - low + MAX_NAME
        if span > _MAX_BULK_READ:
            return None
        try:
            same_section = self.offset(high, "the export names") - start == high - low
        except PEError:
            same_section = False
        if not same_section:
            return None
        end = min(self.src.size, start + span)
        return self.src.read(start, end - start, "the export names")

    def versions(self, warnings: list[str]) -> tuple[Optional[str], ...]:
        """FileVersion and ProductVersion (the fixed part), CompanyName, FileDescription, ProductName and
        OriginalFilename (the string table)."""
        nothing = None, None, None, None, None, None
        rva, _ = self.directory(2)
        if not rva:
            return nothing
        try:
            entry = self._resource_entry(rva, 0, 16)  # RT_VERSION
            for _ in range(2):  # name level, then language level: take the first of each
                if entry is None or not entry & 0x80000000:
                    break
                entry = self._resource_entry(rva, entry & 0x7FFFFFFF, None)
            if entry is None or entry & 0x80000000:
                return nothing
            data_rva, data_size = struct.unpack("<II", self.read(rva + entry, 8, "the version resource"))
            data = self.read(data_rva, min(data_size, MAX_VERSION_RESOURCE), "the version resource")
        except PEError as exc:
            warnings.append(f"version resource unreadable: {exc}")
            return nothing
        at = data.find(b"\xbd\x04\xef\xfe")
        if at < 0 or at + 24 > len(data):
            return nothing
        file_ms, file_ls, product_ms, product_ls = struct.unpack_from("<4I", data, at + 8)

        def text(ms: int, ls: int) -> str:
            return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"

        return (text(file_ms, file_ls), text(product_ms, product_ls), _version_string(data, "CompanyName"),
                _version_string(data, "FileDescription"), _version_string(data, "ProductName"),
                _version_string(data, "OriginalFilename"))

    def _resource_entry(self, root: int, offset: int, wanted_id: Optional[int]) -> Optional[int]:
        named, ids = struct.unpack_from("<HH", self.read(root + offset, 16, "the resource table"), 12)
        count = named + ids
        if count > MAX_RESOURCE_ENTRIES:
            raise PEError("the resource table has an absurd number of entries")
        entries = self.read(root + offset + 16, 8 * count, "the resource table")
        for i in range(count):
            name, target = struct.unpack_from("<II", entries, 8 * i)
            if wanted_id is None or (not name & 0x80000000 and name == wanted_id):
                return target
        return None

    def dependent_load_flags(self, warnings: list[str]) -> int:
        rva, _ = self.directory(10)
        if not rva:
            return 0
        at = 0x4E if self.h.is_pe32_plus else 0x36
        try:
            (size,) = struct.unpack("<I", self.read(rva, 4, "the load configuration"))
            if size < at + 2:
                return 0
            (flags,) = struct.unpack("<H", self.read(rva + at, 2, "the load configuration"))
        except PEError as exc:
            warnings.append(f"load configuration unreadable: {exc}")
            return 0
        return flags
