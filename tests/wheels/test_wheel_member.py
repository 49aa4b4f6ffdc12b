"""Members out of a wheel by ranged reads over a real HTTPS server (tests/https_server.py): the real intel-openmp
wheel, a zip64 wheel built here, and hostile archives that must end quickly, in bounded memory, with a clear error;
and the index pages that name the wheel."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import struct
import time
import tracemalloc
import zipfile
import zlib

import pytest

from app.resources import resources_folder
from app.sources.download import DownloadError, fetch_page
from app.sources.wheel_member import LocalWheel, RemoteWheel, WheelError, parse_index_page
from tests import realfiles
from tests.helpers.images import real
from tests.https_server import Fault

CATALOG = json.loads((resources_folder() / "catalog.json").read_text(encoding="utf-8"))["intel_openmp"]
MB = 1 << 20


@pytest.fixture(scope="module")
def wheel():
    return real(realfiles.download, "intel-openmp==2024.2.1")


pytestmark = pytest.mark.usefixtures("trusted_server")  # tests/conftest.py


def serve(server, path: str, body, **fault) -> str:
    server.files[path] = body
    if fault:
        server.faults[path] = Fault(**fault)
    return server.url(path)


def fetched_by_ranges(server, path: str) -> int:
    """Bytes the server was asked for on `path` (every request must be a range)."""
    total = 0
    for request in server.requests_for(path):
        first, _, last = request.headers["Range"].removeprefix("bytes=").partition("-")
        total += int(last) - int(first) + 1
    return total


class Bounded:
    """How long a block took and the most memory Python allocated in it (all threads: the server's too)."""

    def __enter__(self) -> Bounded:
        tracemalloc.start()
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.monotonic() - self.started
        self.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def record_digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_the_pinned_runtime_comes_out_of_the_real_wheel_fetching_a_sixth_of_it(server, wheel):
    data = wheel.read_bytes()
    assert hashlib.sha256(data).hexdigest() == CATALOG["wheel_sha256"]
    url = serve(server, "/intel.whl", data)
    with RemoteWheel(url, budget=4 * MB) as remote:
        member = remote.read(CATALOG["member"], CATALOG["max_bytes"])
        fetched = remote.fetched
    assert hashlib.sha256(member).hexdigest() == CATALOG["member_sha256"] and len(member) == CATALOG["member_bytes"]
    requests = server.requests_for("/intel.whl")
    assert all(r.headers.get("Accept-Encoding") == "identity" and r.headers.get("Range") for r in requests)
    assert fetched == fetched_by_ranges(server, "/intel.whl") - 1  # the size query's one byte is not the wheel's
    assert fetched / len(data) < 0.17, fetched / len(data)  # the member is 15 % of the wheel, the rest is its end


def test_several_members_of_one_wheel_each_match_the_hash_in_record(server, wheel):
    url = serve(server, "/intel.whl", wheel.read_bytes())
    with RemoteWheel(url, budget=4 * MB) as remote:
        record = remote.read("intel_openmp-2024.2.1.dist-info/RECORD", MB).decode()
        pinned = {line.split(",")[0]: line.split(",")[1] for line in record.splitlines() if line.count(",") == 2}
        for name in ("intel_openmp-2024.2.1.data/data/Library/lib/libiomp5md.lib",
                     "intel_openmp-2024.2.1.data/data/opt/compiler/include/omp.h",
                     "intel_openmp-2024.2.1.dist-info/METADATA"):
            before = remote.fetched
            out = io.BytesIO()
            copied = remote.copy(name, out, 8 * MB)
            assert record_digest(out.getvalue()) == pinned[name] and copied.size == len(out.getvalue())
            assert copied.sha256 == hashlib.sha256(out.getvalue()).hexdigest()
            info = zipfile.ZipFile(wheel).getinfo(name)
            assert remote.fetched - before <= info.compress_size + 200  # its own bytes: the directory is kept
        assert len(remote.names()) == 49 and CATALOG["member"] in remote.names()


def test_a_missing_a_too_large_and_a_damaged_member_are_refused(server, wheel):
    data = bytearray(wheel.read_bytes())
    url = serve(server, "/intel.whl", bytes(data))
    with RemoteWheel(url, budget=4 * MB) as remote:
        with pytest.raises(WheelError, match="not in the wheel"):
            remote.read("libomp140.x86_64.dll", CATALOG["max_bytes"])
        with pytest.raises(WheelError, match="larger than allowed"):
            remote.read(CATALOG["member"], 1000)
    data[200:264] = bytes(64)  # inside the member's compressed data
    url = serve(server, "/damaged.whl", bytes(data))
    with RemoteWheel(url, budget=4 * MB) as remote, pytest.raises(WheelError, match="damaged|decompress") as caught:
        remote.read(CATALOG["member"], CATALOG["max_bytes"])
    assert caught.value.code == "bad-wheel" and caught.value.values["host"] == "127.0.0.1"
    url = serve(server, "/not-a-zip.whl", b"not a zip" * 10)
    with pytest.raises(WheelError, match="not a readable zip"):
        RemoteWheel(url, budget=MB)


def test_the_budget_stops_the_fetching_of_one_wheel(server, wheel):
    url = serve(server, "/intel.whl", wheel.read_bytes())
    with RemoteWheel(url, budget=300_000) as remote:
        with pytest.raises(WheelError, match="more than the 300000 bytes allowed"):
            remote.read(CATALOG["member"], CATALOG["max_bytes"])
        assert remote.fetched <= 300_000
    assert fetched_by_ranges(server, "/intel.whl") <= 300_001


def test_a_zip64_wheel_built_here_is_read_by_ranges(server, tmp_path, monkeypatch):
    """zipfile writes zip64 records when the archive is past its limits: lowered, a small wheel gets them all
    (the zip64 end record and locator, zip64 extra fields with 0xFFFFFFFF in the entries' own size fields)."""
    payload = os.urandom(300_000) + bytes(200_000)
    path = tmp_path / "big-1.0-py3-none-any.whl"
    with monkeypatch.context() as patch, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        patch.setattr(zipfile, "ZIP64_LIMIT", 1000)
        patch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 2)
        archive.writestr("big-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: big\nVersion: 1.0\n")
        archive.writestr("big/payload.bin", payload)
        archive.writestr(zipfile.ZipInfo("big/stored.bin"), payload[:5000], compress_type=zipfile.ZIP_STORED)
    data = path.read_bytes()
    assert b"PK\x06\x06" in data[-200:] and b"PK\x06\x07" in data[-200:]
    entry = data.rindex(b"big/payload.bin") - 46  # its central directory entry
    assert data[entry:entry + 4] == b"PK\x01\x02"
    assert struct.unpack_from("<II", data, entry + 20) == (0xFFFFFFFF, 0xFFFFFFFF)  # the sizes are in zip64 extra
    url = serve(server, "/big.whl", data)
    with RemoteWheel(url, budget=4 * MB) as remote:
        assert remote.read("big/payload.bin", MB) == payload
        assert remote.read("big/stored.bin", MB) == payload[:5000]
    with LocalWheel(path) as local:  # the whole-wheel fallback reads it the same way
        assert local.read("big/payload.bin", MB) == payload


def zip64_end(directory_offset: int, directory_size: int, entries: int) -> bytes:
    """The zip64 end record, its locator and a classic end record that defers to them."""
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, directory_size,
                         directory_offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, directory_offset + directory_size, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return record + locator + end


def test_a_central_directory_that_claims_gigabytes_is_refused_before_it_is_fetched(server, tmp_path):
    path = tmp_path / "huge.whl"  # 4 GiB on the server's side, sparse on disk: only its end is written
    size = 4 << 30
    claimed = 3 << 30
    end = zip64_end(size - 98 - claimed, claimed, 40_000_000)
    with open(path, "wb") as out:
        out.truncate(size)
        out.seek(size - len(end))
        out.write(end)
    url = serve(server, "/huge.whl", path)
    with Bounded() as bounded, pytest.raises(WheelError, match=f"central directory is {claimed} bytes"):
        RemoteWheel(url, budget=64 * MB)
    assert bounded.seconds < 5 and bounded.peak < 4 * MB, (bounded.seconds, bounded.peak)
    assert fetched_by_ranges(server, "/huge.whl") <= (64 << 10) + 1


def local_entry(name: bytes, data: bytes, size: int, crc: int) -> bytes:
    return struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), size, len(name), 0) + name + data


def central_entry(name: bytes, compressed: int, size: int, crc: int, offset: int) -> bytes:
    return struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, compressed, size, len(name), 0, 0,
                       0, 0, 0, offset) + name


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """256 MiB of zeros, deflated by zlib (about 256 KB)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MB)
    return b"".join(deflate.compress(zeros) for _ in range(256)) + deflate.flush()


@pytest.mark.parametrize("declared", [1000, 4 * MB])
def test_a_deflate_bomb_that_claims_a_small_size_stops_at_the_cap(server, bomb, declared):
    name = b"bomb-1.0.data/data/bomb.bin"
    crc = zlib.crc32(bytes(declared))
    local = local_entry(name, bomb, declared, crc)
    directory = central_entry(name, len(bomb), declared, crc, 0)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), len(local), 0)
    url = serve(server, "/bomb.whl", local + directory + end)
    with RemoteWheel(url, budget=8 * MB) as remote:
        with Bounded() as bounded, pytest.raises(WheelError, match=f"inflates to more than {4 * MB} bytes"):
            remote.read(name.decode(), 4 * MB)
        assert remote.fetched <= len(local + directory + end)
    assert bounded.seconds < 3 and bounded.peak < 16 * MB, (bounded.seconds, bounded.peak)


def test_a_million_entries_stop_before_zipfile_builds_them(server):
    name = b"a.py"
    local = local_entry(name, b"\x03\x00", 0, 0)
    directory = central_entry(name, 2, 0, 0, 0) * 1_000_000  # 50 MB of entries
    url = serve(server, "/many.whl", local + directory + zip64_end(len(local), len(directory), 1_000_000))
    with Bounded() as bounded, pytest.raises(WheelError, match="more than 10000 entries"):
        RemoteWheel(url, budget=128 * MB, max_directory_bytes=64 * MB, max_entries=10_000)
    assert bounded.seconds < 5 and bounded.peak < 8 * MB, (bounded.seconds, bounded.peak)
    assert fetched_by_ranges(server, "/many.whl") < 3 * MB
    server.log.clear()
    with pytest.raises(WheelError, match="central directory is"):  # the default bounds: the directory's size
        RemoteWheel(url, budget=128 * MB)
    assert fetched_by_ranges(server, "/many.whl") <= (64 << 10) + 1


def test_index_pages_in_json_and_html_name_the_wheel_and_its_hash():
    page = "https://mirror.example.cn/simple/intel-openmp/"
    as_json = json.dumps({"meta": {"api-version": "1.1"}, "files": [
        {"filename": CATALOG["wheel"], "url": "../../packages/ab/" + CATALOG["wheel"],
         "hashes": {"sha256": CATALOG["wheel_sha256"]}, "size": 3602212}]}).encode()
    (found,) = parse_index_page(page, "application/vnd.pypi.simple.v1+json", as_json)
    assert found.url == "https://mirror.example.cn/packages/ab/" + CATALOG["wheel"]
    assert found.sha256 == CATALOG["wheel_sha256"] and found.size == 3602212
    as_html = (f'<html><body><a href="../../packages/ab/{CATALOG["wheel"]}#sha256={CATALOG["wheel_sha256"]}" '
               f'data-requires-python="">{CATALOG["wheel"]}</a><br/></body></html>').encode()
    (found,) = parse_index_page(page, "text/html", as_html)
    assert (found.filename, found.sha256) == (CATALOG["wheel"], CATALOG["wheel_sha256"])
    assert found.url == "https://mirror.example.cn/packages/ab/" + CATALOG["wheel"]
    with pytest.raises(WheelError):
        parse_index_page(page, "application/json", b"{not json")


def test_a_gzipped_index_page_is_decoded_and_a_gzip_bomb_page_is_refused(server):
    page = b"<html><body>" + b'<a href="x-1.0-py3-none-any.whl">x-1.0-py3-none-any.whl</a>' * 2000 + b"</body></html>"
    url = serve(server, "/simple/x/", page, gzip=True)
    final, kind, body = fetch_page(url, accept="text/html")
    assert body == page and len(parse_index_page(final, kind, body)) == 2000
    (request,) = server.requests_for("/simple/x/")
    assert "gzip" in request.headers["Accept-Encoding"]
    assert len(gzip.compress(page)) < len(page) // 10  # what went over the wire was the compressed page
    url = serve(server, "/simple/bomb/", bytes(64 * MB), gzip=True)
    with pytest.raises(DownloadError) as caught:
        fetch_page(url, accept="text/html", max_bytes=MB)
    assert caught.value.code == "too-large"


def test_neighbouring_members_of_the_real_torch_wheel_come_in_a_few_reads_and_the_whole_wheel_when_cheaper(server):
    """2,000 headers missing (an install cut short by the path limit): one read per 16 MB of neighbours, each
    header as RECORD pins it; every member wanted at once costs more by ranges than the wheel: one download."""
    torch_wheel = real(realfiles.download, realfiles.TORCH_240)
    with zipfile.ZipFile(torch_wheel) as zipped:
        infos = zipped.infolist()
        headers = [i.filename for i in infos if i.filename.startswith("torch/include/")][:2000]
        originals = {name: zipped.read(name) for name in headers}
    url = serve(server, "/torch.whl", torch_wheel.read_bytes())
    with RemoteWheel(url, budget=torch_wheel.stat().st_size) as remote:
        groups = remote.batches(headers)
        assert sorted(n for g in groups for n in g) == sorted(headers) and len(groups) <= 4
        assert remote.cost(groups) < remote.size // 4
        server.log.clear()
        for group in groups:
            remote.hold(group)
            for name in group:
                out = io.BytesIO()
                remote.copy(name, out, 64 * MB)
                assert out.getvalue() == originals[name]
        assert len(server.requests_for("/torch.whl")) == len(groups)  # one read a group, none per member
        everything = remote.batches([i.filename for i in infos if not i.is_dir()])
        assert remote.cost(everything) >= remote.size  # ranges would be slower: the caller takes the whole wheel
        few = remote.batches(["torch/lib/fbgemm.dll", "torch/lib/c10.dll", "torch/lib/torch_cpu.dll"])
        assert remote.cost(few) < remote.size  # torch_cpu.dll's 69 MB in 8 MB reads: ranges still win
