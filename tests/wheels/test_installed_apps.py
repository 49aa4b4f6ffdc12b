"""Apps that bring their own Python, on copied drives with real torch wheels: Intel's AI Playground as its own source
lays it out (intel/AI-Playground@acc112497d3f, cited in resources/launchers.json), and an Electron app no table
knows, found where Windows installs apps and named from its Uninstall entry. A plain `diagnose --root` (no folder
named by hand) finds each one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.inventory.discovery import discover
from app.main import main
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import pip_install, python_at, real, torch_core, windows_drive

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

HOME = r"C:\Users\alice"
LOCAL = HOME + r"\AppData\Local"
UNINSTALL = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall"
AI_PLAYGROUND = LOCAL + r"\Programs\AI Playground"
RESOURCES = AI_PLAYGROUND + r"\resources"
INTERPRETER = RESOURCES + r"\python-interpreter\cpython-3.12.9-windows-x86_64-none"
COMFYUI_VENV = RESOURCES + r"\ComfyUI\.venv"
TORCH_PYTHON = COMFYUI_VENV + r"\Lib\site-packages\torch\lib\torch_python.dll"


def relocatable_venv(image: ImageBuilder, venv: str, home: str) -> None:
    """A venv as `uv venv --relocatable` writes it (astral-sh/uv crates/uv-virtualenv/src/virtualenv.rs), with the
    real torch 2.4.0 pip-installed (RECORD lists every file it put there)."""
    image.write(venv + r"\pyvenv.cfg", f"home = {home}\nimplementation = CPython\nuv = 0.8.13\nversion_info = 3.12.9\n"
                                       "include-system-site-packages = false\nrelocatable = true\n")
    image.copy(real(realfiles.windows_python) / "python.exe", venv + r"\Scripts\python.exe", link=True)
    pip_install(image, realfiles.TORCH_240, venv + r"\Lib\site-packages", keep=torch_core)


def electron_app(image: ImageBuilder, folder: str, product: str) -> None:
    """An Electron app's own folder as electron-builder's NSIS installer leaves it: the program (its version
    resource names the product), resources\\app.asar, and an uninstaller."""
    image.write(folder + f"\\{product}.exe", build_pe(dll=False, product_name=product, file_version=(2, 5, 0, 0)))
    image.write(folder + f"\\Uninstall {product}.exe", build_pe(dll=False, product_name="Nullsoft Install System"))
    image.write(folder + r"\resources\app.asar", b"")


def uninstall_entry(image: ImageBuilder, key: str, name: str, folder: str) -> None:
    """The Uninstall entry electron-builder's NSIS installer writes for a per-user install."""
    image.set_value(f"{UNINSTALL}\\{key}", "DisplayName", "REG_SZ", name)
    image.set_value(f"{UNINSTALL}\\{key}", "InstallLocation", "REG_SZ", folder)
    image.set_value(f"{UNINSTALL}\\{key}", "UninstallString", "REG_SZ", f'"{folder}\\Uninstall.exe" /currentuser')


def damaged_ai_playground(root: Path) -> ImageBuilder:
    """AI Playground installed for one user (build-config.json: NSIS, perMachine false), its ComfyUI backend set up
    (uv.ts: uv python install into resources\\python-interpreter, uv venv --relocatable into
    resources\\ComfyUI\\.venv), the OpenMP runtime torch 2.4.0 lacks put in place, its wheel in Downloads, and
    torch_python.dll cut short as an interrupted copy leaves it."""
    image = windows_drive(root)
    electron_app(image, AI_PLAYGROUND, "AI Playground")
    uninstall_entry(image, "1d2c3b4a-aipg", "AI Playground 2.5.0", AI_PLAYGROUND)
    image.write(RESOURCES + r"\uv.exe", build_pe(dll=False, product_name="uv"))
    image.write(RESOURCES + r"\backend-versions.json", json.dumps({"comfyui-backend": {"version": "v0.3.66"}}))
    python_at(image, INTERPRETER)
    relocatable_venv(image, COMFYUI_VENV, INTERPRETER)
    lib = COMFYUI_VENV + r"\Lib\site-packages\torch\lib"
    image.copy(image.host(lib + r"\libiomp5md.dll"), lib + r"\libomp140.x86_64.dll", link=True)  # 2.4.0's known fix
    image.copy(real(realfiles.download, realfiles.TORCH_240),
               HOME + r"\Downloads\torch-2.4.0-cp312-cp312-win_amd64.whl", link=True)
    dll = image.host(TORCH_PYTHON)
    head = dll.read_bytes()[: dll.stat().st_size // 2]
    dll.unlink()  # a hard link into the cache: written as a new file
    dll.write_bytes(head)
    return image


def diagnose(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(root), "--json", "-", "--no-redact", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_ai_playground_is_found_by_a_plain_diagnose_its_damaged_dll_put_back_and_undone(tmp_path, capsys):
    image = damaged_ai_playground(tmp_path / "image")
    damaged = image.host(TORCH_PYTHON).read_bytes()
    code, report = diagnose(image.root, capsys)
    envs = {e["prefix"]: e for e in report["environments"]}
    assert code == 1 and COMFYUI_VENV in envs, sorted(envs)
    assert envs[COMFYUI_VENV]["app"] == "ComfyUI · AI Playground"
    assert envs[INTERPRETER]["app"] == "AI Playground"
    damage = [f for f in report["findings"] if f["code"] in ("torch-files-missing", "dll-damaged")]
    assert damage and all(f["repairs"] == ["restore-torch-files"] for f in damage)
    assert all(f["environment"].startswith(COMFYUI_VENV + "\\") for f in damage)
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", COMFYUI_VENV, "--action", "restore-torch-files",
                 "--yes"])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    restored = image.host(TORCH_PYTHON).read_bytes()
    assert len(restored) > len(damaged) and restored.startswith(damaged)
    code, report = diagnose(image.root, capsys, "--env", COMFYUI_VENV)
    assert not {"torch-files-missing", "dll-damaged"} & {f["code"] for f in report["findings"]}
    capsys.readouterr()
    main(["diagnose", "--root", str(image.root), "--env", COMFYUI_VENV, "--lang", "zh_CN"])
    assert main(["undo", "--last"]) == 0
    assert image.host(TORCH_PYTHON).read_bytes() == damaged  # byte for byte as it was


def test_the_way_back_is_ai_playgrounds_own_reinstall_in_both_languages(tmp_path, capsys):
    image = damaged_ai_playground(tmp_path / "image")
    shutil.rmtree(image.host(INTERPRETER))  # the Python its venv was made from, gone: start afresh the app's own way
    for lang, words in (("en", "Reinstall Backend"), ("zh_CN", "重新安装后端")):
        capsys.readouterr()
        main(["diagnose", "--root", str(image.root), "--env", COMFYUI_VENV, "--lang", lang])
        text = capsys.readouterr().out
        assert words in text and "AI Playground" in text and "python.org" not in text.lower(), text


def test_an_electron_app_no_table_knows_is_found_and_named_from_its_uninstall_entry(tmp_path, capsys):
    """An app under %LOCALAPPDATA%\\Programs keeping a uv venv (and uv's Python) inside its resources folder: no
    launcher of resources/launchers.json and no folder of ai_apps.json names it."""
    image = windows_drive(tmp_path / "image")
    app = LOCAL + r"\Programs\Verdant Studio"
    electron_app(image, app, "Verdant Studio")
    uninstall_entry(image, "verdant-studio", "Verdant Studio 1.4.2", app)
    base = app + r"\resources\runtime\cpython-3.12.9-windows-x86_64-none"
    python_at(image, base)  # no torch here: not listed
    venv = app + r"\resources\engine\.venv"
    relocatable_venv(image, venv, base)
    found = {image_path: env for image_path, env in _found(image.root).items()}
    assert found[venv].app == "Verdant Studio 1.4.2" and found[venv].found_by == "installed app"
    assert base not in found
    code, report = diagnose(image.root, capsys)
    envs = {e["prefix"]: e for e in report["environments"]}
    assert envs[venv]["app"] == "Verdant Studio 1.4.2" and code == 1


def _found(root: Path) -> dict:
    system = OfflineImage(root)
    return {system.windows_path(env.exec_prefix): env for env in discover(system, budget_s=60)}


def test_a_pinokio_apps_venv_at_a_home_moved_in_its_settings_is_named_with_the_title_pinokio_shows(tmp_path, capsys):
    """Pinokio's home moved in its settings to another folder (%USERPROFILE%\\.pinokio\\config.json's home): the
    venv of an app whose script lives in api\\<app>\\pinokio is named with the title Pinokio shows for it, from the
    app's own pinokio.js (pinokiod kernel/api/index.js:43-57,189-204), not with its repository's folder name."""
    image = windows_drive(tmp_path / "image")
    home = r"C:\AI\pinokio-moved"
    image.write(HOME + r"\.pinokio\config.json", json.dumps({"home": home}))
    image.write(home + r"\ENVIRONMENT", "")
    image.mkdir(home + r"\bin")
    app = home + r"\api\fluxgym-pinokio.git"
    image.write(app + r"\pinokio\pinokio.js", "module.exports = {\n  version: \"3.7\",\n  title: \"FluxGym\",\n"
                                             "  description: \"LoRA training\",\n  menu: async (kernel) => []\n}\n")
    uv_python = LOCAL + r"\uv-python\cpython-3.12.9-windows-x86_64-none"
    python_at(image, uv_python)
    venv = app + r"\app\env"
    relocatable_venv(image, venv, uv_python)
    assert _found(image.root)[venv].app == "FluxGym · Pinokio"
