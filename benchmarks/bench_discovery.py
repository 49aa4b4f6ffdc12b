"""Discovery benchmark: a PC full of AI apps. An image of 200,000 files with 8 environments of AI apps, 7 in the
launchers' own layouts (Pinokio with its home recorded in its settings, a portable Stability Matrix on the Desktop,
ComfyUI Desktop, SwarmUI, uv's Pythons) and 2 in apps that bring their own Python (AI Playground, and an Electron app
no table knows, each under %LOCALAPPDATA%\\Programs with its Uninstall entry), among 60 other installed apps (Program
Files, Program Files (x86), %LOCALAPPDATA%\\Programs: an Electron app's folders, a Python without torch in some) and
their data in AppData; each site-packages holds the real torch 2.4.0 wheel's files by name (as empty files), and the
rest are users' projects.

Measures, in fresh child processes, the time to the first environment and to the end of discovery, both the
default search and "search everywhere" (deeper, longer), and in the same process a baseline: a plain `os.walk` of
the whole image (what an unbounded search costs). The search and the walk are timed in turn, three times each, after
one untimed walk that warms the file system's caches for both; each figure is the median over the fresh processes.
The machine's load average is written beside the figures.

    python benchmarks/bench_discovery.py [--files 200000] [--envs 8] [--json FILE]
"""

from __future__ import annotations

import argparse
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

CHILD = """
import sys, time, os, statistics
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
files = sum(len(f) for _, _, f in os.walk({root!r}))  # both timed walks below start from the same warm caches
deeps, walks = [], []
for _ in range(3):  # taken in turn, so that neither side gets the quieter moments of a shared machine
    deep_start = time.perf_counter()
    deep = DiscoveryReport()
    deep_count = sum(1 for _ in discover(OfflineImage(Path({root!r})), report=deep, budget_s=600.0, max_depth=7))
    deeps.append(time.perf_counter() - deep_start)
    walk_start = time.perf_counter()
    sum(len(f) for _, _, f in os.walk({root!r}))
    walks.append(time.perf_counter() - walk_start)
launchers = sum(1 for label in labels if "·" in label or label in ("ComfyUI Desktop", "uv"))
apps = sum(1 for label in labels if label in ("ComfyUI · AI Playground", "Verdant Studio 1.4.2"))
print(first, total, count, report.folders_visited, int(report.out_of_time), statistics.median(walks), files,
      statistics.median(deeps), deep_count, deep.folders_visited, launchers, apps)
"""

PLACES = [r"C:\Users\alice\Desktop", r"C:\Users\alice\Documents", r"C:\Users\alice\Downloads", r"C:\AI",
          r"C:\Users\alice", "C:\\"]


def build(root: Path, n_envs: int, n_files: int, small_sites: bool = False) -> None:
    from app.demo.image_builder import ImageBuilder
    from app.demo.pe_writer import build_pe

    image = ImageBuilder(root)
    exe = build_pe(dll=False)
    dll = build_pe(dll_name="python312.dll", file_version=(3, 12, 4150, 1013))
    base = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
    image.write(base + r"\python.exe", exe)
    image.write(base + r"\python312.dll", dll)
    members = torch_members(small_sites)
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
        fill_site(image, folder + r"\Lib\site-packages", members)
    launcher_layouts(image, exe, dll, members)
    installed_apps(image, exe, dll, members)
    remaining = max(0, n_files - (n_envs + 6 + APP_ENVS) * len(members))
    # the rest: user projects and model folders, 4-5 levels deep, 50 files per folder
    folder_count = remaining // 50
    for k in range(folder_count):
        place = PLACES[k % len(PLACES)].rstrip("\\")
        folder = image.mkdir(rf"{place}\projects\p{k % 97}\src\mod{k // 97 % 40}\part{k}")
        for j in range(50):
            (folder / f"file{j}.txt").touch()


LAUNCHER_ENVS = 7  # what launcher_layouts adds: six venvs and uv's Python


def torch_members(small: bool = False) -> list[str]:
    """Every file of the real torch 2.4.0 wheel (10,644 of them, in 449 folders), by name: an environment's
    site-packages as users have it, which a search must not walk and `os.walk` does. With `small`, 200 files in
    torch/lib: a tree of users' files nearly all, where the search lists almost every folder that `os.walk` lists."""
    import zipfile

    from tests.realfiles import TORCH_240, download

    if small:
        return [f"torch/lib/f{j}.pyi" for j in range(200)]
    with zipfile.ZipFile(download(TORCH_240)) as wheel:
        return [name for name in wheel.namelist() if not name.endswith("/")]


def fill_site(image, site: str, members: list[str]) -> None:
    """The wheel's files, empty, under `site`, and torch/version.py with the version it says."""
    root = image.mkdir(site)
    made: set[str] = set()
    for name in members:
        folder, _, _ = name.rpartition("/")
        if folder not in made:
            (root / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        (root / name).touch()
    image.torch_version_file(site, "2.4.0+cu121")


def launcher_layouts(image, exe: bytes, dll: bytes, members: list[str]) -> None:
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
        fill_site(image, folder + r"\Lib\site-packages", members)


APP_ENVS = 2  # what installed_apps adds: AI Playground's ComfyUI venv and the unknown app's venv
OTHER_APPS = 60  # installed apps with no torch, 20 in each of the three places Windows installs apps


def installed_apps(image, exe: bytes, dll: bytes, members: list[str]) -> None:
    """Apps that bring their own Python, each with its Uninstall entry: AI Playground as its source lays it out
    (resources/launchers.json), and an Electron app no table knows, with a uv venv in its resources; beside them
    other installed apps as an Electron app's folder holds them (resources, locales, node_modules), every fifth with
    a Python without torch, and a data folder of each in AppData."""
    local, roaming = r"C:\Users\alice\AppData\Local", r"C:\Users\alice\AppData\Roaming"
    uninstall = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall"
    bundled = [(r"AI Playground", r"resources\python-interpreter\cpython-3.12.9-windows-x86_64-none",
                r"resources\ComfyUI\.venv", "AI Playground 2.5.0"),
               (r"Verdant Studio", r"resources\runtime\cpython-3.12.9-windows-x86_64-none", r"resources\engine\.venv",
                "Verdant Studio 1.4.2")]
    for name, python, venv, display in bundled:
        app = local + r"\Programs" + "\\" + name
        image.write(app + "\\" + name + ".exe", exe)
        image.write(app + "\\" + python + r"\python.exe", exe)
        image.write(app + "\\" + python + r"\python312.dll", dll)
        image.venv(app + "\\" + venv, app + "\\" + python, python_exe=exe)
        fill_site(image, app + "\\" + venv + r"\Lib\site-packages", members)
        image.set_value(uninstall + "\\" + name, "DisplayName", "REG_SZ", display)
        image.set_value(uninstall + "\\" + name, "InstallLocation", "REG_SZ", app)
    resources = local + r"\Programs\AI Playground\resources"
    image.write(resources + r"\uv.exe", exe)
    image.write(resources + r"\backend-versions.json", "{}")
    places = [local + r"\Programs", r"C:\Program Files", r"C:\Program Files (x86)"]
    for k in range(OTHER_APPS):
        app = places[k % 3] + f"\\App {k}"
        image.write(app + f"\\App {k}.exe", exe)
        for folder in ("locales", r"resources\app.asar.unpacked\node_modules\addon\build", r"resources\assets"):
            for j in range(20):
                image.write(app + "\\" + folder + f"\\file{j}.bin", b"")
        if k % 5 == 0:
            image.write(app + r"\python\python.exe", exe)
            image.mkdir(app + r"\python\Lib\site-packages")
        for j in range(20):
            image.write((roaming if k % 2 else local) + f"\\App {k}\\Cache\\data{j}", b"")
    image.save()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--small-sites", action="store_true",
                        help="200 files in each site-packages instead of torch's 10,644: users' files nearly all")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes; each figure is their median")
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "discovery.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "image"
        started = time.perf_counter()
        build(root, args.envs, args.files, args.small_sites)
        built = time.perf_counter() - started
        runs = [subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), root=str(root),
                                                                budget=args.budget)],
                               capture_output=True, text=True, check=True).stdout.split()
                for _ in range(args.runs)]
    # each figure: the median over fresh processes (the first environment is the time a cold start would see)
    out = [statistics.median(float(run[i]) for run in runs) for i in range(len(runs[0]))]
    first, total, count, visited, out_of_time, walk, files, deep, deep_count, deep_visited, launchers, apps = out
    report = {
        "files_in_image": int(files), "files_in_each_site_packages": 200 if args.small_sites else 10_644,
        "environments_in_image": args.envs + LAUNCHER_ENVS + APP_ENVS,
        "launcher_environments_in_image": LAUNCHER_ENVS, "app_environments_in_image": APP_ENVS,
        "other_installed_apps": OTHER_APPS, "build_seconds": built,
        "first_environment_seconds": float(first), "discovery_seconds": float(total),
        "environments_found": int(count), "launcher_environments_named": int(launchers),
        "app_environments_named": int(apps),
        "folders_visited": int(visited), "out_of_time": bool(int(out_of_time)),
        "budget_seconds": args.budget, "baseline_full_os_walk_seconds": float(walk),
        "ratio_discovery_over_full_walk": float(total) / float(walk),
        "search_everywhere_seconds": float(deep), "search_everywhere_found": int(deep_count),
        "search_everywhere_folders_visited": int(deep_visited),
        "ratio_search_everywhere_over_full_walk": float(deep) / float(walk),
        "fresh_processes": args.runs, "load_average": list(os.getloadavg()),
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
