"""The frozen app against a bare PySide6 QWizard: build time, zipped size, time to the first window.

Both are built in the same run, fresh, by the Windows PyInstaller under Wine (tests/winelab.py `build_exe`) from
build_installer.spec with the same options (one-dir, windowed, the same excludes and Qt filters): TorchDllDoctor.exe
and packaging/baseline_wizard.py (``TDD_TARGET=baseline``). For each: the build's wall time, the dist folder's
size on disk and zipped (deflate, level 6: what a download weighs), its 10 largest files, and the wall time of
``<exe> --first-window-exit -platform offscreen`` (start, show the first window, exit 0) with the lab's fonts
(``TDD_FONT_DIR``), median of --repeat runs after one warm-up. Target: app zipped <= 1.3 x bare.

    TDD_WINELAB_DIR=... python benchmarks/bench_exe.py [--repeat 5] [--json FILE] [--cached]

Under Wine the times include Wine's own process start (about 0.1 s with a warm wineserver); the sizes are exact.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

TARGET_RATIO = 1.3


def zipped_bytes(folder: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "dist.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                zf.write(path, path.relative_to(folder.parent).as_posix())
        return archive.stat().st_size


def measure(lab, target: str, repeat: int, cached: bool) -> dict:
    from tests.winelab import to_windows_path

    build = lab.build_exe(target, fresh=not cached)
    files = sorted((p for p in build.dist.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)
    env = {"TDD_FONT_DIR": to_windows_path(lab.font_dir())}
    times = []
    for i in range(repeat + 1):
        start = time.perf_counter()
        done = lab.run_exe(build.exe, ["--first-window-exit", "-platform", "offscreen"], env=env, timeout=300)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{build.exe.name} --first-window-exit exited {done.returncode}\n{done.stderr[-3000:]}")
        if i:  # the first run warms Wine and the file cache
            times.append(elapsed)
    return {
        "exe": build.exe.name,
        "build_seconds": round(build.seconds, 1),
        "build_cached": build.cached,
        "files": len(files),
        "dist_bytes": sum(p.stat().st_size for p in files),
        "zipped_bytes": zipped_bytes(build.dist),
        "first_window_seconds_median": round(statistics.median(times), 3),
        "first_window_seconds_all": [round(t, 3) for t in times],
        "largest_files": [[p.relative_to(build.dist).as_posix(), p.stat().st_size] for p in files[:10]],
    }


def main() -> None:
    from tests.winelab import QT_VERSION, WineLab

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "exe.json"))
    parser.add_argument("--cached", action="store_true", help="reuse the lab's last builds (no build times)")
    args = parser.parse_args()
    lab = WineLab()
    reason = lab.unavailable_reason()
    if reason:
        raise SystemExit(f"the Windows lab is unavailable: {reason}")
    bare = measure(lab, "baseline", args.repeat, args.cached)
    app = measure(lab, "app", args.repeat, args.cached)
    ratio = app["zipped_bytes"] / bare["zipped_bytes"]
    report = {
        "what": "one-dir PyInstaller builds of build_installer.spec under Wine 8: TorchDllDoctor.exe and a bare "
                "PySide6 QWizard (packaging/baseline_wizard.py), same options",
        "pyside6": QT_VERSION,
        "app": app,
        "bare_wizard": bare,
        "ratio_zipped_app_over_bare": round(ratio, 3),
        "ratio_first_window_app_over_bare": round(app["first_window_seconds_median"]
                                                  / bare["first_window_seconds_median"], 3),
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
        "note": "build time: wall time of `python -m PyInstaller --clean` by Windows CPython under Wine on 2 cores; "
                "first window: wall time of `<exe> --first-window-exit -platform offscreen` from the Linux side "
                "(Wine process start included), median after one warm-up; zipped: deflate level 6",
    }
    save_results(args.json, report)
    print(json.dumps(report, indent=2))
    if not report["meets_target"]:
        raise SystemExit(f"the app's zipped dist is {ratio:.2f} x the bare wizard's (target <= {TARGET_RATIO})")


if __name__ == "__main__":
    main()
