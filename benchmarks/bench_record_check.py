"""The install-record check (torch's ~11 000 files against RECORD, sizes) under real Windows CPython in the Windows
lab, against the way it was before in the same process: a stat of each file on its own (two, `is_file` then
`stat`). Wine turns each such call into requests to its server and, for a file's volume, to its mount manager, about
a millisecond each; on Windows a folder's listing carries the sizes, so the check reads each folder once.

Alternating, --repeat times after one warm-up of each, in one Windows Python process:

- listing: `check_torch_files(env)` as the diagnosis runs it;
- per file: for each of the same RECORD entries, `path.is_file()` and `path.stat().st_size` (the baseline).

    TDD_WINELAB_DIR=... python benchmarks/bench_record_check.py [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

SCRIPT = r"""
import json, statistics, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.inventory.environment import inspect_environment
from app.inventory.integrity import check_torch_files, find_record, installed_files
from app.system.live import LiveWindows
env = inspect_environment(LiveWindows(), Path({env!r}))
entries = installed_files(find_record(env))

def listing():
    report = check_torch_files(env)
    assert report.ok, (report.missing[:3], report.size_changed[:3], report.problem)
    return report.checked

def per_file():
    found = 0
    for entry in entries:
        path = env.site_packages.joinpath(*entry.path.split("/"))
        found += path.is_file() and path.stat().st_size == entry.size
    return found

times = {{"listing": [], "per_file": []}}
for number in range({repeat} + 1):
    for name, run in (("listing", listing), ("per_file", per_file)) if number % 2 else (("per_file", per_file),
                                                                                      ("listing", listing)):
        started = time.perf_counter()
        count = run()
        if number:
            times[name].append(time.perf_counter() - started)
print(json.dumps({{"files": len(entries), "checked": count, "times": times}}))
"""


def main() -> None:
    import statistics

    from tests.winelab import WineLab, to_windows_path

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "record_check.json"))
    args = parser.parse_args()
    lab = WineLab()
    reason = lab.unavailable_reason()
    if reason:
        raise SystemExit(f"the Windows lab is unavailable: {reason}")
    env = lab.make_torch_env("bench-record-check-241", torch_version="2.4.1")
    done = lab.run_python(["-c", SCRIPT.format(repo=to_windows_path(REPO), env=to_windows_path(env),
                                               repeat=args.repeat)], timeout=1800, torch_env=env)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    median = {name: statistics.median(times) for name, times in measured["times"].items()}
    report = {
        "what": "torch 2.4.1's install record checked (sizes) under Windows CPython 3.12 in the Windows lab: from the "
                "folders' listings, against a stat of each file on its own, same process",
        "files": measured["files"],
        "repeat": args.repeat,
        "listing_seconds_median": round(median["listing"], 3),
        "per_file_seconds_median": round(median["per_file"], 3),
        "listing_seconds_all": [round(t, 3) for t in measured["times"]["listing"]],
        "per_file_seconds_all": [round(t, 3) for t in measured["times"]["per_file"]],
        "ratio_listing_over_per_file": round(median["listing"] / median["per_file"], 3),
        "note": "one Windows Python process, the two ways alternated after one warm-up of each",
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
