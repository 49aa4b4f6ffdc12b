"""Placing a file under the journal: what `changes/files.prepare` reads before a change (the backup of the file
being replaced, the backup checked, the new file's hash), against one plain copy of the same file in the same run.

A 256 MiB file stands for one of torch's DLLs (up to 1 GB). Bytes read come from /proc/self/io (`rchar`), so that
figure does not depend on the machine's speed; times are medians of --repeat rounds. The target: reading the
original once (hashed while it is copied to the backup) and the backup once, and the new file not at all when the
caller has just checked its hash (a download, a wheel member checked against RECORD).

    python benchmarks/bench_put_file.py [--repeat 5] [--mib 256] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set


def read_bytes_so_far() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise SystemExit("/proc/self/io has no rchar: this benchmark needs Linux")


def measured(work) -> tuple[float, int]:
    read_before, started = read_bytes_so_far(), time.perf_counter()
    work()
    return time.perf_counter() - started, read_bytes_so_far() - read_before


def main() -> None:
    from app.repair.changes import files as file_change
    from app.system.files import copy_file, sha256_of
    from app.system.offline import OfflineImage

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "put_file.json"))
    args = parser.parse_args()
    size = args.mib << 20
    rounds: dict[str, list[tuple[float, int]]] = {"plain copy": [], "prepare, hash known": [],
                                                  "prepare, hash read": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "Windows").mkdir()
        system = OfflineImage(root)
        block = os.urandom(1 << 20)
        target, source = root / "torch_cpu.dll", root / "new.dll"
        for path, salt in ((target, b"old"), (source, b"new")):
            with open(path, "wb") as out:
                for _ in range(args.mib):
                    out.write(salt + block[len(salt):])
        source_hash = sha256_of(source)
        def prepared(name: str, folder: Path, known_hash) -> None:
            intent: dict = {}
            rounds[name].append(measured(lambda: intent.update(file_change.backed_up(
                system, folder, 1, target, source, known_hash))))
            if intent["after"] != source_hash or intent["before"]["sha256"] != sha256_of(folder / "backups" / "1"):
                raise SystemExit("prepare recorded the wrong hashes")

        for number in range(args.repeat):
            rounds["plain copy"].append(measured(lambda: copy_file(target, root / "copy.dll")))
            prepared("prepare, hash known", root / f"tx{number}a", source_hash)
            prepared("prepare, hash read", root / f"tx{number}b", None)
    baseline = statistics.median(t for t, _ in rounds["plain copy"])
    report = {"file_mib": args.mib, "repeat": args.repeat, "results": {}}
    for name, values in rounds.items():
        seconds = statistics.median(t for t, _ in values)
        read = statistics.median(r for _, r in values)
        report["results"][name] = {"median_s": round(seconds, 3), "read_per_file_size": round(read / size, 2),
                                   "time_vs_plain_copy": round(seconds / baseline, 2)}
        print(f"{name:22} {seconds:7.3f} s  read {read / size:4.2f} x the file  {seconds / baseline:4.2f} x copy")
    save_results(args.json, report)


if __name__ == "__main__":
    main()
