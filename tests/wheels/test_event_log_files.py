"""The offline path of Windows Security's logs on a real .evtx file that Windows wrote: `TestLogX.evtx` from the
sdist of dissect.eventlog 3.11 (AGPL-3.0; downloaded into .cache/, never shipped). No package on PyPI ships a
Defender or a Code Integrity log: these prove the reading of the binary file (its chunks, its damage, its size, its
months); the records of those two logs are proved on the XML Windows renders (tests/unit/test_security_events.py)."""

from __future__ import annotations

import struct
from datetime import datetime, timedelta, timezone

from app.inventory import security_events
from app.inventory.security_events import DAMAGED, DEFENDER_LOG, TOO_LARGE, evtx_records
from tests import realfiles
from tests.helpers.images import real

NOW = datetime.now(timezone.utc)
LONG_AGO = NOW - timedelta(days=3650)
TEST_LOG = "dissect.eventlog==3.11"


def real_log():
    folder = real(lambda: realfiles.extract(TEST_LOG, "*/tests/_data/TestLogX.evtx", sdist=True))
    return next(folder.glob("*/tests/_data/TestLogX.evtx"))


def test_a_real_evtx_file_is_read_record_by_record_as_windows_rendered_it():
    records, note = evtx_records(real_log(), frozenset({1, 2, 3, 5, 65534}))
    assert note is None and len(records) == 5
    assert all("<EventID" in r and "DESKTOP-PJOQLJS" in r for r in records)
    assert evtx_records(real_log(), DEFENDER_LOG.ids) == ([], None)  # the wanted IDs alone are parsed


def test_a_damaged_evtx_file_is_a_note(tmp_path):
    data = bytearray(real_log().read_bytes())
    data[4096 + 512 + 24: 4096 + 512 + 600] = b"\xff" * 576  # the first record's body
    damaged = tmp_path / "damaged.evtx"
    damaged.write_bytes(bytes(data))
    records, note = evtx_records(damaged, frozenset({1, 2, 3, 5, 65534}))
    assert note == DAMAGED and len(records) < 5
    other = tmp_path / "not-a-log.evtx"
    other.write_bytes(b"MZ" + b"\0" * 9000)
    assert evtx_records(other, DEFENDER_LOG.ids) == ([], DAMAGED)


def test_a_large_evtx_file_is_read_from_its_newest_chunks_only(tmp_path):
    data = real_log().read_bytes()
    header, chunk = bytearray(data[:4096]), data[4096:4096 + 65536]
    count = 320  # 20 MB
    struct.pack_into("<QQ", header, 8, 0, count - 1)
    struct.pack_into("<H", header, 42, count)
    chunks = [chunk[:8] + struct.pack("<QQ", n * 5 + 1, n * 5 + 5) + chunk[24:] for n in range(count)]
    large = tmp_path / "large.evtx"
    large.write_bytes(bytes(header) + b"".join(chunks))
    _, kept, note = security_events.newest_chunks(large)
    assert note == TOO_LARGE and len(kept) == security_events.READ_BYTES // 65536
    assert [struct.unpack_from("<Q", c, 16)[0] for c in kept[:2]] == [count * 5, count * 5 - 5]  # newest first
    records, _ = evtx_records(large, frozenset({1, 2, 3, 5, 65534}))
    assert len(records) == min(5 * len(kept), security_events.MAX_EVENTS)


def test_chunks_written_before_the_months_asked_for_are_not_read():
    assert evtx_records(real_log(), frozenset({1, 2, 3, 5, 65534}), NOW - timedelta(days=183)) == ([], None)
    assert len(evtx_records(real_log(), frozenset({1, 2, 3, 5, 65534}), LONG_AGO)[0]) == 5  # written in 2021
