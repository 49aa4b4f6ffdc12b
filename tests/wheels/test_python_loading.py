"""Python's own side of loading torch, on copied drives built from real wheels: which interpreter a venv runs,
which torch `import torch` gets (the user site before site-packages, PYTHONPATH, a ._pth file), whether the copy
is complete (pip cut short at the path limit), square brackets in torch's folder, PYTHONHOME for the whole
computer; each from the diagnosis through the repair or the guided steps, undone byte for byte where something
changed."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from app.demo.image_builder import ImageBuilder
from app.inventory.environment import inspect_environment
from app.inventory.python_path import NAMESPACE, PACKAGE, PTH_FILE, PYTHONPATH, REGISTRY, SITE, STDLIB, USER_SITE
from app.main import main
from app.probes.finding import Finding
from app.repair.actions import action_for
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import pip_install, real

ALL_USERS = r"C:\Program Files\Python312"
ALL_USERS_SITE = ALL_USERS + r"\Lib\site-packages"
USER_SITE_FOLDER = r"C:\Users\alice\AppData\Roaming\Python\Python312\site-packages"
PEP514 = r"HKLM\Software\Python\PythonCore\3.12\InstallPath"


def torch_core(name: str) -> bool:
    """The members a diagnosis reads: the package's __init__.py and version.py, torch\\lib's DLLs."""
    return name in ("torch/__init__.py", "torch/version.py") or (name.startswith("torch/lib/")
                                                                  and name.endswith(".dll"))


def python_org(image: ImageBuilder, folder: str) -> None:
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, folder + "\\" + name, link=True)
    image.mkdir(folder + r"\Lib\site-packages")


def windows(image: ImageBuilder) -> None:
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.51.36231")


USER_PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"


def venv_drive(root, venv: str, made_with: str, home: str = USER_PYTHON) -> ImageBuilder:
    """A drive with the current runtime, python.org's CPython 3.12 for the user, and a venv of it at `venv` whose
    pyvenv.cfg names `home` and says it was made with `made_with`."""
    image = ImageBuilder(root)
    windows(image)
    python_org(image, USER_PYTHON)
    image.venv(venv, home, made_with, python_exe=(real(realfiles.windows_python) / "python.exe").read_bytes())
    return image


def diagnose(root, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(root), "--json", "-", *extra])
    return code, json.loads(capsys.readouterr().out)


def tree(folder) -> dict[str, str]:
    """Every file below a folder by its relative name, with its SHA-256 (set-aside names included)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def shadowed(tmp_path, data_dir):
    """An all-users Python 3.12 under Program Files with a healthy torch 2.4.1, and a `pip install --user` torch
    2.4.0 (no libomp140) in the user's own site-packages."""
    image = ImageBuilder(tmp_path / "image")
    windows(image)
    python_org(image, ALL_USERS)
    image.set_value(PEP514, "", "REG_SZ", ALL_USERS)
    image.set_value(PEP514, "ExecutablePath", "REG_SZ", ALL_USERS + r"\python.exe")
    pip_install(image, realfiles.TORCH_241, ALL_USERS_SITE, keep=torch_core)
    pip_install(image, realfiles.TORCH_240, USER_SITE_FOLDER, keep=torch_core)
    return image


def test_the_model_puts_the_user_site_before_site_packages_and_names_both_copies(shadowed):
    system = OfflineImage(shadowed.root)
    env = inspect_environment(system, shadowed.host(ALL_USERS))
    origins = [e.origin for e in env.loading.path]
    assert origins.index(USER_SITE) < origins.index(SITE)
    assert [(c.kind, c.entry.origin) for c in env.loading.copies] == [(PACKAGE, USER_SITE), (PACKAGE, SITE)]
    assert env.torch.version == "2.4.0+cpu"  # the copy `import torch` gets is the one every check reads
    assert env.site_packages == shadowed.host(USER_SITE_FOLDER)


def test_a_user_site_torch_that_shadows_a_healthy_one_is_found_set_aside_and_undone_byte_for_byte(
        shadowed, capsys):
    code, report = diagnose(shadowed.root, capsys)
    assert code == 1  # it was exit 0, "nothing stops PyTorch", while import torch failed
    shadow = next(f for f in report["findings"] if f["code"] == "torch-shadowed")
    assert shadow["severity"] == "blocker"
    assert shadow["evidence"]["version"].startswith("2.4.0") and shadow["evidence"]["other_version"].startswith(
        "2.4.1")
    assert shadow["repairs"][0] == "set-aside-shadowing-torch"
    assert "installed only for you" in shadow["title"]
    env = next(e for e in report["environments"] if e["torch"])
    assert env["torch"]["path"].lower().endswith(r"roaming\python\python312\site-packages\torch")
    copies = env["python_loading"]["torch_copies"]
    assert [c["imported"] for c in copies] == [True, False]
    # the copy it gets is the broken one: its missing OpenMP runtime is reported too
    assert any(f["code"] == "openmp-runtime-missing" for f in report["findings"])

    user_site = shadowed.host(USER_SITE_FOLDER)
    before = tree(user_site)
    capsys.readouterr()
    code = main(["repair", "--root", str(shadowed.root), "--env", ALL_USERS + r"\python.exe",
                 "--action", "set-aside-shadowing-torch", "--yes"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert not (user_site / "torch").exists() and (user_site / "torch.set-aside-by-torch-dll-doctor").is_dir()
    assert not (user_site / "torch-2.4.0.dist-info").exists()
    code, report = diagnose(shadowed.root, capsys)
    assert code == 0
    env = next(e for e in report["environments"] if e["torch"])
    assert env["torch"]["version"].startswith("2.4.1")

    code = main(["undo", "--root", str(shadowed.root), "--last"])
    capsys.readouterr()
    assert code == 0
    assert tree(user_site) == before


def test_a_venv_without_the_user_site_is_not_shadowed_and_include_system_site_packages_turns_it_on(
        shadowed, capsys):
    venv = r"C:\Users\alice\app\venv"
    shadowed.venv(venv, ALL_USERS, "3.12.0", python_exe=(real(realfiles.windows_python) / "python.exe").read_bytes())
    system = OfflineImage(shadowed.root)
    env = inspect_environment(system, shadowed.host(venv))
    assert env.loading.user_site_off_because == "venv"
    assert env.torch is None  # its own site-packages is empty and neither the user site nor the base is read
    cfg = shadowed.host(venv + r"\pyvenv.cfg")
    cfg.write_text(cfg.read_text().replace("include-system-site-packages = false",
                                           "include-system-site-packages = true"))
    env = inspect_environment(system, shadowed.host(venv))
    assert [c.entry.origin for c in env.loading.copies] == [USER_SITE, "base-site-packages"]
    assert env.torch.version == "2.4.0+cpu"


def test_pythonnousersite_turns_the_user_site_off(shadowed, capsys):
    shadowed.set_variable("user", "PYTHONNOUSERSITE", "1")
    code, report = diagnose(shadowed.root, capsys)
    env = next(e for e in report["environments"] if e["torch"])
    assert env["torch"]["version"].startswith("2.4.1")
    assert not any(f["code"] == "torch-shadowed" for f in report["findings"])
    assert code == 0


def test_pythonpath_puts_its_torch_first_and_the_repair_removes_the_users_setting(tmp_path, data_dir, capsys):
    image = all_users_torch(tmp_path)
    pip_install(image, realfiles.TORCH_240, r"C:\old-tools\python", keep=torch_core)
    image.set_variable("user", "PYTHONPATH", r"C:\old-tools\python")
    code, report = diagnose(image.root, capsys)
    assert code == 1
    codes = {f["code"]: f for f in report["findings"]}
    assert codes["torch-shadowed"]["evidence"]["origin"] == PYTHONPATH
    assert codes["torch-shadowed"]["repairs"][:2] == ["take-out-path-entry", "unset-env-var"]  # the entry, or all
    assert codes["python-path-set"]["evidence"]["torch_there"] is True
    system = OfflineImage(image.root)
    shadowed = [f for f in report["findings"] if f["code"] == "torch-shadowed"]
    alone = [Finding(f["code"], f["severity"], f["evidence"], f["repairs"], f["environment"], f["variant"])
             for f in shadowed]  # the finding that names the repair, alone, is enough to plan it
    plan = action_for("unset-env-var").plan(system, None, None, alone, None)
    assert [(c.kind, c.target) for c in plan.changes] == [("delete-variable", "PYTHONPATH")] and plan.notes == []
    code = main(["repair", "--root", str(image.root), "--env", ALL_USERS + r"\python.exe",
                 "--action", "unset-env-var", "--yes"])
    capsys.readouterr()
    assert code == 0
    assert "PYTHONPATH" not in json.loads((image.root / "environment.json").read_text())["user"]


REGISTRY_PATH = r"Software\Python\PythonCore\3.12\PythonPath"


def test_a_folder_the_registry_adds_comes_before_site_packages_and_its_torch_is_what_import_gets(
        tmp_path, capsys):
    """getpath.py reads the default value of each subkey of ...\\PythonCore\\3.12\\PythonPath (the user's, then all
    users'): an old GIS installer's key names a folder holding torch 2.4.0, which `import torch` then gets before
    site-packages' 2.4.1. A 32-bit Python's key ("3.12-32") is not this one's."""
    image = all_users_torch(tmp_path)
    gis = r"C:\Program Files\OldGIS 2.1\python"
    pip_install(image, realfiles.TORCH_240, gis, keep=torch_core)
    image.set_value("HKLM\\" + REGISTRY_PATH + r"\OldGIS", "", "REG_SZ", gis + r";C:\missing-folder")
    image.set_value("HKLM\\" + REGISTRY_PATH.replace("3.12", "3.12-32") + r"\Other", "", "REG_SZ", r"C:\Windows")
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(ALL_USERS))
    origins = [e.origin for e in env.loading.path]
    assert origins.index(REGISTRY) < origins.index(STDLIB) < origins.index(SITE)
    assert [str(e.folder) for e in env.loading.path if e.origin == REGISTRY] == [str(image.host(gis))]
    assert env.loading.imported.entry.origin == REGISTRY and env.torch.version == "2.4.0+cpu"
    code, report = diagnose(image.root, capsys)
    codes = {f["code"]: f for f in report["findings"]}
    shadow = codes["torch-shadowed"]
    assert code == 1 and shadow["severity"] == "blocker" and shadow["variant"] == REGISTRY
    assert shadow["evidence"]["added_by"] == "HKLM\\" + REGISTRY_PATH + r"\OldGIS"
    assert shadow["repairs"][0] == "remove-registry-python-path"
    registry = codes["python-registry-path"]
    assert registry["evidence"]["program_list"] == "OldGIS 2.1" and registry["evidence"]["torch_there"] is True
    assert "OldGIS 2.1" in registry["explanation"] and "OldGIS 2.1" in shadow["title"] + shadow["explanation"] + \
        registry["title"] + registry["explanation"]
    # the guided steps go to that key and name that subkey and its program
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", ALL_USERS, "--action", "remove-registry-python-path"])
    out = capsys.readouterr()
    assert code == 1, out
    out = out.out
    assert "HKEY_LOCAL_MACHINE\\" + REGISTRY_PATH in out and "OldGIS" in out and "regedit" in out


def all_users_torch(tmp_path) -> ImageBuilder:
    """The current runtime, python.org's CPython 3.12 for all users (PEP 514) and pip's torch 2.4.1 in it."""
    image = ImageBuilder(tmp_path / "image")
    windows(image)
    python_org(image, ALL_USERS)
    image.set_value(PEP514, "", "REG_SZ", ALL_USERS)
    pip_install(image, realfiles.TORCH_241, ALL_USERS_SITE, keep=torch_core)
    return image


def test_a_sitecustomize_is_named_and_without_the_live_check_the_diagnosis_is_never_complete(
        tmp_path, capsys):
    """site imports the first sitecustomize on sys.path at every start: what it does cannot be read from files, so
    on a copied drive (no live check) the diagnosis is incomplete and never exits 0; the file is named."""
    image = all_users_torch(tmp_path)
    code, report = diagnose(image.root, capsys)
    assert code == 0 and not any(f["code"] == "python-startup-code" for f in report["findings"])
    image.write(ALL_USERS_SITE + r"\sitecustomize.py", "import sys; sys.path.insert(0, r'D:\\other')\n")
    code, report = diagnose(image.root, capsys)
    startup = next(f for f in report["findings"] if f["code"] == "python-startup-code")
    assert startup["evidence"]["file"].endswith(r"site-packages\sitecustomize.py")
    assert code != 0 and report["complete"] is False


def test_a_pth_files_import_line_is_named_like_sitecustomize_and_a_well_known_one_is_not(tmp_path, capsys):
    """site.addpackage() runs a .pth file's `import` lines at every start: this one could put another torch first
    (C:\\old-tools holds 2.4.0), so it is named and, on a copied drive, the diagnosis is incomplete; setuptools'
    distutils-precedence.pth is known to leave torch alone."""
    image = all_users_torch(tmp_path)
    image.write(ALL_USERS_SITE + r"\distutils-precedence.pth",
                "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
                "enabled and __import__('_distutils_hack').add_shim(); \n")
    code, report = diagnose(image.root, capsys)
    assert code == 0 and not any(f["code"] == "python-startup-code" for f in report["findings"])
    image.write(ALL_USERS_SITE + r"\zz-old-tools.pth", "import sys; sys.path.insert(0, r'C:\\old-tools')\n")
    image.torch_version_file(r"C:\old-tools", "2.4.0+cpu")
    code, report = diagnose(image.root, capsys)
    startup = next(f for f in report["findings"] if f["code"] == "python-startup-code")
    assert startup["evidence"]["file"].endswith(r"site-packages\zz-old-tools.pth")
    assert code != 0 and report["complete"] is False


def test_a_torch_without_an_install_record_is_never_all_clear(tmp_path, capsys):
    """conda, a copied folder, or pip cut short before it wrote RECORD (its last step): nothing says which files
    torch should have, so none could be compared; the check says it could not see (it used to pass in silence)."""
    image = all_users_torch(tmp_path)
    code, report = diagnose(image.root, capsys)
    assert code == 0 and report["complete"] is True
    for record in image.host(ALL_USERS_SITE).glob("torch-*.dist-info/RECORD"):
        record.unlink()
    code, report = diagnose(image.root, capsys)
    (failed,) = [f for f in report["findings"] if f["code"] == "check-failed"]
    assert failed["variant"] == "record-missing" and "no install record" in failed["title"]
    assert failed["evidence"]["folder"].endswith(r"site-packages\torch")
    assert code != 0 and report["complete"] is False
    main(["diagnose", "--root", str(image.root), "--json", "-", "--lang", "zh_CN"])
    chinese = json.loads(capsys.readouterr().out)
    assert any("没有安装记录" in f["title"] for f in chinese["findings"] if f["code"] == "check-failed")


def test_a_pth_file_decides_and_ignores_pythonpath_but_312_keeps_the_user_site(tmp_path, capsys):
    """ComfyUI portable's python_embeded: python312._pth lists its folders; PYTHONPATH is ignored, and without
    `import site` nothing else is read. With `import site`, 3.11-3.14 still add the user site (python/cpython#120037,
    left so until 3.15), after the ._pth's own lines: its torch comes second here."""
    image = ImageBuilder(tmp_path / "image")
    windows(image)
    embedded = r"C:\ComfyUI_windows_portable\python_embeded"
    python_org(image, embedded)
    image.write(embedded + r"\python312._pth", "python312.zip\n.\nLib/site-packages\n../ComfyUI\nimport site\n")
    pip_install(image, realfiles.TORCH_241, embedded + r"\Lib\site-packages", keep=torch_core)
    pip_install(image, realfiles.TORCH_240, r"C:\Users\alice\AppData\Roaming\Python\Python312\site-packages",
                keep=torch_core)
    image.set_variable("user", "PYTHONPATH", r"C:\Users\alice\AppData\Roaming\Python\Python312\site-packages")
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(embedded))
    assert env.loading.isolated and env.loading.user_site_on and env.loading.user_site_off_because is None
    assert [c.entry.origin for c in env.loading.copies] == [PTH_FILE, USER_SITE]
    assert env.torch.version == "2.4.1+cpu"
    code, report = diagnose(image.root, capsys, "--env", embedded)
    assert not any(f["code"] == "python-path-set" for f in report["findings"])
    # PYTHONNOUSERSITE is read before the ._pth turns the environment off: the user site is off again
    image.set_variable("user", "PYTHONNOUSERSITE", "1")
    env = inspect_environment(OfflineImage(image.root), image.host(embedded))
    assert env.loading.user_site_off_because == "PYTHONNOUSERSITE"
    assert [c.entry.origin for c in env.loading.copies] == [PTH_FILE]
    code, report = diagnose(image.root, capsys, "--env", embedded)
    assert not any(f["code"] in ("torch-shadowed", "python-path-set") for f in report["findings"])
    assert code == 0
    # without the site-packages line, torch is not on sys.path: never "all clear"
    image.write(embedded + r"\python312._pth", "python312.zip\n.\n")
    code, report = diagnose(image.root, capsys, "--env", embedded)
    assert code == 1
    assert any(f["code"] == "torch-not-on-path" for f in report["findings"])


def test_a_venv_whose_base_python_is_gone_or_another_version_says_so(tmp_path, capsys):
    venv = r"C:\Users\alice\ComfyUI\venv"
    gone = r"C:\Users\alice\AppData\Local\Programs\Python\Python311"
    image = venv_drive(tmp_path / "image", venv, "3.11.9", home=gone)
    launcher = (real(realfiles.windows_python) / "python.exe").read_bytes()
    base = USER_PYTHON
    pip_install(image, realfiles.TORCH_241, venv + r"\Lib\site-packages", keep=torch_core)
    code, report = diagnose(image.root, capsys, "--env", venv)
    assert code == 1
    missing = next(f for f in report["findings"] if f["code"] == "venv-base-missing")
    assert missing["evidence"]["made_with"] == "3.11.9" and "Python311" in missing["evidence"]["home"]
    assert missing["repairs"] == ["start-fresh"]
    # the same venv pointed at a Python that is now 3.12: it runs 3.12, made with 3.11
    image.venv(venv, base, "3.11.9", python_exe=launcher)
    code, report = diagnose(image.root, capsys, "--env", venv)
    changed = next(f for f in report["findings"] if f["code"] == "venv-base-changed")
    assert changed["evidence"]["made_with"] == "3.11.9" and changed["evidence"]["runs"].startswith("3.12.")
    assert code == 1


def test_a_torch_built_for_python_311_under_312_is_named_with_the_command_that_fits(tmp_path, capsys):
    venv = r"C:\Users\alice\ComfyUI\venv"
    image = venv_drive(tmp_path / "image", venv, "3.12.0")
    pip_install(image, realfiles.TORCH_241, venv + r"\Lib\site-packages", python="3.11",
                keep=lambda n: torch_core(n) or n.startswith("torch/_C."))
    code, report = diagnose(image.root, capsys, "--env", venv)
    assert code == 1
    wrong = next(f for f in report["findings"] if f["code"] == "torch-wrong-python")
    assert (wrong["evidence"]["torch_abi"], wrong["evidence"]["abi"]) == ("cp311", "cp312")
    assert wrong["repairs"] == ["install-matching-torch"]
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", venv, "--action", "install-matching-torch"])
    out = capsys.readouterr().out
    assert code == 1 and "--force-reinstall torch==2.4.1" in out and "Python 3.12" in out


def test_pythonhome_for_the_whole_computer_names_the_program_it_points_into(tmp_path, capsys):
    """The program is named from its own record: the Uninstall entry whose InstallLocation holds the folder."""
    image = all_users_torch(tmp_path)
    image.mkdir(r"C:\Program Files\QGIS 3.34\apps\Python39\Lib")
    image.set_variable("system", "PYTHONHOME", r"C:\Program Files\QGIS 3.34\apps\Python39")
    uninstall = r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\QGIS 3.34"
    image.set_value(uninstall, "DisplayName", "REG_SZ", "QGIS 3.34")
    image.set_value(uninstall, "InstallLocation", "REG_SZ", r"C:\Program Files\QGIS 3.34")
    code, report = diagnose(image.root, capsys)
    assert code == 1
    home = next(f for f in report["findings"] if f["code"] == "python-home-set")
    assert home["evidence"]["program"] == "QGIS 3.34" and home["evidence"]["scope"] == "system"
    assert home["repairs"] == ["unset-machine-variable"]
    assert "QGIS 3.34" in home["title"] + home["explanation"]
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", ALL_USERS, "--action", "unset-machine-variable",
                 "--lang", "zh_CN"])
    out = capsys.readouterr().out
    assert code == 1 and "PYTHONHOME" in out and "SystemPropertiesAdvanced" in out


@pytest.mark.parametrize("lang, whole, told", [("en", "set for the whole computer", "cannot be told"),
                                              ("zh_CN", "整台电脑设置了", "无法判断")])
def test_pythonhome_for_the_whole_computer_in_a_folder_no_record_names_is_said_without_an_owner(
        tmp_path, capsys, lang, whole, told):
    """C:\\Projects\\Python310 is the folder's name, not a program's: no owner is guessed from it."""
    image = all_users_torch(tmp_path)
    image.mkdir(r"C:\Projects\Python310\Lib")
    image.set_variable("system", "PYTHONHOME", r"C:\Projects\Python310")
    code, report = diagnose(image.root, capsys, "--lang", lang)
    home = next(f for f in report["findings"] if f["code"] == "python-home-set")
    assert code == 1 and home["evidence"]["program"] is None and home["variant"] == "system-unowned"
    assert whole in home["title"] and r"C:\Projects\Python310" in home["title"] and told in home["explanation"]
    assert "Projects" not in home["explanation"].replace(r"C:\Projects\Python310", "")


@pytest.mark.parametrize("cuda", [None, "12.1"])
def test_square_brackets_in_torchs_folder_are_a_blocker_for_a_cuda_build_and_a_warning_for_the_cpu_build(
        tmp_path, capsys, cuda):
    image = ImageBuilder(tmp_path / "image")
    windows(image)
    portable = r"C:\AI\[new]\ComfyUI_windows_portable\python_embeded"
    python_org(image, portable)
    image.write(portable + r"\python312._pth", "python312.zip\n.\nLib/site-packages\nimport site\n")
    site = portable + r"\Lib\site-packages"
    pip_install(image, realfiles.TORCH_241, site, keep=torch_core)
    if cuda:
        image.torch_version_file(site, "2.4.1+cu121", cuda=cuda)
    code, report = diagnose(image.root, capsys, "--env", portable)
    brackets = next(f for f in report["findings"] if f["code"] == "torch-folder-brackets")
    assert brackets["evidence"]["names"] == ["[new]"]
    assert brackets["severity"] == ("blocker" if cuda else "warning")
    assert brackets["repairs"] == ["rename-app-folder"]
    capsys.readouterr()
    main(["repair", "--root", str(image.root), "--env", portable, "--action", "rename-app-folder"])
    assert '"[new]"' in capsys.readouterr().out


def test_a_namespace_only_torch_folder_is_what_the_model_reports_as_imported(tmp_path):
    image = ImageBuilder(tmp_path / "image")
    python_org(image, ALL_USERS)
    image.torch_version_file(ALL_USERS_SITE, "2.4.1+cpu")
    image.host(ALL_USERS_SITE + r"\torch\__init__.py").unlink()  # torch's start file gone, and no RECORD
    env = inspect_environment(OfflineImage(image.root), image.host(ALL_USERS))
    assert env.loading.imported.kind == NAMESPACE


def test_a_torch_folder_without_its_start_file_nor_a_record_is_a_blocker_never_all_clear(tmp_path, capsys):
    """A copied or half-deleted torch folder: no torch\\__init__.py and no pip RECORD to compare with. Python
    would import an empty namespace package; the diagnosis says so (blocker) and offers a fresh start."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, ALL_USERS)
    image.torch_version_file(ALL_USERS_SITE, "2.4.1+cpu")
    image.host(ALL_USERS_SITE + r"\torch\__init__.py").unlink()
    shutil.rmtree(image.host(ALL_USERS_SITE + r"\torch-2.4.1.dist-info"))
    image.save()
    code = main(["diagnose", "--root", str(image.root), "--env", ALL_USERS + r"\python.exe", "--json", "-",
                 "--quiet"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    (finding,) = [f for f in document["findings"] if f["code"] == "torch-files-missing"]
    assert finding["variant"] == "no-record" and finding["severity"] == "blocker"
    assert finding["repairs"] == ["start-fresh"] and finding["evidence"]["init_missing"] is True
    assert "start file __init__.py is missing" in finding["title"]
    main(["diagnose", "--root", str(image.root), "--env", ALL_USERS + r"\python.exe", "--json", "-", "--quiet",
          "--lang", "zh_CN"])
    chinese = json.loads(capsys.readouterr().out)
    (chinese_finding,) = [f for f in chinese["findings"] if f["code"] == "torch-files-missing"]
    assert "缺少启动文件 __init__.py" in chinese_finding["title"]


def test_xformers_built_for_the_cuda_build_beside_the_cpu_build_says_which_build_and_never_another_xformers(
        tmp_path, capsys):
    venv = r"C:\Users\alice\stable-diffusion-webui-forge\venv"
    image = venv_drive(tmp_path / "image", venv, "3.12.8")
    site = venv + r"\Lib\site-packages"
    pip_install(image, realfiles.TORCH_260, site, keep=torch_core)
    pip_install(image, realfiles.XFORMERS, site,
                keep=lambda n: n in ("xformers/_C.pyd", "xformers/cpp_lib.json", "xformers/__init__.py"))
    code, report = diagnose(image.root, capsys, "--env", venv)
    assert code == 1
    found = next(f for f in report["findings"] if f["code"] == "companion-mismatch")
    assert found["evidence"]["needs"] == ["cudart64_12.dll", "c10_cuda.dll", "torch_cuda.dll"]
    assert (found["evidence"]["built_for"], found["evidence"]["build"]) == ("2.6.0+cu124", "CPU")
    assert found["repairs"] == ["install-cuda-torch"]
    assert "CUDA build" in found["title"]
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", venv, "--action", "install-cuda-torch"])
    out = capsys.readouterr().out
    assert code == 1
    assert "torch==2.6.0 --index-url https://download.pytorch.org/whl/cu124" in out
    assert "pip uninstall xformers" in out and "install xformers" not in out.replace("uninstall xformers", "")


FORGE = (r"C:\Users\alice\OneDrive - Contoso Engineering Services\Documents\Projects\Generative AI\Image models"
         r"\stable-diffusion-webui-forge\venv")


@pytest.fixture(scope="module")
def cut_short(tmp_path_factory):
    """A Forge venv deep inside OneDrive, long paths off: pip wrote torch 2.4.0's files in the wheel's order and
    stopped at the first path of 260 characters; RECORD lists them all. (Built once: 2,300 files.)"""
    image = venv_drive(tmp_path_factory.mktemp("cut") / "image", FORGE, "3.12.8")
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 0)
    site = FORGE + r"\Lib\site-packages"
    written = pip_install(image, realfiles.TORCH_240, site, stop_at=260)
    image.copy(image.host(site + r"\torch\lib\libiomp5md.dll"), site + r"\torch\lib\libomp140.x86_64.dll")
    return image, written


def test_an_install_cut_short_at_the_path_limit_is_tied_to_it_and_never_called_fixed_by_long_paths_alone(
        cut_short, capsys, data_dir):
    image, written = cut_short
    code, report = diagnose(image.root, capsys, "--env", FORGE)
    assert code == 1  # it was exit 0, "nothing stops PyTorch", with torch\__init__.py never written
    cut = next(f for f in report["findings"] if f["code"] == "torch-files-missing")
    evidence = cut["evidence"]
    assert evidence["init_missing"] and evidence["longest_path"] >= 260
    assert (evidence["missing_count"], evidence["checked"]) == (7998, 10644)  # the real wheel, in its own order
    assert cut["repairs"] == ["enable-long-paths", "restore-torch-files"]
    assert "260" in cut["explanation"] and "does not bring the files back" in cut["action"]
    capsys.readouterr()
    assert main(["repair", "--root", str(image.root), "--env", FORGE, "--action", "enable-long-paths",
                 "--yes"]) == 1  # long paths on, and the files still missing: not "fixed"
    out = capsys.readouterr().out
    assert "torch-files-missing" in out or "PyTorch file" in out
    code, report = diagnose(image.root, capsys, "--env", FORGE)
    still = next(f for f in report["findings"] if f["code"] == "torch-files-missing")
    assert still["repairs"] == ["restore-torch-files"] and code == 1


def test_after_long_paths_the_files_cut_short_are_put_back_from_the_wheel_and_undone(cut_short, capsys, data_dir):
    image, written = cut_short
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 1)
    image.copy(real(realfiles.download, realfiles.TORCH_240), r"C:\Users\alice\Downloads\torch-2.4.0-cp312-cp312-"
               "win_amd64.whl", link=True)
    site = image.host(FORGE + r"\Lib\site-packages")
    before = tree(site)
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", FORGE, "--action", "restore-torch-files", "--yes"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert (site / "torch" / "__init__.py").is_file()
    code, report = diagnose(image.root, capsys, "--env", FORGE)
    assert not any(f["code"] == "torch-files-missing" for f in report["findings"])
    assert main(["undo", "--root", str(image.root), "--last"]) == 0
    capsys.readouterr()
    assert tree(site) == before
