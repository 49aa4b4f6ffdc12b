"""Discovery benchmark: an image with 30 environments of AI apps and the launchers' own layouts (Pinokio with its
home recorded in its settings, a portable Stability Matrix on the Desktop, ComfyUI Desktop, SwarmUI, uv's Pythons)
among 200,000 files.

Measures, in a fresh child process, the time to the first environment and to the end of discovery, both the
default search and "search everywhere" (deeper, longer), and in the same run a baseline: a plain `os.walk` of the
whole image (what an unbounded search costs). The machine's load average is written beside the figures.

    python benchmarks/bench_discovery.py [--files 200000] [--envs 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
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
labels = set()
for env in discover(OfflineImage(Path({root!r})), report=report, budget_s={budget}):
    count += 1
    labels.add(env.app or "")
    if first is None:
        first = time.perf_counter() - start
total = time.perf_counter() - start
deep_start = time.perf_counter()
deep = DiscoveryReport()
deep_count = sum(1 for _ in discover(OfflineImage(Path({root!r})), report=deep, budget_s=600.0, max_depth=7))
deep_total = time.perf_counter() - deep_start
walk_start = time.perf_counter()
files = sum(len(f) for _, _, f in os.walk({root!r}))
walk = time.perf_counter() - walk_start
launchers = sum(1 for label in labels if "·" in label or label in ("ComfyUI Desktop", "uv"))
print(first, total, count, report.folders_visited, int(report.out_of_time), walk, files, deep_total, deep_count,
      deep.folders_visited, launchers)
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
    launcher_layouts(image, exe, dll, per_env_files)
    remaining = n_files - n_envs * per_env_files - 6 * per_env_files
    # the rest: user projects and model folders, 4-5 levels deep, 50 files per folder
    folder_count = remaining // 50
    for k in range(folder_count):
        place = PLACES[k % len(PLACES)].rstrip("\\")
        folder = image.mkdir(rf"{place}\projects\p{k % 97}\src\mod{k // 97 % 40}\part{k}")
        for j in range(50):
            (folder / f"file{j}.txt").touch()


LAUNCHER_ENVS = 7  # what launcher_layouts adds: six venvs and uv's Python


def launcher_layouts(image, exe: bytes, dll: bytes, per_env_files: int) -> None:
    """The launchers' layouts (resources/launchers.json): Pinokio's home where its config says (under AppData,
    which no walk visits), a portable Stability Matrix two levels below the Desktop, ComfyUI Desktop's default base
    path, SwarmUI's ComfyUI in C:\\AI, uv's managed Python; each venv made from uv's Python."""
    import json as _json

    home, roaming, local = r"C:\Users\alice", r"C:\Users\alice\AppData\Roaming", r"C:\Users\alice\AppData\Local"
    uv = roaming + r"\uv\python\cpython-3.12.9-windows-x86_64-none"
    image.write(uv + r"\python.exe", exe)
    image.write(uv + r"\python312.dll", dll)
    pinokio = local + r"\PinokioData"
    image.write(home + r"\.pinokio\config.json", _json.dumps({"home": pinokio}))
    image.write(pinokio + r"\ENVIRONMENT", "")
    image.mkdir(pinokio + r"\bin")
    library = home + r"\Desktop\Apps\StabilityMatrix-win-x64\Data"
    image.write(library + r"\.sm-portable", b"")
    image.mkdir(library + r"\Assets")
    desktop = home + r"\Documents\ComfyUI"
    for folder in ("models", "user"):
        image.mkdir(desktop + "\\" + folder)
    swarm = r"C:\AI\SwarmUI"
    image.write(swarm + r"\launch-windows.bat", "")
    image.write(swarm + r"\dlbackend\comfy\python_embeded\python.exe", exe)
    image.write(swarm + r"\dlbackend\comfy\python_embeded\python312.dll", dll)
    venvs = [pinokio + r"\api\comfy.git\app\env", pinokio + r"\api\fluxgym.git\env",
             library + r"\Packages\ComfyUI\venv", library + r"\Packages\stable-diffusion-webui-forge\venv",
             desktop + r"\.venv"]
    for folder in venvs:
        image.venv(folder, uv, python_exe=exe)
    for folder in [*venvs, swarm + r"\dlbackend\comfy\python_embeded"]:
        site = folder + r"\Lib\site-packages"
        image.torch_version_file(site, "2.4.0+cu121")
        lib = image.mkdir(site + r"\torch\lib")
        for j in range(per_env_files):
            (lib / f"f{j}.pyi").touch()


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
    first, total, count, visited, out_of_time, walk, files, deep, deep_count, deep_visited, launchers = out
    report = {
        "files_in_image": int(files), "environments_in_image": args.envs + LAUNCHER_ENVS,
        "launcher_environments_in_image": LAUNCHER_ENVS, "build_seconds": built,
        "first_environment_seconds": float(first), "discovery_seconds": float(total),
        "environments_found": int(count), "launcher_environments_named": int(launchers),
        "folders_visited": int(visited), "out_of_time": bool(int(out_of_time)),
        "budget_seconds": args.budget, "baseline_full_os_walk_seconds": float(walk),
        "ratio_discovery_over_full_walk": float(total) / float(walk),
        "search_everywhere_seconds": float(deep), "search_everywhere_found": int(deep_count),
        "search_everywhere_folders_visited": int(deep_visited),
        "ratio_search_everywhere_over_full_walk": float(deep) / float(walk),
        "load_average": list(os.getloadavg()),
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
