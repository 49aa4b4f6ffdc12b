"""Repair benchmark: on the real torch 2.4.0 image, `repair --action openmp-runtime --source torch-bundled --yes`
(the planning's diagnosis, the copy of the 1.9 MB OpenMP runtime with its backup and fsynced journal, then the
diagnosis again) and `undo --last`, each a fresh `python -m app` process; and in the same run, as a baseline, a
plain `diagnose` of the same image in the same kind of process, so the ratios show what a repair and an undo cost
over one diagnosis.

Each round runs diagnose, repair, undo in that order, so every round starts from the original image; after the
rounds every file of torch\\lib must be byte for byte as before (SHA-256), or the benchmark fails.

    python benchmarks/bench_repair.py [--repeat 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set


def run_app(argv: list[str], expect: int, data_dir: Path) -> float:
    """Wall time of a fresh `python -m app ...` process (interpreter start and imports included)."""
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "app", *argv], cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"`python -m app {' '.join(argv)}` exited {done.returncode}, expected {expect}\n"
                         f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    return elapsed


def snapshot(folder: Path) -> dict[str, str]:
    """SHA-256 of every file in the folder (names included, so a file left behind or missing shows too)."""
    result = {}
    for path in sorted(folder.iterdir()):
        digest = hashlib.sha256()
        with open(path, "rb") as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
        result[path.name] = digest.hexdigest()
    return result


def main() -> None:
    from tests.helpers.images import TORCH_LIB, VENV, build_torch_image

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "repair.json"))
    args = parser.parse_args()
    diagnose, repair, undo = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        image = build_torch_image(Path(tmp) / "image")
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        root = str(image.root)
        lib = image.host(TORCH_LIB)
        runtime_bytes = (lib / "libiomp5md.dll").stat().st_size
        before = snapshot(lib)
        if "libomp140.x86_64.dll" in before:
            raise SystemExit("the image already has libomp140.x86_64.dll: nothing for the repair to do")
        for _ in range(args.repeat):
            diagnose.append(run_app(["diagnose", "--root", root, "--quiet", "--json", os.devnull], 1, data_dir))
            repair.append(run_app(["repair", "--root", root, "--env", VENV + r"\Scripts\python.exe",
                                   "--action", "openmp-runtime", "--source", "torch-bundled", "--yes"], 0, data_dir))
            undo.append(run_app(["undo", "--last"], 0, data_dir))  # 0: undone (README)
        after = snapshot(lib)
        if after != before:
            changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
            raise SystemExit(f"torch\\lib is NOT as it was after {args.repeat} repair/undo rounds: {changed}")
        transactions = sorted(p.name for p in (data_dir / "transactions").iterdir())
    if len(transactions) != args.repeat:
        raise SystemExit(f"expected {args.repeat} journal transactions, found {len(transactions)}")
    report = {
        "image": "real torch 2.4.0 wheel (11 DLLs, 262 MB) in a ComfyUI-style venv, python.org CPython 3.12.9",
        "repair": "openmp-runtime from torch-bundled: libiomp5md.dll copied to libomp140.x86_64.dll",
        "runtime_bytes": runtime_bytes,
        "repair_seconds_median": statistics.median(repair),
        "repair_seconds_all": repair,
        "undo_seconds_median": statistics.median(undo),
        "undo_seconds_all": undo,
        "baseline_diagnose_seconds_median": statistics.median(diagnose),
        "baseline_diagnose_seconds_all": diagnose,
        "ratio_repair_over_diagnose": statistics.median(repair) / statistics.median(diagnose),
        "ratio_undo_over_diagnose": statistics.median(undo) / statistics.median(diagnose),
        "torch_lib_files_identical_after": len(after),
        "note": "wall time of a fresh `python -m app` process, measured by the parent (interpreter start and "
                "imports included, so the diagnose baseline is not comparable with diagnose.json, timed inside "
                "the child); each round is diagnose, repair, undo; torch\\lib checked by SHA-256 after all rounds",
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
