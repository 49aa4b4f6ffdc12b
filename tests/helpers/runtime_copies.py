"""Old copies of Microsoft's VC++ runtime inside other software, made of the real files: PyQt5-Qt5 5.15.2's Qt5\\bin
(runtime 14.26.28720.3) in site-packages, and ComfyUI's portable Python with the same old files beside python.exe;
torch 2.9.1, which needs msvcp140.dll 14.40 or newer."""

from __future__ import annotations

from pathlib import Path

from app.demo.image_builder import ImageBuilder
from tests import realfiles
from tests.helpers.images import SITE, real

TORCH_291 = "torch==2.9.1"
PYQT5_QT5 = "PyQt5-Qt5==5.15.2"
PYQT5 = "PyQt5==5.15.11"
OLD_FILES = ("msvcp140.dll", "msvcp140_1.dll", "msvcp140_2.dll", "concrt140.dll")
PORTABLE = r"C:\AI\ComfyUI_windows_portable\python_embeded"


def add_pyqt5(image, *, package: bool = True) -> None:
    """PyQt5-Qt5's Qt5\\bin and dist-info (RECORD, METADATA) as pip installs them; with `package`, PyQt5's own
    __init__.py (which adds Qt5\\bin with os.add_dll_directory) and its dist-info."""
    qt = real(realfiles.extract, PYQT5_QT5, "PyQt5*")
    for path in sorted(p for p in qt.rglob("*") if p.is_file() and (p.suffix.lower() == ".dll" and p.parent.name
                                                                     == "bin" or ".dist-info" in str(p))):
        image.copy(path, SITE + "\\" + str(path.relative_to(qt)).replace("/", "\\"), link=True)
    if package:
        pyqt = real(realfiles.extract, PYQT5, "PyQt5*")
        for path in sorted(p for p in pyqt.rglob("*") if p.is_file() and (p.name == "__init__.py" and
                                                                          p.parent.name == "PyQt5" or
                                                                          ".dist-info" in str(p))):
            image.copy(path, SITE + "\\" + str(path.relative_to(pyqt)).replace("/", "\\"), link=True)


def old_runtime() -> Path:
    return real(realfiles.extract, "PyQt5-Qt5==5.15.2", "PyQt5/Qt5/bin/*.dll") / "PyQt5" / "Qt5" / "bin"


def windows(image: ImageBuilder, runtime: str = realfiles.MSVC_RUNTIME, version: str = "14.51.36231") -> None:
    image.copy_files(real(realfiles.msvc_runtime_dlls, runtime), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", version)


def add_torch(image: ImageBuilder, site: str) -> None:
    image.copy_files(sorted(real(realfiles.torch_lib, TORCH_291).glob("*.dll")), site + r"\torch\lib", link=True)
    image.torch_version_file(site, "2.9.1+cpu")


def portable_image(root: Path, runtime: str = realfiles.MSVC_RUNTIME, version: str = "14.51.36231") -> ImageBuilder:
    """ComfyUI's portable package: the embeddable CPython in python_embeded, with old runtime files somebody copied
    beside python.exe (no record lists them)."""
    image = ImageBuilder(root)
    windows(image, runtime, version)
    python = real(realfiles.windows_python)
    for path in sorted(p for p in python.iterdir() if p.is_file()):
        image.copy(path, PORTABLE + "\\" + path.name, link=True)
    image.write(PORTABLE + r"\python312._pth", "python312.zip\n.\nLib\\site-packages\nimport site\n")
    for name in OLD_FILES:
        image.copy(old_runtime() / name, PORTABLE + "\\" + name, link=True)
    add_torch(image, PORTABLE + r"\Lib\site-packages")
    image.save()
    return image
