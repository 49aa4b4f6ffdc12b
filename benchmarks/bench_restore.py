"""Restoring torch's files: the damaged files of an install put back out of the real torch 2.4.0 wheel, from a
real HTTPS index on 127.0.0.1 that answers as a link users have does (50 ms before each answer, 20 MB/s), against
downloading the whole wheel from the same server, in the same run.

The files are the wheel's longest paths: what an install cut short by Windows' path limit misses. At 1, 100 and
8,000 missing files, the fetch (`restore_files.fetch_members`: members by ranges, neighbours in one read, or the
whole wheel when that is faster) is timed, with the bytes it fetched and the reads it made; every file is checked
against RECORD's SHA-256 as in the repair. Fresh timing per count, the whole wheel's download timed in turn.

`--index`: the whole command on the real package index (PyPI; skipped offline), as a user runs it. A drive whose
venv lies deep in OneDrive, where pip wrote torch 2.4.1's files in the wheel's order and stopped at the first
path of 260 characters (7,998 of its 10,643 files missing; RECORD lists them all): `python -m app repair --root
IMAGE --env VENV --action restore-torch-files --yes`, each run on a fresh copy of the drive, timed as a whole
process against pip's own way back in the same run, alternated: `pip install --no-deps --no-cache-dir --target
DIR` of the same wheel from the same index. `--link fast|slow`: the same from a real HTTPS index on 127.0.0.1
serving the same wheel over a modelled link (1 ms and 500 MB/s, or 100 ms and 5 MB/s). `--stop-at` cuts the
install at a longer path (fewer files missing).

    python benchmarks/bench_restore.py [--latency 0.05] [--rate 20e6] [--json FILE]
    python benchmarks/bench_restore.py --index [--repeat 3] [--stop-at 260] [--json FILE]
    python benchmarks/bench_restore.py --link fast|slow [--repeat 3] [--stop-at 260] [--json FILE]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import save_results  # noqa: E402 - after the path is set

COUNTS = (1, 100, 8000)
INDEX = "https://pypi.org/simple"
LINKS = {"fast": (0.001, 500e6), "slow": (0.1, 5e6)}  # seconds before each answer, bytes a second
FORGE = (r"C:\Users\alice\OneDrive - Contoso Engineering Services\Documents\Projects\Generative AI"
         r"\Image models\stable-diffusion-webui-forge\venv")
USER_PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"


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


def _cut_short_drive(root: Path, requirement: str, stop_at: int, index: str, cert: Optional[Path]) -> int:
    """The drive of an install cut short at the path limit, its pip.ini naming `index` (and its certificate) unless
    it is the default; returns how many of the wheel's files were written."""
    from app.demo.image_builder import ImageBuilder
    from tests import realfiles
    from tests.helpers.images import pip_install, real

    image = ImageBuilder(root)
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.51.36231")
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, USER_PYTHON + "\\" + name, link=True)
    image.venv(FORGE, USER_PYTHON, "3.12.8", python_exe=(python / "python.exe").read_bytes())
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 1)
    if index != INDEX:
        image.copy(cert, r"C:\certs\company-ca.pem")
        image.write(r"C:\Users\alice\AppData\Roaming\pip\pip.ini",
                    f"[global]\nindex-url = {index}\ncert = C:\\certs\\company-ca.pem\n")
    return len(pip_install(image, requirement, FORGE + r"\Lib\site-packages", stop_at=stop_at))


def _timed(argv: list[str], env: dict) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({result.returncode}): {(result.stdout + result.stderr)[-2000:]}")
    return seconds


def _index_reachable() -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(INDEX + "/pip/", timeout=10) as answer:
            return answer.status == 200
    except OSError:
        return False


def whole_command_on_the_index(args: argparse.Namespace) -> dict:
    """The repair command against pip's reinstall, both from the real index."""
    if not _index_reachable():
        return {"index": INDEX, "skipped": "the package index cannot be reached"}
    return _whole_command(args, INDEX, None)


def whole_command_on_a_local_link(args: argparse.Namespace, latency: float, rate: float) -> dict:
    """The same from a real HTTPS index on 127.0.0.1 serving the same wheel over a modelled link."""
    import hashlib

    from tests import realfiles
    from tests.https_server import HttpsServer

    wheel = realfiles.download(realfiles.TORCH_241)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with tempfile.TemporaryDirectory() as tmp, HttpsServer(Path(tmp)) as server:
        server.files[f"/packages/{wheel.name}"] = wheel
        link = f'<a href="../../packages/{wheel.name}#sha256={digest}">{wheel.name}</a>'
        server.files["/simple/torch/"] = f"<html><body>{link}</body></html>".encode()
        server.latency_s, server.bytes_per_s = latency, rate
        report = _whole_command(args, server.url("/simple"), server.ca)
    return {**report, "latency_s": latency, "rate_bytes_per_s": rate}


def _whole_command(args: argparse.Namespace, index: str, cert: Optional[Path]) -> dict:
    """Alternated, fresh processes: the repair on a fresh copy of the cut-short drive, then pip's reinstall."""
    from tests import realfiles

    requirement = realfiles.TORCH_241
    report: dict = {"index": index, "requirement": requirement, "stop_at": args.stop_at, "repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp:
        drive = Path(tmp) / "drive"
        report["files_written_before_the_cut"] = _cut_short_drive(drive, requirement, args.stop_at, index, cert)
        quiet = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-cache-dir", "--platform",
               "win_amd64", "--python-version", "3.12", "--only-binary=:all:", "--index-url", index,
               *(["--trusted-host", "127.0.0.1"] if cert else []), requirement]  # TLS all the same
        repairs, reinstalls = [], []
        for run in range(args.repeat):
            image, data = Path(tmp) / f"run-{run}", Path(tmp) / f"data-{run}"
            shutil.copytree(drive, image, copy_function=os.link)  # restored files are new files: links stay intact
            repairs.append(_timed([sys.executable, "-m", "app", "repair", "--root", str(image), "--env", FORGE,
                                   "--action", "restore-torch-files", "--yes", "--lang", "en"],
                                  {**quiet, "TDD_DATA_DIR": str(data)}))
            shutil.rmtree(image)
            target = Path(tmp) / f"pip-{run}"
            reinstalls.append(_timed([*pip, "--target", str(target)], quiet))
            shutil.rmtree(target)
    repair, reinstall = statistics.median(repairs), statistics.median(reinstalls)
    return {**report, "repair_seconds_median": round(repair, 2), "repair_seconds_all": [round(s, 2) for s in repairs],
            "pip_reinstall_seconds_median": round(reinstall, 2),
            "pip_reinstall_seconds_all": [round(s, 2) for s in reinstalls],
            "ratio_over_pip_reinstall": round(repair / reinstall, 3), "load_average": list(os.getloadavg())}


def main() -> None:
    from app.repair.restore_files import fetch_members
    from app.sources.download import download, new_session
    from tests import realfiles
    from tests.https_server import HttpsServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=20e6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--index", action="store_true", help="the whole command on the real package index, "
                        "against pip's reinstall of the same wheel")
    parser.add_argument("--link", choices=sorted(LINKS), help="the whole command against pip's reinstall from a "
                        "local HTTPS index over a modelled link: fast (1 ms, 500 MB/s) or slow (100 ms, 5 MB/s)")
    parser.add_argument("--stop-at", type=int, default=260, help="with --index or --link: the path length the "
                        "install stops at")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.index or args.link:
        report = (whole_command_on_the_index(args) if args.index
                  else whole_command_on_a_local_link(args, *LINKS[args.link]))
        name = "restore_index.json" if args.index else f"restore_{args.link}_link.json"
        save_results(args.json or str(REPO / "benchmarks" / "results" / name), report)
        print(json.dumps(report, indent=2))
        return
    args.json = args.json or str(REPO / "benchmarks" / "results" / "restore.json")
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
