"""A Miniconda drive with two copies of Intel's OpenMP runtime, made of the real files: conda's in Library\\bin (from
a real intel-openmp wheel) and the one torch 2.4.1 ships in torch\\lib."""

from __future__ import annotations

import json
from pathlib import Path

from app.demo.image_builder import ImageBuilder
from tests import realfiles
from tests.helpers.images import real

CONDA = r"C:\Users\alice\miniconda3"
CONDA_SITE = CONDA + r"\Lib\site-packages"
OTHER_BUILD = "intel-openmp==2023.2.0"  # 5.0.2023.x: another build than torch 2.4.1's 5.0.2024.320
SET_ASIDE = "libiomp5md.dll.set-aside-by-torch-dll-doctor"


def intel_runtime(requirement: str) -> Path:
    root = real(realfiles.extract, requirement, "*Library/bin/libiomp5md.dll")
    return next(root.rglob("libiomp5md.dll"))


def conda_image(root: Path, runtime: Path) -> ImageBuilder:
    """A Miniconda base environment: python.exe at the prefix root, conda-meta, Library\\bin\\libiomp5md.dll from
    conda's intel-openmp (which mkl depends on), and pip's torch 2.4.1 in Lib\\site-packages."""
    image = ImageBuilder(root)
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.51.36231")
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, CONDA + "\\" + name, link=True)
    image.copy(runtime, CONDA + r"\Library\bin\libiomp5md.dll")
    meta = {"intel-openmp-2023.2.0-h57928b3_50497.json": {
                "name": "intel-openmp", "version": "2023.2.0", "channel": "https://repo.anaconda.com/pkgs/main/win-64",
                "depends": [], "files": ["Library/bin/libiomp5md.dll", "Library/bin/libiompstubs5md.dll"]},
            "mkl-2023.1.0-h6b88ed4_46358.json": {
                "name": "mkl", "version": "2023.1.0", "depends": ["intel-openmp 2023.*", "tbb 2021.*"],
                "files": ["Library/bin/mkl_rt.2.dll"]},
            "python-3.12.0-h1d929f7_0.json": {"name": "python", "version": "3.12.0", "depends": [],
                                              "files": ["python.exe", "python312.dll"]}}
    for name, record in meta.items():
        image.write(CONDA + r"\conda-meta" + "\\" + name, json.dumps(record))
    image.copy_files(sorted(real(realfiles.torch_lib, realfiles.TORCH_241).glob("*.dll")),
                     CONDA_SITE + r"\torch\lib", link=True)
    image.torch_version_file(CONDA_SITE, "2.4.1+cpu")
    image.save()
    return image
