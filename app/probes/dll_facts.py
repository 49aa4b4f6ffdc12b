"""What the DLL index (resources/dll_index.json) says of the DLLs a pasted text names, for `explain`: the packages
that ship each one and their releases, its family, and the one command that brings the right one, or the build it
comes with where no package on the index ships it. The packages and versions the text's own paths and wheel names
show are read too. The index is read only when one of these is asked.

A file whose path lies in another package's folder (torchvision, cv2, PyQt5...) is that package's, never PyTorch's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_I = re.IGNORECASE
# a DLL file name as _ANY_DLL in app/probes/error_text.py reads it
_DLL_NAME = re.compile(r"(?<![\w.\-{])[\w\-+]+(?:\.[\w\-+]+)*\.dll(?!\w)", _I)
# the folder a file lies in under site-packages (or dist-packages): its first part names the package
_SITE_FOLDER = re.compile(r"[\\/](?:site|dist)-packages[\\/](?P<inside>[^\s\"'<>|*?]{1,300})", _I)
# a wheel's file name, and a package's installed record: torch-2.4.0+cu121-cp311-cp311-win_amd64.whl
_WHEEL = re.compile(r"(?<![\w.])(?P<name>[A-Za-z][\w.]{0,80}?)-(?P<version>\d[\w.!+]{0,40}?)-(?:cp|py|pp)\d[\w.]{0,20}"
                    r"-[\w.]{1,40}-(?:win_amd64|win_arm64|win32|any)\.whl\b", _I)
_DIST_INFO = re.compile(r"(?<![\w.])(?P<name>[A-Za-z][\w.]{0,80}?)-(?P<version>\d[\w.!+]{0,40}?)\.dist-info\b", _I)
_CUDA_TAG = re.compile(r"\+cu(1[1-3])\d\b|\bCUDA\s+(1[1-3])(?:\.\d+)?\b", _I)  # torch 2.4.0+cu121, "CUDA 12.1"
_VC_RUNTIME = re.compile(r"^(?:msvcp140\w*|vcruntime140\w*|concrt140|vccorlib140|ucrtbase|api-ms-win-[\w-]+)\.dll$",
                         _I)
_TORCH_FOLDERS = frozenset({"torch", "functorch"})
MAX_DLLS = 12  # a log of thousands of lines names each DLL many times; the first dozen different ones are said
MAX_ROWS = 4  # packages named for one DLL


@dataclass(frozen=True)
class DllFact:
    """One DLL of the text: `shipped_by` the packages that ship it ("package first – last"), `command` the pip
    command that brings the right one, `origin` the build it comes with where no package on the index ships it."""

    dll: str
    family: Optional[str] = None
    known: bool = False
    shipped_by: tuple[str, ...] = ()
    command: Optional[str] = None
    origin: Optional[str] = None
    citation: str = ""
    folder_package: Optional[str] = None  # the package whose folder the text's path shows

    def document(self) -> dict:
        return {"dll": self.dll, "family": self.family, "known": self.known, "shipped_by": list(self.shipped_by),
                "command": self.command, "origin": self.origin, "citation": self.citation or None,
                "folder_package": self.folder_package}


def folder_package(dll_path: Optional[str]) -> Optional[str]:
    """The folder under site-packages that holds the file ("torchvision", "cv2", "PyQt5"), as the path shows it."""
    found = _SITE_FOLDER.search(dll_path or "")
    if found is None:
        return None
    parts = re.split(r"[\\/]", found.group("inside"))
    return parts[0] if len(parts) > 1 else None


def index_owner(dll: Optional[str], dll_path: Optional[str]) -> Optional[str]:
    """The package a DLL is of, where its folder or the index gives it to one that is not PyTorch; None for
    PyTorch's, for the Visual C++ runtime (Microsoft's, whichever package carries a copy), and when not known."""
    if not dll or _VC_RUNTIME.match(dll):
        return None
    folder = folder_package(dll_path)
    if folder is not None:
        return None if folder.lower() in _TORCH_FOLDERS else _package_of_folder(dll, dll_path, folder)
    from app.inventory.dll_index import owners

    rows = owners(dll).owners
    packages = {row.package for row in rows}
    if not rows or "torch" in packages:
        return None
    return sorted(packages)[0] if len(packages) == 1 or _one_kind(packages) else None


def _one_kind(packages: set[str]) -> bool:
    """Builds of one package under several names: nvidia-cudnn-cu11/-cu12, opencv-python(-headless)."""
    stems = {re.sub(r"-(?:cu\d+|headless|contrib|gpu)$", "", name.lower()) for name in packages}
    return len(stems) == 1


def _package_of_folder(dll: str, dll_path: Optional[str], folder: str) -> str:
    """The package whose wheel puts the file at the path's place inside site-packages, else the folder's name."""
    from app.inventory.dll_index import owners

    inside = _SITE_FOLDER.search(dll_path or "").group("inside").replace("\\", "/").lower()
    for row in owners(dll).owners:
        if any(inside == path.lower() or inside.startswith(path.lower().rsplit("/", 1)[0] + "/")
               for path in row.paths):
            return row.package
    return folder


def shown_packages(text: str) -> list[str]:
    """The packages and versions the text's wheel names and installed records show: "torch 2.4.0+cu121"."""
    seen: list[str] = []
    for pattern in (_WHEEL, _DIST_INFO):
        for found in pattern.finditer(text):
            said = f"{found.group('name').replace('_', '-').lower()} {found.group('version')}"
            if said not in seen:
                seen.append(said)
    return seen[:MAX_ROWS * 2]


def text_families(text: str, names: list[str]) -> set[str]:
    """The CUDA majors the text shows: its DLLs' families and torch's +cu121 or "CUDA 12.1"."""
    from app.engine.dll_family import dll_family

    families = {family for name in names if (family := dll_family(name)) and family.startswith("cuda-")}
    families |= {f"cuda-{a or b}" for a, b in _CUDA_TAG.findall(text)}
    return families


def dll_names(text: str, first: Optional[str]) -> list[str]:
    """The DLLs the text names, the one that failed first, each once (case aside), at most MAX_DLLS."""
    names: list[str] = [first] if first and first.lower().endswith(".dll") else []
    for found in _DLL_NAME.finditer(text):
        if len(names) >= MAX_DLLS:
            break
        if found.group().lower() not in {name.lower() for name in names}:
            names.append(found.group())
    return names


def dll_facts(text: str, dll: Optional[str], dll_path: Optional[str]) -> list[DllFact]:
    """What the index says of each DLL the text names (`dll`, the one that failed, first)."""
    names = dll_names(text, dll)
    # where the text shows no CUDA line, CUDA 12's packages: the line most builds of 2025-26 are made for
    families = text_families(text, names) or {"cuda-12"}
    return [_fact(name, dll_path if dll and name.lower() == dll.lower() else None, families) for name in names]


def _fact(name: str, path: Optional[str], families: set[str]) -> DllFact:
    from app.inventory.dll_index import owners
    from app.probes.dll_owner import owner_of, versions_said

    found = owners(name)
    shipped = tuple(f"{row.package} {versions_said(row)}".strip() for row in found.owners if row.source == "pypi")
    owner = owner_of(None, name, families=families)
    folder = folder_package(path)
    command = f'pip install "{owner.pin}"' if owner.package and owner.pin else None
    if folder and owner.package and not _ships_into(found.owners, owner.package, folder):
        command = None  # the file lies in another package's folder: that package's build brings it
    return DllFact(name, owner.family or found.family, found.known, shipped[:MAX_ROWS], command, owner.origin,
                   owner.citation, folder)


def _ships_into(rows, package: str, folder: str) -> bool:
    return any(row.package == package and any(p.lower().startswith(folder.lower() + "/") for p in row.paths)
               for row in rows)


def dotted_module(text: str, module: str) -> str:
    """The module as the text's import lines name it whole: "_C" of "from torch._C import *" is torch._C."""
    found = re.search(r"(?<![\w.])((?:[A-Za-z_]\w{0,60}\.){1,4})" + re.escape(module) + r"(?![\w.])", text)
    return found.group(1) + module if found and "." not in module else module


def module_dlls(module: str) -> tuple[str, ...]:
    """The DLLs in the folder of a module the text imports ("cv2", "torch._C": torch's own folder, and torch\\lib
    whose DLLs it loads)."""
    from app.inventory.dll_index import dlls_in_folder

    top = module.split(".")[0]
    return dlls_in_folder(top) or dlls_in_folder(f"{top}/lib")


def fact_words(facts: list[DllFact], shown: list[str], lang: str, module: Optional[str] = None) -> str:
    """The paragraph that says, in `lang`, whose each DLL is and what brings it, what the text shows, and the DLLs
    in the folder of `module` (an import that failed with its reason cut off)."""
    from app.probes.dll_owner import family_name
    from app.probes.error_catalogue import facts_catalogue

    said = facts_catalogue(lang)
    lines = [said["shown"].format(packages=", ".join(shown))] if shown else []
    if module and (in_folder := module_dlls(module)):
        lines.append(said["folder_ships"].format(module=module, dlls=", ".join(in_folder)))
    if facts and not any(fact.known for fact in facts) and not _index_readable():
        return "\n".join([*lines, said["index_missing"]])
    for fact in facts:
        values = {"dll": fact.dll, "family": family_name(fact.family), "packages": "; ".join(fact.shipped_by),
                  "command": fact.command, "origin": fact.origin, "citation": fact.citation,
                  "folder": fact.folder_package}
        for key in ("ships", "origin", "unknown", "folder", "command"):
            template = said.get(key if values["family"] else key + "_no_family") or said.get(key)
            if template and _fits(key, fact) and all(values.get(name) for name in _names(template)):
                lines.append(template.format_map(values))
    return "\n".join(lines)


def _fits(key: str, fact: DllFact) -> bool:
    return {"ships": bool(fact.shipped_by), "origin": not fact.shipped_by and bool(fact.origin),
            "unknown": not fact.shipped_by and not fact.origin, "folder": bool(fact.folder_package),
            "command": bool(fact.command)}[key]


def _names(template: str) -> set[str]:
    from app.probes.error_catalogue import placeholders

    return placeholders(template)


def _index_readable() -> bool:
    from app.inventory.dll_index import owners

    return bool(owners("c10.dll").made)
