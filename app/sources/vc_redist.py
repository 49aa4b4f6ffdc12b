"""Microsoft's Visual C++ Redistributable, where it comes from: downloaded from Microsoft's permanent link
(resources/catalog.json), or a copy of the file the user downloaded from Microsoft themselves (`--source`, for a
computer without internet); checked (`installer_refusal`: signed by Microsoft Corporation, new enough, and the
Redistributable itself by its version resource and its Burn bundle), the check
made twice: at the download or copy, and again on the held file just before Windows starts it elevated
(app/repair/vc_runtime.py run_installer)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from app.cancel import CancelToken
from app.engine.pe import PEError, PEInfo, read_pe
from app.engine.versions import version_tuple
from app.resources import download_catalog
from app.system.base import System
from app.system.files import copy_file, delete_file, sha256_of
from app.system.folders import children
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
    return redistributable_refusal(pe)


REDISTRIBUTABLE = re.compile(r"^Microsoft Visual C\+\+ (?:20\d\d-20\d\d|v\d+) Redistributable \((x64|x86|arm64)\)",
                             re.IGNORECASE)
REDISTRIBUTABLE_FILE = re.compile(r"^VC_redist\.(x64|x86|arm64)\.exe$", re.IGNORECASE)


def redistributable_refusal(pe: PEInfo) -> Optional[str]:
    """Why a program Microsoft signed is not the Visual C++ Redistributable itself (MSBuild, OneDriveSetup and Teams
    are signed by Microsoft too): its version resource must say so (ProductName and FileDescription "Microsoft
    Visual C++ 2015-2022 Redistributable (x64) - ...", or the "v14" names of the newer ones; OriginalFilename
    VC_redist.x64.exe), and it must be the WiX Burn bundle the Redistributable is (a `.wixburn` section). None when
    it is."""
    product, description, original = pe.product_name or "", pe.description or "", pe.original_filename or ""
    if not (REDISTRIBUTABLE.match(product) and REDISTRIBUTABLE.match(description)
            and REDISTRIBUTABLE_FILE.match(original)):
        return (f"is not Microsoft's Visual C++ Redistributable: its version resource says \"{product or '-'}\" "
                f"(\"{description or '-'}\", originally {original or '-'})")
    if ".wixburn" not in pe.section_names:
        return "is not the Visual C++ Redistributable's installer bundle (it has no .wixburn section)"
    return None


ARCH_IN_DESCRIPTION = re.compile(r"\((x64|x86|arm64)\)", re.IGNORECASE)  # "… Redistributable (x64) - 14.44…"
ARCH_IN_NAME = re.compile(r"vc_redist\.(x64|x86|arm64)(?: \(\d+\))?\.exe", re.IGNORECASE)  # "(1)": a browser's copy


def installer_arch(path: Path) -> Optional[str]:
    """Which runtime a vc_redist file installs: x64, x86 or arm64, as its version resource's FileDescription says
    ("Microsoft Visual C++ 2015-2022 Redistributable (x64) - 14.44.35211"), else its file name; None when neither
    says (every vc_redist is a 32-bit program, so its header cannot tell)."""
    try:
        description = read_pe(path, with_exports=False).description or ""
    except (PEError, OSError):
        description = ""
    found = ARCH_IN_DESCRIPTION.search(description) or ARCH_IN_NAME.fullmatch(path.name)
    return found.group(1).lower() if found else None


def local_installers(folder_or_file: Path) -> dict[str, Path]:
    """The vc_redist files a user gave (`--source`): the file itself, or each vc_redist*.exe in the folder, by the
    runtime it installs (of several, the shortest name: `vc_redist.x64.exe` before a browser's `… (1).exe`)."""
    if folder_or_file.is_dir():
        candidates = sorted((p for p in children(folder_or_file)
                             if p.name.lower().startswith("vc_redist") and p.suffix.lower() == ".exe" and p.is_file()),
                            key=lambda p: (len(p.name), p.name))
    else:
        candidates = [folder_or_file]
    found: dict[str, Path] = {}
    for candidate in candidates:
        arch = installer_arch(candidate)
        if arch is not None:
            found.setdefault(arch, candidate)
    return found


def downloaded_installers(system: System) -> dict[str, Path]:
    """vc_redist files already in the user's Downloads folder (a computer without internet: the user fetched them
    on another one), by the runtime each installs; checked by the caller like any other."""
    found: dict[str, Path] = {}
    for profile in system.user_profiles():
        folder = system.host_path(f"{profile.home}\\Downloads") if profile.home else None
        if folder is not None and folder.is_dir():
            for arch, path in local_installers(folder).items():
                found.setdefault(arch, path)
    return found


def copy_installer(system: System, arch: str, source: Path, folder: Path) -> tuple[Path, Optional[str], str]:
    """A copy of the user's vc_redist file in the transaction's own folder (the user's file may change after this;
    the copy is what is checked and run): (its path, why it is refused or None, its SHA-256). A refused copy is
    not kept, as a refused download is not."""
    target = folder / f"vc_redist.{arch}.exe"
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = copy_file(source, target)
    refusal = installer_refusal(system, target)
    if refusal is not None:
        delete_file(target)
    return target, refusal, digest


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
