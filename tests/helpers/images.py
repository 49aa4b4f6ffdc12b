"""Copied Windows drives made of real files: the paths the tests share, real wheels installed as pip lays them out,
and the hashes of a folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from tests import realfiles

PYTHON_HOME = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\ComfyUI\venv"
SITE = VENV + r"\Lib\site-packages"
TORCH_LIB = SITE + r"\torch\lib"


def real(call, *args):
    """Run a realfiles download; skip when offline, unless CI demands the real files."""
    try:
        return call(*args)
    except realfiles.RealFileUnavailable as exc:
        if os.environ.get("TDD_REQUIRE_WHEELS") == "1":
            pytest.fail(f"real test files are required here: {exc}")
        pytest.skip(f"real test files unavailable (offline?): {exc}")


def torch_core(name: str) -> bool:
    """The members of a torch wheel a diagnosis reads: the package's __init__.py and version.py, torch\\lib's DLLs."""
    return name in ("torch/__init__.py", "torch/version.py") or (name.startswith("torch/lib/")
                                                                  and name.endswith(".dll"))


def windows_drive(root: Path) -> ImageBuilder:
    """A Windows 11 drive with the current VC++ runtime in System32 (the real msvc-runtime wheel's DLLs)."""
    image = ImageBuilder(root)
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.51.36231")
    return image


def python_at(image: ImageBuilder, folder: str) -> None:
    """python.org's real CPython 3.12 at `folder` (python.exe, its DLLs), with an empty Lib\\site-packages."""
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, folder + "\\" + name, link=True)
    image.mkdir(folder + r"\Lib\site-packages")


def build_torch_image(root: Path, torch: str = realfiles.TORCH_240, *, libomp: bool = False,
                      vc_runtime: bool = True) -> ImageBuilder:
    """A Windows 11 drive with python.org's CPython 3.12, a ComfyUI-style venv and a real torch\\lib."""
    lib = real(realfiles.torch_lib, torch)
    python = real(realfiles.windows_python)
    image = ImageBuilder(root)
    if vc_runtime:
        image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
        image.vc_runtime("x64", "14.51.36231")
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, PYTHON_HOME + "\\" + name, link=True)
    image.venv(VENV, PYTHON_HOME, "3.12.9", python_exe=(python / "python.exe").read_bytes())
    image.copy_files(sorted(lib.glob("*.dll")), TORCH_LIB, link=True)
    image.torch_version_file(SITE, torch.split("==")[1] + "+cpu")
    image.torch_record(SITE, torch.split("==")[1])  # pip's record of what is there (libomp140 is added later)
    if libomp:
        image.copy(lib / "libiomp5md.dll", TORCH_LIB + r"\libomp140.x86_64.dll", link=True)
    return image


def tree_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file of a folder, by name: byte-for-byte comparisons before and after."""
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def pip_install(image: ImageBuilder, requirement: str, site: str, *, python: str = "3.12", keep=None,
                stop_at: int | None = None) -> list[str]:
    """Install a real wheel into an image's `site` (a Windows folder) as pip lays it out: its members in the wheel's
    order, INSTALLER, and RECORD. `keep(name)` picks members (RECORD then lists only those, as if the wheel held
    no others); `stop_at` stops at the first member whose full Windows path reaches that length, as pip does at
    the path limit (RECORD still lists every file). The wheel's DLLs and .pyd files are hard links into the
    extracted cache. Returns the RECORD paths written."""
    import base64
    import hashlib
    import zipfile

    wheel = real(lambda: realfiles.download(requirement, python=python))
    with zipfile.ZipFile(wheel) as zipped:
        names = [n for n in zipped.namelist() if not n.endswith("/")]
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        dist_info = record_name.rsplit("/", 1)[0]
        chosen = [n for n in names if n != record_name and (keep is None or keep(n) or n.startswith(dist_info))]
        big = [n for n in chosen if n.lower().endswith((".dll", ".pyd"))]
        extracted = {name: real(lambda n=name: realfiles.extract(requirement, n, python=python)) for name in big}
        written = []
        for name in chosen:
            target = site + "\\" + name.replace("/", "\\")
            if stop_at is not None and len(target) >= stop_at:
                break
            if name in big:
                image.copy(extracted[name] / name, target, link=True)
            else:
                image.write(target, zipped.read(name))
            written.append(name)
        record = zipped.read(record_name).decode()
    installer = b"pip\n"
    digest = base64.urlsafe_b64encode(hashlib.sha256(installer).digest()).rstrip(b"=").decode()
    lines = [line for line in record.splitlines() if line.strip()]
    if keep is not None:
        kept = set(chosen) | {record_name}
        lines = [line for line in lines if line.split(",")[0] in kept]
    lines.append(f"{dist_info}/INSTALLER,sha256={digest},{len(installer)}")
    image.write(site + "\\" + dist_info.replace("/", "\\") + "\\INSTALLER", installer)
    image.write(site + "\\" + record_name.replace("/", "\\"), "\n".join(lines) + "\n")
    return written
