"""A diagnosis against starting torch: `python -m app diagnose --env ENV --json -` of the Windows lab's real torch
2.4.0 (pip's files, no libomp140.x86_64.dll: `import torch` fails with WinError 126 on fbgemm.dll), run by the
environment's own Windows CPython under Wine, against `python -c "import torch"` of the same environment, in the
same run, alternated, after one warm-up of each; wall time from this (Linux) parent, from the start of each process.

The first problem: when the dependency check's line (it names the missing DLL's importers) reaches standard error,
the moment the command knows what stops torch; the live replay of `import torch` runs on after it.

`--loads`: the same torch with libomp140.x86_64.dll in place (ComfyUI's fix), so `import torch` loads all of torch
and the live check starts it whole; there is no problem to find.

Goals: the whole diagnosis <= 1.2x `import torch`; its first problem <= 0.5x.

    python benchmarks/bench_diagnose_windows.py [--repeat 3] [--loads] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
DEPENDENCIES_DONE = b"Checking which DLLs PyTorch needs"  # the dependency check's progress line, once it ended


def timed(lab, env: Path, args: list[str], extra: dict[str, str]) -> tuple[float, float, object]:
    """(seconds to the end, seconds to the dependency check's line or 0, the finished process)."""
    seen = {DEPENDENCIES_DONE: 0.0}
    started = time.monotonic()
    done = lab.run_exe(lab.python_exe(env), args, env=extra, timeout=900, seen=seen)
    ended = time.monotonic()
    return ended - started, (seen[DEPENDENCIES_DONE] - started) if seen[DEPENDENCIES_DONE] else 0.0, done


def check(name: str, done, first: float, loads: bool) -> None:
    """Each command did what the run is about: the diagnosis found the blocker (or, with --loads, none); torch
    failed on fbgemm.dll (or loaded)."""
    if name == "diagnose" and (done.returncode != (0 if loads else 1) or not first):
        raise SystemExit(f"diagnose exited {done.returncode}\n{done.stderr[-3000:]}")
    if name == "import" and (done.returncode == 0) != loads:
        raise SystemExit(f"import torch exited {done.returncode}\n{done.stderr[-3000:]}")


def main() -> None:
    from tests.winelab import REPO_ROOT, WineLab, to_windows_path

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loads", action="store_true", help="torch with libomp140.x86_64.dll: it loads")
    parser.add_argument("--json")
    args = parser.parse_args()
    name = "diagnose_windows_loads.json" if args.loads else "diagnose_windows.json"
    args.json = args.json or str(REPO / "benchmarks" / "results" / name)
    lab = WineLab()
    reason = lab.unavailable_reason()
    if reason:
        raise SystemExit(f"the Windows lab is unavailable: {reason}")
    env = lab.make_torch_env("bench-diagnose-240", torch_version="2.4.0", libomp=args.loads)
    diagnose = APP.format(repo=to_windows_path(REPO_ROOT),
                          argv=["diagnose", "--env", to_windows_path(env), "--json", "-", "--lang", "en"])
    runs: dict[str, list[tuple[float, float]]] = {"diagnose": [], "import": []}
    with tempfile.TemporaryDirectory(prefix="tdd-bench-diagnose-") as scratch:
        extra = {"TDD_DATA_DIR": to_windows_path(Path(scratch))}
        commands = {"diagnose": ["-c", diagnose], "import": ["-c", "import torch"]}
        for number in range(args.repeat + 1):  # the first run warms Wine and the file cache
            for name in (list(commands) if number % 2 else list(reversed(commands))):  # drift hits both alike
                seconds, first, done = timed(lab, env, commands[name], extra)
                check(name, done, first, args.loads)
                if number:
                    runs[name].append((seconds, first))
    whole = statistics.median(s for s, _ in runs["diagnose"])
    first = statistics.median(f for _, f in runs["diagnose"])
    start = statistics.median(s for s, _ in runs["import"])
    report = {
        "environment": "the lab's Windows CPython 3.12 with torch 2.4.0 " + (
            "and libomp140.x86_64.dll: torch loads" if args.loads else "(no libomp140.x86_64.dll)"),
        "repeat": args.repeat,
        "diagnose_seconds_median": round(whole, 2), "diagnose_seconds_all": [round(s, 2) for s, _ in runs["diagnose"]],
        "first_problem_seconds_median": round(first, 2),
        "import_torch_seconds_median": round(start, 2),
        "import_torch_seconds_all": [round(s, 2) for s, _ in runs["import"]],
        "ratio_over_import_torch": round(whole / start, 3), "first_problem_ratio": round(first / start, 3),
        "meets_goal": whole / start <= 1.2 and first / start <= 0.5, "load_average": list(os.getloadavg()),
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))
    lab.shutdown()


if __name__ == "__main__":
    main()
