"""Restoring torch's files: the damaged files of an install put back out of the real torch 2.4.0 wheel, from a
real HTTPS index on 127.0.0.1 that answers as a link users have does (50 ms before each answer, 20 MB/s), against
downloading the whole wheel from the same server, in the same run.

The files are the wheel's longest paths: what an install cut short by Windows' path limit misses. At 1, 100 and
8,000 missing files, the fetch (`restore_files.fetch_members`: members by ranges, neighbours in one read, or the
whole wheel when that is faster) is timed, with the bytes it fetched and the reads it made; every file is checked
against RECORD's SHA-256 as in the repair. Fresh timing per count, the whole wheel's download timed in turn.

    python benchmarks/bench_restore.py [--latency 0.05] [--rate 20e6] [--json FILE]
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

COUNTS = (1, 100, 8000)


def _record(wheel: Path) -> list[tuple[str, str, int]]:
    with zipfile.ZipFile(wheel) as zipped:
        record = zipped.read("torch-2.4.0.dist-info/RECORD").decode()
    rows = []
    for line in record.splitlines():
        path, digest, size = line.rsplit(",", 2)
        if digest.startswith("sha256="):
            raw = base64.urlsafe_b64decode(digest[7:] + "=" * (-len(digest[7:]) % 4))
            rows.append((path, raw.hex(), int(size)))
    return rows


def main() -> None:
    from app.repair.restore_files import fetch_members
    from app.sources.download import download, new_session
    from tests import realfiles
    from tests.https_server import HttpsServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=20e6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "restore.json"))
    args = parser.parse_args()
    wheel = realfiles.download(realfiles.TORCH_240)
    rows = sorted(_record(wheel), key=lambda row: (-len(row[0]), row[0]))  # the longest paths first
    report: dict = {"wheel": wheel.name, "wheel_bytes": wheel.stat().st_size, "files_in_record": len(rows),
                    "latency_s": args.latency, "rate_bytes_per_s": args.rate, "repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp, HttpsServer(Path(tmp)) as server:
        server.files["/torch.whl"] = wheel
        server.latency_s, server.bytes_per_s = args.latency, args.rate
        session = new_session(server.ca)
        url = server.url("/torch.whl")
        whole_times = []
        for count in COUNTS:
            package = {"wheel": wheel.name, "dist_info": "torch-2.4.0.dist-info",
                       "files": [{"path": path, "target": f"{tmp}/t/{path}", "sha256": digest, "size": size}
                                 for path, digest, size in rows[:count]]}
            times, facts = [], {}
            for run in range(args.repeat):
                folder = Path(tmp) / f"fetch-{count}-{run}"
                folder.mkdir()
                facts = {}
                started = time.perf_counter()
                copies = fetch_members(url, None, wheel.stat().st_size, package, folder, session, None, None, facts)
                times.append(time.perf_counter() - started)
                assert len(copies) == count
                started = time.perf_counter()
                download(url, Path(tmp) / "whole.whl", max_bytes=wheel.stat().st_size + 1, session=session)
                whole_times.append(time.perf_counter() - started)
                (Path(tmp) / "whole.whl").unlink()
            seconds = statistics.median(times)
            fetched = facts["transferred"]
            report[f"{count}_files"] = {
                "seconds": round(seconds, 3), "ranged": facts["ranged"], "reads": facts.get("reads", 0),
                "bytes": fetched, "bytes_over_wheel": round(fetched / wheel.stat().st_size, 3),
                "bytes_needed_uncompressed": sum(r[2] for r in rows[:count])}
        session.close()
    whole = statistics.median(whole_times)
    report["whole_wheel_seconds"] = round(whole, 3)
    for count in COUNTS:
        entry = report[f"{count}_files"]
        entry["ratio_over_whole_wheel"] = round(entry["seconds"] / whole, 3)
        print(f"{count} files: {entry['seconds']:.2f} s, {'ranges' if entry['ranged'] else 'the whole wheel'}, "
              f"{entry['reads']} reads, {entry['bytes_over_wheel']:.1%} of the wheel's bytes: "
              f"{entry['ratio_over_whole_wheel']:.2f}x the whole wheel's {whole:.2f} s")
    report["load_average"] = list(os.getloadavg())
    save_results(args.json, report)


if __name__ == "__main__":
    main()
