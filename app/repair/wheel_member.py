"""One file out of a wheel on a package index, without downloading the whole wheel.

A wheel is a zip. Its end-of-central-directory record sits in the last bytes, and points to the central
directory, which names every member with the offset of its local header. So three ranged reads fetch one member:
the tail, the central directory, then the member's local header and compressed data. Where the server cannot do
ranges, the caller falls back to the whole wheel (and then checks the wheel's hash from the index).

Finding the wheel: the index's simple API, JSON form first (PEP 691), else the HTML form (PEP 503), each file
with its SHA-256.
"""

from __future__ import annotations

import html.parser
import json
import struct
import zlib
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urldefrag, urljoin

EOCD_SIGNATURE = b"PK\x05\x06"
CENTRAL_SIGNATURE = b"PK\x01\x02"
LOCAL_SIGNATURE = b"PK\x03\x04"
TAIL_BYTES = 65536 + 22  # the EOCD record plus the longest zip comment
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"

ReadRange = Callable[[int, int], bytes]  # (start, length) -> bytes


class WheelError(ValueError):
    """The wheel or the index page is not what we expect (damaged, or not the file we pinned)."""


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
            data = json.loads(body.decode("utf-8"))
            return [IndexFile(f["filename"], urljoin(page_url, f["url"]), (f.get("hashes") or {}).get("sha256"),
                              f.get("size")) for f in data.get("files", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise WheelError(f"the index page is not valid JSON: {exc}") from exc
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    files = []
    for href, text in parser.links:
        url, fragment = urldefrag(urljoin(page_url, href))
        digest = fragment.split("=", 1)[1] if fragment.lower().startswith("sha256=") else None
        files.append(IndexFile(text.strip() or url.rsplit("/", 1)[-1], url, digest))
    return files


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


@dataclass(frozen=True)
class MemberLocation:
    name: str
    method: int  # 0 stored, 8 deflated
    compressed_size: int
    size: int
    crc32: int
    header_offset: int


def _central_directory(tail: bytes, tail_start: int) -> tuple[int, int]:
    at = tail.rfind(EOCD_SIGNATURE)
    if at < 0 or len(tail) - at < 22:
        raise WheelError("no end-of-central-directory record: not a zip, or cut short")
    _, _, _, _, entries, size, offset, _ = struct.unpack_from("<IHHHHIIH", tail, at)
    if offset == 0xFFFFFFFF or size == 0xFFFFFFFF:
        raise WheelError("a zip64 archive: too large for a wheel we fetch")
    return offset, size


def locate_member(read: ReadRange, total: int, member: str) -> MemberLocation:
    """Where `member` is in the zip of `total` bytes, from two ranged reads (the tail, the directory)."""
    tail_start = max(0, total - TAIL_BYTES)
    tail = read(tail_start, total - tail_start)
    offset, size = _central_directory(tail, tail_start)
    if offset + size > total:
        raise WheelError("the central directory points outside the file")
    directory = tail[offset - tail_start: offset - tail_start + size] if offset >= tail_start else read(offset, size)
    at = 0
    while at + 46 <= len(directory):
        if directory[at:at + 4] != CENTRAL_SIGNATURE:
            raise WheelError("the central directory is damaged")
        (_, _, _, _, method, _, _, crc, csize, usize, name_len, extra_len, comment_len, _, _, _,
         header) = struct.unpack_from("<IHHHHHHIIIHHHHHII", directory, at)
        name = directory[at + 46: at + 46 + name_len].decode("utf-8", errors="replace")
        if name == member:
            return MemberLocation(name, method, csize, usize, crc, header)
        at += 46 + name_len + extra_len + comment_len
    raise WheelError(f"{member} is not in the wheel")


def read_member(read: ReadRange, location: MemberLocation, max_bytes: int) -> bytes:
    """The member's content from one more ranged read (its local header, then its compressed data)."""
    if location.size > max_bytes or location.compressed_size > max_bytes:
        raise WheelError(f"{location.name} is larger than allowed ({location.size} bytes)")
    head = read(location.header_offset, 30)
    if head[:4] != LOCAL_SIGNATURE:
        raise WheelError("the member's local header is damaged")
    name_len, extra_len = struct.unpack_from("<HH", head, 26)
    start = location.header_offset + 30 + name_len + extra_len
    data = read(start, location.compressed_size)
    if location.method == 8:
        try:
            data = zlib.decompress(data, -15)
        except zlib.error as exc:
            raise WheelError(f"the member does not decompress: {exc}") from exc
    elif location.method != 0:
        raise WheelError(f"the member is compressed with method {location.method}, which wheels do not use")
    if len(data) != location.size or zlib.crc32(data) & 0xFFFFFFFF != location.crc32:
        raise WheelError("the member's size or checksum is wrong")
    return data


