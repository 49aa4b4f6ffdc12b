"""Files out of a wheel on a package index, without downloading the whole wheel, and the index pages that name it.

A wheel is a zip. The standard library's `zipfile` reads it through `_RangeFile`, a read-only, seekable file made
of HTTP range reads (the downloader's `fetch_range`), so it fetches only the end records, the central directory
and the members asked for (zip64 included). A package index may be hostile, so every read is bounded:
- the bytes fetched for one wheel (`budget`);
- the central directory's size (`max_directory_bytes`), refused before it is fetched;
- the number of entries (`max_entries`), counted in the directory's bytes as they arrive, before zipfile parses
  them (its objects cost about ten times the directory's bytes);
- each member's declared size, and the size it really inflates to: it is read in chunks and stops past the cap,
  whatever its entry claims (zipfile would trust the claim).
Where the server cannot do ranges (RangeNotSupported), the caller downloads the whole wheel, checks its hash, and
reads it through `LocalWheel`, with the same bounds.

Finding the wheel: the index's simple API, JSON form first (PEP 691), else the HTML form (PEP 503), each file
with its SHA-256.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import html.parser
import io
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterator, Optional
from urllib.parse import urldefrag, urljoin, urlsplit

from app.cancel import CancelToken
from app.sources.download import DownloadError, RangeNotSupported, fetch_range, remote_size
from app.system import user_json

if TYPE_CHECKING:
    import requests

CENTRAL_SIGNATURE = b"PK\x01\x02"
LOCAL_HEADER_BYTES = 30
TAIL_BYTES = 64 << 10  # fetched first: the end records and, for most wheels, the whole central directory
END_SEARCH_BYTES = (1 << 16) + 22  # the longest read zipfile makes looking for the end record (a 64 KB comment)
DIRECTORY_PIECE = 1 << 20  # the directory arrives in pieces this size, so too many entries stop it early
READ_AHEAD = 8 << 20  # within a member, one ranged read fetches up to this much (a member streams through it)
MEMBER_CHUNK = 1 << 20  # inflated bytes asked of zipfile at a time
MAX_DIRECTORY_BYTES = 32 << 20  # torch's wheels have about 3 MB
MAX_ENTRIES = 100_000  # torch's wheels have about 15 000
BATCH_BYTES = 16 << 20  # neighbouring members are fetched together, in one read of at most this much
BATCH_GAP = 256 << 10  # ... when no more than this lies between them (other members' bytes, fetched and dropped)
LOCAL_EXTRA_SLACK = 1 << 10  # a local header's extra field may be longer than the central directory's copy
REQUEST_COST_BYTES = 2 << 20  # what one more request costs, as bytes (about 100 ms of a 20 MB/s link)
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"

ReadRange = Callable[[int, int], bytes]  # (start, length) -> bytes

# what zipfile (and zlib under it) raise about an archive it cannot read
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, struct.error, ValueError, OverflowError,
               NotImplementedError, RuntimeError, zlib.error)


class WheelError(DownloadError):
    """The wheel or the index page is not what we expect: damaged, hostile, or not the file we pinned. `detail`
    says how, in technical words (shown inside `download.error.bad-wheel`)."""

    def __init__(self, detail: str, *, host: str = "") -> None:
        DownloadError.__init__(self, "bad-wheel", host=host, detail=detail)

    def __str__(self) -> str:
        return str(self.values["detail"])


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: Optional[str]
    size: Optional[int] = None


def project_url(index_url: str, project: str) -> str:
    return f"{index_url.rstrip('/')}/{project.lower()}/"


def parse_index_page(page_url: str, content_type: str, body: bytes) -> list[IndexFile]:
    """The files a simple-API page lists, JSON (PEP 691) or HTML (PEP 503); relative links made absolute."""
    if "json" in (content_type or "").lower():
        try:
            data = user_json.loads(body.decode("utf-8"))
            return [IndexFile(f["filename"], urljoin(page_url, f["url"]), (f.get("hashes") or {}).get("sha256"),
                              f.get("size")) for f in data.get("files", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise WheelError(f"the index page is not valid JSON: {exc}", host=_host(page_url)) from exc
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    files = []
    for href, text in parser.links:
        url, fragment = urldefrag(urljoin(page_url, href))
        digest = fragment.split("=", 1)[1] if fragment.lower().startswith("sha256=") else None
        files.append(IndexFile(text.strip() or url.rsplit("/", 1)[-1], url, digest))
    return files


def _host(url: str) -> str:
    return urlsplit(url).hostname or url


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: Optional[str] = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href:
            self.links.append((self._href, "".join(self._text)))
            self._href = None


class _ReadTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _TooManyEntries(Exception):
    pass


class _RangeFile(io.RawIOBase):
    """A read-only, seekable file of `size` bytes made of ranged reads, for zipfile. Every fetch counts against
    `budget`. What is fetched while the directory is read (`keeping`) is kept for later members; after that each
    fetch replaces the last, so a member streams through a window of about READ_AHEAD bytes."""

    def __init__(self, read_range: ReadRange, size: int, *, budget: int, host: str) -> None:
        super().__init__()
        self._read_range = read_range
        self.size = size
        self.budget = budget
        self.host = host
        self.fetched = 0
        self.position = 0
        self.kept: list[tuple[int, bytes]] = []
        self.window: tuple[int, bytes] = (0, b"")
        self.keeping = True
        self.largest_read = size  # a longer read is refused before anything is fetched
        self.read_ahead_to = 0  # the end of the member being read: fetches ahead stop there
        self.max_signatures: Optional[int] = None  # entries allowed, counted while keeping
        self.signatures = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "seek before the start of the file")
        self.position = base + offset
        return self.position

    def read(self, n: Optional[int] = -1) -> bytes:
        if self.closed:
            raise ValueError("read of a closed file")
        left = max(0, self.size - self.position)
        n = left if n is None or n < 0 else min(n, left)
        if n <= 0:
            return b""
        if n > self.largest_read:
            raise _ReadTooLarge(n)
        data = self._bytes(self.position, self.position + n)
        self.position += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def check_budget(self, more: int) -> None:
        if self.fetched + more > self.budget:
            raise WheelError(f"reading it would fetch more than the {self.budget} bytes allowed for this wheel",
                             host=self.host)

    def prefetch(self, start: int, length: int) -> None:
        if length > 0:
            self._fetch(start, length)

    def prefetch_window(self, start: int, length: int) -> None:
        """One read that becomes the window the next members are read from (a batch of neighbours)."""
        self.check_budget(length)
        self.window = (start, self._get(start, length))

    def _spans(self) -> Iterator[tuple[int, bytes]]:
        yield from self.kept
        yield self.window

    def _bytes(self, start: int, end: int) -> bytes:
        parts, at = [], start
        while at < end:
            found = next(((first, data) for first, data in self._spans() if first <= at < first + len(data)), None)
            if found is None:
                self._fill(at, end)
                continue
            first, data = found
            part = data[at - first:end - first]
            parts.append(part)
            at += len(part)
        return b"".join(parts)

    def _fill(self, at: int, end: int) -> None:
        if not self.keeping and at < self.read_ahead_to:
            end = max(end, min(self.read_ahead_to, at + READ_AHEAD))
        following = min((first for first, data in self._spans() if first > at and data), default=self.size)
        self._fetch(at, min(end, following, self.size) - at)

    def _fetch(self, start: int, length: int) -> None:
        self.check_budget(length)
        if not self.keeping:
            self.window = (start, self._get(start, length))
            return
        carry = b""  # the last bytes of the previous piece: a signature may straddle two pieces
        for first in range(start, start + length, DIRECTORY_PIECE):
            data = self._get(first, min(DIRECTORY_PIECE, start + length - first))
            self.kept.append((first, data))
            self.signatures += (carry + data).count(CENTRAL_SIGNATURE)
            carry = data[-3:]
            if self.max_signatures is not None and self.signatures > self.max_signatures:
                raise _TooManyEntries()

    def _get(self, start: int, length: int) -> bytes:
        data = self._read_range(start, length)
        self.fetched += len(data)
        if len(data) != length:
            raise WheelError(f"the server sent {len(data)} bytes at {start} where {length} were asked: the file is "
                             f"shorter than it said", host=self.host)
        return data


@dataclass(frozen=True)
class MemberCopy:
    """One member written out: its size and SHA-256 (hex), what RECORD pins."""

    size: int
    sha256: str


class RangedWheel:
    """The members of a wheel read through `read_range`, every read bounded (see the module's docstring). Reads
    one or several members; what was fetched for the directory serves them all."""

    def __init__(self, read_range: ReadRange, size: int, *, budget: int, host: str,
                 max_directory_bytes: int = MAX_DIRECTORY_BYTES, max_entries: int = MAX_ENTRIES) -> None:
        self.host = host
        self.size = size
        self._file = _RangeFile(read_range, size, budget=budget, host=host)
        self._file.largest_read = max(max_directory_bytes, END_SEARCH_BYTES)
        self._file.max_signatures = max_entries
        try:
            self._file.prefetch(size - min(size, TAIL_BYTES), min(size, TAIL_BYTES))
            self._zip = zipfile.ZipFile(self._file)
        except _ReadTooLarge as exc:
            raise self._error(f"its central directory is {exc.size} bytes, more than the {max_directory_bytes} "
                              f"allowed") from None
        except _TooManyEntries:
            raise self._error(f"it has more than {max_entries} entries") from None
        except _ZIP_ERRORS as exc:
            raise self._error(f"it is not a readable zip: {exc}") from exc
        self._file.keeping = False
        self._file.max_signatures = None
        self._file.largest_read = MEMBER_CHUNK + (1 << 17)  # a chunk, or a local header's name and extra field
        infos = self._zip.infolist()
        names = {info.filename for info in infos}
        if len(infos) > max_entries:
            raise self._error(f"it has more than {max_entries} entries")
        if len(names) != len(infos):
            raise self._error("it names the same file twice")

    @property
    def fetched(self) -> int:
        """Bytes fetched so far for this wheel."""
        return self._file.fetched

    def names(self) -> list[str]:
        return self._zip.namelist()

    def batches(self, names: list[str]) -> list[list[str]]:
        """The members in the order they lie in the wheel, in groups that are one read each: neighbours with at most
        BATCH_GAP bytes between them, up to BATCH_BYTES together (a member larger than that is a group alone)."""
        spans = sorted((self._span(name), name) for name in names)
        groups: list[list[str]] = []
        start = end = -1
        for (first, last), name in spans:
            if groups and first - end <= BATCH_GAP and last - start <= BATCH_BYTES:
                groups[-1].append(name)
                end = max(end, last)
            else:
                groups.append([name])
                start, end = first, last
        return groups

    def cost(self, groups: list[list[str]]) -> int:
        """What reading these groups costs, as bytes: what they fetch, and REQUEST_COST_BYTES for each read. More
        than the wheel's size: the whole wheel, in one download, is faster."""
        total = 0
        for group in groups:
            first, last = self._group_span(group)
            total += last - first + REQUEST_COST_BYTES * max(1, -(-(last - first) // READ_AHEAD))
        return total

    def hold(self, group: list[str]) -> None:
        """One read of the span that holds these members: their reads then come from it."""
        if len(group) > 1:
            first, last = self._group_span(group)
            self._file.prefetch_window(first, min(last, self.size) - first)

    def _span(self, name: str) -> tuple[int, int]:
        info = self._member(name, 1 << 62)
        start = info.header_offset
        return start, (start + LOCAL_HEADER_BYTES + len(info.orig_filename.encode("utf-8")) + len(info.extra)
                       + LOCAL_EXTRA_SLACK + info.compress_size)

    def _group_span(self, group: list[str]) -> tuple[int, int]:
        spans = [self._span(name) for name in group]
        return min(s for s, _ in spans), max(e for _, e in spans)

    def read(self, name: str, max_bytes: int) -> bytes:
        """The member's content, at most `max_bytes` (a member that claims or inflates to more is refused)."""
        return b"".join(self._chunks(name, max_bytes))

    def copy(self, name: str, out: BinaryIO, max_bytes: int) -> MemberCopy:
        """The member written to `out` as it inflates (memory stays about one chunk), with its SHA-256."""
        digest, size = hashlib.sha256(), 0
        for chunk in self._chunks(name, max_bytes):
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
        return MemberCopy(size, digest.hexdigest())

    def close(self) -> None:
        self._zip.close()
        self._file.close()

    def __enter__(self) -> RangedWheel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _error(self, detail: str) -> WheelError:
        return WheelError(detail, host=self.host)

    def _member(self, name: str, max_bytes: int) -> zipfile.ZipInfo:
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            raise self._error(f"{name} is not in the wheel") from None
        if info.flag_bits & 0x1:
            raise self._error(f"{name} is encrypted, which wheels never are")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 and lzma inflate without a bound in zipfile; wheels use neither
            raise self._error(f"{name} is compressed with method {info.compress_type}, which wheels do not use")
        if info.file_size > max_bytes:
            raise self._error(f"{name} is larger than allowed ({info.file_size} bytes, at most {max_bytes})")
        if info.compress_size > max_bytes + (max_bytes >> 8) + 1024:  # deflate adds 5 bytes per 64 KB at worst
            raise self._error(f"{name} is larger than allowed ({info.compress_size} bytes compressed)")
        if info.header_offset + info.compress_size > self.size:
            raise self._error(f"{name} points outside the file")
        return info

    def _chunks(self, name: str, max_bytes: int) -> Iterator[bytes]:
        info = self._member(name, max_bytes)
        data_end = (info.header_offset + LOCAL_HEADER_BYTES + len(info.orig_filename.encode("utf-8"))
                    + len(info.extra) + info.compress_size)
        bounded = copy.copy(info)
        # zipfile stops at the declared size (where a CRC error hides why): let it go one chunk past the cap,
        # so that our count of what really inflates is what stops it
        bounded.file_size = max_bytes + MEMBER_CHUNK + 1
        self._file.read_ahead_to = data_end
        inflated = 0
        try:
            with self._zip.open(bounded) as stream:
                while True:
                    chunk = stream.read(MEMBER_CHUNK)
                    if not chunk:
                        break
                    inflated += len(chunk)
                    if inflated > max_bytes:
                        raise self._error(f"{name} inflates to more than {max_bytes} bytes (its entry says "
                                          f"{info.file_size}): a decompression bomb, or damaged")
                    yield chunk
        except _ReadTooLarge as exc:
            raise self._error(f"{name}: a read of {exc.size} bytes, more than any member needs") from None
        except zipfile.BadZipFile as exc:
            raise self._error(f"{name} is damaged: {exc}") from exc
        except _ZIP_ERRORS as exc:
            raise self._error(f"{name} does not decompress: {exc}") from exc
        finally:
            self._file.read_ahead_to = 0
        if inflated != info.file_size:
            raise self._error(f"{name} inflates to {inflated} bytes, not the {info.file_size} its entry says")


class RemoteWheel(RangedWheel):
    """A wheel at `url`, read by ranges through the one downloader (HTTPS on every hop, retries, cancel). Raises
    RangeNotSupported when the server sends whole files only: then download it and use LocalWheel."""

    def __init__(self, url: str, *, budget: int, token: Optional[CancelToken] = None,
                 session: Optional[requests.Session] = None, max_directory_bytes: int = MAX_DIRECTORY_BYTES,
                 max_entries: int = MAX_ENTRIES) -> None:
        self.url = url
        size = remote_size(url, token=token, session=session)
        if not size:
            raise RangeNotSupported(host=_host(url))

        def read(start: int, length: int) -> bytes:
            return fetch_range(url, start, length, token=token, session=session)

        super().__init__(read, size, budget=budget, host=_host(url), max_directory_bytes=max_directory_bytes,
                         max_entries=max_entries)


class LocalWheel(RangedWheel):
    """A downloaded wheel on disk, read with the same bounds (its hash is checked first, but a bound costs nothing)."""

    def __init__(self, path: Path, *, max_directory_bytes: int = MAX_DIRECTORY_BYTES,
                 max_entries: int = MAX_ENTRIES) -> None:
        self._handle = open(path, "rb")  # noqa: SIM115 - closed in close(), or below when opening fails
        size = os.fstat(self._handle.fileno()).st_size

        def read(start: int, length: int) -> bytes:
            self._handle.seek(start)
            return self._handle.read(length)

        try:
            super().__init__(read, size, budget=size, host=Path(path).name, max_directory_bytes=max_directory_bytes,
                             max_entries=max_entries)
        except BaseException:
            self._handle.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._handle.close()
