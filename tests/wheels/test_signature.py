"""Authenticode off Windows (app/system/signature.py: LIEF plus pinned roots), on real signed files from PyPI."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pefile
import pytest

from app.system import signature
from app.system.offline import OfflineImage
from app.system.signature import SignatureCheck, signed_by, status_of_hresult, verify_with_lief
from tests import realfiles
from tests.conftest import real

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


# -- the result type ------------------------------------------------------------------------------------------
def test_signed_by_needs_trust_and_the_exact_signer():
    trusted = SignatureCheck("trusted", "Microsoft Corporation", "")
    assert signed_by(trusted, "Microsoft Corporation")
    assert signed_by(trusted, " microsoft corporation ")
    assert not signed_by(trusted, "Microsoft")
    assert not signed_by(trusted, "Intel Corporation")
    for status in ("untrusted", "bad-digest", "not-signed", "error"):
        assert not signed_by(SignatureCheck(status, "Microsoft Corporation", ""), "Microsoft Corporation")
    assert not signed_by(SignatureCheck("trusted", None, ""), "Microsoft Corporation")


@pytest.mark.parametrize(("code", "status"), [
    (0, "trusted"), (0x800B0100, "not-signed"), (-0x7FF4FF00, "not-signed"), (0x80096010, "bad-digest"),
    (0x800B0109, "untrusted"),  # CERT_E_UNTRUSTEDROOT
    (0x800B0101, "untrusted"),  # CERT_E_EXPIRED
    (0x80092026, "untrusted"),  # CRYPT_E_SECURITY_SETTINGS
])
def test_winverifytrust_codes_map_to_stable_statuses(code, status):
    assert status_of_hresult(code) == status


def test_the_pinned_roots_are_intact_and_named():
    roots = signature.pinned_roots()
    assert {name for name, _, _ in roots} == {
        "Microsoft Root Certificate Authority 2011", "Microsoft Identity Verification Root Certificate Authority 2020",
        "Sectigo Public Code Signing Root R46"}
    for _, fingerprint, der in roots:
        assert hashlib.sha256(der).hexdigest() == fingerprint
    document = json.loads(signature.trusted_roots_file().read_text(encoding="utf-8"))
    assert all(entry["source"] for entry in document["roots"])


def test_without_lief_the_answer_is_error_never_trusted(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "lief", None)  # `import lief` now raises ImportError
    check = verify_with_lief(tmp_path / "anything.exe")
    assert check.status == "error"
    assert "LIEF" in check.detail


def test_a_file_that_is_not_a_program_is_an_error(tmp_path):
    (tmp_path / "notes.exe").write_bytes(b"not a PE file at all")
    assert verify_with_lief(tmp_path / "notes.exe").status == "error"
    assert verify_with_lief(tmp_path / "missing.exe").status == "error"


# -- real files ---------------------------------------------------------------------------------------------------
pytestmark_wheels = pytest.mark.wheels


@pytestmark_wheels
@pytest.mark.parametrize("key", sorted(SIGNERS))
def test_genuine_files_are_trusted_with_their_signer(key):
    path = genuine_files()[key]
    check = verify_with_lief(path)
    assert check.status == "trusted", check
    assert check.signer == SIGNERS[key]
    assert signed_by(check, SIGNERS[key])


@pytestmark_wheels
@pytest.mark.parametrize("key", sorted(SIGNERS))
def test_one_changed_byte_is_a_bad_digest(key, tmp_path):
    copy = tampered_copy(genuine_files()[key], tmp_path / key)
    check = verify_with_lief(copy)
    assert check.status == "bad-digest", check
    assert not signed_by(check, SIGNERS[key])


@pytestmark_wheels
def test_torch_fbgemm_is_not_signed():
    check = verify_with_lief(genuine_files()["fbgemm.dll"])
    assert check == SignatureCheck("not-signed", None, check.detail)


@pytestmark_wheels
def test_a_valid_signature_from_an_unpinned_root_is_untrusted(tmp_path):
    """Digest and signature are fine, the name even says Microsoft: only the pinned roots make it trusted."""
    signed = self_signed_copy(real(realfiles.torch_lib) / "shm.dll", tmp_path)
    check = verify_with_lief(signed)
    assert check.status == "untrusted", check
    assert check.signer == "Microsoft Corporation"
    # usually "...does not end in a pinned root"; now and then LIEF 1.0 already rejects osslsigncode's signature
    # (BAD_SIGNATURE|CERT_FUTURE, seen about 1 run in 3): untrusted either way. The pinned-root check itself is
    # proven on a genuine file below.
    assert not signed_by(check, "Microsoft Corporation")


@pytestmark_wheels
def test_a_chain_whose_root_is_not_pinned_is_untrusted(tmp_path):
    """Intel's genuine file, checked against a table that lacks Sectigo's root."""
    document = json.loads(signature.trusted_roots_file().read_text(encoding="utf-8"))
    document["roots"] = [r for r in document["roots"] if "Sectigo" not in r["name"]]
    (tmp_path / "roots.json").write_text(json.dumps(document), encoding="utf-8")
    path = genuine_files()["libiomp5md.dll"]
    assert verify_with_lief(path, tmp_path / "roots.json").status == "untrusted"
    assert verify_with_lief(path).status == "trusted"


@pytestmark_wheels
def test_offline_image_checks_its_files_with_lief(tmp_path):
    files = genuine_files()
    (tmp_path / "Windows" / "System32").mkdir(parents=True)
    target = tmp_path / "Windows" / "System32" / "msvcp140.dll"
    shutil.copyfile(files["msvcp140.dll"], target)
    image = OfflineImage(tmp_path)
    check = image.verify_signature(image.host_path(r"C:\Windows\System32\msvcp140.dll"))
    assert check.status == "trusted"
    assert check.signer == SIGNERS["msvcp140.dll"]
