"""What Python loads, read from files as the interpreter reads them: which interpreter a venv runs, `sys.path` in
order, and which copy of torch `import torch` gets.

The rules are CPython's own (`Modules/getpath.py`, `Lib/site.py`, the "Finding modules" page of the Windows docs):

- a `._pth` file beside the runtime DLL or the interpreter (`python312._pth`, `python._pth`; the DLL's first, so a
  venv of an embeddable Python keeps its base's, unless the venv holds its own copy of the DLL, as uv and
  `virtualenv --always-copy` make it) replaces `sys.path` with its lines, turns on isolated mode (no `PYTHONPATH`,
  no `PYTHONHOME`, no registry) and runs `site` only with an `import site` line; `site` then adds a venv's own
  site-packages (site.venv()) and, in 3.11-3.14, the user site too (python/cpython#120037: only 3.15 and 3.8-3.10
  leave it off), unless PYTHONNOUSERSITE is set;
- otherwise `PYTHONPATH` comes first (after the script's folder, which we cannot know), then the folders the
  registry names (the REG_SZ default value of each subkey of `HKCU`, then `HKLM`,
  `\\Software\\Python\\PythonCore\\<winver>\\PythonPath`, never expanded; from 3.11 a value of another kind ends
  the reading of that key; `winver` is "3.12", "3.12-32" for a 32-bit Python,
  "3.12-arm64" for an ARM64 one, and names the user site too), then the standard library (from `PYTHONHOME`
  when it is set), then `site`: the **user site**
  (`%APPDATA%\\Python\\Python3XY\\site-packages`, or `PYTHONUSERBASE`), before the install's own
  `Lib\\site-packages`; a venv's own site-packages comes first of all (site.venv()), and the venv turns the
  user site off when pyvenv.cfg says `include-system-site-packages = false` (without the key, or `true`: the
  user site, then the base's site-packages, follow its own), and `PYTHONNOUSERSITE` turns it off (the user site
  only); each prefix is a site folder itself, before its `Lib\\site-packages` (site.getsitepackages on Windows);
  PYTHONUSERBASE is taken as written (expanded, as the environment block holds it), never %APPDATA% beside it,
  and a Store Python's launcher sets it to the package's `LocalCache\\local-packages`; a PYTHONPATH entry keeps
  its quotes (getpath.py's abspath of the raw text);
- each site folder's `.pth` files, in name order, add the folders their lines name (right after that site folder)
  and run their `import` lines; from 3.12.2 (3.11.8, 3.10.14, ...: gh-113659) a hidden `.pth` file, or one whose
  name starts with a dot, is skipped; from 3.12.4 (gh-77102) a `.pth` file is read as UTF-8, in the locale's code
  page only when that fails (before: in the locale's code page alone, UTF-8 under PYTHONUTF8=1);
- a `.pth` file's `import` lines are code too, named with sitecustomize, but for the exact lines a few tools write
  that leave torch alone (KNOWN_PTH_LINES: setuptools' distutils switch, virtualenv's patch, pywin32's DLL folder,
  cuda-bindings' redirector, an editable install's finder of another package): matched by content, not by name;
- then `site` imports `sitecustomize` (the first on `sys.path`) and, with the user site on, `usercustomize`: code
  that runs at every start and may change anything; it is found and named, and only the live check sees its effect;
- `import torch` takes the first folder of `sys.path` holding `torch\\__init__.py` (a regular package) or a
  `torch` module with one of this Python's loader suffixes (FileFinder: the name's case exact unless PYTHONCASEOK);
  a `torch` folder without `__init__` is only a namespace portion (a module beside it wins), passed over while a
  regular package follows, and imported (empty) when none does.

The variables are those a program started from Explorer gets: the user's, else the machine's (Windows gives the
user's value of a name precedence). Nothing here runs or imports anything.
"""

from __future__ import annotations

import ntpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from app.system.base import System
from app.system.folders import child, children, descend

PACKAGE, MODULE, NAMESPACE = "package", "module", "namespace"
VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONCASEOK")
# the folders of sys.path, by where they come from (the report says each one in words)
PTH_FILE, PYTHONPATH, REGISTRY, STDLIB, USER_SITE, SITE, BASE_SITE, PTH_LINE = (
    "pth-file", "PYTHONPATH", "registry", "stdlib", "user-site", "site-packages", "base-site-packages", "pth-line")
WINVER_SUFFIX = {"x86": "-32", "arm": "-arm32", "arm64": "-arm64"}  # PCbuild/python.props: PyArchExt
REGISTRY_PATH_KEY = "{hive}\\Software\\Python\\PythonCore\\{winver}\\PythonPath"
STARTUP_MODULES = ("sitecustomize", "usercustomize")
# the `import` lines of .pth files that tools write and that leave `import torch` alone, by file name: compared
# whole, so that a file of that name with other code in it is named like any other
KNOWN_PTH_LINES = {
    "distutils-precedence.pth": re.compile(  # setuptools (49-59 said 'stdlib', 60 and later 'local')
        r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, '(local|stdlib)'\) == "
        r"'local'; enabled and __import__\('_distutils_hack'\)\.add_shim\(\);"),
    "_virtualenv.pth": re.compile(r"import _virtualenv"),
    "pywin32.pth": re.compile(r"import pywin32_bootstrap|import os;os\.environ\[\"PATH\"\]\+=\(';'\+"
                              r"os\.path\.join\(sitedir,\"pywin32_system32\"\)\)"),
    "_cuda_bindings_redirector.pth": re.compile(r"import _cuda_bindings_redirector"),
}
EDITABLE_FINDER = re.compile(r"import (__editable___\w+_finder); \1\.install\(\)")  # setuptools' editable_wheel
# site.addpackage by release: hidden and dot-named .pth files skipped (gh-113659), UTF-8 read first (gh-77102)
SKIPS_HIDDEN_SINCE = {(3, 8): 19, (3, 9): 19, (3, 10): 14, (3, 11): 8, (3, 12): 2}
UTF8_FIRST_SINCE = {(3, 12): 4}
FILE_ATTRIBUTE_HIDDEN = 0x2
MAX_PTH_BYTES = 1 << 20  # a .pth file is a few lines; a bigger one is read no further
# a drive's path or a share's (UNC); anything else is relative to a folder unknown here (the program's current one)
ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2}[^\\/])")
NO_NAME = re.compile(r'[<>"|?*]')  # characters no Windows file name holds: such a path names no folder at all
PYTHONHOME, VENV_HOME = "PYTHONHOME", "venv-home"  # origins of folders that could not be seen (PythonLoading.unseen)
EXTENSION_PLATFORM = {"x86": "win32", "arm64": "win_arm64"}  # the tag of EXTENSION_SUFFIXES; x64: win_amd64


@dataclass(frozen=True)
class PthReading:
    """How this Python's site.addpackage reads a .pth file (by its release, and the machine's code page)."""

    skips_hidden: bool = True
    utf8_first: bool = True
    # the encoding "locale" names: cp1252, cp936; utf-8 in UTF-8 mode; None when the machine's code page is unknown
    # (then no file is judged undecodable)
    locale: Optional[str] = "utf-8"

    @classmethod
    def of(cls, system: System, version: Optional[str]) -> PthReading:
        release = _release(version)
        code_page = system.code_page
        ansi = f"cp{code_page}" if code_page else None
        utf8_mode = (system.variable("PYTHONUTF8") or "").strip() == "1"
        return cls(skips_hidden=_since(release, SKIPS_HIDDEN_SINCE), utf8_first=_since(release, UTF8_FIRST_SINCE),
                   locale=ansi if not utf8_mode or _since(release, UTF8_FIRST_SINCE) else "utf-8")

    def lines(self, path: Path) -> Optional[list[str]]:
        """The lines site.addpackage acts on: neither blank nor starting with `#` (at the very start: a line
        indented is a path), trailing white space kept for the caller (an `import` line runs as it is). None when
        the bytes are not text in the encoding this Python reads them in: site.addpackage lets that error out,
        and the interpreter stops at start ("Failed to import the site module")."""
        try:
            if self.skips_hidden and getattr(path.lstat(), "st_file_attributes", 0) & FILE_ATTRIBUTE_HIDDEN:
                return []  # Windows' hidden attribute; a copied drive read elsewhere does not carry it
            with open(path, "rb") as f:
                data = f.read(MAX_PTH_BYTES + 1)
        except OSError:
            return []
        found = pth_lines(data, self)
        if found is None:
            return None
        return [line.text for line in found if line.text.strip() and not line.text.startswith("#")]


@dataclass(frozen=True)
class PthLine:
    """One line of a `.pth` or `._pth` file as Python reads it: its text without its line ending, and the offset of
    its first byte in the file (None when the text cannot be mapped back to the bytes exactly)."""

    text: str
    start: Optional[int]


def pth_lines(data: bytes, reading: Optional[PthReading]) -> Optional[list[PthLine]]:
    """Every line of a `.pth` file as site.addpackage of the Python `reading` describes splits and decodes it, or
    of a `._pth` file as getpath reads it (`reading` None); blank lines and comments too. None when that Python
    cannot decode the bytes (it stops at start). The one place these files are split into lines:

    - Lib/site.py addpackage from 3.12.4 (gh-77102): UTF-8 (its BOM taken off), else the locale's code page, then
      str.splitlines, so a form feed, \\v, \\x1c-\\x1e, U+0085, U+2028 and U+2029 end a line too; before: the
      locale's code page alone, split at \\r\\n, \\r or \\n (universal newlines);
    - Modules/getpath.c getpath_readlines (python/cpython@b28f919007439b48a1d00d54134d7b020a683cda): UTF-8 with
      undecodable bytes kept (surrogateescape), split at \\n alone, the \\r before it taken off."""
    decoded = _pth_text(data, reading)
    if decoded is None:
        return None
    text, codec, offset = decoded
    if reading is None:  # getpath: a \r ends nothing, a form feed is text
        pieces = [(p, p[:-1].rstrip("\r") if p.endswith("\n") else p) for p in re.findall(r"[^\n]*\n|[^\n]+$", text)]
    elif reading.utf8_first:
        pieces = [(p, p.splitlines()[0]) for p in text.splitlines(keepends=True)]
    else:
        pieces = [(p, p.rstrip("\r\n")) for p in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)]
    lines, starts = [], []
    for piece, content in pieces:
        starts.append(offset)
        lines.append(content.encode(codec, "surrogateescape").decode(codec, "replace"))
        offset += len(piece.encode(codec, "surrogateescape"))
    exact = offset == min(len(data), MAX_PTH_BYTES)  # else a code page that does not give its bytes back
    return [PthLine(line, start if exact else None) for line, start in zip(lines, starts)]


def _pth_text(data: bytes, reading: Optional[PthReading]) -> Optional[tuple[str, str, int]]:
    """The text of a .pth or ._pth file as pth_lines reads it, the codec that gives its bytes back, and the length
    of the BOM before it."""
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    whole, data = len(data) <= MAX_PTH_BYTES, data[:MAX_PTH_BYTES]  # a bigger one is read no further
    if reading is None:
        return data[bom:].decode("utf-8", "surrogateescape"), "utf-8", bom
    if not whole or reading.locale is None:  # read no further, or in what is not known: not judged
        return data.decode("utf-8", "surrogateescape"), "utf-8", 0
    if reading.utf8_first:
        try:
            return data[bom:].decode("utf-8"), "utf-8", bom
        except UnicodeDecodeError:
            pass
    try:
        return data.decode(reading.locale), reading.locale, 0
    except UnicodeDecodeError:
        return None
    except LookupError:  # a code page Python has no codec for: what it gives cannot be told here
        return data.decode("utf-8", "surrogateescape"), "utf-8", 0


def _release(version: Optional[str]) -> tuple[int, int, int]:
    """(3, 12, 9) of "3.12.9"; a release whose micro version is unknown is taken as the newest of its line."""
    parts = [int(p) for p in re.findall(r"\d+", version or "")[:3]]
    if len(parts) < 2:
        return (3, 99, 0)
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 999)


def _since(release: tuple[int, int, int], first: dict[tuple[int, int], int]) -> bool:
    """Whether `release` has a change that came with the given micro release of each line (and with every line
    after the newest listed)."""
    line = release[:2]
    if line in first:
        return release[2] >= first[line]
    return line > max(first)


@dataclass(frozen=True)
class Variable:
    name: str
    value: str
    scope: str  # "user" or "system" (the machine's)


@dataclass(frozen=True)
class PathEntry:
    folder: Path  # the host path
    origin: str  # one of the origins above
    source: Optional[Path] = None  # the .pth / ._pth file, or the site folder, that added it
    key: Optional[str] = None  # REGISTRY: the registry key whose default value names it


@dataclass(frozen=True)
class TorchCopy:
    folder: Path  # ...\site-packages\torch (or the torch.py / .pyd file of a module)
    kind: str  # PACKAGE, MODULE or NAMESPACE
    entry: PathEntry  # the sys.path folder it is found in


@dataclass(frozen=True)
class Interpreter:
    """The interpreter a venv's launcher starts: pyvenv.cfg's `home`, and whether that Python is still there and
    still the minor version the venv was made with."""

    home: Optional[str]  # as written in pyvenv.cfg
    home_folder: Optional[Path]
    exists: bool  # home holds a python.exe
    made_with: Optional[str]  # pyvenv.cfg's version
    runs: Optional[str]  # the version of the Python in home now (its pythonXY.dll), None when unknown
    seen: bool = True  # False: home is on a drive or share this machine does not show (a copied drive's D:), or
    # relative: whether that Python is there, and what it loads, is not known

    @property
    def changed_minor(self) -> bool:
        return bool(self.made_with and self.runs and _minor(self.made_with) != _minor(self.runs))


@dataclass(frozen=True)
class PythonLoading:
    """The answer for one environment."""

    path: tuple[PathEntry, ...]  # sys.path as the interpreter builds it, without the script's folder
    copies: tuple[TorchCopy, ...]  # every torch on sys.path, in sys.path order
    variables: tuple[Variable, ...]  # the PYTHON* variables the interpreter reads (or would, without a ._pth)
    pth_file: Optional[Path] = None  # the ._pth file that fixes sys.path
    isolated: bool = False  # a ._pth file: the variables and the user site are ignored
    site_runs: bool = True  # `site` runs (a ._pth file without `import site`: no site-packages)
    user_site: Optional[Path] = None  # the user site folder this Python would use
    user_site_on: bool = False
    user_site_off_because: Optional[str] = None  # "venv", "PYTHONNOUSERSITE", "._pth"
    interpreter: Optional[Interpreter] = None  # venvs only
    startup: tuple[Path, ...] = ()  # sitecustomize / usercustomize files that `site` runs at every start
    unreadable_pth: tuple[tuple[Path, str], ...] = ()  # .pth files this Python cannot decode, and in what
    pth_fatal: Optional[str] = None  # 3.8-3.10: the ._pth file's `import` line that stops the interpreter at start
    # (path as written, origin) of folders sys.path would hold that could not be looked in: on a drive or share this
    # machine does not show, or relative to the folder the program starts in; a torch there is not known
    unseen: tuple[tuple[str, str], ...] = ()

    @property
    def imported(self) -> Optional[TorchCopy]:
        """The copy `import torch` gets: the first regular package or module, else the first namespace portion."""
        regular = next((c for c in self.copies if c.kind != NAMESPACE), None)
        return regular or next(iter(self.copies), None)

    @property
    def shadowed(self) -> tuple[TorchCopy, ...]:
        """Copies `import torch` never gets while the imported one is there."""
        imported = self.imported
        return tuple(c for c in self.copies if c is not imported and c.kind != NAMESPACE)

    def variable(self, name: str) -> Optional[Variable]:
        return next((v for v in self.variables if v.name == name), None)


def python_variables(system: System) -> tuple[Variable, ...]:
    """PYTHONPATH, PYTHONHOME, PYTHONNOUSERSITE, PYTHONUSERBASE and PYTHONCASEOK as a newly started program gets
    them."""
    found = []
    for name in VARIABLES:
        for scope in ("user", "system"):
            value = next((v for k, v in system.environment(scope).items() if k.upper() == name), None)
            if value is not None and value.strip():  # as the environment block has it: %VARIABLES% expanded
                found.append(Variable(name, system.expand(value.strip()), scope))
                break
    return tuple(found)


def model_loading(system: System, *, python: Path, prefix: Path, base_prefix: Path, app_folder: Path,
                  version: Optional[str], site: Optional[Path], userbase: Optional[Path] = None,
                  free_threaded: bool = False, venv: Optional[dict[str, str]] = None,
                  interpreter: Optional[Interpreter] = None, cpu: Optional[str] = None) -> PythonLoading:
    """sys.path and the torch copies on it, for the interpreter at `python` (`venv`: pyvenv.cfg's settings;
    `cpu`: the interpreter's processor, "x86", "arm64"..., which names its `sys.winver`, "3.12-32", "3.12-arm64")."""
    variables = python_variables(system)
    reading = PthReading.of(system, version)
    pth = _pth_file(python, app_folder, version, free_threaded, venv is not None)
    suffixes = module_suffixes(version, cpu, free_threaded)
    values = {v.name: v for v in variables}
    winver = _winver(version, cpu)
    userbase_variable = values.get("PYTHONUSERBASE")
    user_site = _user_site(system, winver, userbase, free_threaded, userbase_variable)
    if pth is not None:
        # 3.11-3.14: the ._pth turns isolated mode on only after the user site was decided (python/cpython#120037,
        # fixed in 3.15 alone): `site` then adds it unless PYTHONNOUSERSITE (read before the ._pth) or -s says no;
        # 3.8-3.10 (getpathp.c) and 3.15 turn it off
        keeps_user_site = (3, 11) <= _release(version)[:2] < (3, 15)
        off = "._pth" if not keeps_user_site else "PYTHONNOUSERSITE" if "PYTHONNOUSERSITE" in values else None
        return _isolated(system, pth, variables, interpreter, reading, suffixes, _release(version),
                         venv=venv, prefix=prefix, site=site, user_site=user_site, user_site_off=off)
    unseen: list[tuple[str, str]] = []
    entries: list[PathEntry] = []
    for folder in _split(system, values["PYTHONPATH"].value if "PYTHONPATH" in values else None, PYTHONPATH,
                         unseen):
        entries.append(PathEntry(folder, PYTHONPATH))
    entries += registry_path(system, version, cpu, unseen)
    if interpreter is not None and not interpreter.seen:
        unseen.append((interpreter.home or "", VENV_HOME))
    home = values.get("PYTHONHOME")
    stdlib_root = host_folder(system, home.value) if home is not None else app_folder
    if stdlib_root is None:  # getpath.py takes PYTHONHOME as the prefix: the standard library is there, unseen
        unseen.append((home.value, PYTHONHOME))
    for folder in (descend(stdlib_root, "DLLs"), descend(stdlib_root, "Lib"), app_folder):
        if folder is not None:
            entries.append(PathEntry(folder, STDLIB))
    # site.venv(): system_site is "true" until pyvenv.cfg says otherwise; without it only the venv's own prefix is
    # a site prefix and the user site is off. PYTHONNOUSERSITE turns the user site off, never the system site
    system_site = venv is None or venv.get("include-system-site-packages", "true").strip().lower() == "true"
    off = "venv" if not system_site else "PYTHONNOUSERSITE" if "PYTHONNOUSERSITE" in values else None
    if off is None and user_site is None and userbase is None and userbase_variable is not None and winver:
        unseen.append((userbase_variable.value, USER_SITE))  # site._getuserbase(): as written, no fallback
    sites: list[tuple[Path, str]] = []
    if venv is not None:  # site.venv() adds the venv's prefix sites before main() adds the user site
        sites += _prefix_sites(prefix, site, SITE)
    if off is None and user_site is not None and user_site.is_dir():
        sites.append((user_site, USER_SITE))
    if system_site:  # site.addsitepackages(PREFIXES): the base's (PYTHONHOME's) prefix and its Lib\site-packages
        if venv is not None:
            base = stdlib_root if home is not None else base_prefix
            sites += _prefix_sites(base, None, BASE_SITE) if base is not None else []
        elif home is None:
            sites += _prefix_sites(prefix, site, SITE)
        elif stdlib_root is not None:  # PYTHONHOME moves a plain Python's prefix, and its site-packages
            sites += _prefix_sites(stdlib_root, None, SITE)
    runs: list[Path] = []
    unreadable: list[tuple[Path, str]] = []
    for folder, origin in sites:
        runs += _add_site(system, entries, folder, origin, reading, unreadable, unseen)
    listings = _listed(entries)
    # importlib's _relax_case(): PYTHONCASEOK in what a program started from Explorer gets
    case_ok = "PYTHONCASEOK" in values
    startup = _startup(listings, STARTUP_MODULES if off is None else STARTUP_MODULES[:1], case_ok) + tuple(runs)
    return PythonLoading(tuple(entries), _copies(listings, suffixes, case_ok), variables,
                         user_site=user_site, user_site_on=off is None, user_site_off_because=off,
                         interpreter=interpreter,
                         startup=startup, unreadable_pth=tuple(unreadable), unseen=tuple(dict.fromkeys(unseen)))


def registry_path(system: System, version: Optional[str], cpu: Optional[str] = None,
                  unseen: Optional[list[tuple[str, str]]] = None) -> list[PathEntry]:
    """getpath.py's registry folders: the default value of each subkey of ...\\PythonCore\\<winver>\\PythonPath,
    the user's key first; each value is a `;` list, taken as written: %VARIABLES% are never expanded. (The key's own
    default value counts only when the standard library is found no other way, which a working install never
    needs.) From 3.11 getpath's own winreg.QueryValue reads only a REG_SZ value: any other kind (REG_EXPAND_SZ) adds
    nothing and, raising OSError, ends the reading of that key's subkeys, so the ones after it add nothing either.
    3.8-3.10 (getpathp.c) read every value's text whatever its kind, never expanded."""
    winver = _winver(version, cpu)
    if winver is None:
        return []
    bits32 = cpu in ("x86", "arm")
    strict = _release(version)[:2] >= (3, 11)
    found = []
    for hive in ("HKCU", "HKLM"):
        key = REGISTRY_PATH_KEY.format(hive=hive, winver=winver)
        if hive == "HKLM" and bits32:
            key = key.replace("\\Software\\", "\\Software\\WOW6432Node\\")
        for name in system.registry_subkeys(key):
            value = system.registry_values(f"{key}\\{name}").get("")
            if value is None:
                continue
            if strict and value.type != "REG_SZ":
                break  # QueryValue raised OSError: `while True: ... except OSError: break`
            if not isinstance(value.data, str):
                continue
            for folder in _split(system, value.data, REGISTRY, unseen, expand=False):
                found.append(PathEntry(folder, REGISTRY, key=f"{key}\\{name}"))
    return found


def _startup(listings: list[tuple[PathEntry, dict[str, Path]]], names: tuple[str, ...],
             case_ok: bool) -> tuple[Path, ...]:
    """The sitecustomize (and usercustomize) `site` imports: the first of each name on sys.path (a module file or a
    package folder), its name's case exact as FileFinder has it (unless PYTHONCASEOK)."""
    found = []
    for name in names:
        for _entry, listing in listings:
            hit = next((p for p in (listing.get(name + ".py"), listing.get(name + ".pyc"))
                        if p is not None and (case_ok or p.name.partition(".")[0] == name)), None)
            package = listing.get(name)
            if package is not None and not case_ok and package.name != name:
                package = None
            if hit is None and package is not None and child(package, "__init__.py") is not None:
                hit = package
            if hit is not None:
                found.append(hit)
                break
    return tuple(found)


def read_interpreter(system: System, settings: dict[str, str], version_of) -> Interpreter:
    """pyvenv.cfg's `home` and `version`, against the Python in that folder now (`version_of(folder)` reads it)."""
    home = settings.get("home")
    folder = host_folder(system, home) if home else None
    exists = folder is not None and child(folder, "python.exe") is not None
    made = settings.get("version") or settings.get("version_info")
    return Interpreter(home, folder, exists, made, version_of(folder) if exists else None,
                       seen=not home or folder is not None)


def _isolated(system: System, found: tuple[Path, list[str]], variables: tuple[Variable, ...],
              interpreter: Optional[Interpreter], reading: PthReading, suffixes: tuple[str, ...],
              release: tuple[int, int, int], *, venv: Optional[dict[str, str]], prefix: Path, site: Optional[Path],
              user_site: Optional[Path], user_site_off: Optional[str]) -> PythonLoading:
    """A ._pth file: its lines are sys.path (relative to its folder); `import site` adds the site folders. From 3.11
    (getpath.py) a comment is cut anywhere on a line and any other `import` line is ignored; before (getpathp.c's
    read_pth_file) a line is a comment only when it starts with `#`, and an `import ` line other than exactly
    `import site` is a fatal error: the interpreter does not start.

    With `import site`, site.main() runs as it always does: site.venv() finds the venv's pyvenv.cfg beside
    sys.executable (the venv's own python.exe, which the redirector names) and adds the venv's own site folders
    first; then the user site (unless `user_site_off` names what turns it off: the ._pth itself before 3.11,
    PYTHONNOUSERSITE; a venv that leaves out the system site turns it off too); then the base's prefix, the ._pth
    file's folder."""
    pth, lines = found
    entries: list[PathEntry] = []
    unseen: list[tuple[str, str]] = []
    site_runs = False
    fatal = None
    for text in lines:
        if release[:2] < (3, 11):
            if not text or text.startswith("#"):
                continue
            if text.startswith("import ") and text != "import site":
                fatal = text  # Py_FatalError("only 'import site' is supported in ._pth file")
                break
            line = text.strip()
        else:
            line = text.partition("#")[0].strip()  # getpath.py cuts a comment anywhere on the line
        if line == "import site":  # exactly so; from 3.11 any other `import` line is ignored (with a warning)
            site_runs = True
            continue
        if not line or line.startswith("import "):
            continue
        folder = _resolve(system, pth.parent, line)
        if folder is not None and folder.is_dir():
            entries.append(PathEntry(folder, PTH_FILE, pth))
        elif folder is None and ABSOLUTE.match(line):
            unseen.append((line, PTH_FILE))
    runs: list[Path] = []
    unreadable: list[tuple[Path, str]] = []
    system_site = venv is None or venv.get("include-system-site-packages", "true").strip().lower() == "true"
    off = user_site_off or (None if system_site else "venv")
    if site_runs:
        sites: list[tuple[Path, str]] = _prefix_sites(prefix, site, SITE) if venv is not None else []
        if off is None and user_site is not None and user_site.is_dir():
            sites.append((user_site, USER_SITE))
        if system_site:  # site.getsitepackages(): the prefix and its Lib\site-packages, with their .pth files
            sites += _prefix_sites(pth.parent, None, BASE_SITE if venv is not None else SITE)
        for folder, origin in sites:
            runs += _add_site(system, entries, folder, origin, reading, unreadable, unseen)
    listings = _listed(entries)
    names = STARTUP_MODULES if off is None else STARTUP_MODULES[:1]
    return PythonLoading(tuple(entries), _copies(listings, suffixes, False), variables, pth_file=pth, isolated=True,
                         site_runs=site_runs, user_site=user_site, user_site_on=site_runs and off is None,
                         user_site_off_because=off, interpreter=interpreter,
                         startup=_startup(listings, names, False) + tuple(runs) if site_runs else (),
                         unreadable_pth=tuple(unreadable), unseen=tuple(dict.fromkeys(unseen)), pth_fatal=fatal)


def _pth_file(python: Path, app_folder: Path, version: Optional[str], free_threaded: bool,
              is_venv: bool = False) -> Optional[tuple[Path, list[str]]]:
    """getpath.py's order (3.11+): beside the runtime DLL the process loaded (`library`), then beside the executable
    that was started, then beside the real interpreter; each named for that file. The DLL is the base's
    (pythonXY.dll, in the folder of the real interpreter), but for a venv that holds its own copy beside its
    python.exe, as uv and `virtualenv --always-copy` make them from an embeddable Python: Windows loads that one, so
    the base's `python312._pth` is never read. A venv can override the base executable's ._pth, never the DLL's.
    Before 3.11 (getpathp.c) only the DLL and the program Windows started count: the venv's own python.exe when it
    is a copy, the base's when the redirector started it. One that cannot be read is passed over (getpath.py tries
    the next on OSError). Returns the file and its lines, line endings removed."""
    minor = _minor(version)
    runtime = "python" + minor.replace(".", "") + ("t" if free_threaded else "") if minor is not None else None
    own_runtime = is_venv and runtime is not None and child(python.parent, runtime + ".dll") is not None
    names = []
    if runtime is not None:
        names.append((python.parent if own_runtime else app_folder, runtime + "._pth"))
    if _release(version)[:2] >= (3, 11):
        names += [(python.parent, python.stem + "._pth"), (app_folder, "python._pth")]
    else:
        names.append((python.parent, python.stem + "._pth") if own_runtime or not is_venv
                     else (app_folder, "python._pth"))
    for folder, name in names:
        found = child(folder, name)
        if found is not None and found.is_file():
            try:
                with open(found, "rb") as f:
                    data = f.read(MAX_PTH_BYTES)
            except OSError:
                continue
            return found, [line.text for line in pth_lines(data, None) or ()]
    return None


def _prefix_sites(prefix: Path, site: Optional[Path], origin: str) -> list[tuple[Path, str]]:
    """site.getsitepackages() on Windows for one prefix: the prefix itself (its .pth files count too), then its
    Lib\\site-packages (`site`, when it is known to be elsewhere)."""
    site = site or descend(prefix, "Lib", "site-packages")
    return [(prefix, origin)] + ([(site, origin)] if site is not None else [])


def _add_site(system: System, entries: list[PathEntry], folder: Path, origin: str, reading: PthReading,
              unreadable: list[tuple[Path, str]], unseen: list[tuple[str, str]]) -> list[Path]:
    """site.addsitedir: the folder, then what its .pth files name (in name order), once each. Returns the .pth
    files whose `import` lines run code at every start (as sitecustomize does), but for the lines known to leave
    torch alone (KNOWN_PTH_LINES); adds to `unreadable` those this Python cannot decode (it stops at start), and to
    `unseen` the folders their lines name that this machine cannot show."""
    known = {_key(e.folder) for e in entries}
    if _key(folder) not in known:
        entries.append(PathEntry(folder, origin))
        known.add(_key(folder))
    runs: list[Path] = []
    for pth in sorted((p for p in children(folder) if p.name.endswith(".pth") and p.is_file()
                       and not (reading.skips_hidden and p.name.startswith("."))), key=lambda p: p.name):
        lines = reading.lines(pth)
        if lines is None:
            unreadable.append((pth, reading.locale))
            continue
        for line in lines:
            if line.startswith(("import ", "import\t")):
                if not _known_pth_line(pth.name, line.rstrip()) and pth not in runs:
                    runs.append(pth)
                continue
            target = _pth_target(system, folder, line)
            if target is None and not NO_NAME.search(line):
                unseen.append((ntpath.join(system.windows_path(folder), line.rstrip()), PTH_LINE))
            if target is not None and target.is_dir() and _key(target) not in known:
                entries.append(PathEntry(target, PTH_LINE, pth))
                known.add(_key(target))
    return runs


def entry_folder(system: System, file: Path, line: str, origin: str) -> Optional[Path]:
    """The folder one line of a `._pth` file (PTH_FILE) or of a site folder's `.pth` file (PTH_LINE) puts on
    sys.path, as that file's own reader resolves it; None for a comment, an `import` line or a folder not there."""
    if origin == PTH_FILE:
        text = line.partition("#")[0].strip()
        return None if not text or text.startswith("import ") else _resolve(system, file.parent, text)
    if not line.strip() or line.startswith(("#", "import ", "import\t")):
        return None
    return _pth_target(system, file.parent, line)


def _pth_target(system: System, folder: Path, line: str) -> Optional[Path]:
    """site.makepath(sitedir, line.rstrip()): joined as os.path.join joins them, so an absolute line stands alone,
    a rooted one (`\\tools`) is on the site folder's drive, a UNC one is the share's, and anything else (an
    indented line too: only the end is stripped) is under the site folder."""
    return system.host_path(ntpath.normpath(ntpath.join(system.windows_path(folder), line.rstrip())))


def _known_pth_line(name: str, line: str) -> bool:
    known = KNOWN_PTH_LINES.get(name.lower())
    if known is not None:
        return known.fullmatch(line) is not None
    editable = EDITABLE_FINDER.fullmatch(line) if name.lower().startswith("__editable__.") else None
    return editable is not None and not editable.group(1).lower().startswith("__editable___torch_")


def module_suffixes(version: Optional[str], cpu: Optional[str], free_threaded: bool) -> tuple[str, ...]:
    """importlib's loader suffixes on Windows, in FileFinder's order: extensions (`.cp312-win_amd64.pyd`, `.pyd`),
    source (`.py`, `.pyw`), bytecode (`.pyc`)."""
    minor = _minor(version)
    tagged = (f".cp{minor.replace('.', '')}{'t' if free_threaded else ''}-"
              f"{EXTENSION_PLATFORM.get(cpu or '', 'win_amd64')}.pyd",) if minor else ()
    return tagged + (".pyd", ".py", ".pyw", ".pyc")


def _copies(listings: list[tuple[PathEntry, dict[str, Path]]], suffixes: tuple[str, ...],
            case_ok: bool) -> tuple[TorchCopy, ...]:
    """FileFinder.find_spec for `torch` in each folder: a `torch` folder with an `__init__` file is the package;
    else a `torch<suffix>` file is the module (a namespace folder beside it loses); else the folder is a namespace
    portion. The name's case must be exact (Windows' FileFinder lower-cases only the suffix), unless PYTHONCASEOK."""

    def named(p: Optional[Path], stem: str) -> Optional[Path]:
        return p if p is not None and (case_ok or p.name.partition(".")[0] == stem) else None

    found = []
    for entry, listing in listings:
        folder = named(listing.get("torch"), "torch")
        namespace = folder is not None and folder.is_dir()
        if namespace and any(child(folder, "__init__" + suffix) is not None for suffix in suffixes):
            found.append(TorchCopy(folder, PACKAGE, entry))
            continue
        module = next((p for p in (named(listing.get("torch" + suffix), "torch") for suffix in suffixes)
                       if p is not None and p.is_file()), None)
        if module is not None:
            found.append(TorchCopy(module, MODULE, entry))
        elif namespace:
            found.append(TorchCopy(folder, NAMESPACE, entry))
    return tuple(found)


def _listed(entries: list[PathEntry]) -> list[tuple[PathEntry, dict[str, Path]]]:
    """Each sys.path folder with its entries by lower-case name: listed once, for torch and the startup files."""
    return [(entry, {p.name.lower(): p for p in children(entry.folder)}) for entry in entries]


def _winver(version: Optional[str], cpu: Optional[str]) -> Optional[str]:
    """sys.winver: "3.12", with PCbuild/python.props' PyArchExt for the interpreter's processor."""
    minor = _minor(version)
    return minor + WINVER_SUFFIX.get(cpu or "", "") if minor is not None else None


def _user_site(system: System, winver: Optional[str], userbase: Optional[Path], free_threaded: bool,
               variable: Optional[Variable]) -> Optional[Path]:
    """%APPDATA%\\Python\\Python<winver without the dot>[t]\\site-packages (site._get_path on Windows: Python312,
    Python312-32, Python312-arm64), or under PYTHONUSERBASE."""
    if winver is None:
        return None
    if userbase is not None:  # the Store's launcher sets PYTHONUSERBASE to the package's own folder itself
        base: Optional[Path] = userbase
    elif variable is not None:  # site._getuserbase(): the variable, as written; no fallback when it is set
        base = host_folder(system, variable.value)
    else:
        roaming = system.variable("APPDATA") or next(
            (p.roaming_appdata for p in system.user_profiles() if p.roaming_appdata), None)
        base = system.host_path(ntpath.join(roaming, "Python")) if roaming else None
    if base is None:
        return None
    name = "Python" + winver.replace(".", "") + ("t" if free_threaded else "")
    found = descend(base, name, "site-packages")
    return found if found is not None else base / name / "site-packages"


def _split(system: System, value: Optional[str], origin: str,
           unseen: Optional[list[tuple[str, str]]], expand: bool = True) -> list[Path]:
    """The existing folders of a `;` list (PYTHONPATH, a registry PythonPath value), %VARIABLES% expanded; adds
    to `unseen` the parts that name a folder this machine cannot show (another drive, a share, or relative to the
    program's own current folder). Quotes are kept, as getpath.py keeps them: `"C:\\libs"` names no folder. A
    registry value is taken as written (`expand=False`); the environment block's PYTHONPATH is already expanded."""
    folders = []
    for part in (value or "").split(";"):
        part = system.expand(part.strip()) if expand else part.strip()
        host = host_folder(system, part)
        if host is not None and host.is_dir():
            folders.append(host)
        elif host is None and part and not NO_NAME.search(part) and unseen is not None:
            unseen.append((part, origin))
    return folders


def host_folder(system: System, value: str) -> Optional[Path]:
    """Where a path written as absolute (a drive's, a share's) is on this machine; None for a relative one (to a
    folder not known here) and for one this machine cannot show (a drive or share a copied drive does not hold)."""
    return system.host_path(value) if ABSOLUTE.match(value) else None


def _resolve(system: System, base: Path, line: str) -> Optional[Path]:
    """A .pth or ._pth line: a folder relative to the file's own folder (Windows separators), or absolute. The
    relative one is joined as Windows joins it, `..` taken out, and reaches the disk through `host_path` alone:
    on a copied drive it never leaves the drive (app/system/confine.py)."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if ABSOLUTE.match(line):
        return system.host_path(line)
    return system.host_path(ntpath.normpath(ntpath.join(system.windows_path(base), line)))


def _key(folder: Path) -> str:
    return str(folder).casefold()


def _minor(version: Optional[str]) -> Optional[str]:
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None
