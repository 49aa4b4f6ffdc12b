"""Who ships a DLL: resources/dll_index.json (made by tools/make_dll_index.py from the Windows wheels on PyPI, and
cited from PyTorch's build scripts for its own index), read the first time it is asked, and never before.

`owners("cudnn64_9.dll")` says the packages that ship the DLL, the releases seen, where in the wheel it lies, and its
family (app/engine/dll_family.py). A missing or damaged index is "owners not known" (`known` False), never an error.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional

from app.engine.dll_family import dll_family
from app.resources import resources_folder

INDEX_NAME = "dll_index.json"


@dataclass(frozen=True)
class DllOwner:
    """One package that ships the DLL. From PyPI (`source` "pypi"): the [first, last] runs of the releases seen
    with it, and its paths in the wheel ("*.data/" stands for the wheel's own data folder). Cited (`source`
    "cited"): the build it comes with and the script that says so, "repository file@commit"."""

    package: str
    source: str
    versions: tuple[tuple[str, str], ...] = ()
    paths: tuple[str, ...] = ()
    build: str = ""
    citation: str = ""


@dataclass(frozen=True)
class DllOwners:
    dll: str  # the name asked, lower case
    known: bool  # False: the index is missing or damaged, or does not name this DLL
    family: Optional[str]  # "cuda-12", "cudnn-9", "ffmpeg-7", "directml"...: from the index, else from the name
    owners: tuple[DllOwner, ...] = ()
    made: str = ""  # the day the index was made


@dataclass(frozen=True)
class _Index:
    made: str
    text: str  # the whole file: a DLL's entry is decoded when asked, never the 1,800 of them at once
    patterns: tuple[tuple[re.Pattern, DllOwner], ...]

    def entry(self, name: str) -> dict:
        """The row of `name` in "dlls" ({} for none). A quoted name followed by a colon is a key, and only "dlls"
        has DLL names for keys."""
        found = _value(self.text, name)
        return found if isinstance(found, dict) else {}


_DECODER = json.JSONDecoder()


def _citation(row: dict) -> str:
    cited = row["citation"]
    return f"{cited['repository']} {cited['file']}@{cited['commit']}"


def _owner(row: dict) -> DllOwner:
    if row.get("source") == "cited":
        return DllOwner(str(row["package"]), "cited", build=str(row["build"]), citation=_citation(row))
    return DllOwner(str(row["package"]), "pypi", tuple((str(a), str(b)) for a, b in row["versions"]),
                    tuple(str(p) for p in row["paths"]))


@cache
def _index(path: Path) -> Optional[_Index]:
    """The index at `path`, read once; None when it is missing or damaged."""
    try:
        text = path.read_bytes().decode("utf-8")
        made, rows = _value(text, "made"), _value(text, "patterns")
        if not isinstance(made, str) or not isinstance(rows, list) or not isinstance(_value(text, "dlls"), dict):
            return None
        patterns = tuple((re.compile(fnmatch.translate(pattern), re.IGNORECASE), _owner(row))
                         for row in rows for pattern in row["patterns"])
        return _Index(made, text, patterns)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _value(text: str, key: str) -> object:
    """The value of `key` (the first place it is a key), decoded; for "dlls", only whether it is an object."""
    at = text.find(json.dumps(key) + ":")
    if at < 0:
        at = text.find(json.dumps(key) + " :")
    if at < 0:
        return None
    start = text.index(":", at) + 1
    while start < len(text) and text[start] in " \t\r\n":
        start += 1
    if key == "dlls":
        return {} if text.startswith("{", start) else None
    return _DECODER.raw_decode(text, start)[0]


def owners(dll_name: str, index_path: Optional[Path] = None) -> DllOwners:
    """The packages that ship `dll_name` (a file name, any case): rows read from wheels, then cited builds whose
    scripts name it or a pattern that covers it. `index_path`: another index than the one shipped."""
    name = dll_name.replace("/", "\\").rsplit("\\", 1)[-1].strip().lower()
    index = _index(index_path or resources_folder() / INDEX_NAME)
    if index is None:
        return DllOwners(name, False, dll_family(name))
    try:
        entry = index.entry(name)
        found = [_owner(row) for row in entry.get("owners", ())]
        found += [owner for pattern, owner in index.patterns if pattern.match(name) and owner not in found]
        family = entry.get("family") or dll_family(name)
        return DllOwners(name, bool(found), str(family) if family else None, tuple(found), index.made)
    except (ValueError, KeyError, TypeError, AttributeError):  # one damaged row
        return DllOwners(name, False, dll_family(name), made=index.made)


def dlls_in_folder(folder: str, index_path: Optional[Path] = None, most: int = 12) -> tuple[str, ...]:
    """The DLLs that wheels put in a package's `folder` ("cv2", "torch/lib"), by their paths in the index: what an
    import of a module there loads. () when the index is missing or names none."""
    index = _index(index_path or resources_folder() / INDEX_NAME)
    if index is None or not re.fullmatch(r"[\w.]+(?:/[\w.]+)*", folder):
        return ()
    # a path in the folder itself, or in the wheel's data copy of it ("*.data/purelib/onnxruntime/capi/...")
    found = re.finditer(r'"(?:\*\.data/purelib/)?' + re.escape(folder) + r'/([\w.+-]{1,120}\.dll)"', index.text, re.I)
    names: list[str] = []
    for match in found:
        if match.group(1) not in names:
            names.append(match.group(1))
            if len(names) >= most:
                break
    return tuple(names)

