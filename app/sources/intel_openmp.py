"""Intel's OpenMP runtime from the package index: the `libiomp5md.dll` member of the pinned `intel-openmp` wheel
(resources/catalog.json), found through the user's own pip settings (HTTPS indexes only: an `http://` one is
skipped, and said so), fetched with ranged reads where the server allows (else the whole wheel, checked against the
index's hash and the pinned one), then checked: the member's pinned SHA-256, Intel's signature, and (by the caller)
the same candidate check as every other source."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional
from urllib.parse import urlparse

from app.cancel import CancelToken
from app.resources import download_catalog
from app.sources.download import (
    DownloadError,
    DownloadProgress,
    RangeNotSupported,
    download,
    fetch_page,
    new_session,
)
from app.sources.pip_settings import PipSettings
from app.sources.wheel_member import (
    JSON_ACCEPT,
    IndexFile,
    LocalWheel,
    RemoteWheel,
    parse_index_page,
    project_url,
)
from app.system.base import System
from app.system.files import write_bytes
from app.system.signature import signed_by

if TYPE_CHECKING:
    import requests

# the intel-openmp wheel has 49 entries and a 6 KB central directory: far tighter bounds than a torch wheel needs
MAX_DIRECTORY_BYTES = 1 << 20
MAX_ENTRIES = 1000


def find_wheel(settings: PipSettings, session: requests.Session,
               token: Optional[CancelToken] = None) -> tuple[str, IndexFile]:
    """(index, the pinned wheel) from the first of the user's HTTPS indexes that lists it (JSON API, HTML as
    fallback). Raises `index-not-https` when every index the user set is plain http (or another scheme)."""
    entry = download_catalog()["intel_openmp"]
    if not settings.indexes:
        skipped = ", ".join(settings.skipped_indexes)
        raise DownloadError("index-not-https", url=skipped, host=skipped)
    last: Optional[Exception] = None
    for index in settings.indexes:
        try:
            url, kind, body = fetch_page(project_url(index, entry["package"]), accept=JSON_ACCEPT, token=token,
                                         session=session)
            found = [f for f in parse_index_page(url, kind, body) if f.filename == entry["wheel"]]
        except DownloadError as exc:
            last = exc
            continue
        if found:
            wheel = found[0]
            if wheel.sha256 and wheel.sha256.lower() != entry["wheel_sha256"]:
                raise DownloadError("hash-mismatch", host=index)  # the index names another file under that name
            return index, wheel
    if isinstance(last, DownloadError):
        raise last
    raise DownloadError("not-found", host=settings.indexes[0], status=404)


def fetch_runtime(system: System, settings: PipSettings, folder: Path, *, token: Optional[CancelToken] = None,
                  progress: Optional[Callable[[DownloadProgress], None]] = None) -> tuple[Path, dict]:
    """`libiomp5md.dll` from the pinned wheel, into `folder`, verified. Returns (path, facts for the journal)."""
    entry = download_catalog()["intel_openmp"]
    cert = system.host_path(settings.cert) if settings.cert else None
    session = new_session(cert if cert is not None and cert.is_file() else None)  # the certificate pip trusts
    try:
        index, wheel = find_wheel(settings, session, token)
        target = folder / "libiomp5md.dll"
        facts = {"index": index, "skipped_indexes": settings.skipped_indexes, "wheel": wheel.url, "ranged": True,
                 "transferred": 0}
        try:
            data = _ranged_member(wheel, session, token, facts)
        except RangeNotSupported:
            data = _whole_wheel_member(wheel, folder, session, token, progress, facts)
    finally:
        session.close()
    if hashlib.sha256(data).hexdigest() != entry["member_sha256"]:
        raise DownloadError("hash-mismatch", host=urlparse(wheel.url).hostname)
    write_bytes(target, data)
    facts["sha256"] = entry["member_sha256"]
    check = system.verify_signature(target)
    facts["signature"] = {"status": check.status, "signer": check.signer}
    if not signed_by(check, entry["signer"]):
        target.unlink()
        raise DownloadError("verification-failed", host=urlparse(wheel.url).hostname,
                            detail=f"{check.status} {check.signer or ''}")
    return target, facts


def _ranged_member(wheel: IndexFile, session: requests.Session, token: Optional[CancelToken], facts: dict) -> bytes:
    entry = download_catalog()["intel_openmp"]
    # the budget: the member's compressed bytes plus the wheel's end, with room for a directory at its cap
    budget = entry["member_download_bytes"] + MAX_DIRECTORY_BYTES + (64 << 10)
    with RemoteWheel(wheel.url, budget=budget, token=token, session=session,
                     max_directory_bytes=MAX_DIRECTORY_BYTES, max_entries=MAX_ENTRIES) as remote:
        try:
            return remote.read(entry["member"], entry["max_bytes"])
        finally:
            facts.update(transferred=remote.fetched, wheel_bytes=remote.size)


def _whole_wheel_member(wheel: IndexFile, folder: Path, session: requests.Session, token: Optional[CancelToken],
                        progress, facts: dict) -> bytes:
    entry = download_catalog()["intel_openmp"]
    path = folder / entry["wheel"]
    download(wheel.url, path, max_bytes=entry["max_bytes"], sha256=entry["wheel_sha256"], token=token,
             progress=progress, session=session)
    facts.update(ranged=False, transferred=path.stat().st_size)
    with LocalWheel(path, max_directory_bytes=MAX_DIRECTORY_BYTES, max_entries=MAX_ENTRIES) as local:
        return local.read(entry["member"], entry["max_bytes"])
