"""Reading Windows Security's log on a copied drive: a 20 MB Defender Operational log (.evtx), as the diagnosis
reads it (its newest chunks, newest first, within 4 MB and 5,000 records; the wanted event IDs' XML parsed), against
pyevtx-rs rendering every record of the whole file, and both parsers (pyevtx-rs, python-evtx) rendering every
record of its first four chunks (256 KB: python-evtx takes minutes for 4 MB).

The log is made of a real one: the records of the .evtx file that dissect.eventlog's sdist ships for its tests
(written by Windows' Write-EventLog), copied until each 64 KB chunk is full (about 230 records a chunk) and the file
holds 320 chunks (20 MB, 73,000 records), each chunk and the file header given their record numbers and checksums.
No Defender records can be written here, so two readings are timed: as shipped (the sample's event IDs are not
Defender's: each record is rendered by pyevtx-rs and looked at), and with every record wanted (each also parsed
as an event: the worst case).

    python benchmarks/bench_security_log.py [--repeat 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import struct
import sys
import tempfile
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.inventory import security_events  # noqa: E402 - after the path is set
from benchmarks import save_results  # noqa: E402
from tests import realfiles  # noqa: E402

CHUNKS = 320
LONG_AGO = datetime(2000, 1, 1, tzinfo=timezone.utc)


def sample() -> bytes:
    folder = realfiles.extract("dissect.eventlog==3.11", "*/tests/_data/TestLogX.evtx", sdist=True)
    return next(folder.glob("*/tests/_data/TestLogX.evtx")).read_bytes()


def dense_chunk(chunk: bytes, first: int) -> tuple[bytes, int]:
    """The sample's chunk filled with copies of its records 2-5 (they use record 1's template by its offset)."""
    records, offset = [], 512
    while offset < struct.unpack_from("<I", chunk, 48)[0]:
        size = struct.unpack_from("<I", chunk, offset + 4)[0]
        records.append(bytearray(chunk[offset:offset + size]))
        offset += size
    body, number, last_offset = bytearray(), first, 512
    for record in records[:1] + records[1:] * 400:
        if 512 + len(body) + len(record) > 65536:
            break
        struct.pack_into("<Q", record, 8, number)
        last_offset = 512 + len(body)
        body += record
        number += 1
    data = bytearray(chunk[:512]) + body + bytes(65536 - 512 - len(body))
    struct.pack_into("<QQQQ", data, 8, first, number - 1, first, number - 1)
    struct.pack_into("<III", data, 44, last_offset, 512 + len(body), zlib.crc32(bytes(data[512:512 + len(body)])))
    struct.pack_into("<I", data, 124, zlib.crc32(bytes(data[:120]) + bytes(data[128:512])))
    return bytes(data), number - first


def build_log(path: Path) -> int:
    data = sample()
    header, chunk = bytearray(data[:4096]), data[4096:4096 + 65536]
    chunks, number = [], 1
    for _ in range(CHUNKS):
        built, count = dense_chunk(chunk, number)
        chunks.append(built)
        number += count
    struct.pack_into("<QQQ", header, 8, 0, CHUNKS - 1, number)
    struct.pack_into("<H", header, 42, CHUNKS)
    struct.pack_into("<I", header, 124, zlib.crc32(bytes(header[:120])))
    path.write_bytes(bytes(header) + b"".join(chunks))
    return number - 1


def timed(run, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def every_record_rust(path: Path) -> int:
    """Every record of the file rendered as XML by pyevtx-rs, on one thread."""
    import evtx

    return sum(1 for _ in evtx.PyEvtxParser(str(path), number_of_threads=1).records())


def every_record_python(path: Path) -> int:
    """Every record of the file rendered as XML by python-evtx, where it is installed beside (not on Windows:
    there its folder Evtx and pyevtx-rs' evtx are one)."""
    from Evtx.Evtx import Evtx

    with Evtx(str(path)) as log:
        return sum(1 for record in log.records() if record.xml())


def first_chunks(log: Path, target: Path, count: int) -> None:
    """A log of the first `count` chunks of `log` (its header says so)."""
    data = log.read_bytes()
    header = bytearray(data[:4096])
    struct.pack_into("<QQ", header, 8, 0, count - 1)
    struct.pack_into("<H", header, 42, count)
    struct.pack_into("<I", header, 124, zlib.crc32(bytes(header[:120])))
    target.write_bytes(bytes(header) + data[4096:4096 + count * 65536])


def every_record_wanted() -> tuple:
    """Defender's log source with the sample's own event IDs: every record is also parsed as an event."""
    wanted = dataclasses.replace(security_events.DEFENDER_LOG, ids=(1, 2, 3, 5, 65534))
    return (wanted, security_events.CODE_INTEGRITY_LOG)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", metavar="FILE", default=str(REPO / "benchmarks" / "results" / "security_log.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / security_events.DEFENDER_LOG.file
        records = build_log(log)
        results = {"log_bytes": log.stat().st_size, "records": records}
        read = lambda: security_events.read_evtx(log, security_events.DEFENDER, LONG_AGO)  # noqa: E731
        results["read_as_shipped_s"], _ = timed(read, args.repeat)
        shipped = security_events.LOGS
        security_events.LOGS = every_record_wanted()
        results["read_every_record_wanted_s"], (events, _) = timed(read, args.repeat)
        security_events.LOGS = shipped
        results["whole_file_pyevtx_rs_s"], _ = timed(lambda: every_record_rust(log), 3)
        small = Path(folder) / "small.evtx"  # python-evtx takes minutes for the 4 MB: both timed on 256 KB
        first_chunks(log, small, 4)
        results["four_chunks_records"] = every_record_rust(small)
        results["four_chunks_pyevtx_rs_s"], _ = timed(lambda: every_record_rust(small), args.repeat)
        try:
            results["four_chunks_python_evtx_s"], _ = timed(lambda: every_record_python(small), 1)
        except ImportError:
            results["four_chunks_python_evtx_s"] = None
    for key, value in results.items():
        print(f"{key}: {value:.4f}" if isinstance(value, float) else f"{key}: {value}")
    save_results(args.json, results)


if __name__ == "__main__":
    main()
