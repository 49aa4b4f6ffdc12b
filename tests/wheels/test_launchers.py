"""Where people get PyTorch: copied drives laid out as each launcher's own source code lays them out (the layouts and
their sources: resources/launchers.json), with real torch wheels. A plain `diagnose --root` (no folder named by
hand) finds each environment, names its launcher, and diagnoses it; a venv whose uv Python is gone is one problem
with the launcher's own way back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from app.inventory.discovery import discover
from app.main import main
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import pip_install, python_at, real, torch_core, windows_drive

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

HOME = r"C:\Users\alice"
ROAMING = HOME + r"\AppData\Roaming"
LOCAL = HOME + r"\AppData\Local"
UV_PYTHON = ROAMING + r"\uv\python\cpython-3.12.9-windows-x86_64-none"








def uv_venv(image: ImageBuilder, venv: str, home: str, torch: str = realfiles.TORCH_240) -> None:
    """A venv as `uv venv` writes it (crates/uv-virtualenv/src/virtualenv.rs:542-597), with a real torch."""
    image.write(venv + r"\pyvenv.cfg", f"home = {home}\nimplementation = CPython\nuv = 0.8.13\n"
                                       "version_info = 3.12.9\ninclude-system-site-packages = false\n"
                                       "prompt = ComfyUI\n")
    image.copy(real(realfiles.windows_python) / "python.exe", venv + r"\Scripts\python.exe", link=True)
    pip_install(image, torch, venv + r"\Lib\site-packages", keep=torch_core)


def diagnose(root, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(root), "--json", "-", "--no-redact", *extra])
    return code, json.loads(capsys.readouterr().out)


def labels(root) -> dict[str, str]:
    system = OfflineImage(root)
    return {system.windows_path(env.exec_prefix): env.app for env in discover(system, budget_s=60)}


def test_pinokio_is_found_where_its_config_says_and_its_app_named(tmp_path, capsys):
    """Pinokio records its home in %USERPROFILE%\\.pinokio\\config.json ("home"), here a folder no walk visits;
    an app's venv is <home>\\api\\<app>\\app\\env, made by `uv venv --python 3.12` (kernel/shell.js:1323-1384)."""
    image = windows_drive(tmp_path / "image")
    home = LOCAL + r"\PinokioData"
    image.write(HOME + r"\.pinokio\config.json", json.dumps({"home": home, "theme": "dark"}))
    image.write(home + r"\ENVIRONMENT", "PIP_CACHE_DIR=./cache/PIP_CACHE_DIR\n")
    python_at(image, home + r"\bin\miniforge")
    image.mkdir(home + r"\bin\miniforge\conda-meta")
    python_at(image, UV_PYTHON)
    venv = home + r"\api\comfy.git\app\env"
    uv_venv(image, venv, UV_PYTHON)
    found = labels(image.root)
    assert found[venv] == "comfy · Pinokio" and found[home + r"\bin\miniforge"] == "Pinokio"
    assert found[UV_PYTHON] == "uv"
    code, report = diagnose(image.root, capsys)
    assert code == 1
    envs = {e["prefix"]: e for e in report["environments"]}
    assert envs[venv]["app"] == "comfy · Pinokio" and envs[venv]["found_by"] == "launcher"
    missing = [f for f in report["findings"] if f["code"] == "missing-dll"]
    assert any(f["evidence"]["dll"].lower() == "libomp140.x86_64.dll" for f in missing)
    repaired_then_undone(image, capsys, venv)


def repaired_then_undone(image: ImageBuilder, capsys, venv: str) -> None:
    """The repair the diagnosis names (torch 2.4.0's OpenMP runtime, from torch itself), a diagnosis that finds
    nothing, and an undo that leaves torch\\lib byte for byte as it was."""
    lib = image.host(venv + r"\Lib\site-packages\torch\lib")
    before = {p.name: p.read_bytes() for p in lib.iterdir()}
    capsys.readouterr()
    assert main(["repair", "--root", str(image.root), "--env", venv, "--action", "place-libomp140",
                 "--source", "torch-bundled", "--yes"]) == 0, capsys.readouterr()
    code, report = diagnose(image.root, capsys, "--env", venv)
    assert code == 0, [f["code"] for f in report["findings"] if f["severity"] == "blocker"]
    capsys.readouterr()
    assert main(["undo", "--last"]) == 0
    assert {p.name: p.read_bytes() for p in lib.iterdir()} == before


@pytest.mark.parametrize("mode", ["portable", "default", "library-json"])
def test_stability_matrix_in_each_of_its_modes(tmp_path, capsys, mode):
    """Portable: <program folder>\\Data holds .sm-portable (SettingsManager.cs:341-344), met by the walk of the
    Desktop at any depth; default: %APPDATA%\\StabilityMatrix; or the folder library.json's LibraryPath names.
    Packages\\<name>\\venv, made by uv from Assets\\Python\\cpython-* (UvVenvRunner.cs:152-158)."""
    image = windows_drive(tmp_path / "image")
    library = {"portable": HOME + r"\Desktop\Apps\StabilityMatrix-win-x64\Data",
               "default": ROAMING + r"\StabilityMatrix", "library-json": LOCAL + r"\SM-Library"}[mode]
    if mode == "portable":
        image.write(library + r"\.sm-portable", b"")
    if mode == "library-json":
        image.write(ROAMING + r"\StabilityMatrix\library.json", json.dumps({"LibraryPath": library}, indent=2))
    image.write(library + r"\settings.json", "{}")
    python = library + r"\Assets\Python\cpython-3.12.10-windows-x86_64-none"
    python_at(image, python)
    venv = library + r"\Packages\ComfyUI\venv"
    uv_venv(image, venv, python)
    name = "Stability Matrix (portable)" if mode == "portable" else "Stability Matrix"
    found = labels(image.root)
    assert found[venv] == f"ComfyUI · {name}" and found[python] == name
    code, report = diagnose(image.root, capsys)
    assert code == 1 and any(e["app"] == f"ComfyUI · {name}" for e in report["environments"])
    repaired_then_undone(image, capsys, venv)


def test_comfyui_desktop_healthy_then_its_uv_python_gone_is_one_problem_with_its_own_way_back(tmp_path, capsys):
    """ComfyUI Desktop: %APPDATA%\\ComfyUI\\config.json's basePath, <basePath>\\.venv made by its uv from uv's
    managed CPython 3.12. Healthy: no alarm. With that Python removed: the missing base, once, never also
    "python312.dll is missing", and the way back is the app's own Recreate or `uv python install`, never
    python.org's installer."""
    image = windows_drive(tmp_path / "image")
    base = LOCAL + r"\ComfyUIData"
    image.write(ROAMING + r"\ComfyUI\config.json", json.dumps({"basePath": base, "installState": "installed"}))
    for folder in ("models", "user", "input", "output", "custom_nodes"):
        image.mkdir(base + "\\" + folder)
    python_at(image, UV_PYTHON)
    uv_venv(image, base + r"\.venv", UV_PYTHON, torch=realfiles.TORCH_241)
    code, report = diagnose(image.root, capsys)
    envs = {e["prefix"]: e for e in report["environments"]}
    assert envs[base + r"\.venv"]["app"] == "ComfyUI Desktop"
    assert code == 0, [f["code"] for f in report["findings"] if f["severity"] == "blocker"]
    # uv's Python removed (uv python uninstall, or a cleaned AppData)
    for path in sorted(image.host(UV_PYTHON).rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    image.host(UV_PYTHON).rmdir()
    code, report = diagnose(image.root, capsys, "--env", base + r"\.venv")
    blockers = [f for f in report["findings"] if f["severity"] == "blocker"]
    assert code == 1 and [f["code"] for f in blockers if f["code"] != "import-failed"] == ["venv-base-missing"]
    assert not any(f["code"] == "missing-dll" and f["evidence"]["dll"].lower().startswith("python3")
                   for f in report["findings"])
    capsys.readouterr()
    main(["diagnose", "--root", str(image.root), "--env", base + r"\.venv"])
    text = capsys.readouterr().out
    assert "Recreate" in text and "uv" in text and "python.org" not in text.lower()
    main(["diagnose", "--root", str(image.root), "--env", base + r"\.venv", "--lang", "zh_CN"])
    assert "Recreate" in capsys.readouterr().out


def test_swarmui_and_the_invoke_launcher_are_found_where_they_record_their_homes(tmp_path, capsys):
    """SwarmUI's desktop shortcut names its launch-windows.bat (Installation.cs:274-289), and ComfyUI's portable
    package sits in dlbackend\\comfy; the Invoke launcher records installDir (store.ts:5), <root>\\.venv."""
    image = windows_drive(tmp_path / "image")
    swarm = LOCAL + r"\Tools\SwarmUI"
    image.write(HOME + r"\Desktop\SwarmUI.url",
                f'[InternetShortcut]\nURL="{swarm}\\launch-windows.bat"\nIconFile="{swarm}\\favicon.ico"\n')
    image.write(swarm + r"\launch-windows.bat", "@echo off\n")
    embedded = swarm + r"\dlbackend\comfy\python_embeded"
    python_at(image, embedded)
    image.write(embedded + r"\python312._pth", "python312.zip\n.\n../ComfyUI\nimport site\n")
    invoke = LOCAL + r"\Invoke"
    image.write(ROAMING + r"\Invoke Community Edition\config.json", json.dumps({"installDir": invoke}))
    image.write(invoke + r"\invokeai.yaml", "schema_version: 4.0.2\n")
    python_at(image, UV_PYTHON)
    uv_venv(image, invoke + r"\.venv", UV_PYTHON)
    pip_install(image, realfiles.TORCH_241, embedded + r"\Lib\site-packages", keep=torch_core)
    found = labels(image.root)
    assert found[embedded] == "ComfyUI · SwarmUI" and found[invoke + r"\.venv"] == "InvokeAI · Invoke launcher"
    code, report = diagnose(image.root, capsys)
    envs = {e["prefix"]: e for e in report["environments"]}
    assert envs[embedded]["app"] == "ComfyUI · SwarmUI" and envs[embedded]["found_by"] == "launcher"
    assert envs[invoke + r"\.venv"]["found_by"] == "launcher" and code == 1  # the Invoke venv's torch 2.4.0


def launchers_drive(root) -> ImageBuilder:
    """A drive with Pinokio (home recorded in its config), a portable Stability Matrix on the Desktop and ComfyUI
    Desktop (basePath recorded), each with a real torch."""
    image = windows_drive(root)
    python_at(image, UV_PYTHON)
    pinokio = LOCAL + r"\PinokioData"
    image.write(HOME + r"\.pinokio\config.json", json.dumps({"home": pinokio}))
    image.write(pinokio + r"\ENVIRONMENT", "")
    image.mkdir(pinokio + r"\bin")
    uv_venv(image, pinokio + r"\api\comfy.git\app\env", UV_PYTHON)
    library = HOME + r"\Desktop\StabilityMatrix-win-x64\Data"
    image.write(library + r"\.sm-portable", b"")
    image.mkdir(library + r"\Assets")
    uv_venv(image, library + r"\Packages\stable-diffusion-webui-forge\venv", UV_PYTHON)
    desktop = LOCAL + r"\ComfyUIData"
    image.write(ROAMING + r"\ComfyUI\config.json", json.dumps({"basePath": desktop}))
    for folder in ("models", "user"):
        image.mkdir(desktop + "\\" + folder)
    uv_venv(image, desktop + r"\.venv", UV_PYTHON, torch=realfiles.TORCH_241)
    return image


def test_the_wizards_list_names_each_launcher(tmp_path, qtbot):
    """The wizard's environment list on that drive, with no folder chosen by hand: every launcher's environment,
    named with its launcher; the page as the user sees it is saved (docs/screenshots)."""
    from PySide6.QtCore import Qt

    from app.ui.application import new_wizard
    from app.ui.pages.base import ENVIRONMENTS

    image = launchers_drive(tmp_path / "image")
    wizard = new_wizard(root=str(image.root), lang="en")
    qtbot.addWidget(wizard)
    wizard.show()
    try:
        wizard.next()
        qtbot.waitUntil(lambda: wizard.currentId() == ENVIRONMENTS, timeout=60_000)
        page = wizard.pages[ENVIRONMENTS]
        qtbot.waitUntil(lambda: page.isComplete() and len(page.model.envs) >= 4, timeout=60_000)
        qtbot.wait(500)
        names = [page.model.data(page.model.index(row, 0), Qt.ItemDataRole.DisplayRole)
                 for row in range(page.model.rowCount())]
        assert {"comfy · Pinokio", "stable-diffusion-webui-forge · Stability Matrix (portable)", "ComfyUI Desktop",
                "uv"} <= set(names), names
        shot = os.environ.get("TDD_SCREENSHOT_DIR")
        if shot:
            wizard.grab().save(str(Path(shot) / "environments-launchers.png"))
    finally:
        assert wizard.shutdown(30_000)


def test_the_command_line_searches_everywhere_when_asked(tmp_path, capsys):
    """A ComfyUI venv six folders below the Desktop: beyond the default search's depth, found with --everywhere (the
    wizard's Search everywhere)."""
    image = windows_drive(tmp_path / "image")
    python_at(image, UV_PYTHON)
    deep = HOME + r"\Desktop\a\b\c\d\ComfyUI\venv"
    uv_venv(image, deep, UV_PYTHON)
    _, report = diagnose(image.root, capsys)
    assert deep not in {e["prefix"] for e in report["environments"]}
    _, report = diagnose(image.root, capsys, "--everywhere")
    assert deep in {e["prefix"] for e in report["environments"]}
