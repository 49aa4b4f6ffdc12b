"""Compare torch's install with the wheel's RECORD: files missing, or changed, usually mean an antivirus
quarantined them or an install was interrupted (pip stopped at Windows' path limit, for one). Every file RECORD
lists inside site-packages is checked, sizes first (one stat each); hashes only when asked, with progress by bytes,
since torch\\lib holds up to several GB.

One rule says which torch distribution is installed when several `torch-*.dist-info` folders sit side by side
(`pip install --ignore-installed` leaves the old one): the one whose RECORD matches the `torch\\version.py` on
disk. The diagnosis and every repair use it (`installed_record`)."""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import operator
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Optional

from app.cancel import CancelToken, Progress, check, no_progress
from app.inventory.environment import PythonEnvironment
from app.system.confine import relative_parts
from app.system.folders import Listings, children, descend
from app.system.once_per_file import OncePerFile

CHUNK = 1 << 20


@dataclass(frozen=True)
class RecordEntry:
    path: str  # as written in RECORD: "torch/lib/fbgemm.dll"
    sha256: Optional[str]  # urlsafe base64 without padding, as RECORD writes it
    size: Optional[int]


@dataclass
class IntegrityReport:
    record: Optional[Path]
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    longest_missing: int = 0  # the longest Windows path of a missing file (site-packages' own path included)
    size_changed: list[str] = field(default_factory=list)
    hash_changed: list[str] = field(default_factory=list)
    hashed: bool = False
    problem: Optional[str] = None  # why no check was possible

    @property
    def ok(self) -> bool:
        return self.record is not None and not (self.missing or self.size_changed or self.hash_changed)


class RecordFolders:
    """Case-insensitive lookups of RECORD's paths under site-packages, each folder listed once (RECORD has ~11 000
    entries), and each file's size from that listing: on Windows a folder's listing carries its files' sizes, so
    the check costs one call per folder, not two per file (under Wine a call per file costs a millisecond: 20 s for
    one torch). A path that would leave site-packages (`..`, a drive, a rooted path) is never looked up or
    written: `inside` says which are confined."""

    def __init__(self, root: Path, listings: Optional[Listings] = None) -> None:
        self.root = root
        self._listings = listings if listings is not None else Listings()
        self._folders: dict[str, tuple[str, bool]] = {}  # RECORD's folder, lower case -> (host folder, it exists)

    @staticmethod
    def inside(relative: str) -> bool:
        return relative_parts(relative) is not None

    def _listing(self, folder: str) -> dict[str, os.DirEntry]:
        try:
            return self._listings.named(folder)
        except (OSError, ValueError):  # ValueError: a NUL character in a damaged image's path
            return {}

    def _folder(self, folder: str) -> tuple[str, bool]:
        """Where RECORD's `folder` is on the drive, found once per folder (RECORD lists ~11,000 files in ~450 of
        them): (its host path, True), or (where it would be, False) when a part of it is missing."""
        key = folder.lower()
        known = self._folders.get(key)
        if known is None:
            current, parts = str(self.root), folder.split("/") if folder else []
            known = (current, True)
            for index, part in enumerate(parts):
                found = self._listing(current).get(part.lower())
                if found is None:
                    known = (os.path.join(current, *parts[index:]), False)
                    break
                current = found.path
                known = (current, True)
            self._folders[key] = known
        return known

    def listed(self, folder: str) -> tuple[str, dict[str, os.DirEntry]]:
        """(where RECORD's `folder` is on the drive, its entries by lower-case name; none when it is missing)."""
        host, exists = self._folder(folder)
        return host, (self._listing(host) if exists else {})

    def _found(self, relative: str) -> tuple[Optional[os.DirEntry], Optional[str]]:
        """(the entry now, or None; where it belongs, as a host path), or (None, None) outside site-packages."""
        if not self.inside(relative):
            return None, None
        folder, _, name = relative.replace("\\", "/").rpartition("/")
        host, exists = self._folder(folder)
        found = self._listing(host).get(name.lower()) if exists else None
        return found, (found.path if found is not None else os.path.join(host, name))

    def _entry(self, relative: str) -> tuple[Optional[os.DirEntry], Optional[Path]]:
        found, target = self._found(relative)
        return found, (Path(target) if target is not None else None)

    def size(self, relative: str, expected: Optional[int] = None) -> Optional[int]:
        """As `file`, the size alone: no path is made for a file that is as RECORD says (the check of 11,000)."""
        found, target = self._found(relative)
        return entry_size(found, target, expected)

    def find(self, relative: str) -> tuple[Optional[Path], Optional[Path]]:
        """(the file as it is now, or None; where it belongs, or None when it would leave site-packages)."""
        found, target = self._entry(relative)
        return (target if found is not None else None), target

    def file(self, relative: str, expected: Optional[int] = None) -> Optional[tuple[Path, int]]:
        """(the regular file at `relative` now, its size), or None when there is none. A listing's size that is not
        `expected` is read again from the file itself: Windows updates a listing's size lazily (a file open for
        writing, one changed through another hard link), so a file is never called changed on the listing's word.
        (A stale listing that still shows the expected size passes; the hash check, which reads every byte, does
        not.)"""
        size = self.size(relative, expected)
        return (self.find(relative)[1], size) if size is not None else None


def entry_size(found: Optional[os.DirEntry], target: Optional[str], expected: Optional[int] = None) -> Optional[int]:
    """The size of the regular file a listing gave as `found` (None: there is none). A listing's size that is not
    `expected` is read again from the file itself at `target` (RecordFolders.file says why)."""
    try:
        if found is None or not found.is_file():
            return None
        size = found.stat().st_size
        if expected is not None and size != expected and target is not None:
            size = Path(target).stat().st_size
        return size
    except OSError:
        return None


class SeenFiles:
    """The files whose size one diagnosis has read, by identity (the folder's device, the file's number): the same
    file reached through another folder, a hard link as uv makes them for every environment, is not read again.
    Only where a folder's listing gives a file's number for nothing (POSIX: d_ino); on Windows the listing gives
    the size itself, and the file number would cost a call per file."""

    def __init__(self) -> None:
        self._sizes: dict[int, dict[int, int]] = {}  # device -> file number -> size
        self.enabled = os.name != "nt"

    def sizes_on(self, device: int) -> dict[int, int]:
        """The sizes read on `device`, by file number (the same dict as it grows)."""
        return self._sizes.setdefault(device, {})

    def add(self, device: int, entries: list[os.DirEntry], sizes: list[int]) -> None:
        """The sizes just read of these entries of a folder on `device`."""
        self.sizes_on(device).update(zip(map(os.DirEntry.inode, entries), sizes))


def torch_records(site: Optional[Path]) -> list[Path]:
    """Every RECORD of a `torch-*.dist-info` in site-packages."""
    infos = [f for f in children(site) if f.name.lower().startswith("torch-") and f.name.lower().endswith(".dist-info")]
    return [r for r in (descend(f, "RECORD") for f in infos) if r is not None]


def installed_record(site: Optional[Path], release: Optional[str] = None) -> Optional[Path]:
    """The RECORD of the torch that is installed: the one whose `torch/version.py` entry matches the file on disk
    (size and SHA-256; a few hundred bytes), else the one named for `release`, else the only one."""
    records = torch_records(site)
    if len(records) <= 1:
        return records[0] if records else None
    version = descend(site, "torch", "version.py")
    if version is not None:
        try:
            data = version.read_bytes()
        except OSError:
            data = None
        if data is not None:
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            for record in records:
                with contextlib.suppress(OSError, csv.Error, ValueError):
                    entry = next((e for e in read_record(record, prefix="torch/version.py")
                                  if e.path.lower() == "torch/version.py"), None)
                    if entry is not None and entry.sha256 == digest and entry.size in (None, len(data)):
                        return record
    named = [r for r in records if r.parent.name[len("torch-"):-len(".dist-info")].split("+")[0] == release]
    return named[0] if named else records[0]


def find_record(env: PythonEnvironment) -> Optional[Path]:
    """The RECORD of the installed torch of this environment (installed_record)."""
    return installed_record(env.site_packages, env.torch.release if env.torch else None)


def read_record(path: Path, prefix: str = "torch/lib/") -> list[RecordEntry]:
    """RECORD's entries whose path starts with `prefix` (any case)."""
    return list(_parsed_record(path).under(prefix))


def longest_path(path: Path, prefix: str) -> int:
    """The length of RECORD's longest path that starts with `prefix` (any case); 0 when none does."""
    return _parsed_record(path).longest(prefix)


@dataclass
class ParsedRecord:
    """One RECORD, parsed once per identity (its device, file number, size and modification time): the probes of
    one environment read it three times, and the environments uv made share one RECORD through hard links. A RECORD
    pip writes again is parsed again. What the check derives from it is kept with it."""

    entries: tuple[RecordEntry, ...]
    _installed: Optional[list[RecordEntry]] = None
    _by_folder: Optional[dict[str, list[tuple[str, RecordEntry]]]] = None
    _under: dict[str, tuple[RecordEntry, ...]] = field(default_factory=dict)
    _longest: dict[str, int] = field(default_factory=dict)
    _columns: dict[str, tuple[tuple[str, ...], list[Optional[int]]]] = field(default_factory=dict)

    def under(self, prefix: str) -> tuple[RecordEntry, ...]:
        """The entries whose path starts with `prefix` (any case), in RECORD's order."""
        prefix = prefix.lower()
        if not prefix:
            return self.entries
        found = self._under.get(prefix)
        if found is None:
            found = self._under[prefix] = tuple(e for e in self.entries if e.path.lower().startswith(prefix))
        return found

    def longest(self, prefix: str) -> int:
        found = self._longest.get(prefix.lower())
        if found is None:
            found = self._longest[prefix.lower()] = max((len(e.path) for e in self.under(prefix)), default=0)
        return found

    def installed(self) -> list[RecordEntry]:
        """What pip installed into site-packages: RECORD's entries but those outside it (`../../Scripts/...`), the
        bytecode cache and RECORD itself (pip writes it without a hash)."""
        if self._installed is None:
            self._installed = [e for e in self.entries if RecordFolders.inside(e.path) and e.sha256 is not None
                               and not e.path.lower().endswith(".pyc")]
        return self._installed

    def columns(self, folder: str) -> tuple[tuple[str, ...], list[Optional[int]]]:
        """The folder's installed files as two columns: their names in lower case, and their sizes."""
        found = self._columns.get(folder)
        if found is None:
            files = self.by_folder().get(folder, [])
            found = self._columns[folder] = (tuple(lower for lower, _ in files), [e.size for _, e in files])
        return found

    def by_folder(self) -> dict[str, list[tuple[str, RecordEntry]]]:
        """The installed entries by folder ("torch/lib"), each with its file name in lower case, in RECORD's
        order."""
        if self._by_folder is None:
            grouped: dict[str, list[tuple[str, RecordEntry]]] = {}
            for entry in self.installed():
                folder, _, name = entry.path.rpartition("/")
                grouped.setdefault(folder, []).append((name.lower(), entry))
            self._by_folder = grouped
        return self._by_folder


_records: OncePerFile[ParsedRecord] = OncePerFile(16)  # 10,644 entries for torch 2.4, a few MB each
_lines: OncePerFile[tuple[str, ...]] = OncePerFile(2048)  # (RECORD, pattern) answers: a few paths each


def _parsed_record(path: Path) -> ParsedRecord:
    return _records.get(path, lambda p: ParsedRecord(_parse_record(p.read_bytes())))


def record_lines(record: Path, pattern: re.Pattern) -> tuple[str, ...]:
    """The first group of every match of `pattern` (a multi-line pattern over RECORD's text, a row at a time) in
    the RECORD at `record`, searched once per identity. OSError when it cannot be read."""
    def search(path: Path) -> tuple[str, ...]:
        text = path.read_text(encoding="utf-8", errors="replace")
        return tuple(match.group(1) for match in pattern.finditer(text))

    return _lines.get(record, search, pattern.pattern, pattern.flags)


def _parse_record(data: bytes) -> tuple[RecordEntry, ...]:
    entries = []
    for row in csv.reader(io.StringIO(data.decode("utf-8", errors="replace"))):
        if len(row) < 3:
            continue
        digest = row[1].split("=", 1)[1] if row[1].startswith("sha256=") else None
        size = int(row[2]) if row[2].isascii() and row[2].isdigit() else None
        entries.append(RecordEntry(row[0].replace("\\", "/"), digest, size))
    return tuple(entries)


def _device(folder: str) -> int:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return 0


def installed_files(record: Path) -> list[RecordEntry]:
    """What pip installed into site-packages (ParsedRecord.installed)."""
    return list(_parsed_record(record).installed())


_MODE, _SIZE = operator.attrgetter("st_mode"), operator.attrgetter("st_size")


def check_torch_files(env: PythonEnvironment, *, hashes: bool = False, cancel: Optional[CancelToken] = None,
                      progress: Progress = no_progress, shown_site: Optional[str] = None,
                      seen: Optional[SeenFiles] = None, listings: Optional[Listings] = None) -> IntegrityReport:
    """Check torch's installed files against RECORD: presence and size always; SHA-256 when `hashes` is set.
    `shown_site`: site-packages as Windows spells it, to measure the missing files' full paths. Folder by folder:
    each RECORD folder is found and listed once, and its files looked up in that listing; `seen` (one per
    diagnosis) skips the files another environment's check already read under the same identity; `listings` are
    shared with the environment's other checks."""
    record = find_record(env) if env.site_packages else None
    report = IntegrityReport(record)
    if record is None:
        report.problem = "torch's install record (RECORD) was not found"
        return report
    try:
        parsed = _parsed_record(record)
        entries = parsed.installed()
    except (OSError, csv.Error, ValueError) as exc:
        report.problem = f"torch's install record could not be read ({getattr(exc, 'strerror', None) or exc})"
        return report
    present: list[tuple[RecordEntry, int]] = []
    folders = RecordFolders(env.site_packages, listings)
    for number, (folder, files) in enumerate(parsed.by_folder().items()):
        if not number % 16:
            check(cancel)
        host, listing = folders.listed(folder)
        device = _device(host) if listing and seen is not None and seen.enabled else 0
        known = seen.sizes_on(device) if device else None  # a file read through another link: its size, no call
        if not hashes and _folder_as_recorded(parsed, folder, listing, known, device, seen):
            continue
        _file_by_file(report, files, listing, known, device, seen, shown_site, present if hashes else None)
    report.checked = len(entries)
    if hashes:
        report.hashed = True
        _hash(report, folders, present, cancel, progress)
    return report


def _folder_as_recorded(parsed: ParsedRecord, folder: str, listing: dict[str, os.DirEntry],
                        known: Optional[dict[int, int]], device: int, seen: Optional[SeenFiles]) -> bool:
    """Whether every file of a folder is there at RECORD's size, checked at once with no Python step per file:
    read already through another link, or each stat at its size."""
    lowers, sizes = parsed.columns(folder)
    found = list(map(listing.get, lowers))
    if None in found or None in sizes:
        return False
    if known is not None and list(map(known.get, map(os.DirEntry.inode, found))) == sizes:
        return True  # every file read already through another link, each of the size RECORD gives
    try:
        stats = list(map(os.DirEntry.stat, found))
    except OSError:  # one gone or denied since the listing: file by file
        return False
    if not (all(map(S_ISREG, map(_MODE, stats))) and list(map(_SIZE, stats)) == sizes):
        return False
    if known is not None and seen is not None:
        seen.add(device, found, sizes)
    return True


def _file_by_file(report: IntegrityReport, files: list[tuple[str, RecordEntry]], listing: dict[str, os.DirEntry],
                  known: Optional[dict[int, int]], device: int, seen: Optional[SeenFiles],
                  shown_site: Optional[str], present: Optional[list[tuple[RecordEntry, int]]]) -> None:
    """A folder's files one by one: missing, of another size, or (with `present`) there to be hashed."""
    for lower, entry in files:
        found = listing.get(lower)
        size = known.get(found.inode()) if known is not None and found is not None else None
        if size is None:
            size = entry_size(found, found.path if found is not None else None, entry.size)
            if size is not None and known is not None and seen is not None:
                seen.add(device, [found], [size])
        if size is None:
            report.missing.append(entry.path)
            if shown_site is not None:
                report.longest_missing = max(report.longest_missing, len(shown_site) + 1 + len(entry.path))
        elif entry.size is not None and size != entry.size:
            report.size_changed.append(entry.path)
        elif present is not None:
            present.append((entry, size))


def _hash(report: IntegrityReport, folders: RecordFolders, present: list[tuple[RecordEntry, int]],
          cancel: Optional[CancelToken], progress: Progress) -> None:
    """Each present file's SHA-256 against RECORD's, with progress by bytes."""
    total = sum(size for _, size in present)
    done = 0
    for entry, _ in present:
        if entry.sha256 is None:
            continue
        path = folders.find(entry.path)[0]  # from the listings already made: the file found above
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while True:
                check(cancel)
                block = f.read(CHUNK)
                if not block:
                    break
                digest.update(block)
                done += len(block)
                progress(done, total, entry.path)
        if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != entry.sha256:
            report.hash_changed.append(entry.path)
