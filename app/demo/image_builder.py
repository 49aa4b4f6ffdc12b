"""Write offline images (a Windows drive in a folder, docs/design.md): for the demo machine and the tests."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import ntpath
import os
import shutil
from pathlib import Path
from typing import Iterable, Optional

VC_RUNTIMES_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"


class ImageBuilder:
    """Builds an image step by step; every path argument is a Windows path on drive C:."""

    def __init__(self, root: Path, *, windows_version: str = "10.0.22631", arch: str = "AMD64",
                 user: str = "alice") -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = user
        self.registry: dict[str, dict[str, dict]] = {}
        self.env = {"windows_version": windows_version, "arch": arch,
                    "system": {"PATH": r"C:\Windows\system32;C:\Windows;C:\Windows\System32\Wbem",
                               "SystemRoot": r"C:\Windows", "ProgramFiles": r"C:\Program Files"},
                    "user": {"USERNAME": user, "USERPROFILE": rf"C:\Users\{user}",
                             "APPDATA": rf"C:\Users\{user}\AppData\Roaming",
                             "LOCALAPPDATA": rf"C:\Users\{user}\AppData\Local", "PATH": ""}}
        (self.root / "Windows" / "System32" / "Wbem").mkdir(parents=True, exist_ok=True)  # the default PATH
        self.save()

    @property
    def home(self) -> str:
        return rf"C:\Users\{self.user}"

    def host(self, windows_path: str) -> Path:
        drive, rest = ntpath.splitdrive(windows_path)
        if drive.upper() != "C:":
            raise ValueError(f"images hold drive C: only, not {windows_path}")
        return self.root.joinpath(*[p for p in rest.split("\\") if p])

    def mkdir(self, windows_path: str) -> Path:
        folder = self.host(windows_path)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def write(self, windows_path: str, data: bytes | str) -> Path:
        """Write a file; one that is there already is replaced, never written through (it may be a hard link to a
        shared file that `copy(link=True)` put there: the real wheels' cache)."""
        target = self.host(windows_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        if isinstance(data, str):
            target.write_text(data, encoding="utf-8")
        else:
            target.write_bytes(data)
        return target

    def copy(self, source: Path, windows_path: str, *, link: bool = False) -> Path:
        """Copy a file in; `link` hard-links instead (tests share big read-only DLLs this way). A file already there
        is replaced, never written through (it may itself be a hard link into the real wheels' cache)."""
        target = self.host(windows_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        if link:
            try:
                os.link(source, target)
                return target
            except OSError:
                pass  # another file system, or no hard links: copy
        shutil.copyfile(source, target)
        return target

    def copy_files(self, sources: Iterable[Path], windows_folder: str, *, link: bool = False) -> None:
        for source in sources:
            self.copy(source, ntpath.join(windows_folder, source.name), link=link)

    def set_value(self, key: str, name: str, kind: str, data: object) -> None:
        self.registry.setdefault(key, {})[name] = {"type": kind, "data": data}
        self.save()

    def vc_runtime(self, arch: str = "x64", version: str = "14.44.35211", installed: bool = True) -> None:
        """The registry values the VC++ Redistributable writes (also under WOW6432Node, as on Windows)."""
        major, minor, build = (int(x) for x in version.split("."))
        for key in (rf"{VC_RUNTIMES_KEY}\{arch}",
                    VC_RUNTIMES_KEY.replace("SOFTWARE", r"SOFTWARE\WOW6432Node") + rf"\{arch}"):
            self.registry[key] = {
                "Installed": {"type": "REG_DWORD", "data": 1 if installed else 0},
                "Version": {"type": "REG_SZ", "data": f"v{version}.00"},
                "Major": {"type": "REG_DWORD", "data": major}, "Minor": {"type": "REG_DWORD", "data": minor},
                "Bld": {"type": "REG_DWORD", "data": build}, "Rbld": {"type": "REG_DWORD", "data": 0},
            }
        self.save()

    def set_variable(self, scope: str, name: str, value: str) -> None:
        self.env[scope][name] = value
        self.save()

    def add_to_path(self, windows_folder: str, scope: str = "user") -> None:
        current = self.env[scope].get("PATH", "")
        self.env[scope]["PATH"] = f"{current};{windows_folder}" if current else windows_folder
        self.save()

    def venv(self, windows_folder: str, base_python_folder: str, version: str = "3.12.4",
             python_exe: Optional[bytes] = None) -> Path:
        """A venv: pyvenv.cfg naming its base Python, and Scripts\\python.exe (the launcher)."""
        self.write(ntpath.join(windows_folder, "pyvenv.cfg"),
                   f"home = {base_python_folder}\ninclude-system-site-packages = false\nversion = {version}\n")
        if python_exe is not None:
            self.write(ntpath.join(windows_folder, "Scripts", "python.exe"), python_exe)
        return self.mkdir(ntpath.join(windows_folder, "Lib", "site-packages"))

    def torch_version_file(self, site_packages: str, version: str, cuda: Optional[str] = None) -> Path:
        """torch's version.py (and a stand-in start file), and, unless site-packages has one, pip's record of the
        files torch has so far (torch_record writes it again with what is added later)."""
        text = (f"__version__ = '{version}'\ndebug = False\n"
                f"cuda: Optional[str] = {cuda!r}\nhip: Optional[str] = None\n")
        init = ntpath.join(site_packages, "torch", "__init__.py")
        if not self.host(init).exists():  # torch's start file, as every install has it (a real wheel's stays)
            self.write(init, "from torch.version import __version__  # a stand-in for torch's own start file\n")
        written = self.write(ntpath.join(site_packages, "torch", "version.py"), "from typing import Optional\n" + text)
        if not any(self.host(site_packages).glob("torch-*.dist-info")):  # pip's record, as every pip install has
            self.torch_record(site_packages, version.split("+", 1)[0])
        return written

    def torch_record(self, site_packages: str, release: str) -> Path:
        """pip's install record of the torch in `site_packages` as it is now: every file below `torch`, with its
        SHA-256 and size, and the RECORD itself (which pip writes last, without a hash)."""
        site = self.host(site_packages)
        info = f"torch-{release}.dist-info"
        rows = []
        for path in sorted((site / "torch").rglob("*")):
            if path.is_file():
                stat = path.stat()
                digest = _sha256(str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
                rows.append(f"{path.relative_to(site).as_posix()},sha256={digest},{stat.st_size}")
        rows.append(f"{info}/RECORD,,")
        return self.write(ntpath.join(site_packages, info, "RECORD"), "\n".join(rows) + "\n")

    def save(self) -> None:
        (self.root / "registry.json").write_text(json.dumps(self.registry, indent=1), encoding="utf-8")
        (self.root / "environment.json").write_text(json.dumps(self.env, indent=1), encoding="utf-8")


@functools.lru_cache(maxsize=4096)
def _sha256(path: str, device: int, number: int, size: int, mtime_ns: int) -> str:
    """A RECORD's urlsafe base64 SHA-256; once per file, by its identity (device, file number, size, time): the tests
    link the same real DLLs into many images."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
