"""A Stable Diffusion web UI on an offline image whose CUDA torch\\lib needs more memory than Windows can commit with
the paging file it has (WinError 1455)."""

from __future__ import annotations

import shutil

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe, write_pe

GB = 1 << 30
HOME = r"C:\Python312"
VENV = r"C:\Users\alice\stable-diffusion-webui\venv"
PYTHON = VENV + r"\Scripts\python.exe"
SITE = VENV + r"\Lib\site-packages"
MM = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
CUDA_DLLS = {"cudnn_cnn_infer64_8.dll": 2 * GB, "cublasLt64_12.dll": GB, "torch_cuda.dll": GB}  # 4 GB in all
FIXED_2GB = r"C:\pagefile.sys 1024 2048"


def sd_image(root, paging_files=(FIXED_2GB,), *, cuda="12.1", memory=None, free=None) -> ImageBuilder:
    """A Stable Diffusion web UI venv with a CUDA torch\\lib (sparse DLLs of CUDA_DLLS' sizes) and the VC++ runtime;
    `memory`: environment.json's commit figures (default: 16 GB limit, 14 GB in use, 14 GB of RAM)."""
    shutil.rmtree(root, ignore_errors=True)
    image = ImageBuilder(root)
    for name in ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"):
        image.write(rf"C:\Windows\System32\{name}", build_pe(dll_name=name, file_version=(14, 44, 35211, 0)))
    image.vc_runtime("x64", "14.44.35211")
    image.write(HOME + r"\python.exe", build_pe(dll=False))
    image.write(HOME + r"\python312.dll", build_pe(dll_name="python312.dll", file_version=(3, 12, 4150, 1013)))
    image.venv(VENV, HOME, "3.12.4", python_exe=build_pe(dll=False))
    image.torch_version_file(SITE, "2.4.1+cu121" if cuda else "2.4.1+cpu", cuda=cuda)
    lib = image.mkdir(SITE + r"\torch\lib")
    for name, size in CUDA_DLLS.items():
        write_pe(lib / name, dll_name=name, pad_to=size)  # sparse: the test writes a few KB
    write_pe(lib / "c10.dll", dll_name="c10.dll")
    if paging_files is not None:
        image.set_value(MM, "PagingFiles", "REG_MULTI_SZ", list(paging_files))
    if memory is not False:
        image.env["memory"] = memory or {"commit_limit": 16 * GB, "commit_total": 14 * GB, "physical_total": 14 * GB,
                                         "paging_files": list(paging_files or [])}
    if free is not None:
        image.env["disks"] = {"C:": {"total": 512 * GB, "free": free}}
    image.save()
    return image
