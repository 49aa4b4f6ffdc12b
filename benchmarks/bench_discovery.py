"""Discovery benchmark (issue 3): an image with 30 environments among 200,000 files.

Measures, in a fresh child process, the time to the first environment and to the end of discovery, and
in the same run a baseline: a plain `os.walk` of the whole image (what an unbounded search costs).

    python benchmarks/bench_discovery.py [--files 200000] [--envs 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

CHILD = """
import sys, time, os
sys.path.insert(0, {repo!r})
from pathlib import Path
start = time.perf_counter()
from app.inventory.discovery import DiscoveryReport, discover
from app.system.offline import OfflineImage
report = DiscoveryReport()
first = None
count = 0
for env in discover(OfflineImage(Path({root!r})), report=report, budget_s={budget}):
    count += 1
    if first is None:
        first = time.perf_counter() - start
total = time.perf_counter() - start
walk_start = time.perf_counter()
files = sum(len(f) for _, _, f in os.walk({root!r}))
walk = time.perf_counter() - walk_start
print(first, total, count, report.folders_visited, int(report.out_of_time), walk, files)
"""

PLACES = [r"C:\Users\alice\Desktop", r"C:\Users\alice\Documents", r"C:\Users\alice\Downloads", r"C:\AI",
          r"C:\Users\alice", "C:\\"]


def build(root: Path, n_envs: int, n_files: int) -> None:
    from app.demo.image_builder import ImageBuilder
    from app.demo.pe_writer import build_pe

    image = ImageBuilder(root)
    exe = build_pe(dll=False)
    dll = build_pe(dll_name="python312.dll", file_version=(3, 12, 4150, 1013))
    base = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
    image.write(base + r"\python.exe", exe)
    image.write(base + r"\python312.dll", dll)
    per_env_files = 200
    for i in range(n_envs):
        place = PLACES[i % len(PLACES)].rstrip("\\")
        if i % 2:
            folder = rf"{place}\ComfyUI_windows_portable_{i}\python_embeded"
            image.write(folder + r"\python.exe", exe)
            image.write(folder + r"\python312.dll", dll)
            image.write(folder + r"\python312._pth", ".\nLib\\site-packages\n")
        else:
            folder = rf"{place}\stable-diffusion-webui-{i}\venv"
            image.venv(folder, base, python_exe=exe)
        site = folder + r"\Lib\site-packages"
        image.torch_version_file(site, "2.4.0+cu121")
        lib = image.mkdir(site + r"\torch\lib")
        for j in range(per_env_files):  # inside environments: never walked
            (lib / f"f{j}.pyi").touch()
    remaining = n_files - n_envs * per_env_files
    # the rest: user projects and model folders, 4-5 levels deep, 50 files per folder
    folder_count = remaining // 50
    for k in range(folder_count):
        place = PLACES[k % len(PLACES)].rstrip("\\")
        folder = image.mkdir(rf"{place}\projects\p{k % 97}\src\mod{k // 97 % 40}\part{k}")
        for j in range(50):
            (folder / f"file{j}.txt").touch()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--envs", type=int, default=30)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "discovery.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "image"
        started = time.perf_counter()
        build(root, args.envs, args.files)
        built = time.perf_counter() - started
        out = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), root=str(root), budget=args.budget)],
                             capture_output=True, text=True, check=True).stdout.split()
    first, total, count, visited, out_of_time, walk, files = out
    report = {
        "files_in_image": int(files), "environments_in_image": args.envs, "build_seconds": built,
        "first_environment_seconds": float(first), "discovery_seconds": float(total),
        "environments_found": int(count), "folders_visited": int(visited), "out_of_time": bool(int(out_of_time)),
        "budget_seconds": args.budget, "baseline_full_os_walk_seconds": float(walk),
        "ratio_discovery_over_full_walk": float(total) / float(walk),
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
