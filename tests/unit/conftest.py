"""The offline machine most diagnosis tests start from."""

from __future__ import annotations

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from tests.helpers.pe_machine import PY, VENV, torch, vc_runtime


@pytest.fixture
def machine(tmp_path):
    """A healthy machine: VC++ runtime installed, a venv with a small torch whose DLLs need only that."""
    image = ImageBuilder(tmp_path / "img")
    image.mkdir(r"C:\Windows\System32\Wbem")
    vc_runtime(image)
    image.vc_runtime("x64", "14.44.35211")
    image.write(PY + r"\python.exe", build_pe(dll=False))
    image.write(PY + r"\python312.dll", build_pe(dll_name="python312.dll", file_version=(3, 12, 4150, 1013)))
    image.venv(VENV, PY, "3.12.4", python_exe=build_pe(dll=False))
    torch(image, "2.4.1+cpu")
    return image
