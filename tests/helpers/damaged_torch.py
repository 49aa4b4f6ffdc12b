"""torch 2.4.0's DLLs damaged as security software and interrupted copies leave them, on a copied drive whose pip.ini
names a local HTTPS index, and that index serving the real wheel."""

from __future__ import annotations

import struct

from tests.helpers.files import sha
from tests.helpers.images import SITE, TORCH_LIB

PIP_INI = r"C:\Users\alice\AppData\Roaming\pip\pip.ini"
DIST_INFO = "torch-2.4.0.dist-info"
WHEEL_NAME = "torch-2.4.0-cp312-cp312-win_amd64.whl"
WHEEL_PATH = "/packages/7f/" + WHEEL_NAME
DAMAGED = ("fbgemm.dll", "torch_cpu.dll", "c10.dll")


def broken_image(torch_image, installed, server, *, index: str = "/simple", damage: tuple[str, ...] = DAMAGED):
    """torch 2.4.0 (with the libomp140 workaround, so nothing else blocks), pip-installed, its pip.ini naming
    the local HTTPS index and its certificate; then the three DLLs damaged. Files are hard links into the
    cache: each damaged one is written as a new file, never in place."""
    image = torch_image(libomp=True)
    site = SITE + "\\" + DIST_INFO
    for name in ("RECORD", "WHEEL", "METADATA", "INSTALLER"):
        image.write(f"{site}\\{name}", installed[name])
    version = image.host(SITE + r"\torch\version.py")
    version.unlink()
    image.write(SITE + r"\torch\version.py", installed["version.py"])
    image.copy(server.ca, r"C:\certs\company-ca.pem")
    image.write(PIP_INI, f"[global]\nindex-url = {server.url(index)}\ncert = C:\\certs\\company-ca.pem\n")
    image.save()
    lib = image.host(TORCH_LIB)
    original = {name: sha(lib / name) for name in DAMAGED}
    (lib / "fbgemm.dll").unlink()  # quarantined
    if "torch_cpu.dll" in damage:
        cpu = lib / "torch_cpu.dll"
        half = cpu.stat().st_size // 2
        with open(cpu, "rb") as f:
            head = f.read(half)
        cpu.unlink()
        cpu.write_bytes(head)  # an interrupted copy
    if "c10.dll" in damage:
        (lib / "c10.dll").unlink()
        (lib / "c10.dll").write_bytes(b"")  # a failed download
    return image, original


def serve(server, wheel, digest: str) -> None:
    link = f'<a href="../../packages/7f/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>'
    server.files["/simple/torch/"] = f"<html><body>{link}</body></html>".encode()
    server.files[WHEEL_PATH] = wheel


def lib_state(image) -> dict[str, str]:
    lib = image.host(TORCH_LIB)
    return {p.name: sha(p) for p in sorted(lib.iterdir()) if p.is_file()}


def damage_import_table(dll) -> None:
    """The first import descriptor's name pointed out of the file, as a bad sector or a scan leaves a DLL: the
    file keeps its size, its headers and its tail. Written as a new file (the test files are hard links)."""
    data = bytearray(dll.read_bytes())
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    sections, optional_size = struct.unpack_from("<H", data, pe + 6)[0], struct.unpack_from("<H", data, pe + 20)[0]
    optional = pe + 24
    directories = optional + (112 if struct.unpack_from("<H", data, optional)[0] == 0x20B else 96)
    imports = struct.unpack_from("<I", data, directories + 8)[0]
    table = optional + optional_size
    for number in range(sections):
        size, address, raw_size, raw_offset = struct.unpack_from("<IIII", data, table + 40 * number + 8)
        if address <= imports < address + max(size, raw_size):
            struct.pack_into("<I", data, imports - address + raw_offset + 12, 0x7FFFFFF0)
            dll.unlink()
            dll.write_bytes(bytes(data))
            return
    raise ValueError(f"{dll} has no import table")
