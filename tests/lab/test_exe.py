"""TorchDllDoctor.exe, frozen by the Windows PyInstaller from build_installer.spec and run under Wine.

The build is real (tests/winelab.py `build_exe`: Windows CPython 3.12, PySide6 and PyInstaller wheels), one-dir,
windowed (console=False), and cached by a hash of app/, resources/, packaging/ and the spec, so a re-run without
changes only runs the scenarios. Every scenario reads the .exe's standard output through a pipe: a windowed
program prints only because packaging/rthook_windows.py keeps (or attaches) its streams.

What this cannot show (docs/lab.md, "What the lab cannot show"): a UAC prompt, a real vc_redist, SmartScreen,
signatures.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pefile
import pytest

from app import __version__
from app.inventory.machine import CORE_VC_DLLS
from tests.helpers.files import hashes
from tests.helpers.installer_stop import stop_while_microsofts_installer_runs
from tests.helpers.lab import chinese_windows, lab_env, wine_unavailable
from tests.helpers.machine_settings import FS, journal, query
from tests.helpers.torch_check import MATMUL
from tests.winelab import ExeBuild, WineLabUnavailable, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]


@pytest.fixture(scope="session")
def app_exe(lab) -> ExeBuild:
    try:
        return lab.build_exe("app")
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))


def run(lab, build: ExeBuild, *argv, env=None, timeout=900) -> subprocess.CompletedProcess:
    return lab.run_exe(build.exe, list(argv), env=env, timeout=timeout)


def diagnose(lab, build, env_folder, extra=None):
    result = run(lab, build, "diagnose", "--env", to_windows_path(env_folder), "--json", "-", "--quiet", env=extra)
    assert result.returncode in (0, 1), (result.returncode, result.stderr[-3000:])
    return result.returncode, json.loads(result.stdout)


def findings(document, code):
    return [f for f in document["findings"] if f["code"] == code]


# --------------------------------------------------------------------------- the build itself


def test_the_exe_is_windowed_asinvoker_and_carries_the_apps_version_and_icon(app_exe):
    pe = pefile.PE(str(app_exe.exe))
    try:
        assert pe.OPTIONAL_HEADER.Subsystem == pefile.SUBSYSTEM_TYPE["IMAGE_SUBSYSTEM_WINDOWS_GUI"]
        strings = {k.decode(): v.decode() for info in pe.FileInfo[0] if info.Key == b"StringFileInfo"
                   for table in info.StringTable for k, v in table.entries.items()}
        assert strings["ProductVersion"] == __version__ and strings["OriginalFilename"] == "TorchDllDoctor.exe"
        resources = {entry.id: entry for entry in pe.DIRECTORY_ENTRY_RESOURCE.entries}
        manifest_rva = resources[pefile.RESOURCE_TYPE["RT_MANIFEST"]].directory.entries[0].directory.entries[0]
        data = manifest_rva.data.struct
        manifest = pe.get_data(data.OffsetToData, data.Size).decode("utf-8")
        icons = resources[pefile.RESOURCE_TYPE["RT_ICON"]].directory.entries
    finally:
        pe.close()
    assert 'level="asInvoker"' in manifest and 'uiAccess="false"' in manifest
    assert ">true</longPathAware>" in manifest and "PerMonitorV2" in manifest
    assert len(icons) >= 6  # resources/icons/app.ico: 16 to 256 px


def test_the_command_line_has_a_console_program_of_its_own_beside_the_wizard(lab, app_exe):
    """cmd and PowerShell wait for a console program and let it read their console; TorchDllDoctor-cli.exe is the
    same app (the same _internal) built as one, with its own version resource; it answers on its own streams."""
    cli = app_exe.exe.with_name("TorchDllDoctor-cli.exe")
    pe = pefile.PE(str(cli))
    try:
        assert pe.OPTIONAL_HEADER.Subsystem == pefile.SUBSYSTEM_TYPE["IMAGE_SUBSYSTEM_WINDOWS_CUI"]
        strings = {k.decode(): v.decode() for info in pe.FileInfo[0] if info.Key == b"StringFileInfo"
                   for table in info.StringTable for k, v in table.entries.items()}
        assert strings["OriginalFilename"] == "TorchDllDoctor-cli.exe" and strings["ProductVersion"] == __version__
    finally:
        pe.close()
    assert cli.stat().st_size < 20 << 20, "the console program carries the app again instead of sharing _internal"
    done = lab.run_exe(cli, ["explain", "WinError 126", "--lang", "en"], timeout=300)
    assert done.returncode == 0 and "A file the program needs is missing" in done.stdout, (done.stdout[-2000:],
                                                                                            done.stderr[-2000:])
    windowed = lab.run_exe(app_exe.exe, ["explain", "WinError 126", "--lang", "en"], timeout=300)
    assert windowed.stdout == done.stdout  # the same app, the same words


def test_the_windowed_programs_piped_output_is_in_the_code_page_a_chinese_windows_reads_it_in(lab, app_exe):
    """PowerShell 5.1 hands a windowed program pipes for all three streams (as the one-file build's bootloader
    hands them to its app), so no console is attached and none answers GetConsoleOutputCP; PowerShell reads the
    output in its console's code page, the OEM code page unless `chcp` changed it: 936 on a Chinese Windows. So
    the words come in code page 936 there, never UTF-8 (which PowerShell 5.1 would show garbled)."""
    argv = lab._ready_to_start(app_exe.exe, ["explain", "WinError 126", "--lang", "zh_CN"])
    done = subprocess.run(argv, env=lab.base_env(chinese_windows(lab, {"PYTHONIOENCODING": ""})),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "程序需要的文件缺失" in done.stdout.decode("gbk"), done.stdout[-600:]
    with pytest.raises(UnicodeDecodeError):
        done.stdout.decode("utf-8")


def test_the_bundle_holds_resources_and_not_what_the_app_never_uses(app_exe):
    files = {p.relative_to(app_exe.dist).as_posix().lower(): p for p in app_exe.dist.rglob("*") if p.is_file()}
    names = {Path(f).name for f in files}
    assert "_internal/resources/replay_loader.py" in files and "_internal/resources/catalog.json" in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert not names & {"opengl32sw.dll", "qt6network.dll", "qt6qml.dll", "qt6quick.dll", "qt6pdf.dll", "tcl86t.dll"}
    assert not [f for f in files if "/pyqt5/" in f or "/pyqt6/" in f or "/pyside2/" in f]
    if "qt6core.dll" in names:  # the wizard is in: what it draws with must be there
        for plugin in ("platforms/qwindows.dll", "platforms/qoffscreen.dll", "iconengines/qsvgicon.dll"):
            assert any(f.endswith(plugin) for f in files), plugin
        assert {"qt6svg.dll", "qtbase_zh_cn.qm"} <= names


# --------------------------------------------------------------------------- scenarios


def test_exe_diagnose_of_torch_240_names_libomp140_for_fbgemm_and_torch_cpu(lab, app_exe, seed_env):
    broken = lab.run_python(["-c", "import torch"], torch_env=seed_env)
    assert broken.returncode == 1 and "[WinError 126]" in broken.stderr and "fbgemm.dll" in broken.stderr
    code, document = diagnose(lab, app_exe, seed_env)
    assert code == 1 and document["tool"]["version"] == __version__
    (missing,) = findings(document, "openmp-runtime-missing")
    assert missing["severity"] == "blocker" and missing["evidence"]["needed_by"] == ["fbgemm.dll", "torch_cpu.dll"]
    assert any(f["evidence"]["dll"] == "libomp140.x86_64.dll" for f in findings(document, "missing-dll"))
    (failed,) = findings(document, "import-failed")
    assert failed["evidence"]["winerror"] == 126 and failed["evidence"]["dll"] == "fbgemm.dll"
    text = run(lab, app_exe, "diagnose", "--env", to_windows_path(seed_env))  # the plain report, piped
    assert text.returncode == 1 and "libomp140.x86_64.dll" in text.stdout, text.stderr[-2000:]


def test_exe_diagnose_of_torch_241_finds_no_blocker(lab, app_exe):
    env = lab_env(lab, "exe-241", torch_version="2.4.1")
    code, document = diagnose(lab, app_exe, env)
    assert code == 0, [f["code"] for f in document["findings"] if f["severity"] == "blocker"]
    assert findings(document, "import-ok")[0]["evidence"]["version"] == "2.4.1+cpu"


def test_exe_repair_with_torchs_own_openmp_runtime_then_undo(lab, app_exe, tmp_path):
    env = lab_env(lab, "exe-repair-240", torch_version="2.4.0")
    lib = env / "Lib" / "site-packages" / "torch" / "lib"
    before = hashes(lib)
    data = {"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}
    broken = lab.run_python(["-c", MATMUL], torch_env=env)
    assert broken.returncode != 0 and "WinError 126" in broken.stderr and "fbgemm.dll" in broken.stderr

    repaired = run(lab, app_exe, "repair", "--env", to_windows_path(env), "--action", "openmp-runtime", "--source",
                   "torch-bundled", "--yes", "--json", "-", env=data)
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    outcome = json.loads(repaired.stdout[repaired.stdout.index("{"):])
    assert outcome["state"] == "fixed" and outcome["plan"]["source"] == "torch-bundled"
    assert (lib / "libomp140.x86_64.dll").read_bytes() == (lib / "libiomp5md.dll").read_bytes()
    works = lab.run_python(["-c", MATMUL], torch_env=env)
    assert works.returncode == 0 and works.stdout.strip() == "3.0", works.stderr[-2000:]
    history = run(lab, app_exe, "history", "--json", "-", env=data)
    (item,) = json.loads(history.stdout[history.stdout.index("{"):])["transactions"]
    assert item["state"] == "done" and item["machine"] == {"kind": "live"}

    undone = run(lab, app_exe, "undo", "--last", env=data)
    assert "Undone" in undone.stdout, undone.stderr[-2000:]  # exit 0; the env is broken again, as before
    assert hashes(lib) == before
    again = lab.run_python(["-c", MATMUL], torch_env=env)
    assert again.returncode != 0 and "WinError 126" in again.stderr


def test_exe_repair_with_intel_openmp_from_the_users_package_index_then_undo(lab, app_exe, tmp_path):
    """The frozen downloader (requests, certifi, our TLS DLLs) fetches the real intel-openmp wheel's member by
    ranges from a local HTTPS mirror named by the user's pip settings (PIP_INDEX_URL / PIP_CERT), hash-checked and
    signature-checked by Windows' WinVerifyTrust, placed; torch works; undo brings WinError 126 back."""
    from tests import realfiles
    from tests.helpers.intel_index import ENTRY, WHEEL_PATH, serve_index
    from tests.https_server import HttpsServer

    env = lab_env(lab, "exe-intel-240", torch_version="2.4.0")
    lib = env / "Lib" / "site-packages" / "torch" / "lib"
    before = hashes(lib)
    wheel = realfiles.download(realfiles.INTEL_OPENMP)
    with HttpsServer(tmp_path / "certs") as mirror:
        serve_index(mirror, wheel.read_bytes())
        config = {"PIP_INDEX_URL": mirror.url("/simple"), "PIP_CERT": to_windows_path(mirror.ca),
                  "TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}
        repaired = run(lab, app_exe, "repair", "--env", to_windows_path(env), "--action", "openmp-runtime",
                       "--source", "intel-openmp", "--yes", "--json", "-", env=config)
        assert repaired.returncode == 0, repaired.stderr[-3000:]
        assert mirror.requests_for(WHEEL_PATH) and all(r.headers.get("Range") for r in mirror.requests_for(WHEEL_PATH))
    import hashlib

    assert hashlib.sha256((lib / "libomp140.x86_64.dll").read_bytes()).hexdigest() == ENTRY["member_sha256"]
    works = lab.run_python(["-c", MATMUL], torch_env=env)
    assert works.returncode == 0 and works.stdout.strip() == "3.0", works.stderr[-2000:]
    undone = run(lab, app_exe, "undo", "--last", env=config)
    assert "Undone" in undone.stdout, undone.stderr[-2000:]
    assert hashes(lib) == before
    again = lab.run_python(["-c", MATMUL], torch_env=env)
    assert again.returncode != 0 and "WinError 126" in again.stderr


def test_exe_without_the_vc_runtime_replay_and_static_analysis_name_the_same_dlls(lab, app_exe):
    """No VC++ runtime on the machine (System32's copies gone, python.org's app-local vcruntime140_1.dll removed;
    python.exe keeps its vcruntime140.dll, or it could not start). The .exe ships its own runtime DLLs: none of them
    may reach the user's python.exe (inherited DLL directory or PATH), or the replay would load torch and
    contradict the static analysis."""
    env = lab_env(lab, "exe-no-vc", torch_version="2.4.1")
    (env / "vcruntime140_1.dll").unlink()
    gone = [name for name in CORE_VC_DLLS if name != "vcruntime140.dll"]
    with lab.without_system_dlls(gone) as no_runtime:
        broken = lab.run_python(["-c", "import torch"], torch_env=env, env=no_runtime)
        code, document = diagnose(lab, app_exe, env, no_runtime)
    assert broken.returncode == 1 and "[WinError 126]" in broken.stderr
    assert code == 1
    (vc,) = findings(document, "vc-runtime-missing")
    assert vc["severity"] == "blocker" and sorted(vc["evidence"]["dlls"]) == sorted(gone)
    (failed,) = findings(document, "import-failed")
    replayed = {d["dll"] for d in failed["evidence"]["failed_dlls"]}
    needing = set()  # torch DLLs that the static graph says need a missing runtime DLL
    for finding in findings(document, "missing-dll"):
        if finding["evidence"]["dll"].lower() in gone:
            needing.update(finding["evidence"]["needed_by"])
    assert failed["evidence"]["dll"] in broken.stderr and replayed and replayed <= needing, (replayed, needing)
    (problem,) = [p for p in document["problems"] if p["code"] == "vc-runtime-missing"]
    assert problem["severity"] == "blocker" and problem["contradicted_by_replay"] is False


def test_exe_writes_a_machine_value_through_windows_reg_exe(lab, app_exe, tmp_path):
    """`repair --action enable-long-paths`: the frozen app never starts itself elevated; Windows' reg.exe is
    (ShellExecuteExW "runas"; no prompt under Wine), which writes HKLM; undo goes through reg.exe again."""
    env = lab_env(lab, "exe-elevated", torch_version="2.4.1")
    data = {"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}
    lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])
    try:
        result = run(lab, app_exe, "repair", "--env", to_windows_path(env), "--action", "enable-long-paths", "--yes",
                     env=data)
        assert query(lab, FS, "LongPathsEnabled") == ("REG_DWORD", "0x1"), (result.stdout[-2000:], result.stderr)
        transaction, records = journal(tmp_path)
        assert not (transaction / "elevated").exists()  # no job, no helper: nothing of ours ran elevated
        assert [r["op"] for r in records if r["kind"] == "intent"] == ["machine-value"]
        undone = run(lab, app_exe, "undo", "--last", env=data)
        assert "Undone" in undone.stdout, undone.stderr[-2000:]
        assert query(lab, FS, "LongPathsEnabled") is None
    finally:
        lab.wine_reg(["delete", FS, "/v", "LongPathsEnabled", "/f"])


def test_the_exes_own_folder_on_path_stays_in_the_path_it_models(lab, app_exe, seed_env):
    """The frozen app leaves out of the PATH it models (and gives the programs it starts) only its bundle's folder
    (sys._MEIPASS: `_internal` here, `%TEMP%\\_MEI*` for the one-file build), never the folder the user keeps the
    .exe in, which may well be on PATH (a tools folder, Downloads, D:\\)."""
    folder = to_windows_path(app_exe.exe.parent)
    bundle = to_windows_path(app_exe.exe.parent / "_internal")
    tools = folder + r"\tools"
    assert lab.wine_reg(["add", r"HKCU\Environment", "/v", "PATH", "/t", "REG_EXPAND_SZ", "/d",
                         f"{folder};{tools};{bundle}", "/f"]) == 0
    try:
        _, document = diagnose(lab, app_exe, seed_env)
    finally:
        lab.wine_reg(["delete", r"HKCU\Environment", "/v", "PATH", "/f"])
    effective = [p.rstrip("\\").lower() for p in document["machine"]["path"]["effective"]]
    assert folder.lower() in effective and tools.lower() in effective, effective
    assert bundle.lower() not in effective


@pytest.mark.parametrize("code", [0, 3010])
def test_ctrl_c_of_the_console_exe_while_microsofts_installer_runs_waits_for_it_then_rolls_back(
        lab, app_exe, seed_env, clean_runtimes, tmp_path, code):
    """The frozen TorchDllDoctor-cli.exe (what cmd and PowerShell run), `repair --action install-vc-runtime --source`
    a signed stand-in vc_redist (the user's own download: no network). Ctrl+C (SIGINT, which Wine turns into the
    console's Ctrl+C) one second into the 6 s "install": the Stop is said at once, the installer is let finish (the
    runtime is registered), then the repair is rolled back and the words say what stays; no installer is left
    running, and the journal says rolled back; the installer's exit code is kept (a 3010 asks for the restart).
    (A windowed program started from Explorer has no console, so no Ctrl+C: its Stop is the wizard's button.)"""
    stop_while_microsofts_installer_runs(lab, app_exe.exe.with_name("TorchDllDoctor-cli.exe"), seed_env, tmp_path,
                                         code)
