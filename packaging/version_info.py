"""The Windows version resource of TorchDllDoctor.exe, built from ``app.__version__`` (see build_installer.spec).

Explorer's Properties > Details and the app's own PE reader (app/engine/pe.py) show these strings. Runs inside
PyInstaller, which provides ``PyInstaller.utils.win32.versioninfo``; loaded by path from the spec (``packaging/``
has no ``__init__.py`` on purpose: it must never shadow the ``packaging`` library that PyInstaller imports).
"""

from __future__ import annotations

import re

from PyInstaller.utils.win32.versioninfo import (
    FixedFileInfo,
    StringFileInfo,
    StringStruct,
    StringTable,
    VarFileInfo,
    VarStruct,
    VSVersionInfo,
)

PRODUCT = "Torch DLL Doctor"
LANGUAGE_EN_US, CODE_PAGE_UNICODE = 0x0409, 1200


def numeric_version(version: str) -> tuple[int, int, int, int]:
    """``0.1.0`` -> (0, 1, 0, 0); ``1.2.3rc1`` / ``1.2.dev4`` -> (1, 2, 3, 0) / (1, 2, 0, 0): the binary
    FILEVERSION holds four 16-bit numbers, the string ProductVersion keeps the full text."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("+")[0].split("rc")[0].split(".dev")[0])][:4]
    return tuple(numbers + [0] * (4 - len(numbers)))  # type: ignore[return-value]


def version_info(version: str, exe_name: str) -> VSVersionInfo:
    numbers = numeric_version(version)
    dotted = ".".join(str(n) for n in numbers)
    strings = [
        StringStruct("CompanyName", "Torch DLL Doctor contributors"),
        StringStruct("FileDescription", PRODUCT),
        StringStruct("FileVersion", dotted),
        StringStruct("InternalName", exe_name.removesuffix(".exe")),
        StringStruct("LegalCopyright", "MIT License"),
        StringStruct("OriginalFilename", exe_name),
        StringStruct("ProductName", PRODUCT),
        StringStruct("ProductVersion", version),
    ]
    return VSVersionInfo(
        ffi=FixedFileInfo(filevers=numbers, prodvers=numbers, mask=0x3F, flags=0x0, OS=0x40004, fileType=0x1,
                          subtype=0x0, date=(0, 0)),
        kids=[
            StringFileInfo([StringTable(f"{LANGUAGE_EN_US:04x}{CODE_PAGE_UNICODE:04x}", strings)]),
            VarFileInfo([VarStruct("Translation", [LANGUAGE_EN_US, CODE_PAGE_UNICODE])]),
        ],
    )
