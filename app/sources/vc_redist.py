"""Microsoft's Visual C++ Redistributable, where it comes from: downloaded from Microsoft's permanent link
(resources/catalog.json) and checked (`installer_refusal`: signed by Microsoft Corporation, new enough), the check
made twice: at the download, and again on the held file just before Windows starts it elevated
(app/repair/vc_runtime.py run_installer)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.cancel import CancelToken
from app.engine.pe import PEError, read_pe
from app.engine.versions import version_tuple
from app.resources import download_catalog
from app.system.base import System
from app.system.files import sha256_of
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


def fetch_installer(system: System, arch: str, folder: Path, progress,
                    token: Optional[CancelToken]) -> tuple[Path, str]:
    """vc_redist.<arch>.exe from Microsoft's permanent link, refused unless signed by Microsoft and new enough;
    (its path, the SHA-256 of the file that passed the checks: only a file with it is started, run_installer)."""
    from app.sources.download import DownloadError, download  # requests: only when something is downloaded

    catalog = download_catalog()["vc_redist"]
    verified: list[str] = []

    def verify(path: Path) -> None:
        refusal = installer_refusal(system, path)
        if refusal is not None:
            raise DownloadError("verification-failed", host="aka.ms", detail=f"the installer {refusal}")
        verified.append(sha256_of(path))

    target = folder / f"vc_redist.{arch}.exe"
    download(catalog[arch]["url"], target, max_bytes=catalog["max_bytes"], progress=progress, token=token,
             verify_file=verify)
    return target, verified[-1]
