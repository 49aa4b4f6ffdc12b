"""The demo machine: a Windows 11 drive with a ComfyUI-style venv and torch 2.4.0, built at run time.

Its DLLs and EXEs are small PE files (app.demo.pe_writer) that carry the real import tables of torch
2.4.0, python.org's CPython 3.12.9 and Microsoft's VC++ runtime, and the part of their real exports
that the demo's files import, as recorded in `resources/demo/` by `tools/record_demo.py`. As on a real
torch 2.4.0 install, `libomp140.x86_64.dll` is missing. Building it reads only that resource.
"""

from __future__ import annotations

import gzip
import json
import ntpath
from pathlib import Path

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Export, Import, build_pe
from app.resources import resources_folder

DEMO_FORMAT = 1
DEMO_RESOURCE = resources_folder() / "demo" / "torch-2.4.0.json.gz"
DEMO_PYTHON_HOME = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
DEMO_VENV = r"C:\Users\alice\ComfyUI\venv"
DEMO_SITE = DEMO_VENV + r"\Lib\site-packages"
DEMO_TORCH_LIB = DEMO_SITE + r"\torch\lib"


def load_demo_data(resource: Path = DEMO_RESOURCE) -> dict:
    """The recorded data (see tools/record_demo.py for its fields)."""
    data = json.loads(gzip.decompress(resource.read_bytes()))
    if data.get("format") != DEMO_FORMAT:
        raise ValueError(f"{resource} has format {data.get('format')!r}, this version reads {DEMO_FORMAT}")
    return data


def demo_pe(entry: dict) -> bytes:
    """One recorded file as a small PE image with its real imports, exports, versions and linker."""
    def version(text: str | None) -> tuple[int, ...] | None:
        return tuple(int(part) for part in text.split(".")) if text else None

    return build_pe(
        machine=entry["machine"], dll=entry["dll"], dll_name=ntpath.basename(entry["path"]),
        imports=[Import(i["dll"], tuple(i["functions"]), i["delay"]) for i in entry["imports"]],
        exports=[Export(ordinal, name) for ordinal, name in entry["exports"]],
        linker_version=tuple(entry["linker_version"]), file_version=version(entry["file_version"]),
        product_version=version(entry["product_version"]),
        dependent_load_flags=entry["dependent_load_flags"] or None,
    )


def build_demo_image(root: Path) -> Path:
    """Write the demo machine into `root` (created if needed) and return `root`."""
    data = load_demo_data()
    image = ImageBuilder(root)  # Windows 11 23H2, user alice, as the real-wheel test images
    image.env["demo"] = True  # the words say "the demo computer", never "a copied Windows drive"
    image.vc_runtime("x64", data["vc_runtime_x64"])
    image.venv(DEMO_VENV, DEMO_PYTHON_HOME, data["python_version"])
    image.torch_version_file(DEMO_SITE, data["torch_version"])
    for entry in data["files"]:
        image.write(entry["path"], demo_pe(entry))
    image.torch_record(DEMO_SITE, data["torch_version"].split("+", 1)[0])
    return image.root
