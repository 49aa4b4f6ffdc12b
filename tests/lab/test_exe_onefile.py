"""The one-file TorchDllDoctor.exe, as the release workflow builds it (build_installer.spec with TDD_ONEFILE=1), under
Wine: it unpacks itself into %TEMP%\\_MEI* and runs from there, while the folder it was started from (Downloads,
Desktop, a tools folder on PATH) is the user's. CI runs this file in the lab's second lane (.ci/run)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.installer_stop import stop_while_microsofts_installer_runs
from tests.helpers.lab import wine_unavailable
from tests.winelab import ExeBuild, WineLabUnavailable, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]


@pytest.fixture(scope="module")
def onefile_exe(lab) -> ExeBuild:
    try:
        return lab.build_exe("app", onefile=True)
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))


def test_the_one_file_exe_keeps_the_folder_it_was_started_from_in_the_path_it_models(lab, onefile_exe, seed_env):
    """The user's PATH names the folder holding the one-file .exe and one below it: both stay in the PATH the
    diagnosis models (and gives the replay), and nothing of the bundle it unpacked (%TEMP%\\_MEI*) is there; the
    frozen one-file app diagnoses torch 2.4.0 for real (the replay's WinError 126 on fbgemm.dll)."""
    assert not (onefile_exe.exe.parent / "_internal").exists()  # one file: no bundle folder beside it
    folder = to_windows_path(onefile_exe.exe.parent)
    tools = folder + r"\tools"
    assert lab.wine_reg(["add", r"HKCU\Environment", "/v", "PATH", "/t", "REG_EXPAND_SZ", "/d", f"{folder};{tools}",
                         "/f"]) == 0
    try:
        result = lab.run_exe(onefile_exe.exe, ["diagnose", "--env", to_windows_path(seed_env), "--json", "-",
                                               "--quiet"], timeout=900)
    finally:
        lab.wine_reg(["delete", r"HKCU\Environment", "/v", "PATH", "/f"])
    assert result.returncode == 1, (result.returncode, result.stderr[-3000:])
    document = json.loads(result.stdout)
    effective = [p.rstrip("\\").lower() for p in document["machine"]["path"]["effective"]]
    assert folder.lower() in effective and tools.lower() in effective, effective
    assert not any("\\_mei" in p for p in effective), effective
    (failed,) = [f for f in document["findings"] if f["code"] == "import-failed"]
    assert failed["evidence"]["winerror"] == 126 and failed["evidence"]["dll"] == "fbgemm.dll"



def test_a_stop_of_the_one_file_exe_while_microsofts_installer_runs_waits_for_it_then_rolls_back(
        lab, onefile_exe, seed_env, clean_runtimes, tmp_path):
    """The one-file build is two programs: its bootloader, and the app it unpacked and started as its child. What
    the app waits for is Microsoft's installer itself (ShellExecuteEx "runas" of the checked copy, nothing of ours
    in between), so a Stop there is the same Stop as in the one-folder build: the installer is let finish, none is
    left running, the repair is rolled back, and neither the bootloader nor the app is left behind. A windowed
    program gets no Ctrl+C (docs/facts.md), so the Stop is asked through TDD_STOP_FILE, the same token the wizard's
    Stop button and Ctrl+C cancel (app/cli/stop.py)."""
    stop_while_microsofts_installer_runs(lab, onefile_exe.exe, seed_env, tmp_path, 0, by_file=True)


def test_the_programs_the_one_file_exe_unpacks_are_extracted_for_signtool_as_the_release_does(lab, onefile_exe,
                                                                                              tmp_path):
    """The release signs what the one-file build unpacks into %TEMP% at every start (Smart App Control judges each
    as it loads) and then checks each with `signtool verify`: tools/release_files.py `unpacked`, run by the lab's
    Windows Python with its PyInstaller, brings out exactly those files of the real build, each a Windows program."""
    from tests.winelab import REPO_ROOT

    out = tmp_path / "unpacked"
    done = lab.run_python([to_windows_path(REPO_ROOT / "tools" / "release_files.py"), "unpacked",
                           to_windows_path(onefile_exe.exe), to_windows_path(out)], torch_env=lab.app_python(),
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    programs = {p.relative_to(out).as_posix().lower(): p for p in out.rglob("*") if p.is_file()}
    assert f"{len(programs)} program files unpacked" in done.stdout
    assert {"python312.dll", "pyside6/qtcore.pyd", "_ctypes.pyd"} <= set(programs), sorted(programs)[:40]
    assert all(p.read_bytes()[:2] == b"MZ" for p in programs.values())
    assert not [n for n in programs if not n.endswith((".exe", ".dll", ".pyd"))]
