"""Apps that bring their own Python, found where Windows installs apps and named from the app's own records: its
Uninstall entry, its Electron package.json (in resources\\app.asar, in asar's own format), or its program's version
resource; what holds no torch is not listed, and a folder's name is never taken for an owner."""

from __future__ import annotations

import json
import struct

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.inventory.discovery import discover
from app.inventory.installed_apps import asar_member, owner_of
from app.system.offline import OfflineImage
from tests.helpers.pe_machine import python_files

LOCAL = r"C:\Users\alice\AppData\Local"
UNINSTALL = r"HKLM\Software\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall"


def asar(files: dict[str, bytes]) -> bytes:
    """An asar archive as Electron's asar package writes it: a pickled header (its size, then a pickled string: the
    JSON index of the files, each with its size and its offset after the header), then the files' bytes."""
    index, offset = {}, 0
    for name, data in files.items():
        index[name] = {"size": len(data), "offset": str(offset)}
        offset += len(data)
    text = json.dumps({"files": index}).encode()
    padded = text + b"\0" * (-len(text) % 4)
    pickle = struct.pack("<II", len(padded) + 4, len(text)) + padded
    return struct.pack("<II", 4, len(pickle)) + pickle + b"".join(files.values())


def app_with_torch(image: ImageBuilder, venv: str) -> None:
    base = venv.rsplit("\\", 2)[0] + r"\python"
    python_files(image, base)
    image.venv(venv, base, python_exe=build_pe(dll=False))
    image.torch_version_file(venv + r"\Lib\site-packages", "2.5.1+cpu")


def found(image: ImageBuilder) -> dict:
    system = OfflineImage(image.root)
    return {system.windows_path(env.exec_prefix): env for env in discover(system, budget_s=60)}


def test_an_electron_apps_name_comes_from_the_package_json_inside_its_app_asar(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    app = r"C:\Program Files\verdant"
    image.write(app + r"\verdant.exe", build_pe(dll=False, product_name="Electron", file_version=(31, 0, 0, 0)))
    package = json.dumps({"name": "verdant", "productName": "Verdant Studio", "version": "1.4.2"}).encode()
    image.write(app + r"\resources\app.asar", asar({"index.js": b"require('./main')\n", "package.json": package}))
    venv = app + r"\resources\engine\.venv"
    app_with_torch(image, venv)
    envs = found(image)
    assert envs[venv].app == "Verdant Studio" and envs[venv].found_by == "installed app"
    assert asar_member(image.host(app + r"\resources\app.asar"), "package.json") == package


def test_an_apps_name_comes_from_its_programs_version_resource_and_a_python_without_torch_is_not_listed(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    app = LOCAL + r"\Programs\sdtool"
    image.write(app + r"\Uninstall sdtool.exe", build_pe(dll=False, product_name="Nullsoft Install System"))
    image.write(app + r"\sdtool.exe", build_pe(dll=False, product_name="SD Tool Deluxe", file_version=(2, 1, 0, 0)))
    venv = app + r"\backend\env"
    app_with_torch(image, venv)
    other = r"C:\Program Files (x86)\Blender Foundation\Blender 4.2\4.2\python"
    python_files(image, other)  # a Python of its own, without torch
    envs = found(image)
    assert envs[venv].app == "SD Tool Deluxe" and other not in envs


def test_an_uninstall_entry_names_its_own_folder_only(tmp_path):
    """An entry whose InstallLocation is Program Files itself names no app below it; one for the app's folder does,
    also under WOW6432Node."""
    image = ImageBuilder(tmp_path / "img")
    image.set_value(UNINSTALL + r"\Runtime", "DisplayName", "REG_SZ", "Some Runtime")
    image.set_value(UNINSTALL + r"\Runtime", "InstallLocation", "REG_SZ", "C:\\Program Files\\")
    image.set_value(UNINSTALL + r"\Studio", "DisplayName", "REG_SZ", "Studio 3")
    image.set_value(UNINSTALL + r"\Studio", "InstallLocation", "REG_SZ", r'"C:\Program Files\Studio\"')
    venv = r"C:\Program Files\Studio\runtime\venv"
    app_with_torch(image, venv)
    image.mkdir(r"C:\Projects\Python310\Lib")
    system = OfflineImage(image.root)
    assert found(image)[venv].app == "Studio 3"
    assert owner_of(system, image.host(r"C:\Program Files\Other\python")) is None
    assert owner_of(system, image.host(r"C:\Projects\Python310")) is None


def test_an_apps_data_folder_in_appdata_is_searched_and_the_store_apps_data_is_not(tmp_path):
    """An app that makes its environment as it runs, in %APPDATA%\\<app>: found, with no name no record gives;
    %LOCALAPPDATA%\\Packages (the Store apps' data) is left to the Store step."""
    image = ImageBuilder(tmp_path / "img")
    venv = r"C:\Users\alice\AppData\Roaming\voice-lab\runtime\backend\.venv"
    app_with_torch(image, venv)
    packed = LOCAL + r"\Packages\Vendor.App_8wekyb3d8bbwe\LocalState\env"
    app_with_torch(image, packed)
    envs = found(image)
    assert envs[venv].found_by == "installed app" and envs[venv].app is None
    assert packed not in envs
