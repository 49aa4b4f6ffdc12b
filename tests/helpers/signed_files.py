"""Real signed Windows files from PyPI, each with the signer Windows names, and copies of them made untrustworthy:
one byte changed, or signed again by a certificate made on the spot."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pefile
import pytest

from tests import realfiles
from tests.helpers.images import real

INTEL_MEMBER = "intel_openmp-2024.2.1.data/data/Library/bin/libiomp5md.dll"
INTEL_SHA256 = "7f37e24b28383b21a06a198927c3adda2f0e3a780d553922b3819220e84f7615"  # docs/knowledge.md

# file key -> the leaf signer's common name, as both LIEF and Windows report it
SIGNERS = {
    "python.exe": "Python Software Foundation",
    "libiomp5md.dll": "Intel Corporation",
    # msvc-runtime's copy is signed through the Windows Third Party Component CA, not as "Microsoft Corporation"
    "msvcp140.dll": "Microsoft Windows Software Compatibility Publisher",
}


def _intel_wheel() -> Path:
    """intel-openmp 2024.2.1's wheel is tagged py2.py3-none-win_amd64, which realfiles._find does not accept
    (it wants cp312/abi3 or `any`): after pip has fetched it, take it from the download folder directly."""
    try:
        return realfiles.download(realfiles.INTEL_OPENMP)
    except realfiles.RealFileUnavailable:
        found = sorted(realfiles.DOWNLOADS.glob("intel_openmp-2024.2.1-*-win_amd64.whl"))
        if not found:
            raise
        return found[0]


def intel_libiomp5md() -> Path:
    """Intel's signed libiomp5md.dll from the intel-openmp==2024.2.1 wheel (SHA-256 checked)."""
    target = realfiles.EXTRACTED / "intel-openmp-2024.2.1" / "libiomp5md.dll"
    if not target.is_file():
        with zipfile.ZipFile(_intel_wheel()) as wheel:
            data = wheel.read(INTEL_MEMBER)
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_suffix(".tmp")
        scratch.write_bytes(data)
        scratch.replace(target)
    if hashlib.sha256(target.read_bytes()).hexdigest() != INTEL_SHA256:
        raise RuntimeError(f"{target} is not the expected libiomp5md.dll 5.0.2024.320")
    return target


def genuine_files() -> dict[str, Path]:
    """The real signed files, by key of SIGNERS, plus torch 2.4.0's unsigned fbgemm.dll."""
    python = real(realfiles.windows_python) / "python.exe"
    msvcp = next(p for p in real(realfiles.msvc_runtime_dlls) if p.name == "msvcp140.dll")
    return {"python.exe": python, "libiomp5md.dll": real(intel_libiomp5md), "msvcp140.dll": msvcp,
            "fbgemm.dll": real(realfiles.torch_lib) / "fbgemm.dll"}


def tampered_copy(source: Path, target: Path) -> Path:
    """A copy with one byte changed inside the signed content (the middle of the first section's raw data)."""
    data = bytearray(source.read_bytes())
    pe = pefile.PE(data=bytes(data), fast_load=True)
    section = pe.sections[0]
    offset = section.PointerToRawData + section.SizeOfRawData // 2
    pe.close()
    data[offset] ^= 0xFF
    target.write_bytes(bytes(data))
    return target


def self_signed_copy(source: Path, folder: Path) -> Path:
    """`source` signed by a certificate made here (openssl + osslsigncode), or a skip when they are missing."""
    if shutil.which("osslsigncode") is None or shutil.which("openssl") is None:
        pytest.skip("osslsigncode / openssl are not installed (Debian: apt-get install osslsigncode)")
    key, cert, signed = folder / "key.pem", folder / "cert.pem", folder / ("selfsigned-" + source.name)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "30", "-subj", "/O=Torch DLL Doctor Tests/CN=Microsoft Corporation",
                    "-addext", "extendedKeyUsage=codeSigning"], check=True, capture_output=True)
    signing_time = str(int(time.time()) + 3600)  # well inside the new certificate's validity
    subprocess.run(["osslsigncode", "sign", "-certs", str(cert), "-key", str(key), "-h", "sha256",
                    "-time", signing_time, "-in", str(source), "-out", str(signed)], check=True, capture_output=True)
    return signed
