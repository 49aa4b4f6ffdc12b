"""Where the originals of an installed wheel come from (restore-torch-files): the wheel with that exact name
(version with its local part such as `+cu124`, the Python tag, the platform, read from the dist-info's `WHEEL`),
found in a file or folder the user names, else on this computer (each user's Downloads, pip's caches: `wheels`,
and `http-v2`, where pip 23.3 and later keep downloaded wheels as `.body` files, recognised by the dist-info in
their directory), else on the package index (PyTorch's own index for a local version first, then the user's own
indexes). Each local source is judged before it is used (`judge_wheel`: its tags, its own RECORD's hashes); one
that fails gives way to the next, and `SourcesFailed` names every source tried."""

from __future__ import annotations

import base64
import csv
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional
from urllib.parse import unquote, urlparse

from app.cancel import CancelToken
from app.inventory.integrity import RecordEntry
from app.inventory.packages import canonical
from app.sources.download import DownloadError, fetch_page
from app.sources.wheel_member import JSON_ACCEPT, IndexFile, LocalWheel, parse_index_page, project_url
from app.system.base import System
from app.system.folders import child, children

if TYPE_CHECKING:
    import requests

PYTORCH_INDEX = "https://download.pytorch.org/whl/{variant}"


PYTORCH_VARIANT = re.compile(r"^(cpu|cu\d+|rocm\d+(\.\d+)*|xpu)$")


PAGE_BYTES = 32 << 20  # PyPI's JSON page for torch lists every file of every release: a few MB


CACHE_SCAN_FILES = 20_000  # pip's http-v2 cache: at most this many .body files looked at


BODY_MIN_BYTES = 512 << 10  # torch's and its companions' wheels are larger; pip's small cached answers are not


@dataclass(frozen=True)
class InstalledPackage:
    """One installed distribution: its dist-info folder, and the wheel it was installed from, by name."""

    name: str  # as the dist-info spells it: "torch"
    version: str  # with its local part: "2.4.0+cu124"
    dist_info: Path
    tags: tuple[str, ...]  # from WHEEL: ("cp312-cp312-win_amd64",)

    @property
    def wheel(self) -> str:
        """The wheel's file name: torch-2.4.0+cu124-cp312-cp312-win_amd64.whl."""
        parts = [t.split("-") for t in self.tags if t.count("-") == 2]
        joined = [".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3)] if parts else ["py3", "none", "any"]
        return f"{self.name}-{self.version}-{'-'.join(joined)}.whl"

    @property
    def variant(self) -> Optional[str]:
        """PyTorch's build variant from the local version ("cu124", "cpu"), or None."""
        local = self.version.partition("+")[2].lower()
        return local if PYTORCH_VARIANT.match(local) else None

    def matches(self, filename: str) -> bool:
        """Is `filename` the wheel of this exact release and build (name, version, every tag)?"""
        parts = unquote(filename).rsplit("/", 1)[-1].removesuffix(".whl").split("-")
        if len(parts) not in (5, 6) or not filename.lower().endswith(".whl"):
            return False
        name, version, py, abi, platform = parts[0], parts[1], parts[-3], parts[-2], parts[-1]
        tags = {f"{p}-{a}-{s}" for p in py.split(".") for a in abi.split(".") for s in platform.split(".")}
        return canonical(name) == canonical(self.name) and version == self.version and tags == set(self.tags)


def installed_packages(site: Optional[Path]) -> Iterator[InstalledPackage]:
    for folder in children(site):
        if not folder.name.lower().endswith(".dist-info") or "-" not in folder.name:
            continue
        name, _, version = folder.name[:-len(".dist-info")].rpartition("-")
        wheel = child(folder, "WHEEL")
        try:
            text = wheel.read_text(encoding="utf-8", errors="replace") if wheel else ""
        except OSError:
            text = ""
        tags = tuple(m.group(1).strip() for m in re.finditer(r"^Tag:\s*(\S+)", text, re.M))
        yield InstalledPackage(name, version, folder, tags)


def hex_digest(record_digest: str) -> str:
    """RECORD's urlsafe base64 SHA-256 (no padding) as the hex digest the downloader and MemberCopy use."""
    return base64.urlsafe_b64decode(record_digest + "=" * (-len(record_digest) % 4)).hex()


def local_candidates(system: System) -> Iterator[Path]:
    """Wheel files already on this computer (or copied drive): each user's Downloads, pip's caches."""
    for profile in system.user_profiles():
        for folder in [profile.home and f"{profile.home}\\Downloads"]:
            host = system.host_path(folder) if folder else None
            yield from (p for p in children(host) if p.name.lower().endswith(".whl") and p.is_file())
        cache = system.host_path(f"{profile.local_appdata}\\pip\\cache") if profile.local_appdata else None
        if cache is None or not cache.is_dir():
            continue
        wheels = child(cache, "wheels")
        if wheels is not None:
            yield from sorted(wheels.rglob("*.whl"))
        http = child(cache, "http-v2")
        if http is not None:
            yield from itertools.islice(http.rglob("*.body"), CACHE_SCAN_FILES)


def holds(path: Path, package: InstalledPackage) -> bool:
    """Is this local file that package's wheel? By its name, else (a pip cache body, a renamed file) by its zip
    directory holding that dist-info's RECORD (only the directory is read). Every member is checked anyway."""
    if package.matches(path.name):
        return True
    try:
        if path.stat().st_size < BODY_MIN_BYTES:
            return False
        with LocalWheel(path) as wheel:
            return f"{package.dist_info.name}/RECORD".lower() in {name.lower() for name in wheel.names()}
    except (OSError, DownloadError):  # not a zip (a cached index page), or damaged: not this wheel
        return False


RECORD_BYTES = 8 << 20  # a wheel's own RECORD: torch's is about 1.3 MB


def judge_wheel(path: Path, package: InstalledPackage, files: list[RecordEntry]) -> Optional[str]:
    """Why a local wheel cannot give these files back (None: it can, as far as its own record says): "other-build"
    (its WHEEL tags are not the installed ones: another Python, another platform), "other-files" (its RECORD pins
    other SHA-256s for them: the same name, other contents), or "unreadable". Only the directory, WHEEL and RECORD
    are read; every member is checked again against the installed RECORD as it is copied."""
    info = package.dist_info.name
    try:
        with LocalWheel(path) as wheel:
            names = {name.lower(): name for name in wheel.names()}
            wheel_file, record = names.get(f"{info}/wheel".lower()), names.get(f"{info}/record".lower())
            if wheel_file is None or record is None:
                return "other-files"
            tags = set(re.findall(r"^Tag:\s*(\S+)", wheel.read(wheel_file, 64 << 10).decode("utf-8", "replace"),
                                  re.M))
            if tags != set(package.tags):
                return "other-build"
            pinned = {}
            for row in csv.reader(wheel.read(record, RECORD_BYTES).decode("utf-8", "replace").splitlines()):
                if len(row) >= 3 and row[1].startswith("sha256="):
                    pinned[row[0].replace("\\", "/").lower()] = row[1].split("=", 1)[1]
    except (OSError, DownloadError, csv.Error, ValueError):
        return "unreadable"
    if any(pinned.get(entry.path.lower()) != entry.sha256 for entry in files):
        return "other-files"
    return None


def local_wheels_for(package: InstalledPackage, files: list[RecordEntry],
                     candidates: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The local wheels that can give these files back, best first, and those that cannot, with why."""
    usable, rejected = [], []
    for path in candidates:
        if not holds(path, package):
            continue
        reason = judge_wheel(path, package, files)
        if reason is None:
            usable.append(path)
        else:
            rejected.append((path, reason))
    return usable, rejected


def indexes_for(package: InstalledPackage, user_indexes: list[str]) -> list[str]:
    """Where to look for this wheel: PyTorch's index for its build variant first, then the user's own."""
    own = [PYTORCH_INDEX.format(variant=package.variant)] if package.variant else []
    return list(dict.fromkeys([*own, *user_indexes]))


def find_on_index(package: InstalledPackage, indexes: list[str], session: requests.Session,
                  token: Optional[CancelToken]) -> tuple[str, IndexFile]:
    """(index, the wheel) from the first index that lists this exact wheel."""
    last: Optional[DownloadError] = None
    for index in indexes:
        try:
            url, kind, body = fetch_page(project_url(index, canonical(package.name)), accept=JSON_ACCEPT,
                                         max_bytes=PAGE_BYTES, token=token, session=session)
            found = [f for f in parse_index_page(url, kind, body) if package.matches(f.filename)]
        except DownloadError as exc:
            last = exc
            continue
        if found:
            return index, found[0]
    if last is not None:
        raise last
    raise DownloadError("not-found", host=urlparse(indexes[0]).hostname or indexes[0], status=404)


class SourcesFailed(DownloadError):
    """No source held the right files: each one tried, and what was wrong with it (the words name them all)."""

    def __init__(self, wheel: str, tried: list[tuple[str, str]]) -> None:
        super().__init__("sources-failed", wheel=wheel)
        self.tried = tried

    def text(self, lang: str) -> str:
        from app.i18n import words

        reasons = [words("repair.restore.tried", lang, source=source, reason=words(
            f"repair.restore.tried.{code}" if code in TRIED_REASONS else "repair.restore.tried.other", lang))
            for source, code in self.tried]
        return words("repair.restore.sources_failed", lang, wheel=self.values["wheel"], tried="; ".join(reasons))


TRIED_REASONS = ("hash-mismatch", "unreadable", "not-found", "offline", "dns", "tls", "http", "timeout")
