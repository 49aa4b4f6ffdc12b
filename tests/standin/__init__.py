"""A stand-in vc_redist.exe for tests: a real Windows console program built from vc_redist_standin.c.

Built with Debian's mingw-w64 (``x86_64-w64-mingw32-gcc``; .ci/wine_setup.sh installs it, or
``apt-get install -y gcc-mingw-w64-x86-64``). The build is cached under ``<repo>/.cache/standin/`` by the
SHA-256 of the source and the compiler command, so it runs once per change (about a second), and is safe
under pytest-xdist (flock plus an atomic rename). No binary is committed.

How a test chooses what the stand-in does: copy the exe into a folder of the test's own (see
:func:`install_standin`) and write ``standin.cfg`` next to it (``exit=1603``, ``sleep_ms=3000``,
``arch=x86``, ``version=14.40.33810.0``); environment variables ``TDD_STANDIN_*`` override the file. The C
source's header comment is the full description.

The exe carries a version resource (vc_redist_standin.rc, compiled by ``x86_64-w64-mingw32-windres``:
14.44.35211.0, CompanyName "Microsoft Corporation"). :func:`sign_standin` signs a copy with a certificate made
for the run (openssl + osslsigncode; Debian package ``osslsigncode``) whose subject CN is "Microsoft
Corporation": not trusted by Windows, but Wine's WinVerifyTrust does not check roots (docs/knowledge.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "vc_redist_standin.c"
RESOURCE = HERE / "vc_redist_standin.rc"
CACHE = HERE.parent.parent / ".cache" / "standin"
COMPILER = "x86_64-w64-mingw32-gcc"
RESOURCE_COMPILER = "x86_64-w64-mingw32-windres"
FLAGS = ("-O2", "-municode", "-static", "-s", "-Wall", "-Wextra", "-Werror", "-ladvapi32")
INSTALL_HINT = "apt-get install -y gcc-mingw-w64-x86-64 (bash .ci/wine_setup.sh does it)"


class StandinUnavailable(RuntimeError):
    """The stand-in cannot be built here (no mingw-w64): tests should skip, or fail where Wine is required."""


def build_standin(cache: Optional[Path] = None) -> Path:
    """The built ``vc_redist_standin.exe`` (PE32+ x64), building it when the source or flags changed."""
    compiler, windres = shutil.which(COMPILER), shutil.which(RESOURCE_COMPILER)
    if compiler is None or windres is None:
        raise StandinUnavailable(f"{COMPILER} or {RESOURCE_COMPILER} is not on PATH: {INSTALL_HINT}")
    cache = Path(cache or CACHE)
    digest = hashlib.sha256(SOURCE.read_bytes() + RESOURCE.read_bytes() +
                            "\0".join((COMPILER, RESOURCE_COMPILER, *FLAGS)).encode()).hexdigest()[:16]
    exe = cache / f"vc_redist_standin-{digest}.exe"
    if exe.is_file():
        return exe
    import fcntl  # Linux only, like the Windows lab

    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if exe.is_file():
            return exe
        tmp = cache / f".tmp-{os.getpid()}.exe"
        res = cache / f".tmp-{os.getpid()}.res.o"
        result = subprocess.run([windres, str(RESOURCE), "-O", "coff", "-o", str(res)], capture_output=True,
                                text=True, timeout=300)
        if result.returncode == 0:
            result = subprocess.run([compiler, str(SOURCE), str(res), "-o", str(tmp), *FLAGS], capture_output=True,
                                    text=True, timeout=300)
        res.unlink(missing_ok=True)
        if result.returncode != 0 or not tmp.is_file():
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"building the vc_redist stand-in failed:\n{result.stderr[-3000:]}")
        os.replace(tmp, exe)
        for stale in cache.glob("vc_redist_standin-*.exe"):
            if stale != exe:
                stale.unlink(missing_ok=True)  # built from an older source
    return exe


def install_standin(folder: Path, name: str = "vc_redist.x64.exe", **config: object) -> Path:
    """Copy the stand-in into `folder` as `name` and write its ``standin.cfg`` (e.g. exit=3010, sleep_ms=3000)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(build_standin(), target)
    lines = [f"{key}={value}" for key, value in config.items()]
    (folder / "standin.cfg").write_text("".join(line + "\n" for line in lines))
    return target


def sign_standin(source: Path, target: Path, signer: str = "Microsoft Corporation") -> Path:
    """`source` Authenticode-signed (SHA-256) into `target` by a certificate made here with subject CN `signer`.

    The certificate is self-made, so Windows would not trust it; Wine's WinVerifyTrust does not check roots and
    accepts it. Raises StandinUnavailable without openssl / osslsigncode."""
    missing = [tool for tool in ("openssl", "osslsigncode") if shutil.which(tool) is None]
    if missing:
        raise StandinUnavailable(f"{' and '.join(missing)} not on PATH: apt-get install -y openssl osslsigncode "
                                 "(bash .ci/wine_setup.sh does it)")
    import time

    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    key, cert = folder / "signer.key", folder / "signer.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "30", "-subj", f"/O=Torch DLL Doctor Tests/CN={signer}",
                    "-addext", "extendedKeyUsage=codeSigning"], check=True, capture_output=True, timeout=120)
    signing_time = str(int(time.time()) + 3600)  # well inside the new certificate's validity
    target.unlink(missing_ok=True)
    subprocess.run(["osslsigncode", "sign", "-certs", str(cert), "-key", str(key), "-h", "sha256",
                    "-time", signing_time, "-in", str(source), "-out", str(target)], check=True,
                   capture_output=True, timeout=120)
    return target
