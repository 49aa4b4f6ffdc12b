"""A copied drive with the real ctranslate2 wheel (behind faster-whisper and WhisperX) beside the real torch 2.4.1
wheel in a venv: its DLLs and Python files, as pip lays them out."""

from __future__ import annotations

from app.demo.image_builder import ImageBuilder
from tests import realfiles
from tests.helpers.images import pip_install, python_at, real, torch_core, windows_drive

PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\subtitles\venv"
SITE = VENV + r"\Lib\site-packages"
CTRANSLATE2 = "ctranslate2==4.8.5"


def image_with_ctranslate2(root) -> ImageBuilder:
    image = windows_drive(root)
    python_at(image, PYTHON)
    image.venv(VENV, PYTHON, "3.12.9", python_exe=(real(realfiles.windows_python) / "python.exe").read_bytes())
    pip_install(image, realfiles.TORCH_241, SITE, keep=torch_core)
    pip_install(image, CTRANSLATE2, SITE, keep=lambda n: n.startswith("ctranslate2/") and n.endswith((".dll", ".py")))
    return image
