"""Finding every Python environment in an offline image: each layout, and only those."""

from __future__ import annotations

import ntpath

import pytest

from app.cancel import Cancelled, CancelToken
from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Import, build_pe
from app.inventory.discovery import DiscoveryReport, discover
from app.system.offline import OfflineImage
from tests.helpers.pe_machine import python_files

HOME = r"C:\Users\alice"
LOCAL = HOME + r"\AppData\Local"


def torch(image, site, version="2.4.0+cpu", cuda=None):
    image.torch_version_file(site, version, cuda)


@pytest.fixture
def machine(tmp_path):
    """A Windows 11 drive with one environment of every kind discovery must find, and some decoys."""
    image = ImageBuilder(tmp_path / "img")
    expected = {}

    # python.org, registered (PEP 514)
    base = LOCAL + r"\Programs\Python\Python312"
    python_files(image, base)
    image.set_value(r"HKCU\Software\Python\PythonCore\3.12\InstallPath", "", "REG_SZ", base + "\\")
    image.set_value(r"HKCU\Software\Python\PythonCore\3.12\InstallPath", "ExecutablePath", "REG_SZ",
                    base + r"\python.exe")
    expected[base] = ("python.org", "3.12.4", None, None)

    def venv(folder, version="2.4.0+cpu", cuda=None, app=None):
        image.venv(folder, base, "3.12.4", python_exe=build_pe(dll=False))
        torch(image, folder + r"\Lib\site-packages", version, cuda)
        expected[folder] = ("venv", "3.12.4", version, app)

    def embedded(folder, version="2.4.0+cpu", app=None, minor=12):
        python_files(image, folder, minor=minor, embedded=True)
        torch(image, folder + r"\Lib\site-packages", version)
        expected[folder] = ("embedded", f"3.{minor}.4", version, app)

    venv(HOME + r"\Desktop\ComfyUI\venv", app="ComfyUI")
    embedded(r"C:\AI\ComfyUI_windows_portable\python_embeded", "2.4.0+cu121", app="ComfyUI (portable)")
    venv(HOME + r"\Documents\stable-diffusion-webui\venv", "2.1.2+cu121", app="Stable Diffusion web UI")
    embedded(r"C:\webui_forge_cu121_torch231\system\python", "2.3.1+cu121", app="Stable Diffusion web UI Forge",
             minor=10)
    embedded(HOME + r"\Downloads\Fooocus_win64_2-5-0\python_embeded", "2.1.0+cu121", app="Fooocus", minor=10)
    venv(r"C:\AI\ai-toolkit\venv", "2.5.1+cu124", app="AI Toolkit")
    venv(HOME + r"\kohya_ss\venv", "2.1.2+cu118", app="kohya_ss")
    venv(HOME + r"\invokeai\.venv", "2.4.1+cu124", app="InvokeAI")

    # text-generation-webui: a conda env inside the app
    tgw = HOME + r"\Desktop\text-generation-webui\installer_files\env"
    python_files(image, tgw, minor=11)
    image.mkdir(tgw + r"\conda-meta")
    torch(image, tgw + r"\Lib\site-packages", "2.4.1+cu121")
    expected[tgw] = ("conda", "3.11.4", "2.4.1+cu121", "text-generation-webui")

    # Miniconda with one env, listed in environments.txt
    conda = HOME + r"\miniconda3"
    python_files(image, conda)
    image.mkdir(conda + r"\conda-meta")
    expected[conda] = ("conda", "3.12.4", None, None)
    env = conda + r"\envs\torch"
    python_files(image, env, minor=11)
    image.mkdir(env + r"\conda-meta")
    torch(image, env + r"\Lib\site-packages", "2.5.1", cuda="12.1")
    image.write(HOME + r"\.conda\environments.txt", f"{conda}\n{env}\n")
    expected[env] = ("conda", "3.11.4", "2.5.1", None)

    # Microsoft Store Python 3.11 with torch in its LocalCache
    store_install = r"C:\Program Files\WindowsApps\PythonSoftwareFoundation.Python.3.11_3.11.2544.0_x64__qbz5n2kfra8p0"
    python_files(image, store_install, minor=11)
    package = LOCAL + r"\Packages\PythonSoftwareFoundation.Python.3.11_qbz5n2kfra8p0"
    torch(image, package + r"\LocalCache\local-packages\Python311\site-packages", "2.4.0+cpu")
    expected[store_install] = ("store", "3.11", "2.4.0+cpu", None)

    # a Python on PATH only
    tools = r"C:\Tools\Python310"
    python_files(image, tools, minor=10)
    image.add_to_path(tools)
    expected[tools] = ("python.org", "3.10.4", None, None)

    # a 32-bit Python, registered in the 32-bit view
    x86 = r"C:\Python38-32"
    python_files(image, x86, minor=8, machine="x86")
    image.set_value(r"HKLM\Software\WOW6432Node\Python\PythonCore\3.8-32\InstallPath", "", "REG_SZ", x86)
    expected[x86] = ("python.org", "3.8.4", None, None)

    # decoys: never environments, or out of reach
    image.write(r"C:\Windows\Temp\python.exe", build_pe(dll=False))
    image.write(HOME + r"\Desktop\web\node_modules\thing\python.exe", build_pe(dll=False))
    image.venv(r"C:\Work\a\b\c\d\e\deep", base, python_exe=build_pe(dll=False))
    return image, expected


def run(image, **kwargs):
    report = DiscoveryReport()
    found = list(discover(OfflineImage(image.root), report=report, **kwargs))
    return found, report


def test_discovery_finds_every_layout_and_only_those(machine):
    image, expected = machine
    found, report = run(image)
    by_prefix = {OfflineImage(image.root).windows_path(e.exec_prefix): e for e in found}
    assert set(by_prefix) == set(expected)
    for prefix, (kind, version, torch_version, app) in expected.items():
        env = by_prefix[prefix]
        assert (env.kind, env.python_version, env.torch.version if env.torch else None, env.app) == \
            (kind, version, torch_version, app), prefix
    assert not report.out_of_time


def test_each_environment_is_reported_once_with_how_it_was_found(machine):
    image, _ = machine
    found, _ = run(image)
    assert len(found) == len({str(e.exec_prefix).lower() for e in found})
    sources = {OfflineImage(image.root).windows_path(e.exec_prefix): e.found_by for e in found}
    assert sources[HOME + r"\AppData\Local\Programs\Python\Python312"] == "registry (PEP 514)"
    assert sources[HOME + r"\miniconda3\envs\torch"] == "conda"
    assert sources[r"C:\Tools\Python310"] == "PATH"
    assert sources[r"C:\AI\ai-toolkit\venv"] == "search"


def test_32bit_python_is_detected(machine):
    image, _ = machine
    found, _ = run(image)
    x86 = next(e for e in found if e.exec_prefix.name == "Python38-32")
    assert x86.python_cpu_type == 0x14C and x86.is_64bit is False
    assert all(e.is_64bit for e in found if e is not x86)


def test_torch_build_is_read_from_version_py(machine):
    image, _ = machine
    found, _ = run(image)
    conda_env = next(e for e in found if e.exec_prefix.name == "torch")
    assert conda_env.torch.build == "CUDA 12.1" and conda_env.torch.release == "2.5.1"
    store = next(e for e in found if e.kind == "store")
    assert store.torch.build == "CPU" and store.userbase.name == "local-packages"


def test_venv_runs_its_base_python_so_python_folder_is_the_base(machine):
    image, _ = machine
    found, _ = run(image)
    venv = next(e for e in found if e.app == "kohya_ss")
    assert venv.app_folder.name == "Python312" and venv.is_venv
    assert venv.python.parent.name == "Scripts"


def test_a_chosen_folder_finds_deep_environments_the_search_does_not_reach(machine):
    image, expected = machine
    deep = image.host(r"C:\Work")
    found, _ = run(image, folders=[deep], max_depth=8)
    assert any(e.exec_prefix.name == "deep" and e.found_by == "chosen folder" for e in found)
    assert len(found) == len(expected) + 1


def test_first_environment_streams_before_the_search_ends(machine):
    image, _ = machine
    stream = discover(OfflineImage(image.root))
    first = next(stream)
    assert first.found_by == "registry (PEP 514)"
    stream.close()


def test_cancelling_stops_discovery(machine):
    image, _ = machine
    token = CancelToken()
    stream = discover(OfflineImage(image.root), cancel=token)
    next(stream)
    token.cancel()
    with pytest.raises(Cancelled):
        list(stream)


def test_time_budget_stops_the_search_and_says_so(machine):
    image, _ = machine
    found, report = run(image, budget_s=0.0)
    assert report.out_of_time and "stopped" in report.problems[0]


def test_a_walk_cut_short_by_the_time_limit_is_out_of_time_too(tmp_path, monkeypatch):
    import app.inventory.discovery as discovery

    image = ImageBuilder(tmp_path / "img")
    for n in range(30):
        image.mkdir(rf"C:\Users\alice\Desktop\folder{n}\inner")
    image.save()
    clock = iter(range(0, 10_000, 1))  # each look at the clock one second later: the walk meets the deadline
    monkeypatch.setattr(discovery.time, "monotonic", lambda: next(clock))
    report = DiscoveryReport()
    list(discover(OfflineImage(image.root), budget_s=20.0, report=report))
    assert report.out_of_time and "stopped" in report.problems[0]


def test_a_search_that_ran_out_of_time_is_never_all_clear(machine, monkeypatch, capsys):
    import json

    import app.cli.diagnose as diagnose_command
    from app.main import main

    image, _ = machine
    monkeypatch.setattr(diagnose_command, "SEARCH_S", 0.0)
    assert main(["diagnose", "--root", str(image.root), "--json", "-", "--quiet"]) != 0
    document = json.loads(capsys.readouterr().out)
    (stopped,) = [f for f in document["findings"] if f["code"] == "check-failed" and f.get("variant") == "search"]
    assert document["complete"] is False and stopped["evidence"]["seconds"] == "0"
    assert "--env" in stopped["action"]


def test_broken_registry_entries_are_reported_and_skipped(machine):
    image, expected = machine
    image.registry[r"HKCU\Software\Python\Broken\1.0\InstallPath"] = {"": {"type": "REG_DWORD", "data": "C:\\x"}}
    image.registry[r"HKCU\Software\Python\Odd\2.0\InstallPath"] = {"ExecutablePath": {"type": "REG_SZ", "data": 42}}
    image.registry[r"HKCU\Software\Python\Missing\3.0"] = {"SysVersion": {"type": "REG_SZ", "data": "3.0"}}
    image.save()
    system = OfflineImage(image.root)
    found = list(discover(system))
    assert len(found) == len(expected)
    assert sum("damaged" in p for p in system.problems) == 2


def test_registry_path_to_nowhere_is_skipped(machine):
    image, expected = machine
    image.set_value(r"HKCU\Software\Python\PythonCore\3.9\InstallPath", "", "REG_SZ", r"C:\Gone\Python39")
    found, _ = run(image)
    assert len(found) == len(expected)
    assert ntpath.join("C:\\", "Gone") not in {str(e.exec_prefix) for e in found}


def test_the_store_python_is_the_folder_its_registration_names(tmp_path):
    """Windows keeps an older Store Python in WindowsApps while an update waits, and a user cannot list that folder
    at all: the install Windows really runs is the one the package's registration names (PackageRootFolder in this
    user's AppModel repository), read by name."""
    from app.inventory.discovery import APPMODEL_PACKAGES

    image = ImageBuilder(tmp_path / "img")
    apps = r"C:\Program Files\WindowsApps"
    old = apps + r"\PythonSoftwareFoundation.Python.3.12_3.12.2000.0_x64__qbz5n2kfra8p0"
    new = apps + r"\PythonSoftwareFoundation.Python.3.12_3.12.2800.0_x64__qbz5n2kfra8p0"
    python_files(image, old, minor=12, machine="x86")  # the leftover: listed first, and another machine type
    python_files(image, new, minor=12)
    package = LOCAL + r"\Packages\PythonSoftwareFoundation.Python.3.12_qbz5n2kfra8p0"
    torch(image, package + r"\LocalCache\local-packages\Python312\site-packages", "2.5.1+cpu")
    image.save()
    listed = [e for e in discover(OfflineImage(image.root)) if e.kind == "store"]
    assert [str(e.python).lower() for e in listed] == [str(image.host(old + r"\python.exe")).lower()]

    image.set_value(APPMODEL_PACKAGES + r"\PythonSoftwareFoundation.Python.3.12_3.12.2800.0_x64__qbz5n2kfra8p0",
                    "PackageRootFolder", "REG_SZ", new)
    image.save()
    (store,) = [e for e in discover(OfflineImage(image.root)) if e.kind == "store"]
    assert store.python == image.host(new + r"\python.exe")
    assert store.python_cpu_type == 0x8664 and store.torch.version.startswith("2.5.1")


def test_a_store_python_seen_only_through_its_app_alias_is_said_and_never_all_clear(tmp_path, capsys):
    """No registration names the install and WindowsApps cannot be listed: the Python is described from its 0-byte
    app alias, its own folder unread. The report says so, and without the live check the diagnosis is incomplete."""
    import json

    from app.main import main

    image = ImageBuilder(tmp_path / "img")
    image.mkdir(r"C:\Windows\System32")
    package = "PythonSoftwareFoundation.Python.3.12_qbz5n2kfra8p0"
    image.write(LOCAL + r"\Microsoft\WindowsApps" + "\\" + package + r"\python.exe", b"")
    site = LOCAL + r"\Packages" + "\\" + package + r"\LocalCache\local-packages\Python312\site-packages"
    torch(image, site, "2.5.1+cpu")
    # vcruntime140_1.dll comes with the Store Python, in the install folder that could not be found
    image.write(site + r"\torch\lib\c10.dll", build_pe(imports=[Import("vcruntime140_1.dll", ("__CxxFrameHandler4",))],
                                                       dll_name="c10.dll"))
    image.save()
    (store,) = [e for e in discover(OfflineImage(image.root)) if e.kind == "store"]
    assert store.unread_install
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), "--json", "-"])
    document = json.loads(capsys.readouterr().out)
    unread = next(f for f in document["findings"] if f["code"] == "store-python-unread")
    assert unread["evidence"]["alias"].endswith(package + r"\python.exe") and "shortcut" in unread["title"]
    assert document["environments"][0]["unread_install"] is True
    assert document["complete"] is False and code != 0
    dlls = {(f["code"], f["evidence"].get("dll")) for f in document["findings"]}
    assert ("missing-dll", "vcruntime140_1.dll") not in dlls  # never said missing: it may be in that folder
    assert ("dll-unreadable", "vcruntime140_1.dll") in dlls


def test_a_store_pythons_local_packages_are_its_user_site_and_pythonnousersite_hides_them(tmp_path):
    """The Store's launcher sets PYTHONUSERBASE to LocalCache\\local-packages (python_uwp.cpp): that is the user
    site, before the install's own Lib\\site-packages; PYTHONNOUSERSITE turns it off, and the user's own
    PYTHONUSERBASE is not the one this Python uses."""
    from app.inventory.discovery import APPMODEL_PACKAGES

    image = ImageBuilder(tmp_path / "img")
    install = r"C:\Program Files\WindowsApps\PythonSoftwareFoundation.Python.3.12_3.12.2800.0_x64__qbz5n2kfra8p0"
    python_files(image, install, minor=12)
    image.mkdir(install + r"\Lib\site-packages")
    image.set_value(APPMODEL_PACKAGES + r"\PythonSoftwareFoundation.Python.3.12_3.12.2800.0_x64__qbz5n2kfra8p0",
                    "PackageRootFolder", "REG_SZ", install)
    package = LOCAL + r"\Packages\PythonSoftwareFoundation.Python.3.12_qbz5n2kfra8p0"
    torch(image, package + r"\LocalCache\local-packages\Python312\site-packages", "2.5.1+cpu")
    torch(image, HOME + r"\pybase\Python312\site-packages", "2.3.1+cpu")
    image.set_variable("user", "PYTHONUSERBASE", HOME + r"\pybase")
    image.save()
    (store,) = [e for e in discover(OfflineImage(image.root)) if e.kind == "store"]
    assert store.torch.version.startswith("2.5.1") and store.loading.imported.entry.origin == "user-site"
    image.set_variable("user", "PYTHONNOUSERSITE", "1")
    image.save()
    (store,) = [e for e in discover(OfflineImage(image.root)) if e.kind == "store"]
    assert store.torch is None and not store.loading.copies
