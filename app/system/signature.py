"""Authenticode: is a downloaded file signed, untouched, and by whom (e.g. vc_redist.x64.exe by Microsoft).

Two ways to answer, one result (`SignatureCheck`):

* On Windows (`verify_with_windows`, used by LiveWindows): Windows' own decision. WinVerifyTrust with
  WINTRUST_ACTION_GENERIC_VERIFY_V2, no UI, state kept (WTD_STATEACTION_VERIFY, then CLOSE). Revocation is
  NOT checked (WTD_REVOKE_NONE): many of our users are offline or behind slow proxies, where fetching CRLs
  for the whole chain hangs or fails, and the files we check were just fetched over HTTPS from the vendor
  or through pip. The chain to a root the machine trusts, the digest and the signature are all checked. The
  signer's name is read from WinVerifyTrust's own state (WTHelperProvDataFromStateData ->
  WTHelperGetProvSignerFromChain -> WTHelperGetProvCertFromChain -> CertGetNameStringW) before closing it.

* Elsewhere (`verify_with_lief`: OfflineImage, the demo machine, Linux): LIEF checks the digest and the
  PKCS #7 signature against the certificates embedded in the file (and, for an expired signer certificate,
  the timestamp countersignature). LIEF does not prove trust to a root, so we also require that the signer's
  certificate chains, through the file's own certificates, to one of the roots pinned in
  resources/trusted_roots.json. Every link is checked by LIEF (mbed TLS: signature, CA constraints);
  validity dates are left to LIEF's verify_signature, which judges them at the signing time. Revocation is
  not checked. Without LIEF the answer is "error", never "trusted".
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

TRUSTED = "trusted"
NOT_SIGNED = "not-signed"
BAD_DIGEST = "bad-digest"  # the signed content was changed after signing
UNTRUSTED = "untrusted"  # signed, but not by a chain we trust (or the signature itself is broken)
ERROR = "error"  # could not check (file unreadable, no LIEF, ...)
STATUSES = (TRUSTED, NOT_SIGNED, BAD_DIGEST, UNTRUSTED, ERROR)

TRUST_E_NOSIGNATURE = 0x800B0100
TRUST_E_BAD_DIGEST = 0x80096010
MAX_CHAIN = 10


@dataclass(frozen=True)
class SignatureCheck:
    status: str  # one of STATUSES
    signer: Optional[str] = None  # the leaf signer's subject common name, e.g. "Microsoft Corporation"
    detail: str = ""  # technical, for logs and reports


def signed_by(check: SignatureCheck, expected_signer: str) -> bool:
    """True only when the signature is trusted AND its signer is exactly `expected_signer` (case ignored)."""
    return (check.status == TRUSTED and check.signer is not None
            and check.signer.strip().casefold() == expected_signer.strip().casefold())


# -- off Windows: LIEF plus pinned roots ------------------------------------------------------------------------
def trusted_roots_file() -> Path:
    from app.resources import resources_folder

    return resources_folder() / "trusted_roots.json"


@lru_cache(maxsize=4)
def pinned_roots(path: Optional[Path] = None) -> tuple[tuple[str, str, bytes], ...]:
    """(name, sha256, DER) of each pinned root; a DER whose SHA-256 is not the recorded one raises ValueError."""
    document = json.loads((path or trusted_roots_file()).read_text(encoding="utf-8"))
    roots = []
    for entry in document["roots"]:
        der = base64.b64decode(entry["der_base64"])
        if hashlib.sha256(der).hexdigest() != entry["sha256"].lower():
            raise ValueError(f"trusted_roots.json: the certificate of {entry['name']} is not {entry['sha256']}")
        roots.append((entry["name"], entry["sha256"].lower(), der))
    return tuple(roots)


def verify_here(path: Path) -> SignatureCheck:
    """The signature of a file on this computer, checked the best way this computer has: Windows' own decision
    on Windows (also for a file inside a copied drive), else LIEF and the pinned roots. The Windows build
    therefore ships without LIEF."""
    return verify_with_windows(path) if os.name == "nt" else verify_with_lief(path)


def verify_with_lief(path: Path, roots_file: Optional[Path] = None) -> SignatureCheck:
    try:
        import lief
    except ImportError as exc:
        return SignatureCheck(ERROR, None, f"LIEF is not installed, so the signature cannot be checked here: {exc}")
    try:
        lief.logging.disable()
        binary = lief.PE.parse(os.fspath(path))
    except Exception as exc:  # noqa: BLE001 - any parse failure is "could not check"
        return SignatureCheck(ERROR, None, f"{path}: not readable as a PE file: {exc}")
    if binary is None:
        return SignatureCheck(ERROR, None, f"{path}: not readable as a PE file")
    signatures = list(binary.signatures)
    flags = binary.verify_signature()
    names = lief.PE.Signature.VERIFICATION_FLAGS
    if not signatures or flags == names.NO_SIGNATURE:
        return SignatureCheck(NOT_SIGNED, None, f"LIEF: {flags}")
    signature = signatures[0]
    signer_cert = signature.signers[0].cert if list(signature.signers) else None
    signer = _common_name(signer_cert.subject) if signer_cert is not None else None
    if flags & names.BAD_DIGEST:
        return SignatureCheck(BAD_DIGEST, signer, f"LIEF: {flags} (the file changed after it was signed)")
    if flags != names.OK:
        return SignatureCheck(UNTRUSTED, signer, f"LIEF: {flags}")
    if signer_cert is None:
        return SignatureCheck(UNTRUSTED, None, "LIEF: the signer's certificate is not in the signature")
    try:
        # parse the roots only now: LIEF 1.0's x509.parse fails ("UNKNOWN ERROR CODE (3B00)") until its crypto
        # is set up by parsing a PE signature
        roots = [(name, fingerprint, lief.PE.x509.parse(list(der))) for name, fingerprint, der in
                 pinned_roots(roots_file)]
    except (OSError, ValueError, KeyError) as exc:
        return SignatureCheck(ERROR, signer, f"the pinned roots cannot be read: {exc}")
    if any(len(parsed) != 1 for _, _, parsed in roots):
        return SignatureCheck(ERROR, signer, "LIEF could not parse the pinned roots")
    root = _pinned_root_of(lief, signer_cert, list(signature.certificates), roots)
    if root is None:
        return SignatureCheck(UNTRUSTED, signer, "digest and signature are valid, but the signing chain does not "
                                                 "end in a pinned root (resources/trusted_roots.json)")
    return SignatureCheck(TRUSTED, signer, f"LIEF: OK; chain ends in the pinned root {root}")


def _pinned_root_of(lief, leaf, embedded: list, roots: list) -> Optional[str]:
    """The name of the pinned root that `leaf` chains to through the embedded certificates; None if none does.
    Each link is judged by LIEF (x509.verify / is_trusted_by); only the validity dates are ignored here."""
    flags = lief.PE.x509.VERIFICATION_FLAGS
    dates = flags.BADCERT_EXPIRED | flags.BADCERT_FUTURE

    def issues(ca, child) -> bool:
        return (ca.verify(child) & ~dates) == flags.OK

    current, seen = leaf, set()
    for _ in range(MAX_CHAIN):
        for name, _fingerprint, (root,) in roots:
            if issues(root, current):
                return name
        seen.add(bytes(current.raw))
        parents = [ca for ca in embedded if bytes(ca.raw) not in seen and issues(ca, current)]
        if not parents:
            return None
        current = parents[0]
    return None


def _common_name(subject: str) -> Optional[str]:
    """'C=US, O=Microsoft Corporation, CN=Microsoft Corporation' -> 'Microsoft Corporation' (the last CN)."""
    found = None
    for part in _split_dn(subject):
        key, _, value = part.partition("=")
        if key.strip().upper() == "CN":
            found = value.strip()
    return found


def _split_dn(subject: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in subject:
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


# -- on Windows: WinVerifyTrust ----------------------------------------------------------------------------------
def status_of_hresult(code: int) -> str:
    code &= 0xFFFFFFFF
    if code == 0:
        return TRUSTED
    if code == TRUST_E_NOSIGNATURE:
        return NOT_SIGNED
    if code == TRUST_E_BAD_DIGEST:
        return BAD_DIGEST
    return UNTRUSTED


def verify_with_windows(path: Path) -> SignatureCheck:
    """Windows' own Authenticode decision (see the module doc); Windows only."""
    import ctypes
    from ctypes import wintypes

    class GUID(ctypes.Structure):
        _fields_ = [("Data1", wintypes.DWORD), ("Data2", wintypes.WORD), ("Data3", wintypes.WORD),
                    ("Data4", ctypes.c_ubyte * 8)]

    class WINTRUST_FILE_INFO(ctypes.Structure):
        _fields_ = [("cbStruct", wintypes.DWORD), ("pcwszFilePath", wintypes.LPCWSTR), ("hFile", wintypes.HANDLE),
                    ("pgKnownSubject", ctypes.POINTER(GUID))]

    class WINTRUST_DATA(ctypes.Structure):
        _fields_ = [("cbStruct", wintypes.DWORD), ("pPolicyCallbackData", ctypes.c_void_p),
                    ("pSIPClientData", ctypes.c_void_p), ("dwUIChoice", wintypes.DWORD),
                    ("fdwRevocationChecks", wintypes.DWORD), ("dwUnionChoice", wintypes.DWORD),
                    ("pFile", ctypes.POINTER(WINTRUST_FILE_INFO)), ("dwStateAction", wintypes.DWORD),
                    ("hWVTStateData", wintypes.HANDLE), ("pwszURLReference", wintypes.LPWSTR),
                    ("dwProvFlags", wintypes.DWORD), ("dwUIContext", wintypes.DWORD),
                    ("pSignatureSettings", ctypes.c_void_p)]

    class CRYPT_PROVIDER_CERT(ctypes.Structure):  # only the head: cbStruct, then the CERT_CONTEXT*
        _fields_ = [("cbStruct", wintypes.DWORD), ("pCert", ctypes.c_void_p)]

    generic_verify_v2 = GUID(0x00AAC56B, 0xCD44, 0x11D0, (ctypes.c_ubyte * 8)(0x8C, 0xC2, 0x00, 0xC0, 0x4F, 0xC2,
                                                                                 0x95, 0xEE))
    wtd_ui_none, wtd_revoke_none, wtd_choice_file = 2, 0, 1
    wtd_stateaction_verify, wtd_stateaction_close = 1, 2
    wtd_revocation_check_none = 0x10
    cert_name_simple_display_type = 4

    try:
        wintrust = ctypes.WinDLL("wintrust", use_last_error=True)
        crypt32 = ctypes.WinDLL("crypt32", use_last_error=True)
    except OSError as exc:
        return SignatureCheck(ERROR, None, f"wintrust.dll / crypt32.dll cannot be loaded: {exc}")
    verify = wintrust.WinVerifyTrust
    verify.argtypes = [wintypes.HWND, ctypes.POINTER(GUID), ctypes.c_void_p]
    verify.restype = wintypes.LONG
    prov_data = wintrust.WTHelperProvDataFromStateData
    prov_data.argtypes = [wintypes.HANDLE]
    prov_data.restype = ctypes.c_void_p
    prov_signer = wintrust.WTHelperGetProvSignerFromChain
    prov_signer.argtypes = [ctypes.c_void_p, wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    prov_signer.restype = ctypes.c_void_p
    prov_cert = wintrust.WTHelperGetProvCertFromChain
    prov_cert.argtypes = [ctypes.c_void_p, wintypes.DWORD]
    prov_cert.restype = ctypes.POINTER(CRYPT_PROVIDER_CERT)
    name_string = crypt32.CertGetNameStringW
    name_string.argtypes = [ctypes.c_void_p, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p, wintypes.LPWSTR,
                            wintypes.DWORD]
    name_string.restype = wintypes.DWORD

    if not Path(path).is_file():
        return SignatureCheck(ERROR, None, f"{path}: no such file")
    file_info = WINTRUST_FILE_INFO(ctypes.sizeof(WINTRUST_FILE_INFO), os.fspath(path), None, None)
    data = WINTRUST_DATA()
    data.cbStruct = ctypes.sizeof(WINTRUST_DATA)
    data.dwUIChoice = wtd_ui_none
    data.fdwRevocationChecks = wtd_revoke_none
    data.dwUnionChoice = wtd_choice_file
    data.pFile = ctypes.pointer(file_info)
    data.dwStateAction = wtd_stateaction_verify
    data.dwProvFlags = wtd_revocation_check_none
    code = verify(None, ctypes.byref(generic_verify_v2), ctypes.byref(data)) & 0xFFFFFFFF
    signer = None
    try:
        if data.hWVTStateData:
            provider = prov_data(data.hWVTStateData)
            signer_info = prov_signer(provider, 0, False, 0) if provider else None
            cert = prov_cert(signer_info, 0) if signer_info else None
            if cert and cert.contents.pCert:
                buffer = ctypes.create_unicode_buffer(512)
                if name_string(cert.contents.pCert, cert_name_simple_display_type, 0, None, buffer, len(buffer)) > 1:
                    signer = buffer.value
    finally:
        data.dwStateAction = wtd_stateaction_close
        verify(None, ctypes.byref(generic_verify_v2), ctypes.byref(data))
    status = status_of_hresult(code)
    return SignatureCheck(status, signer if status != NOT_SIGNED else None,
                          f"WinVerifyTrust: 0x{code:08X}" + ("" if code else " (trusted; revocation not checked)"))
