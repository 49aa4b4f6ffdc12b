"""CPython's own sys.path rules, where the launchers reach them, against real Windows CPython 3.12 under Wine: the
interpreter prints its sys.path and where `import torch` would come from (importlib's find_spec, nothing imported),
and the model (inspect_environment on the live machine, in the same Wine prefix) must say the same.

- a venv that uv or `virtualenv --always-copy` makes from an embeddable Python: its own Scripts\\python312.dll,
  so the base's python312._pth is never read, and PYTHONPATH counts;
- a venv started through the redirector (which sets __PYVENV_LAUNCHER__ and starts the base's python.exe) over a
  base whose ._pth says `import site`: the venv keeps its own site-packages;
- a ._pth with `import site` keeps the user site in 3.12 (python/cpython#120037), unless PYTHONNOUSERSITE;
- a REG_EXPAND_SZ value under the registry's PythonPath adds nothing and ends the reading of that key."""

from __future__ import annotations

import contextlib
import json
import shutil

import pytest

from tests.winelab import REPO_ROOT, _link_tree, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

USER_ENVIRONMENT = r"HKCU\Environment"
REGISTRY_PATH = r"HKCU\Software\Python\PythonCore\3.12\PythonPath"
COMPARE = r"""
import json, os, subprocess, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.inventory.environment import inspect_environment
from app.system.live import LiveWindows
code = ("import importlib.util, json, sys; s = importlib.util.find_spec('torch'); "
        "print(json.dumps([sys.path, s.origin if s else None]))")
real = subprocess.run([{exe!r}, "-c", code], capture_output=True, text=True, env=dict(os.environ, **{extra!r}))
path, origin = json.loads(real.stdout) if real.returncode == 0 else ([], None)
env = inspect_environment(LiveWindows(), Path({folder!r}))
imported = env.loading.imported
print(json.dumps({{"real_path": path, "real_torch": os.path.dirname(origin) if origin else None,
                  "model_path": [str(e.folder) for e in env.loading.path],
                  "model_torch": str(imported.folder) if imported else None, "pth": str(env.loading.pth_file),
                  "user_site_on": env.loading.user_site_on, "stderr": real.stderr[-1500:]}}))
"""


def compare(lab, folder, exe, extra=None) -> dict:
    """The real interpreter's sys.path and torch, beside the model's, for the environment in `folder`."""
    script = COMPARE.format(repo=to_windows_path(REPO_ROOT), exe=to_windows_path(exe), extra=extra or {},
                            folder=to_windows_path(folder))
    result = lab.run_python(["-c", script], torch_env=lab.app_python(), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["real_path"], seen["stderr"]
    return seen


def norm(path) -> str:
    return (path or "").rstrip("\\").lower()


def sites(paths) -> list[str]:
    """The site folders of a sys.path, in order (the standard library's entries differ only by what the model
    leaves out: the zip file and folders that are not there)."""
    return [norm(p) for p in paths if "site-packages" in p.lower() or "\\libs-" in p.lower()]


def agree(seen: dict) -> None:
    assert norm(seen["real_torch"]) == norm(seen["model_torch"]), seen
    assert sites(seen["real_path"]) == sites(seen["model_path"]), seen


def torch_copy(lab, name: str, version: str = "2.4.0"):
    """A folder (named `libs-...`) holding a real torch distribution, as PYTHONPATH or a registry value names one."""
    folder = lab.root / "envs" / f"libs-{name}"
    shutil.rmtree(folder, ignore_errors=True)
    for part in ("torch", f"torch-{version}.dist-info"):
        _link_tree(lab.base_site(version) / part, folder / part)
    return folder


@contextlib.contextmanager
def user_variable(lab, name: str, value: str):
    assert lab.wine_reg(["add", USER_ENVIRONMENT, "/v", name, "/t", "REG_SZ", "/d", value, "/f"]) == 0
    try:
        yield
    finally:
        lab.wine_reg(["delete", USER_ENVIRONMENT, "/v", name, "/f"])


def embeddable_base(lab, name: str, pth: str):
    """The lab's embeddable CPython 3.12 (python.org's zip) with the given python312._pth, no torch of its own."""
    base = lab.root / "envs" / name
    shutil.rmtree(base, ignore_errors=True)
    _link_tree(lab.python_dir, base)
    (base / "python312._pth").unlink()
    (base / "python312._pth").write_text(pth)
    return base


def a_venv(lab, base, name: str, own_runtime: bool, system_site: bool = False):
    """A venv of `base` with torch 2.4.1 in its own site-packages. `own_runtime`: as uv (its embeddable fallback)
    and `virtualenv --always-copy` make it, with python.exe and the DLLs copied into Scripts; else only a
    python.exe stands where the redirector would (the test starts the base with __PYVENV_LAUNCHER__, as the
    redirector does)."""
    venv = lab.root / "envs" / name
    shutil.rmtree(venv, ignore_errors=True)
    (venv / "Scripts").mkdir(parents=True)
    names = [p.name for p in lab.python_dir.iterdir() if p.suffix.lower() in (".dll", ".pyd", ".zip")]
    for file in ["python.exe", *(names if own_runtime else [])]:
        shutil.copyfile(lab.python_dir / file, venv / "Scripts" / file)
    (venv / "pyvenv.cfg").write_text(f"home = {to_windows_path(base)}\nimplementation = CPython\n"
                                     f"include-system-site-packages = {'true' if system_site else 'false'}\n"
                                     "version_info = 3.12.0\n")
    _link_tree(lab.base_site("2.4.1"), venv / "Lib" / "site-packages")
    return venv


def test_a_venv_with_its_own_runtime_ignores_the_bases_pth_and_pythonpath_comes_first(lab):
    base = embeddable_base(lab, "rules-uv-base", "python312.zip\n.\n")
    venv = a_venv(lab, base, "rules-uv-venv", own_runtime=True)
    other = torch_copy(lab, "uv-pythonpath")
    try:
        with user_variable(lab, "PYTHONPATH", to_windows_path(other)):
            seen = compare(lab, venv, venv / "Scripts" / "python.exe", {"PYTHONPATH": to_windows_path(other)})
    finally:
        shutil.rmtree(other, ignore_errors=True)
    agree(seen)
    assert seen["pth"] == "None" and norm(seen["real_torch"]) == norm(to_windows_path(other / "torch"))


@pytest.mark.parametrize("system_site", [False, True], ids=["own-site-only", "system-site"])
def test_a_venv_through_the_redirector_over_a_pth_with_import_site_keeps_its_own_site(lab, system_site):
    base = embeddable_base(lab, "rules-redirector-base", "python312.zip\n.\nimport site\n")
    venv = a_venv(lab, base, "rules-redirector-venv", own_runtime=False, system_site=system_site)
    launcher = to_windows_path(venv / "Scripts" / "python.exe")
    seen = compare(lab, venv, base / "python.exe", {"__PYVENV_LAUNCHER__": launcher})
    agree(seen)
    assert seen["pth"].lower().endswith("python312._pth")
    assert norm(seen["real_torch"]) == norm(to_windows_path(venv / "Lib" / "site-packages" / "torch"))


@pytest.fixture
def user_site_torch(lab):
    """torch 2.4.0 in the lab user's own site-packages, as `pip install --user` leaves it."""
    appdata = lab.run_python(["-c", "import os; print(os.environ['APPDATA'])"]).stdout.strip()
    from tests.winelab import from_windows_path

    folder = from_windows_path(appdata + r"\Python\Python312\site-packages", lab.prefix)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("torch", "torch-2.4.0.dist-info"):
        _link_tree(lab.base_site("2.4.0") / name, folder / name)
    yield folder
    shutil.rmtree(folder.parent.parent, ignore_errors=True)


def test_a_pth_with_import_site_keeps_the_user_site_in_312_unless_pythonnousersite(lab, user_site_torch):
    """ComfyUI portable's own python312._pth (no site-packages line: `site` adds it after the user site)."""
    portable = embeddable_base(lab, "rules-portable", "python312.zip\n.\n../ComfyUI\nimport site\n")
    (portable / "Lib" / "site-packages").rmdir()
    _link_tree(lab.base_site("2.4.1"), portable / "Lib" / "site-packages")
    seen = compare(lab, portable, portable / "python.exe")
    agree(seen)
    assert seen["user_site_on"]
    assert norm(seen["real_torch"]).endswith(r"\appdata\roaming\python\python312\site-packages\torch")
    with user_variable(lab, "PYTHONNOUSERSITE", "1"):
        seen = compare(lab, portable, portable / "python.exe", {"PYTHONNOUSERSITE": "1"})
    agree(seen)
    assert not seen["user_site_on"]
    assert norm(seen["real_torch"]) == norm(to_windows_path(portable / "Lib" / "site-packages" / "torch"))


def test_a_reg_expand_sz_python_path_adds_nothing_and_ends_the_key(lab):
    plain = embeddable_base(lab, "rules-registry", "")
    (plain / "python312._pth").unlink()  # builds sys.path as a python.org install does: the registry counts
    first, second = torch_copy(lab, "registry-expand"), torch_copy(lab, "registry-sz", "2.4.1")
    try:
        assert lab.wine_reg(["add", REGISTRY_PATH + r"\A-Expand", "/ve", "/t", "REG_EXPAND_SZ", "/d",
                             to_windows_path(first), "/f"]) == 0
        assert lab.wine_reg(["add", REGISTRY_PATH + r"\B-Sz", "/ve", "/t", "REG_SZ", "/d",
                             to_windows_path(second), "/f"]) == 0
        seen = compare(lab, plain, plain / "python.exe")
        agree(seen)
        assert seen["real_torch"] is None  # neither value was read
        lab.wine_reg(["delete", REGISTRY_PATH + r"\A-Expand", "/f"])
        seen = compare(lab, plain, plain / "python.exe")
        agree(seen)
        assert norm(seen["real_torch"]) == norm(to_windows_path(second / "torch"))
    finally:
        lab.wine_reg(["delete", REGISTRY_PATH, "/f"])
        shutil.rmtree(first, ignore_errors=True)
        shutil.rmtree(second, ignore_errors=True)
