"""CPython's own rules for sys.path, each as the source says it (Lib/site.py, Modules/getpath.py of 3.12), on
drives whose Pythons are PE files of the test builder: a venv's own site-packages before the user site, pyvenv.cfg
without the key, a ._pth file's comments, PYTHONHOME naming the Python's own folder, and a user-site torch without
its record that the named repair still sets aside."""

from __future__ import annotations

import shutil

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.inventory.environment import inspect_environment
from app.inventory.machine import read_machine_facts
from app.inventory.python_path import PTH_LINE, SITE, USER_SITE
from app.probes import python_loading
from app.probes.runner import run_diagnosis
from app.repair.actions import action_for
from app.system.offline import NLS_CODE_PAGE_KEY, OfflineImage

HOME = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\app\venv"
USER_SITE_FOLDER = r"C:\Users\alice\AppData\Roaming\Python\Python312\site-packages"
PORTABLE = r"C:\Users\alice\ComfyUI_windows_portable\python_embeded"


def python_org(image: ImageBuilder, folder: str, micro: int = 4) -> None:
    image.write(folder + r"\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(folder + r"\python312.dll", build_pe(machine="x64", dll_name="python312.dll",
                                                      file_version=(3, 12, micro * 1000 + 150, 1013)))
    image.mkdir(folder + r"\Lib\site-packages")


def a_venv(image: ImageBuilder, cfg: str) -> None:
    image.venv(VENV, HOME, "3.12.4", python_exe=build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(VENV + r"\pyvenv.cfg", cfg)


def loading_findings(image: ImageBuilder, location: str):
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(location))
    diagnosis = run_diagnosis(system, [env], probes=[python_loading.PROBE], live=False)
    return system, env, {f.code: f for f in diagnosis.findings}


def test_a_venv_with_the_system_site_gets_its_own_torch_before_the_user_sites(tmp_path):
    """site.venv() adds the venv's site-packages before main() adds the user site ("Doing this here ensures venv
    takes precedence over user-site"), then the base's."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    a_venv(image, f"home = {HOME}\ninclude-system-site-packages = true\nversion = 3.12.4\n")
    image.torch_version_file(VENV + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")
    _, env, found = loading_findings(image, VENV)
    origins = [e.origin for e in env.loading.path]
    assert origins.index(SITE) < origins.index(USER_SITE) < origins.index("base-site-packages")
    assert env.loading.imported.entry.origin == SITE and env.torch.version == "2.4.1+cpu"
    shadow = found["torch-shadowed"]  # the user site's copy is hidden, the same for every check
    assert shadow.evidence["version"] == "2.4.1+cpu" and shadow.evidence["other_version"] == "2.4.0+cpu"
    assert "set-aside-shadowing-torch" not in shadow.repairs  # never the copy this venv does not import


def test_pyvenv_cfg_without_the_key_includes_the_system_site(tmp_path):
    """site.venv(): system_site = "true" until pyvenv.cfg says otherwise."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    a_venv(image, f"home = {HOME}\nversion = 3.12.4\n")
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    env = inspect_environment(OfflineImage(image.root), image.host(VENV))
    assert env.loading.user_site_on and env.torch is not None and env.torch.version == "2.4.1+cpu"
    a_venv(image, f"home = {HOME}\ninclude-system-site-packages = false\nversion = 3.12.4\n")
    env = inspect_environment(OfflineImage(image.root), image.host(VENV))
    assert not env.loading.user_site_on and env.loading.user_site_off_because == "venv"


def test_a_pth_files_comments_are_cut_as_getpath_cuts_them(tmp_path):
    """getpath.py: line = line.partition('#')[0].strip(); site runs only for exactly `import site`."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, PORTABLE)
    image.torch_version_file(PORTABLE + r"\Lib\site-packages", "2.4.1+cpu")
    image.write(PORTABLE + r"\python312._pth", "python312.zip\n.  # the folder itself\nimport site  # for pip\n")
    _, env, found = loading_findings(image, PORTABLE)
    assert env.loading.site_runs and "torch-not-on-path" not in found
    assert env.loading.imported is not None and env.loading.path[0].folder == image.host(PORTABLE)

    image.write(PORTABLE + r"\python312._pth", "python312.zip\n.\nimport  site\n")  # not exactly: site stays off
    _, env, found = loading_findings(image, PORTABLE)
    assert not env.loading.site_runs and found["torch-not-on-path"].variant == "pth"


def test_pythonhome_naming_this_pythons_own_folder_is_a_warning_for_it_and_a_blocker_for_another(tmp_path):
    """getpath.py: prefix = PYTHONHOME; for the Python installed there that is its own Lib, DLLs, site-packages."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.set_variable("user", "PYTHONHOME", HOME)
    _, _, found = loading_findings(image, HOME)
    home = found["python-home-set"]
    assert home.severity == "warning" and home.evidence["own_folder"] is True
    assert home.repairs == ["unset-env-var"]

    other = r"C:\Program Files\Python312"
    python_org(image, other)
    image.torch_version_file(other + r"\Lib\site-packages", "2.4.1+cpu")
    _, _, found = loading_findings(image, other)
    assert found["python-home-set"].severity == "blocker" and found["python-home-set"].evidence["own_folder"] is False


def test_a_user_site_torch_cut_short_before_its_record_is_still_set_aside_by_the_repair_it_names(tmp_path):
    """pip writes RECORD last: `pip install --user torch` cut short leaves torch\\__init__.py and no dist-info; the
    finding's repair sets the `torch` folder aside (it used to refuse)."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")
    shutil.rmtree(image.host(USER_SITE_FOLDER + r"\torch-2.4.0.dist-info"))
    system, env, found = loading_findings(image, HOME)
    shadow = found["torch-shadowed"]
    assert shadow.repairs[0] == "set-aside-shadowing-torch"
    plan = action_for(shadow.repairs[0]).plan(system, env, read_machine_facts(system), [shadow], None)
    assert [(c.host_target, c.value) for c in plan.changes] == [
        (image.host(USER_SITE_FOLDER + r"\torch"), "torch.set-aside-by-torch-dll-doctor")]


def test_an_arm64_or_32_bit_python_has_its_own_user_site_and_registry_key(tmp_path):
    """sys.winver is "3.12-arm64" / "3.12-32" (PCbuild/python.props: PyArchExt); site._get_path() gives
    %APPDATA%\\Python\\Python312-arm64\\site-packages, getpath.py's registry key ...\\PythonCore\\3.12-arm64. The
    x64 Python 3.12's `pip install --user` torch is not theirs."""
    image = ImageBuilder(tmp_path / "image", arch="ARM64")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")  # the x64 Python 3.12's
    for machine, folder, suffix in (("arm64", "Python312-arm64", "-arm64"), ("x86", "Python312-32", "-32")):
        home = rf"C:\Users\alice\AppData\Local\Programs\Python\{folder}"
        image.write(home + r"\python.exe", build_pe(machine=machine, dll=False, dll_name="python.exe"))
        image.write(home + r"\python312.dll", build_pe(machine=machine, dll_name="python312.dll",
                                                        file_version=(3, 12, 4150, 1013)))
        image.torch_version_file(home + r"\Lib\site-packages", "2.7.0+cpu")
        key = rf"HKCU\Software\Python\PythonCore\3.12{suffix}\PythonPath\Tools"
        image.mkdir(rf"C:\Tools{suffix}")
        image.set_value(key, "", "REG_SZ", rf"C:\Tools{suffix}")
        _, env, found = loading_findings(image, home)
        assert "torch-shadowed" not in found and env.torch.version == "2.7.0+cpu"
        assert env.loading.user_site == image.host(rf"C:\Users\alice\AppData\Roaming\Python\{folder}") / "site-packages"
        assert [e.folder for e in env.loading.path if e.origin == "registry"] == [image.host(rf"C:\Tools{suffix}")]


def pth_folders(image: ImageBuilder, micro: int) -> list[str]:
    """The folders .pth lines add for a python.org 3.12.<micro> at HOME, by their last name, in sys.path order."""
    python_org(image, HOME, micro)
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    return [e.folder.name for e in env.loading.path if e.origin == PTH_LINE]


def test_pth_files_are_read_as_the_pythons_own_release_reads_them(tmp_path):
    """site.addpackage: 3.12.2 skips a .pth whose name starts with a dot (gh-113659); 3.12.4 reads UTF-8 first and
    the locale's code page only when that fails (gh-77102), where 3.12.3 read the code page alone; ".PTH" is no
    .pth file (endswith is exact), and the files are taken in code-point order ("Z" before "a")."""
    image = ImageBuilder(tmp_path / "image")
    image.set_value(NLS_CODE_PAGE_KEY, "ACP", "REG_SZ", "936")  # a Simplified Chinese Windows
    site = HOME + r"\Lib\site-packages"
    for name in ("dot", "gbk", "utf8", "upper", "a", "Z", "工具"):
        image.mkdir(rf"C:\tools\{name}")
    image.write(site + r"\.hidden-by-name.pth", b"C:\\tools\\dot\n")
    image.write(site + r"\gbk.pth", "C:\\tools\\工具\n".encode("gbk"))  # what setuptools wrote before 3.13
    image.write(site + r"\utf8.pth", "C:\\tools\\工具\nC:\\tools\\utf8\n".encode())
    image.write(site + r"\UPPER.PTH", b"C:\\tools\\upper\n")
    image.write(site + r"\a.pth", b"C:\\tools\\a\n")
    image.write(site + r"\Z.pth", b"C:\\tools\\Z\n")
    # 3.12.1: the dot file counts; both files in cp936 (the UTF-8 one's bytes name no folder there)
    assert pth_folders(image, 1) == ["dot", "Z", "a", "工具", "utf8"]
    # 3.12.3: dot files skipped, code page alone
    assert pth_folders(image, 3) == ["Z", "a", "工具", "utf8"]
    # 3.12.4: UTF-8 first (utf8.pth names 工具 too, already there), cp936 when that fails (gbk.pth)
    image.write(site + r"\gbk.pth", b"")
    assert pth_folders(image, 4) == ["Z", "a", "工具", "utf8"]
    image.write(site + r"\gbk.pth", "C:\\tools\\工具\n".encode("gbk"))
    image.write(site + r"\utf8.pth", b"C:\\tools\\utf8\n")
    assert pth_folders(image, 3) == ["Z", "a", "工具", "utf8"]
    image.write(site + r"\gbk.pth", b"")
    image.write(site + r"\utf8.pth", "C:\\tools\\工具\n".encode())
    assert pth_folders(image, 3) == ["Z", "a"]  # 3.12.3 reads those bytes in cp936: no such folder
    assert pth_folders(image, 4) == ["Z", "a", "工具"]


def test_a_known_tools_pth_name_with_other_code_in_it_is_named_as_startup_code(tmp_path):
    """The well-known .pth files are excepted by their exact lines, not their names: a distutils-precedence.pth
    that imports something else runs code at every start like any other."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME, 9)
    site = HOME + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.1+cpu")
    lines = {
        "distutils-precedence.pth": "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, "
                                    "'local') == 'local'; enabled and __import__('_distutils_hack').add_shim(); \n",
        "_virtualenv.pth": "import _virtualenv\n",
        "pywin32.pth": "# .pth file for the PyWin32 extensions\nwin32\nwin32\\lib\nPythonwin\n"
                       "import pywin32_bootstrap\n",
        "__editable__.mytool-1.0.pth": "import __editable___mytool_1_0_finder; "
                                       "__editable___mytool_1_0_finder.install()\n",
    }
    for name, text in lines.items():
        image.write(site + "\\" + name, text)
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.loading.startup == ()
    image.write(site + r"\distutils-precedence.pth", "import sys; sys.path.insert(0, r'C:\\old-tools')\n")
    image.write(site + r"\__editable__.torch-2.4.0.pth",
                "import __editable___torch_2_4_0_finder; __editable___torch_2_4_0_finder.install()\n")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert sorted(p.name for p in env.loading.startup) == ["__editable__.torch-2.4.0.pth", "distutils-precedence.pth"]


def test_a_pth_file_this_python_cannot_decode_stops_it_at_start_and_is_named(tmp_path):
    """site.addpackage decodes strictly and the error leaves site (Python stops: "Failed to import the site
    module"): 0x81 is no character in cp1252, nor, after UTF-8 fails, for 3.12.4. Never "all clear"."""
    image = ImageBuilder(tmp_path / "image")
    image.set_value(NLS_CODE_PAGE_KEY, "ACP", "REG_SZ", "1252")
    site = HOME + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.1+cpu")
    image.write(site + r"\tool.pth", b"C:\\tools\\\x81\n")
    for micro in (3, 4):
        python_org(image, HOME, micro)
        _, env, found = loading_findings(image, HOME)
        unreadable = found["python-pth-unreadable"]
        assert unreadable.severity == "blocker" and unreadable.evidence["encoding"] == "cp1252"
        assert unreadable.evidence["file"].endswith(r"site-packages\tool.pth")
    image.write(site + r"\tool.pth", "C:\\tools\\café\n".encode("cp1252"))  # text in cp1252: read, no finding
    _, env, found = loading_findings(image, HOME)
    assert "python-pth-unreadable" not in found


def test_pth_lines_are_joined_to_the_site_folder_as_site_makepath_joins_them(tmp_path):
    """os.path.join(sitedir, line.rstrip()): a rooted line is on the site folder's drive, an indented absolute one is
    a folder under site-packages (only the end is stripped), a relative one is under site-packages."""
    image = ImageBuilder(tmp_path / "image")
    site = HOME + r"\Lib\site-packages"
    for folder in (r"C:\tools\rooted", r"C:\tools\indented", site + r"\relative"):
        image.mkdir(folder)
    image.write(site + r"\a.pth", b"\\tools\\rooted\n  C:\\tools\\indented\nrelative  \n")
    assert pth_folders(image, 9) == ["rooted", "relative"]


def test_a_pth_file_longer_than_what_is_read_is_never_called_unreadable(tmp_path):
    """Only the first MiB of a .pth is read: where that cuts a character, the file is not judged undecodable."""
    from app.inventory.python_path import MAX_PTH_BYTES

    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME, 9)
    image.set_value(NLS_CODE_PAGE_KEY, "ACP", "REG_SZ", "1252")
    site = HOME + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.1+cpu")
    line = "# ここ\n".encode()
    image.write(site + r"\long.pth", line * (MAX_PTH_BYTES // len(line) + 2))
    _, _, found = loading_findings(image, HOME)
    assert "python-pth-unreadable" not in found


def test_without_the_machines_code_page_no_pth_file_is_called_undecodable(tmp_path):
    """Which encoding a non-UTF-8 .pth is read in depends on the code page: unknown, nothing is stated as fact."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME, 9)
    site = HOME + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.1+cpu")
    image.write(site + r"\tool.pth", b"C:\\tools\\\x81\n")
    assert OfflineImage(image.root).code_page is None
    _, _, found = loading_findings(image, HOME)
    assert "python-pth-unreadable" not in found


def test_pythonnousersite_in_a_venv_with_the_system_site_keeps_the_bases_site_packages(tmp_path):
    """site.py: PYTHONNOUSERSITE turns the user site off (check_enableusersite), never addsitepackages(PREFIXES):
    the base's torch is still what `import torch` gets."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    a_venv(image, f"home = {HOME}\ninclude-system-site-packages = true\nversion = 3.12.4\n")
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")
    image.set_variable("user", "PYTHONNOUSERSITE", "1")
    env = inspect_environment(OfflineImage(image.root), image.host(VENV))
    assert not env.loading.user_site_on and env.loading.user_site_off_because == "PYTHONNOUSERSITE"
    assert env.torch is not None and env.torch.version == "2.4.1+cpu"
    assert env.loading.imported.entry.origin == "base-site-packages"


def test_a_pythonuserbase_written_with_a_variable_is_expanded_and_never_falls_back_to_appdata(tmp_path):
    """The environment block holds a REG_EXPAND_SZ variable expanded; site._getuserbase() takes PYTHONUSERBASE as it
    is, never %APPDATA% beside it."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")  # %APPDATA%'s: not this Python's user site
    image.torch_version_file(r"C:\Users\alice\pybase\Python312\site-packages", "2.3.1+cpu")
    image.set_variable("user", "PYTHONUSERBASE", r"%USERPROFILE%\pybase")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.loading.variable("PYTHONUSERBASE").value == r"C:\Users\alice\pybase"
    assert env.torch.version == "2.3.1+cpu" and env.loading.imported.entry.origin == USER_SITE
    assert {c.folder.parent.parent.name for c in env.loading.copies} == {"Python312", "Lib"}
    image.set_variable("user", "PYTHONUSERBASE", "pybase")  # relative: to a folder not known here, never APPDATA's
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.loading.user_site is None and env.torch.version == "2.4.1+cpu"


def test_a_quoted_pythonpath_entry_names_no_folder_as_getpath_keeps_the_quotes(tmp_path):
    """getpath.py: pythonpath.append(abspath(p)) for each `;` part, quotes and all."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(r"C:\libs", "2.0.0+cpu")
    image.set_variable("user", "PYTHONPATH", r'"C:\libs"')
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert [e for e in env.loading.path if e.origin == "PYTHONPATH"] == [] and env.torch.version == "2.4.1+cpu"
    image.set_variable("user", "PYTHONPATH", r"C:\libs")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.torch.version == "2.0.0+cpu"


def test_the_prefix_itself_is_a_site_folder_and_its_pth_files_count(tmp_path):
    """site.getsitepackages() on Windows: each prefix, then its Lib\\site-packages; a venv's root is on sys.path and
    a .pth file in C:\\...\\Python312 is read like one in site-packages."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(r"C:\elsewhere", "2.2.0+cpu")
    image.write(HOME + r"\extra.pth", "C:\\elsewhere\n")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.torch.version == "2.2.0+cpu" and env.loading.imported.entry.origin == PTH_LINE
    a_venv(image, f"home = {HOME}\ninclude-system-site-packages = false\nversion = 3.12.4\n")
    image.write(HOME + r"\extra.pth", "")
    image.torch_version_file(VENV + r"\Lib\site-packages", "2.4.1+cpu")
    image.write(VENV + r"\venv-extra.pth", "C:\\elsewhere\n")
    env = inspect_environment(OfflineImage(image.root), image.host(VENV))
    folders = [e.folder for e in env.loading.path]
    assert image.host(VENV) in folders and folders.index(image.host(VENV)) < folders.index(
        image.host(VENV + r"\Lib\site-packages"))
    assert env.torch.version == "2.2.0+cpu"


def test_import_torch_is_found_as_filefinder_finds_it(tmp_path):
    """importlib's FileFinder: `torch` plus a loader suffix of this Python (`.cp312-win_amd64.pyd`, `.pyd`, `.py`,
    `.pyw`, `.pyc`), the name's case exact unless PYTHONCASEOK; a module beats a namespace folder beside it."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.mkdir(r"C:\libs\torch")  # a namespace folder, and beside it the module that wins
    image.write(r"C:\libs\torch.py", "")
    image.write(r"C:\libs2\torch.orig.py", "")  # no loader's suffix
    image.write(r"C:\libs2\torch.cp311-win_amd64.pyd", b"MZ")  # another Python's
    image.write(r"C:\libs3\Torch.py", "")  # another case
    image.set_variable("user", "PYTHONPATH", r"C:\libs3;C:\libs2;C:\libs")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    kinds = [(c.folder.name, c.kind) for c in env.loading.copies]
    assert kinds == [("torch.py", "module"), ("torch", "package")]
    image.set_variable("user", "PYTHONCASEOK", "1")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert [c.folder.name for c in env.loading.copies][0] == "Torch.py"


def test_folders_sys_path_would_hold_that_cannot_be_seen_make_the_diagnosis_incomplete(tmp_path):
    """A copied drive holds C: only: a PYTHONPATH folder on D:, a registry folder on a share, a .pth line naming
    E:, a relative PYTHONPATH entry (to the program's current folder) may each hold the torch `import torch` gets.
    They are named, and the diagnosis is never "nothing wrong"; a quoted entry names nothing (not unseen)."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.mkdir(r"C:\libs")
    system, env, found = loading_findings(image, HOME)
    assert env.loading.unseen == () and "check-failed" not in found
    image.set_variable("user", "PYTHONPATH", r'D:\libs;C:\libs;"C:\quoted";vendor')
    image.set_value(r"HKCU\Software\Python\PythonCore\3.12\PythonPath\Tools", "", "REG_SZ", r"\\nas\python")
    image.write(HOME + r"\Lib\site-packages\more.pth", "E:\\more\n")
    system, env, _ = loading_findings(image, HOME)
    assert env.loading.unseen == ((r"D:\libs", "PYTHONPATH"), ("vendor", "PYTHONPATH"),
                                  (r"\\nas\python", "registry"), (r"E:\more", PTH_LINE))
    diagnosis = run_diagnosis(system, [env], probes=[python_loading.PROBE], live=False)
    unseen = next(f for f in diagnosis.findings if f.variant == "path-unseen")
    assert unseen.evidence["folders"] == [r"D:\libs", "vendor", r"\\nas\python", r"E:\more"]
    assert not diagnosis.complete


def test_a_pythonuserbase_that_names_no_folder_seen_here_is_said_and_the_diagnosis_is_incomplete(tmp_path):
    """site._getuserbase() takes PYTHONUSERBASE as written: relative (to the program's current folder) or on a
    drive a copied image does not hold, the user site is not known, and its torch would be the one imported."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    for value in ("pybase", r"D:\pybase"):
        image.set_variable("user", "PYTHONUSERBASE", value)
        system, env, found = loading_findings(image, HOME)
        assert found["check-failed"].variant == "user-site-unseen" and found["check-failed"].evidence["value"] == value
        assert not run_diagnosis(system, [env], probes=[python_loading.PROBE], live=False).complete
    image.set_variable("user", "PYTHONNOUSERSITE", "1")  # no user site at all: nothing unseen
    system, env, found = loading_findings(image, HOME)
    assert env.loading.unseen == () and "check-failed" not in found
    assert run_diagnosis(system, [env], probes=[python_loading.PROBE], live=False).complete


def test_a_venv_whose_python_is_on_a_drive_not_held_is_unseen_never_gone(tmp_path):
    """pyvenv.cfg's home on D: (a copied C: drive): not "the Python is gone" (venv-base-missing), but could not
    be checked, and the diagnosis is incomplete."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    a_venv(image, "home = D:\\Python312\ninclude-system-site-packages = false\nversion = 3.12.4\n")
    image.torch_version_file(VENV + r"\Lib\site-packages", "2.4.1+cpu")
    system, env, found = loading_findings(image, VENV)
    assert "venv-base-missing" not in found and found["check-failed"].variant == "home-unseen"
    assert found["check-failed"].evidence["home"] == r"D:\Python312"
    assert not run_diagnosis(system, [env], probes=[python_loading.PROBE], live=False).complete
    a_venv(image, "home = C:\\Python312\ninclude-system-site-packages = false\nversion = 3.12.4\n")
    _, _, found = loading_findings(image, VENV)  # on the drive held, and not there: gone
    assert "venv-base-missing" in found and "check-failed" not in found


def test_python_3_10_reads_a_pth_file_by_the_older_rules_and_stops_at_an_import_line(tmp_path):
    """getpathp.c (3.8-3.10) read_pth_file: a comment only at a line's start, and an `import ` line other than
    exactly `import site` is Py_FatalError("only 'import site' is supported in ._pth file"). 3.11's getpath.py
    cuts the comment and starts (the test above)."""
    image = ImageBuilder(tmp_path / "image")
    image.write(PORTABLE + r"\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(PORTABLE + r"\python310.dll", build_pe(machine="x64", dll_name="python310.dll",
                                                        file_version=(3, 10, 11150, 1013)))
    image.torch_version_file(PORTABLE + r"\Lib\site-packages", "2.4.1+cpu")
    image.write(PORTABLE + r"\python310._pth", "python310.zip\n.\nLib\\site-packages\nimport site\n")
    _, env, found = loading_findings(image, PORTABLE)
    assert env.loading.site_runs and env.loading.pth_fatal is None and "python-pth-import-line" not in found
    image.write(PORTABLE + r"\python310._pth", "python310.zip\n.\nLib\\site-packages\nimport site  # for pip\n")
    _, env, found = loading_findings(image, PORTABLE)
    fatal = found["python-pth-import-line"]
    assert fatal.severity == "blocker" and fatal.evidence["line"] == "import site  # for pip"
    assert fatal.evidence["file"] == PORTABLE + r"\python310._pth"


def test_a_pth_file_that_cannot_be_read_is_passed_over_for_the_next(tmp_path):
    """getpath.py tries each ._pth candidate in turn and goes on to the next on OSError. /proc/self/mem is a file
    that cannot be read (EIO), even by root."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, PORTABLE)
    image.torch_version_file(PORTABLE + r"\Lib\site-packages", "2.4.1+cpu")
    image.write(PORTABLE + r"\python._pth", "python312.zip\n.\nLib\\site-packages\n")  # the last candidate
    image.host(PORTABLE + r"\python312._pth").symlink_to("/proc/self/mem")
    _, env, _ = loading_findings(image, PORTABLE)
    assert env.loading.pth_file == image.host(PORTABLE + r"\python._pth") and env.torch is not None
    assert env.loading.imported is not None


def test_a_torch_folder_named_in_another_case_is_named_as_such(tmp_path):
    """FileFinder matches `torch` exactly: a site-packages\\Torch is on sys.path but never imported, and the
    finding says why, not that Python does not look in its folder."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.host(HOME + r"\Lib\site-packages\torch").rename(image.host(HOME + r"\Lib\site-packages") / "Torch")
    _, env, found = loading_findings(image, HOME)
    assert env.loading.imported is None and found["torch-not-on-path"].variant == "case"
    assert found["torch-not-on-path"].evidence["name"] == "Torch"


def test_sitecustomize_is_found_by_its_exact_name_as_filefinder_finds_it(tmp_path):
    """site.py's `import sitecustomize` goes through FileFinder: SiteCustomize.py is not it (unless PYTHONCASEOK)."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    image.write(HOME + r"\Lib\site-packages\SiteCustomize.py", "import sys\n")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.loading.startup == ()
    image.write(r"C:\later\sitecustomize.py", "import sys\n")  # later on sys.path, but the right name
    image.write(HOME + r"\Lib\site-packages\later.pth", "C:\\later\n")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert env.loading.startup == (image.host(r"C:\later\sitecustomize.py"),)
    image.set_variable("user", "PYTHONCASEOK", "1")
    env = inspect_environment(OfflineImage(image.root), image.host(HOME))
    assert [p.name for p in env.loading.startup] == ["SiteCustomize.py"]


EMBED = r"C:\Users\alice\StabilityMatrix\Data\Assets\Python310"


def embeddable(image: ImageBuilder, folder: str, minor: int = 12, pth: str = "python{m}.zip\n.\n") -> None:
    """python.org's embeddable Python: python.exe, python3XY.dll and its python3XY._pth."""
    image.write(folder + r"\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(folder + rf"\python3{minor}.dll", build_pe(machine="x64", dll_name=f"python3{minor}.dll",
                                                           file_version=(3, minor, 11150, 1013)))
    image.write(folder + rf"\python3{minor}._pth", pth.format(m=f"3{minor}"))


def test_a_venv_with_its_own_runtime_dll_never_reads_the_bases_pth_file(tmp_path):
    """uv and `virtualenv --always-copy` make a venv of an embeddable Python by copying python.exe and
    python3XY.dll into Scripts: getpath.py's `library` is then the venv's own DLL, so the base's python312._pth is
    never read. The venv's own site-packages counts, and so does PYTHONPATH, before it."""
    image = ImageBuilder(tmp_path / "image")
    embeddable(image, EMBED, minor=12)
    image.write(VENV + r"\pyvenv.cfg", f"home = {EMBED}\ninclude-system-site-packages = false\n"
                                       "version_info = 3.12.11\n")
    image.write(VENV + r"\Scripts\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.copy(image.host(EMBED + r"\python312.dll"), VENV + r"\Scripts\python312.dll")
    image.torch_version_file(VENV + r"\Lib\site-packages", "2.4.1+cpu")
    other = r"C:\Users\alice\libs"
    image.torch_version_file(other, "2.4.0+cpu")
    image.set_variable("user", "PYTHONPATH", other)
    _, env, found = loading_findings(image, VENV)
    assert env.loading.pth_file is None and not env.loading.isolated
    assert [c.entry.origin for c in env.loading.copies] == ["PYTHONPATH", SITE]
    assert env.torch.version == "2.4.0+cpu"  # PYTHONPATH's copy is imported first
    assert "torch-not-on-path" not in found and found["torch-shadowed"].evidence["origin"] == "PYTHONPATH"
    # the same venv through the redirector (no DLL of its own): the base's ._pth decides, and without
    # `import site` the venv's site-packages is not on the path
    (image.host(VENV) / "Scripts" / "python312.dll").unlink()
    _, env, found = loading_findings(image, VENV)
    assert env.loading.pth_file is not None and env.loading.pth_file.name == "python312._pth"
    assert env.loading.copies == () and "torch-not-on-path" in found


def test_a_venv_through_the_redirector_over_a_pth_with_import_site_keeps_its_own_site_packages(tmp_path):
    """The base's python312._pth is read (the DLL is the base's), and its `import site` runs site.main(): site.venv()
    finds pyvenv.cfg beside sys.executable (the venv's python.exe, which the redirector names) and adds the venv's
    own site-packages."""
    image = ImageBuilder(tmp_path / "image")
    embeddable(image, EMBED, pth="python{m}.zip\n.\nimport site\n")
    image.write(VENV + r"\pyvenv.cfg", f"home = {EMBED}\ninclude-system-site-packages = false\nversion = 3.12.11\n")
    image.write(VENV + r"\Scripts\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.torch_version_file(VENV + r"\Lib\site-packages", "2.4.1+cpu")
    image.torch_version_file(USER_SITE_FOLDER, "2.4.0+cpu")
    _, env, found = loading_findings(image, VENV)
    assert env.loading.isolated and env.loading.site_runs
    assert [c.entry.origin for c in env.loading.copies] == [SITE]  # the system site left out: no user site
    assert env.loading.user_site_off_because == "venv"
    assert env.torch.version == "2.4.1+cpu" and "torch-not-on-path" not in found
    # with the system site included, the user site follows the venv's own, then the base's prefix
    image.write(VENV + r"\pyvenv.cfg", f"home = {EMBED}\ninclude-system-site-packages = true\nversion = 3.12.11\n")
    image.mkdir(EMBED + r"\Lib\site-packages")
    _, env, _ = loading_findings(image, VENV)
    origins = [e.origin for e in env.loading.path]
    assert origins.index(SITE) < origins.index(USER_SITE) < origins.index("base-site-packages")
    assert [c.entry.origin for c in env.loading.copies] == [SITE, USER_SITE]


def test_a_pth_file_with_import_site_keeps_the_user_site_from_311_to_314_only(tmp_path):
    """python/cpython#120037: 3.11-3.14 decide the user site before the ._pth turns isolated mode on, so `site`
    adds it (before the prefix's Lib\\site-packages when the ._pth does not list that folder itself); 3.10
    (getpathp.c sets Py_IsolatedFlag and no user site) and 3.15 (the fix) leave it off."""
    for minor, on in ((10, False), (11, True), (12, True), (13, True), (14, True), (15, False)):
        image = ImageBuilder(tmp_path / f"image{minor}")
        embeddable(image, PORTABLE, minor=minor, pth="python{m}.zip\n.\n../ComfyUI\nimport site\n")
        image.torch_version_file(PORTABLE + r"\Lib\site-packages", "2.4.1+cpu")
        user_site = USER_SITE_FOLDER.replace("Python312", f"Python3{minor}")
        image.torch_version_file(user_site, "2.4.0+cpu")
        _, env, found = loading_findings(image, PORTABLE)
        assert env.loading.user_site_on is on, minor
        assert env.torch.version == ("2.4.0+cpu" if on else "2.4.1+cpu"), minor
        if on:
            assert found["torch-shadowed"].evidence["origin"] == USER_SITE
            assert "set-aside-shadowing-torch" in found["torch-shadowed"].repairs


def test_a_registry_path_value_that_is_not_reg_sz_adds_nothing_and_ends_the_key_from_311(tmp_path):
    """getpath.py reads each subkey's default value with its own winreg.QueryValue, which takes only REG_SZ: a
    REG_EXPAND_SZ value raises OSError, which ends the loop (`except OSError: break`), so a later subkey adds
    nothing either. Nothing is ever expanded. 3.10's getpathp.c reads every kind's text as written."""
    image = ImageBuilder(tmp_path / "image")
    python_org(image, HOME)
    key = r"HKCU\Software\Python\PythonCore\3.12\PythonPath"
    image.torch_version_file(r"C:\Users\alice\tools\lib", "2.4.0+cpu")
    image.torch_version_file(r"C:\Program Files\Other\lib", "2.3.1+cpu")
    image.set_variable("user", "TOOLS", r"C:\Users\alice\tools")
    image.set_value(key + r"\A-Tools", "", "REG_EXPAND_SZ", r"%TOOLS%\lib")
    image.set_value(key + r"\B-Other", "", "REG_SZ", r"C:\Program Files\Other\lib")
    image.torch_version_file(HOME + r"\Lib\site-packages", "2.4.1+cpu")
    _, env, found = loading_findings(image, HOME)
    assert not [e for e in env.loading.path if e.origin == "registry"]
    assert env.torch.version == "2.4.1+cpu"
    assert "python-registry-path" not in found and "torch-shadowed" not in found
    # the REG_SZ value alone (its subkey first): read, and its torch is imported first
    image.set_value(key + r"\A-Tools", "", "REG_SZ", r"%TOOLS%\lib")  # as written: no folder of that name
    _, env, found = loading_findings(image, HOME)
    assert [str(e.folder).endswith("lib") for e in env.loading.path if e.origin == "registry"] == [True]
    assert env.torch.version == "2.3.1+cpu" and found["torch-shadowed"].evidence["origin"] == "registry"
