"""Python's side of loading, for real: Windows CPython 3.12 under Wine imports torch from exactly the folder the
model predicts. The user site before site-packages (a `pip install --user` torch 2.4.0 shadowing a healthy 2.4.1,
then set aside and undone), PYTHONPATH from the user's own settings (the replay gets them as the user's programs
do), a folder the registry's PythonPath key names, a ._pth file (which makes PYTHONPATH count for nothing, and puts
its own site-packages before the user site, which 3.12 still adds), a venv whose base Python is gone (it cannot
start at all, as the model says), and a sitecustomize that moves sys.path at start (the model cannot read it: the
diagnosis says so and is never "all clear"), and .pth files read as the real site reads them (hidden ones and
dot-named ones skipped, the code page when a file is not UTF-8)."""

from __future__ import annotations

import contextlib
import json
import shutil
import zipfile

import pytest

from tests.helpers.lab import lab_env
from tests.winelab import REPO_ROOT, _link_tree, from_windows_path, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
USER_ENVIRONMENT = r"HKCU\Environment"
REGISTRY_PATH = r"HKCU\Software\Python\PythonCore\3.12\PythonPath"


def run_app(lab, argv, data=None):
    """The app, run by the lab's own app Python (psutil and the rest; its ._pth keeps the user site out of it)."""
    return lab.run_python(["-c", RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=argv)], timeout=600,
                          torch_env=lab.app_python(), env={"TDD_DATA_DIR": to_windows_path(data)} if data else None)


def diagnose(lab, env) -> tuple[int, dict]:
    result = run_app(lab, ["diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet"])
    assert result.returncode in (0, 1), result.stderr[-3000:]
    return result.returncode, json.loads(result.stdout)


def replayed_torch(document) -> str:
    """The torch folder the replay's real process found (import-ok / import-failed evidence)."""
    replay = next(f for f in document["findings"] if f["code"] in ("import-ok", "import-failed"))
    return replay["evidence"]["replay"]["torch_dir"]


def same(a: str, b: str) -> bool:
    return a.rstrip("\\").lower() == b.rstrip("\\").lower()


def plain_python(lab, name: str, torch_version: str):
    """A lab Python without its ._pth file: it builds sys.path as a python.org install does (user site included)."""
    env = lab_env(lab, name, torch_version=torch_version)
    (env / "python312._pth").unlink()
    return env


@pytest.fixture(scope="module")
def user_site(lab):
    """The lab user's own site-packages (%APPDATA%\\Python\\Python312\\site-packages) holding torch 2.4.0 as
    `pip install --user` leaves it; removed afterwards (every other lab Python has a ._pth, which ignores it)."""
    appdata = lab.run_python(["-c", "import os; print(os.environ['APPDATA'])"]).stdout.strip()
    folder = from_windows_path(appdata + r"\Python\Python312\site-packages", lab.prefix)
    source = lab.base_site("2.4.0")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("torch", "torch-2.4.0.dist-info"):
        _link_tree(source / name, folder / name)
    yield folder
    shutil.rmtree(folder.parent.parent, ignore_errors=True)


def test_the_user_site_comes_first_for_real_and_setting_it_aside_gives_the_healthy_torch(lab, user_site, tmp_path):
    env = plain_python(lab, "lab-shadow-241", "2.4.1")
    code, document = diagnose(lab, env)
    findings = {f["code"]: f for f in document["findings"]}
    shadow = findings["torch-shadowed"]
    assert shadow["severity"] == "blocker" and shadow["evidence"]["origin"] == "user-site"
    predicted = document["environments"][0]["torch"]["path"]
    assert same(replayed_torch(document), predicted)  # the model and the real interpreter agree
    assert "user" in predicted.lower() or "roaming" in predicted.lower() or "<user>" in predicted
    assert findings["import-failed"]["evidence"]["winerror"] == 126  # torch 2.4.0's fbgemm.dll, as predicted
    assert "torch-loaded-elsewhere" not in findings and code == 1

    result = run_app(lab, ["repair", "--env", to_windows_path(env), "--action", "set-aside-shadowing-torch",
                           "--yes"], data=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    code, document = diagnose(lab, env)
    findings = {f["code"]: f for f in document["findings"]}
    assert findings["import-ok"]["evidence"]["version"] == "2.4.1+cpu" and "torch-shadowed" not in findings
    assert run_app(lab, ["undo", "--last"], data=tmp_path).returncode == 0
    assert (user_site / "torch" / "__init__.py").is_file()
    assert not (user_site / "torch.set-aside-by-torch-dll-doctor").exists()


def test_pythonpath_from_the_users_settings_decides_for_real(lab, user_site):
    env = plain_python(lab, "lab-pythonpath-241", "2.4.1")
    other = lab.root / "pythonpath-240"
    shutil.rmtree(other, ignore_errors=True)
    _link_tree(lab.base_site("2.4.0") / "torch", other / "torch")
    _link_tree(lab.base_site("2.4.0") / "torch-2.4.0.dist-info", other / "torch-2.4.0.dist-info")
    assert lab.wine_reg(["add", USER_ENVIRONMENT, "/v", "PYTHONPATH", "/t", "REG_SZ", "/d",
                         to_windows_path(other), "/f"]) == 0
    try:
        code, document = diagnose(lab, env)
    finally:
        lab.wine_reg(["delete", USER_ENVIRONMENT, "/v", "PYTHONPATH", "/f"])
        with contextlib.suppress(OSError):
            shutil.rmtree(other)
    findings = {f["code"]: f for f in document["findings"]}
    assert findings["torch-shadowed"]["evidence"]["origin"] == "PYTHONPATH"
    assert same(replayed_torch(document), to_windows_path(other / "torch"))
    assert same(document["environments"][0]["torch"]["path"], to_windows_path(other / "torch"))
    assert "torch-loaded-elsewhere" not in findings and code == 1


def test_a_pth_files_own_site_packages_comes_before_the_user_site_for_real(lab, user_site):
    """The lab Python's python312._pth lists Lib\\site-packages and says `import site`: 3.12 still adds the user site
    (python/cpython#120037), after the ._pth's own lines. The environment's own torch is imported, and the user
    site's copy is named as hidden behind it, never as what stops PyTorch."""
    env = lab_env(lab, "lab-pth-241", torch_version="2.4.1")
    code, document = diagnose(lab, env)
    findings = {f["code"]: f for f in document["findings"]}
    assert findings["torch-shadowed"]["variant"] == "hidden" and findings["torch-shadowed"]["severity"] == "warning"
    assert findings["torch-shadowed"]["repairs"] == [] and "torch-loaded-elsewhere" not in findings
    assert same(replayed_torch(document), to_windows_path(env / "Lib" / "site-packages" / "torch"))
    assert findings["import-ok"]["evidence"]["version"] == "2.4.1+cpu"


def test_square_brackets_in_the_folder_preload_nothing_and_the_cpu_build_still_imports(lab, tmp_path):
    """torch's own glob of torch\\lib\\*.dll matches nothing under `[new]`: the replay (which repeats that glob)
    loads no DLL ahead of time, and the CPU build still imports (the .pyd finds torch\\lib through the added DLL
    folder): a warning for this build, as the diagnosis says."""
    from app.probes.replay import SCRIPT, parse_replay

    env = lab_env(lab, "lab-brackets-source", torch_version="2.4.1")
    bracketed = lab.root / "envs" / "[new]" / "python"
    shutil.rmtree(bracketed.parent, ignore_errors=True)
    bracketed.parent.mkdir(parents=True)
    _link_tree(env, bracketed)
    try:
        result = lab.run_exe(bracketed / "python.exe", ["-B", to_windows_path(SCRIPT)], timeout=300)
        data = parse_replay(result.stdout)
        assert data is not None, result.stderr[-2000:]
        assert data["dlls"] == [] and data["import"]["ok"] and data["import"]["version"] == "2.4.1+cpu"
        code, document = diagnose(lab, bracketed)
        brackets = next(f for f in document["findings"] if f["code"] == "torch-folder-brackets")
        assert brackets["severity"] == "warning" and brackets["evidence"]["names"] == ["[new]"] and code == 0
    finally:
        shutil.rmtree(bracketed.parent, ignore_errors=True)


def other_torch(lab, name: str):
    """torch 2.4.0 (no libomp140: `import torch` fails with WinError 126) in a folder of its own under the lab."""
    other = lab.root / name
    shutil.rmtree(other, ignore_errors=True)
    for part in ("torch", "torch-2.4.0.dist-info"):
        _link_tree(lab.base_site("2.4.0") / part, other / part)
    return other


def test_a_folder_the_registrys_pythonpath_key_names_decides_for_real(lab):
    """getpath.py reads ...\\PythonCore\\3.12\\PythonPath\\<name>'s default value: the model puts that folder before
    site-packages, and the real interpreter imports torch 2.4.0 from it."""
    env = plain_python(lab, "lab-registry-241", "2.4.1")
    other = other_torch(lab, "registry-240")
    key = REGISTRY_PATH + r"\LabTool"
    assert lab.wine_reg(["add", key, "/ve", "/t", "REG_SZ", "/d", to_windows_path(other), "/f"]) == 0
    try:
        code, document = diagnose(lab, env)
    finally:
        lab.wine_reg(["delete", REGISTRY_PATH, "/f"])
        shutil.rmtree(other, ignore_errors=True)
    findings = {f["code"]: f for f in document["findings"]}
    shadow = findings["torch-shadowed"]
    assert shadow["evidence"]["origin"] == "registry" and shadow["evidence"]["added_by"].endswith(r"\LabTool")
    assert same(replayed_torch(document), to_windows_path(other / "torch"))
    assert findings["import-failed"]["evidence"]["winerror"] == 126
    assert "python-registry-path" in findings and "torch-loaded-elsewhere" not in findings and code == 1


def test_a_sitecustomize_that_moves_sys_path_is_named_and_what_it_did_is_caught_by_the_live_check(lab):
    """The model cannot read what sitecustomize does; the real process imports another torch than the predicted
    one, and the diagnosis says so (never "all clear"), naming the file."""
    env = lab_env(lab, "lab-sitecustomize-241", torch_version="2.4.1")  # its ._pth runs site: no user site here
    other = other_torch(lab, "sitecustomize-240")
    site = env / "Lib" / "site-packages"
    (site / "sitecustomize.py").write_text(f"import sys\nsys.path.insert(0, {to_windows_path(other)!r})\n")
    try:
        code, document = diagnose(lab, env)
    finally:
        (site / "sitecustomize.py").unlink()
        shutil.rmtree(other, ignore_errors=True)
    findings = {f["code"]: f for f in document["findings"]}
    assert findings["python-startup-code"]["evidence"]["file"].lower().endswith(r"site-packages\sitecustomize.py")
    assert same(findings["torch-loaded-elsewhere"]["evidence"]["found"], to_windows_path(other / "torch"))
    assert same(document["environments"][0]["torch"]["path"], to_windows_path(site / "torch"))
    assert code != 0 and document["complete"] is False


@pytest.fixture(scope="module")
def venv_home(lab):
    """A base Python laid out as python.org's installer leaves it (the standard library as files under Lib), and a
    venv of it as `python -m venv --copies` makes one: Scripts\\python.exe with its DLLs, pyvenv.cfg naming home."""
    home = lab.root / "envs" / "lab-venv-base"
    shutil.rmtree(home, ignore_errors=True)
    _link_tree(lab.python_dir, home)
    (home / "python312._pth").unlink()
    with zipfile.ZipFile(lab.python_dir / "python312.zip") as stdlib:
        stdlib.extractall(home / "Lib")
    venv = lab.root / "envs" / "lab-venv-241"
    shutil.rmtree(venv, ignore_errors=True)
    (venv / "Scripts").mkdir(parents=True)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        shutil.copyfile(lab.python_dir / name, venv / "Scripts" / name)
    _link_tree(lab.base_site("2.4.1"), venv / "Lib" / "site-packages")
    yield home, venv
    shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("gone", [False, True], ids=["home-there", "home-gone"])
def test_a_venv_runs_its_home_python_and_with_home_gone_cannot_start_as_the_model_says(lab, venv_home, gone):
    home, venv = venv_home
    named = to_windows_path(home) + ("-uninstalled" if gone else "")
    (venv / "pyvenv.cfg").write_text(f"home = {named}\ninclude-system-site-packages = false\nversion = 3.12.9\n")
    code, document = diagnose(lab, venv)
    findings = {f["code"]: f for f in document["findings"]}
    if not gone:
        assert "venv-base-missing" not in findings and code == 0
        assert same(replayed_torch(document), to_windows_path(venv / "Lib" / "site-packages" / "torch"))
        assert findings["import-ok"]["evidence"]["version"] == "2.4.1+cpu"
        return
    assert findings["venv-base-missing"]["severity"] == "blocker"
    assert findings["venv-base-missing"]["evidence"]["home"] == named
    assert "import-ok" not in findings and findings["import-failed"]["severity"] == "blocker" and code == 1
    started = lab.run_exe(venv / "Scripts" / "python.exe", ["-c", "print('started')"], timeout=120)
    assert started.returncode != 0 and "started" not in started.stdout  # the real interpreter cannot start


PTH_RULES = r"""
import ctypes, json, os, subprocess, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.inventory.environment import inspect_environment
from app.inventory.python_path import PTH_LINE
from app.system.live import LiveWindows
plain = Path({plain!r})
hidden = plain / "Lib" / "site-packages" / "hidden.pth"
assert ctypes.windll.kernel32.SetFileAttributesW(str(hidden), 2)  # FILE_ATTRIBUTE_HIDDEN
real = subprocess.run([str(plain / "python.exe"), "-c", "import json, sys; print(json.dumps(sys.path))"],
                      capture_output=True, text=True, check=True).stdout
env = inspect_environment(LiveWindows(), plain)
(plain / "Lib" / "site-packages" / "zz-bad.pth").write_bytes(b"C:\\tools\\\x81\n")  # no text in cp1252
bad = subprocess.run([str(plain / "python.exe"), "-c", "print('started')"], capture_output=True, text=True)
named = inspect_environment(LiveWindows(), plain).loading.unreadable_pth
print(json.dumps({{"real": json.loads(real), "model": [str(e.folder) for e in env.loading.path if e.origin == PTH_LINE],
                  "hidden": os.lstat(hidden).st_file_attributes & 2, "version": env.python_version,
                  "bad_started": bad.returncode == 0 and "started" in bad.stdout, "bad_error": bad.stderr[-400:],
                  "bad_model": [[str(p), e] for p, e in named]}}))
"""


def test_pth_files_are_read_as_the_real_site_reads_them(lab):
    """CPython 3.12.9's site.addpackage, for real: a hidden .pth file and one named with a dot are skipped, and one
    that is not UTF-8 is read in the machine's code page (cp1252 here); the model adds exactly the folders the
    real interpreter adds, in its order. One that is no text in that code page either stops the interpreter at
    start, and the model names it."""
    root = lab.root / "pth-rules"
    shutil.rmtree(root, ignore_errors=True)
    plain = root / "python"
    _link_tree(lab.python_dir, plain)
    (plain / "python312._pth").unlink()  # a hard link: the lab's own Python keeps its file
    site = plain / "Lib" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    folders = {name: root / "tools" / name for name in ("dot", "hidden", "café", "plain")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (site / ".dot.pth").write_bytes(to_windows_path(folders["dot"]).encode() + b"\n")
    (site / "hidden.pth").write_bytes(to_windows_path(folders["hidden"]).encode() + b"\n")
    (site / "cp.pth").write_bytes(to_windows_path(folders["café"]).encode("cp1252") + b"\n")  # not UTF-8
    (site / "plain.pth").write_bytes(to_windows_path(folders["plain"]).encode() + b"\n")
    script = PTH_RULES.format(repo=to_windows_path(REPO_ROOT), plain=to_windows_path(plain))
    try:
        result = lab.run_python(["-c", script], timeout=300)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["hidden"] and outcome["version"] == "3.12.9"
    ours = {to_windows_path(f).lower() for f in folders.values()}
    real = [p for p in outcome["real"] if p.lower() in ours]
    assert [p.lower() for p in real] == [to_windows_path(folders[n]).lower() for n in ("café", "plain")]
    assert [p.lower() for p in outcome["model"]] == [p.lower() for p in real]
    # a .pth that is no text in the code page: the real interpreter stops at start, as the model says
    assert not outcome["bad_started"] and "site" in outcome["bad_error"], outcome["bad_error"]
    assert [[p.lower().rsplit("\\", 1)[-1], e] for p, e in outcome["bad_model"]] == [["zz-bad.pth", "cp1252"]]
