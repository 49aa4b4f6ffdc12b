"""Intel's OpenMP runtime from the package index: the `libiomp5md.dll` member of the pinned `intel-openmp` wheel
(resources/catalog.json), found through the user's own pip settings, fetched with ranged reads where the server
allows (else the whole wheel, checked against the index's hash and the pinned one), then checked: the member's
pinned SHA-256, Intel's signature, and (by the caller) the same candidate check as every other source."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urlparse

import requests

from app.cancel import CancelToken
from app.repair.download import (
    DownloadError,
    DownloadProgress,
    RangeNotSupported,
    download,
    fetch_page,
    fetch_range,
    remote_size,
)
from app.repair.pip_settings import PipSettings
from app.repair.wheel_member import (
    JSON_ACCEPT,
    IndexFile,
    WheelError,
    locate_member,
    parse_index_page,
    project_url,
    read_member,
)
from app.resources import download_catalog
from app.system.base import System
from app.system.files import write_bytes
from app.system.signature import signed_by


def find_wheel(settings: PipSettings, session: requests.Session, token: Optional[CancelToken] = None) -> IndexFile:
    """The pinned wheel on the first of the user's indexes that lists it (JSON API, HTML as fallback)."""
    entry = download_catalog()["intel_openmp"]
    last: Optional[Exception] = None
    for index in settings.indexes:
        try:
            url, kind, body = fetch_page(project_url(index, entry["package"]), accept=JSON_ACCEPT, token=token,
                                         session=session)
            found = [f for f in parse_index_page(url, kind, body) if f.filename == entry["wheel"]]
        except (DownloadError, WheelError) as exc:
            last = exc
            continue
        if found:
            wheel = found[0]
            if wheel.sha256 and wheel.sha256.lower() != entry["wheel_sha256"]:
                raise DownloadError("hash-mismatch", host=index)  # the index names another file under that name
            return wheel
    if isinstance(last, DownloadError):
        raise last
    raise DownloadError("not-found", host=settings.index_url, status=404)


def fetch_runtime(system: System, settings: PipSettings, folder: Path, *, token: Optional[CancelToken] = None,
                  progress: Optional[Callable[[DownloadProgress], None]] = None) -> tuple[Path, dict]:
    """`libiomp5md.dll` from the pinned wheel, into `folder`, verified. Returns (path, facts for the journal)."""
    entry = download_catalog()["intel_openmp"]
    session = requests.Session()
    if settings.cert:
        cert = system.host_path(settings.cert)
        if cert is not None and cert.is_file():
            session.verify = str(cert)  # the company certificate the user's pip trusts
    try:
        wheel = find_wheel(settings, session, token)
        target = folder / "libiomp5md.dll"
        facts = {"index": settings.index_url, "wheel": wheel.url, "ranged": True, "transferred": 0}
        try:
            data = _ranged_member(wheel, session, token, facts)
        except RangeNotSupported:
            data = _whole_wheel_member(wheel, folder, session, token, progress, facts)
    finally:
        session.close()
    if hashlib.sha256(data).hexdigest() != entry["member_sha256"]:
        raise DownloadError("hash-mismatch", host=urlparse(wheel.url).hostname)
    write_bytes(target, data)
    check = system.verify_signature(target)
    facts["signature"] = {"status": check.status, "signer": check.signer}
    if not signed_by(check, entry["signer"]):
        target.unlink()
        raise DownloadError("verification-failed", host=urlparse(wheel.url).hostname,
                            detail=f"{check.status} {check.signer or ''}")
    return target, facts


def _ranged_member(wheel: IndexFile, session: requests.Session, token: Optional[CancelToken], facts: dict) -> bytes:
    entry = download_catalog()["intel_openmp"]
    total = wheel.size or remote_size(wheel.url, token=token, session=session)
    if not total:
        raise RangeNotSupported(host=wheel.url)

    def read(start: int, length: int) -> bytes:
        data = fetch_range(wheel.url, start, length, token=token, session=session)
        facts["transferred"] += len(data)
        return data

    location = locate_member(read, total, entry["member"])
    facts["wheel_bytes"] = total
    return read_member(read, location, entry["max_bytes"])


def _whole_wheel_member(wheel: IndexFile, folder: Path, session: requests.Session, token: Optional[CancelToken],
                        progress, facts: dict) -> bytes:
    entry = download_catalog()["intel_openmp"]
    path = folder / entry["wheel"]
    download(wheel.url, path, max_bytes=entry["max_bytes"], sha256=entry["wheel_sha256"], token=token,
             progress=progress, session=session)
    facts.update(ranged=False, transferred=path.stat().st_size)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(entry["member"])
        if info.file_size > entry["max_bytes"]:
            raise WheelError(f"{entry['member']} is larger than allowed")
        return archive.read(info)
