"""Discovery on a copied drive: every user profile is searched, although Windows sets %USERPROFILE%,
%LOCALAPPDATA% and %APPDATA% only at logon and the image's environment.json has none of them."""

from __future__ import annotations

import contextlib
import json

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Export, Import, build_pe
from app.inventory.discovery import DiscoveryReport, discover
from app.main import main
from app.system.base import System, UserProfile
from app.system.offline import OfflineImage
from tests.helpers.pe_machine import python_files

PROFILE_LIST = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList"
BASE = r"C:\Program Files\Python311"
WEBUI = r"C:\Users\bob\stable-diffusion-webui\venv"
CAROL_PY = r"C:\Users\carol\AppData\Local\Programs\Python\Python311"
BOB_SID = "S-1-5-21-3623811015-3361044348-30300820-1001"
CAROL_SID = "S-1-5-21-3623811015-3361044348-30300820-1002"


def logged_off(image):
    """environment.json as written from the registry's Environment keys: no logon variables."""
    for name in ("USERNAME", "USERPROFILE", "LOCALAPPDATA", "APPDATA"):
        image.env["user"].pop(name, None)
    image.save()


def profile(image, sid, path, kind="REG_EXPAND_SZ"):
    image.set_value(rf"{PROFILE_LIST}\{sid}", "ProfileImagePath", kind, path)


def decoy_venv(image, folder):
    image.venv(folder, BASE, "3.11.4", python_exe=build_pe(dll=False))
    image.torch_version_file(folder + r"\Lib\site-packages", "2.4.0+cpu")


@pytest.fixture
def drive(tmp_path):
    """bob's web UI venv in his home folder and carol's unregistered python.org Python, no logon variables;
    decoys in Public, Default and a folder that is not a profile."""
    image = ImageBuilder(tmp_path / "img")
    logged_off(image)
    python_files(image, BASE, minor=11)
    image.venv(WEBUI, BASE, "3.11.4", python_exe=build_pe(dll=False))
    image.torch_version_file(WEBUI + r"\Lib\site-packages", "2.1.2+cu121", cuda="12.1")
    python_files(image, CAROL_PY, minor=11)
    for user in ("bob", "carol", "Default"):
        image.write(rf"C:\Users\{user}\NTUSER.DAT", b"regf")
    image.mkdir(r"C:\Users\Public\Documents")
    decoy_venv(image, r"C:\Users\Public\stable-diffusion-webui\venv")
    decoy_venv(image, r"C:\Users\Default\stable-diffusion-webui\venv")
    decoy_venv(image, r"C:\Users\scratch\stable-diffusion-webui\venv")  # no NTUSER.DAT, no AppData
    return image


def found(image):
    system = OfflineImage(image.root)
    report = DiscoveryReport()
    envs = {system.windows_path(e.exec_prefix): e for e in discover(system, report=report)}
    return envs, system, report


def with_profile_list(image):
    profile(image, BOB_SID, r"%SystemDrive%\Users\bob")
    profile(image, CAROL_SID, r"C:\Users\carol")
    profile(image, "S-1-5-18", r"%systemroot%\system32\config\systemprofile")
    profile(image, "S-1-5-21-3623811015-3361044348-30300820-1003", r"C:\Users\dave")  # deleted: no folder
    image.set_value(PROFILE_LIST, "ProfilesDirectory", "REG_EXPAND_SZ", r"%SystemDrive%\Users")
    image.set_value(PROFILE_LIST, "Default", "REG_EXPAND_SZ", r"%SystemDrive%\Users\Default")
    decoy_venv(image, r"C:\Windows\System32\config\systemprofile\stable-diffusion-webui\venv")


def test_profiles_come_from_the_registry_profile_list(drive):
    with_profile_list(drive)
    envs, system, report = found(drive)
    assert set(envs) == {WEBUI, CAROL_PY}
    webui = envs[WEBUI]
    assert (webui.kind, webui.app, webui.torch.version, webui.found_by) == \
        ("venv", "Stable Diffusion web UI", "2.1.2+cu121", "search")
    assert (envs[CAROL_PY].kind, envs[CAROL_PY].python_version) == ("python.org", "3.11.4")
    assert [p.home for p in system.user_profiles()] == [r"C:\Users\bob", r"C:\Users\carol"]
    assert system.user_profiles()[1] == UserProfile(r"C:\Users\carol", r"C:\Users\carol\AppData\Local",
                                                    r"C:\Users\carol\AppData\Roaming")
    assert system.problems == [] and report.problems == []


def test_without_a_profile_list_the_real_folders_under_users_are_the_profiles(drive):
    with contextlib.suppress(OSError):  # Windows makes "Default User" a junction to Default
        (drive.root / "Users" / "Default User").symlink_to(drive.root / "Users" / "Default", target_is_directory=True)
    envs, system, _ = found(drive)
    assert set(envs) == {WEBUI, CAROL_PY}
    assert [p.home for p in system.user_profiles()] == [r"C:\Users\bob", r"C:\Users\carol"]


def test_the_current_user_stays_first_and_nothing_is_searched_twice(tmp_path):
    image = ImageBuilder(tmp_path / "img")  # alice is logged on: environment.json names her folders
    python_files(image, BASE, minor=11)
    venv = r"C:\Users\alice\ComfyUI\venv"
    image.venv(venv, BASE, "3.11.4", python_exe=build_pe(dll=False))
    image.venv(WEBUI, BASE, "3.11.4", python_exe=build_pe(dll=False))
    profile(image, BOB_SID, r"%SystemDrive%\Users\bob")
    bob_only = DiscoveryReport()
    list(discover(OfflineImage(image.root), report=bob_only))
    profile(image, "S-1-5-21-3623811015-3361044348-30300820-1000", r"%SystemDrive%\USERS\Alice")
    system = OfflineImage(image.root)
    assert [p.home for p in system.user_profiles()] == [r"C:\Users\alice", r"C:\Users\bob"]
    report = DiscoveryReport()
    prefixes = [system.windows_path(e.exec_prefix) for e in discover(system, report=report)]
    assert prefixes == [venv, WEBUI]
    assert report.folders_visited == bob_only.folders_visited  # alice's folders once, not twice


def test_a_live_machine_searches_the_current_users_profile_only(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    profile(image, BOB_SID, r"C:\Users\bob")
    image.mkdir(r"C:\Users\bob\AppData")
    assert System.user_profiles(OfflineImage(image.root)) == [UserProfile.of_home(r"C:\Users\alice")]
    logged_off(image)
    assert System.user_profiles(OfflineImage(image.root)) == []


def test_broken_profile_list_entries_are_reported_and_skipped(drive):
    profile(drive, BOB_SID, r"%SystemDrive%\Users\bob")
    profile(drive, "S-1-5-21-1-2-3-1004", 1004, kind="REG_DWORD")
    profile(drive, "S-1-5-21-1-2-3-1005", "C:\\Users\\carol\u0000evil")
    profile(drive, "S-1-5-21-1-2-3-1006", "")
    profile(drive, "S-1-5-21-1-2-3-1007", r"%NOSUCHDRIVE%\Users\x")
    profile(drive, "S-1-5-21-1-2-3-1008", r"Users\relative")
    profile(drive, "S-1-5-21-1-2-3-1009", 42, kind="REG_SZ")  # damaged JSON: noted when registry.json is read
    envs, system, _ = found(drive)
    assert set(envs) == {WEBUI}  # carol is not in the readable ProfileList, so her folder is not searched
    damaged = [p for p in system.problems if "ProfileImagePath is damaged" in p]
    assert len(damaged) == 6 and all("ProfileList" in p for p in damaged)
    system.user_profiles()
    assert len(system.problems) == 6  # noted once, however often the profiles are asked for


def vc_free_torch(image, site):
    """torch whose c10.dll needs msvcp140.dll, which this image lacks: a blocker."""
    image.torch_version_file(site, "2.1.2+cpu")
    lib = site + r"\torch\lib"
    image.write(lib + r"\c10.dll", build_pe(dll_name="c10.dll", exports=[Export(1, "c10_function")],
                                            imports=[Import("msvcp140.dll", ("runtime_function",))]))
    image.write(lib + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import("c10.dll", ("c10_function",)), Import("kernel32.dll", ("Sleep",))]))


def test_diagnose_of_a_copied_drive_reports_the_venv_in_a_home_folder(drive, capsys):
    with_profile_list(drive)
    vc_free_torch(drive, WEBUI + r"\Lib\site-packages")
    code = main(["diagnose", "--root", str(drive.root), "--json", "-", "--quiet"])
    document = json.loads(capsys.readouterr().out)
    pythons = {e["python"]: e for e in document["environments"]}  # user names are redacted, as for alice
    webui = pythons[WEBUI.replace("bob", "<user>") + r"\Scripts\python.exe"]
    assert webui["torch"]["version"] == "2.1.2+cpu" and webui["app"] == "Stable Diffusion web UI"
    assert CAROL_PY.replace("carol", "<user>") + r"\python.exe" in pythons
    assert "bob" not in json.dumps(document) and "carol" not in json.dumps(document)
    assert code == 1 and document["summary"]["blockers"] > 0
    assert any(f["environment"] == webui["python"] for f in document["findings"] if f["severity"] == "blocker")
