"""The one check of a VC++ installer, made twice: when it is downloaded, and again on the held file just before
Windows starts it elevated (app/repair/vc_runtime.py run_installer)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.engine.pe import PEError, read_pe
from app.engine.versions import version_tuple
from app.resources import download_catalog
from app.system.base import System
from app.system.signature import signed_by


def installer_refusal(system: System, path: Path) -> Optional[str]:
    """Why the file is not an installer to run (not signed by Microsoft, unreadable, older than the catalogue's
    minimum), in words for the details that follow "the installer"; None when it passes."""
    catalog = download_catalog()["vc_redist"]
    check = system.verify_signature(path)
    if not signed_by(check, catalog["signer"]):
        return f"is not signed by {catalog['signer']} ({check.status}, {check.signer}; {check.detail})"
    try:
        pe = read_pe(path)
        version = pe.product_version or pe.file_version
    except (PEError, OSError) as exc:
        return f"has a version that cannot be read: {exc}"
    if version is None or version_tuple(version) < version_tuple(catalog["min_version"]):
        return f"is version {version}, older than {catalog['min_version']}"
    return None
