"""`restore-torch-files` (alias `reinstall-torch`): the files of the installed torch that are missing or changed
(quarantined by security software, cut short by an interrupted copy or download, a half-finished `pip install`)
put back byte for byte, from the same release and build.

What is damaged: every entry of torch's install record (`torch-<version>.dist-info\\RECORD`) whose file is gone or
has another size, plus the files the diagnosis found damaged (a DLL that cannot be read); other packages too
(torchvision, torchaudio, ...) when a DLL or .pyd of theirs is gone or changed. Files pip itself makes (the .pyc
cache, `INSTALLER`, the launchers in Scripts) are not in the package and are left alone.

Where the originals come from, per package: the wheel with that exact name (version with its local part such as
`+cu124`, the Python tag, the platform, read from the dist-info's `WHEEL`), found
- in a file or folder the user names (`--source PATH`), else on this computer (or copied drive): the Downloads
  folder of each user, and pip's own caches (`pip\\cache\\wheels\\**\\*.whl`, and `pip\\cache\\http-v2`, where
  pip 23.3 and later keep downloaded wheels as `.body` files, recognised by the dist-info in their directory);
- else on the package index: for a PyTorch build with a local version (`+cpu`, `+cu124`, `+rocm6.1`) PyTorch's
  own index for it first (https://download.pytorch.org/whl/cu124), then the user's own indexes (their pip
  settings: a mirror, a company certificate; HTTPS only). Only the members needed are fetched, by ranges
  (app/repair/wheel_member.py); a server without ranges gets the whole wheel, checked against the index's hash.
Every file is checked against the SHA-256 and size the installed RECORD pins before anything is placed, then
placed through the journal (a backup of the damaged file, undo byte for byte).
"""

from __future__ import annotations

import base64
import csv
import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional
from urllib.parse import unquote, urlparse

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import RecordEntry, RecordFolders, installed_record, read_record
from app.inventory.machine import MachineFacts
from app.inventory.packages import canonical
from app.probes.finding import Finding
from app.repair.download import DownloadError, RangeNotSupported, download, fetch_page, new_session
from app.repair.journal import Transaction
from app.repair.pip_settings import read_pip_settings
from app.repair.plan import Change, Plan, PlanRefused, said
from app.repair.wheel_member import (
    JSON_ACCEPT,
    TAIL_BYTES,
    IndexFile,
    LocalWheel,
    RangedWheel,
    RemoteWheel,
    WheelError,
    parse_index_page,
    project_url,
)
from app.system.base import System
from app.system.folders import child, children
from app.system.typed_path import resolve_typed_path

if TYPE_CHECKING:
    import requests

PYTORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
PYTORCH_VARIANT = re.compile(r"^(cpu|cu\d+|rocm\d+(\.\d+)*|xpu)$")
LOADS = (".dll", ".pyd", ".exe")  # files whose loss stops a program, not only one Python feature
MADE_BY_PIP = ("installer", "requested", "direct_url.json", "record")  # dist-info files that are not in a wheel
PAGE_BYTES = 32 << 20  # PyPI's JSON page for torch lists every file of every release: a few MB
WHOLE_WHEEL_BYTES = 6 << 30  # the largest CUDA torch wheels are about 2.5 GB
MEMBER_SLACK = 64 << 10  # a member's local header, name and extra field, beyond its compressed bytes
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


@dataclass
class DamagedPackage:
    package: InstalledPackage
    files: list[RecordEntry] = field(default_factory=list)  # to put back, from the wheel
    left: list[str] = field(default_factory=list)  # missing too, but made by pip, not in the wheel


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


def _in_wheel(entry: RecordEntry) -> bool:
    """Could the wheel hold this entry? Not a file pip makes: its .pyc cache, its own dist-info files, launchers."""
    path = entry.path
    if not RecordFolders.inside(path) or entry.sha256 is None or entry.size is None:
        return False
    if "/__pycache__/" in f"/{path}" and path.endswith(".pyc"):
        return False
    folder, _, name = path.rpartition("/")
    return not (folder.lower().endswith(".dist-info") and name.lower() in MADE_BY_PIP)


def damaged_packages(site: Path, named: set[str]) -> list[DamagedPackage]:
    """Packages with files missing or of another size (or named by the diagnosis as damaged), torch first."""
    folders = RecordFolders(site)
    damaged = []
    torch_record = installed_record(site)
    for package in installed_packages(site):
        record = child(package.dist_info, "RECORD")
        if record is None or (canonical(package.name) == "torch" and record != torch_record):
            continue  # an older torch dist-info left behind is not what is installed: its files are not put back
        try:
            entries = read_record(record, prefix="")
        except (OSError, csv.Error, ValueError):
            continue
        found = DamagedPackage(package)
        for entry in entries:
            now, _ = folders.find(entry.path)  # a line that leads out of site-packages is never looked up
            changed = now is None or not now.is_file() or (entry.size is not None and now.stat().st_size != entry.size)
            if not changed and entry.path.lower() not in named:
                continue
            if _in_wheel(entry):
                found.files.append(entry)
            elif now is None and not entry.path.endswith(".pyc"):
                found.left.append(entry.path)
        is_torch = canonical(package.name) == "torch"
        if found.files and (is_torch or any(e.path.lower().endswith(LOADS) for e in found.files)):
            damaged.append(found)
    damaged.sort(key=lambda d: canonical(d.package.name) != "torch")
    return damaged


def _named_damaged(system: System, site: Path, findings: list[Finding]) -> set[str]:
    """RECORD paths (lower case) of the files the diagnosis found damaged although their size is right."""
    named = set()
    for finding in findings:
        shown = finding.evidence.get("path") if finding.code in ("dll-damaged", "wrong-architecture") else None
        host = system.host_path(shown) if isinstance(shown, str) else None
        if host is not None:
            try:
                named.add(host.relative_to(site).as_posix().lower())
            except ValueError:
                continue
    return named


def hex_digest(record_digest: str) -> str:
    """RECORD's urlsafe base64 SHA-256 (no padding) as the hex digest the downloader and MemberCopy use."""
    return base64.urlsafe_b64decode(record_digest + "=" * (-len(record_digest) % 4)).hex()


# -- where the wheels are ------------------------------------------------------------------------------------------

def _local_candidates(system: System) -> Iterator[Path]:
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


def _holds(path: Path, package: InstalledPackage) -> bool:
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
        if not _holds(path, package):
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


# -- the repair ----------------------------------------------------------------------------------------------------

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


class RestoreTorchFiles:
    """`restore-torch-files`: put back the missing or damaged files of torch (and of its companions)."""

    id = "restore-torch-files"
    sources = ("local", "index")  # or a path: a .whl file or a folder holding the wheels

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if env.torch is None or env.site_packages is None:
            raise PlanRefused([said("repair.refused.no_torch")])
        site = env.site_packages
        if not any(canonical(p.name) == "torch" and child(p.dist_info, "RECORD") for p in installed_packages(site)):
            raise PlanRefused([said("repair.refused.restore.no_record")])
        damaged = damaged_packages(site, _named_damaged(system, site, findings))
        if not damaged:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        candidates = self._candidates(system, source)
        settings = read_pip_settings(system, env.exec_prefix)
        packages, changes, notes = [], [], []
        for item in damaged:
            package = item.package
            locals_, rejected = local_wheels_for(package, item.files, candidates) if source != "index" else ([], [])
            local = locals_[0] if locals_ else None
            for path, reason in rejected:  # said, and never used: another build, or other contents
                notes.append(said(f"repair.note.restore.rejected.{reason}", path=system.windows_path(path),
                                  wheel=package.wheel))
            if local is None and source not in (None, "index"):
                raise PlanRefused([said("repair.refused.restore.not_in_source", wheel=package.wheel,
                                        source=source)])
            indexes = indexes_for(package, settings.indexes) if source in (None, "index") else []
            if local is None and not indexes:
                raise PlanRefused([said("download.error.index-not-https", url=", ".join(settings.skipped_indexes))])
            shown_source = system.windows_path(local) if local else package.wheel
            folders = RecordFolders(site)
            files = []
            for entry in item.files:
                now, target = folders.find(entry.path)
                kind = "repair-file" if now is not None else "restore-file"
                changes.append(Change(kind, system.windows_path(target), shown_source, host_target=target))
                files.append({"path": entry.path, "target": str(target), "sha256": hex_digest(entry.sha256),
                              "size": entry.size})
            packages.append({"name": package.name, "version": package.version, "wheel": package.wheel,
                             "dist_info": package.dist_info.name, "tags": list(package.tags),
                             "local": str(local) if local else None, "locals": [str(p) for p in locals_],
                             "indexes": indexes, "files": files})
            notes.append(said("repair.note.restore.what", package=package.name, version=package.version,
                              wheel=package.wheel, count=len(files)))
            if local is not None:
                notes.append(said("repair.note.restore.local", path=shown_source))
            else:
                notes.append(said("repair.note.restore.index", indexes=", ".join(indexes), wheel=package.wheel))
            if item.left:
                notes.append(said("repair.note.restore.left", count=len(item.left), files=", ".join(item.left)))
        notes += [said("repair.note.index_skipped", url=url, next=settings.indexes[0])
                  for url in settings.skipped_indexes if settings.indexes]
        notes.append(said("repair.note.restore.why", folder=system.windows_path(env.torch.folder)))
        chosen = source or ("local" if all(p["local"] for p in packages) else "index")
        return Plan(self.id, chosen, system.windows_path(env.python), changes,
                    download={"pip_prefix": str(env.exec_prefix), "packages": packages,
                              "cert": settings.cert}, notes=notes)

    def _candidates(self, system: System, source: Optional[str]) -> list[Path]:
        if source == "index":
            return []
        if source in (None, "local"):
            return list(_local_candidates(system))
        where = resolve_typed_path(system, source)
        if where is None:
            raise PlanRefused([said("repair.refused.restore.no_such_source", source=source)])
        return [where] if where.is_file() else sorted(p for p in where.rglob("*") if p.suffix.lower() in
                                                      (".whl", ".body") and p.is_file())

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[object], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        folder = transaction.folder / "downloads"
        folder.mkdir(parents=True, exist_ok=True)
        cert = plan.download.get("cert")
        host_cert = system.host_path(cert) if cert else None
        session = new_session(host_cert if host_cert is not None and host_cert.is_file() else None)
        # (verified copy, target, its SHA-256): every file is checked before any is placed
        fetched: list[tuple[Path, Path, str]] = []
        try:
            for number, package in enumerate(plan.download["packages"]):
                fetched += self._fetch(package, folder / f"restore-{number}", session, transaction, on_output,
                                       on_progress, token)
        finally:
            session.close()
        for copy, target, digest in fetched:
            if token is not None:
                token.check()
            target.parent.mkdir(parents=True, exist_ok=True)  # a whole folder quarantined: its files come back
            transaction.put_file(system, target, copy, sha256=digest)
            copy.unlink()  # the backup of what was there, and the journal, are what undo needs

    def _fetch(self, package: dict, folder: Path, session: requests.Session, transaction: Transaction,
               on_output, on_progress, token: Optional[CancelToken]) -> list[tuple[Path, Path]]:
        """The files from the first source whose members are what the installed RECORD pins: each local wheel in
        turn, then the indexes; a source that fails gives way to the next, and when all fail the words name each
        one tried and what was wrong with it."""
        folder.mkdir(parents=True, exist_ok=True)
        tried: list[tuple[str, str]] = []
        for local in package.get("locals") or ([package["local"]] if package.get("local") else []):
            try:
                return self._fetch_local(package, Path(local), folder, transaction, on_output, token)
            except (DownloadError, OSError) as exc:
                if isinstance(exc, DownloadError) and exc.code == "cancelled":
                    raise
                tried.append((local, getattr(exc, "code", "unreadable")))
                for part in folder.glob("*.part"):
                    part.unlink()
        if package["indexes"]:
            try:
                return self._fetch_index(package, folder, session, transaction, on_output, on_progress, token)
            except DownloadError as exc:
                if exc.code == "cancelled" or not tried:
                    raise
                tried.append((", ".join(package["indexes"]), exc.code))
        raise SourcesFailed(package["wheel"], tried)

    def _fetch_local(self, package: dict, local: Path, folder: Path, transaction: Transaction, on_output,
                     token: Optional[CancelToken]) -> list[tuple[Path, Path, str]]:
        facts = {"package": package["name"], "wheel": package["wheel"], "files": [f["path"] for f in package["files"]]}
        with LocalWheel(local) as wheel:
            copies = _copy_members(wheel, package, folder, token)
        facts.update(source=str(local), ranged=False, transferred=0)
        transaction.note({"restored_from": facts})
        on_output(said("repair.restore.fetched.local", wheel=package["wheel"], count=len(copies), path=str(local)))
        return copies

    def _fetch_index(self, package: dict, folder: Path, session: requests.Session, transaction: Transaction,
                     on_output, on_progress, token: Optional[CancelToken]) -> list[tuple[Path, Path, str]]:
        facts = {"package": package["name"], "wheel": package["wheel"], "files": [f["path"] for f in package["files"]]}
        shell = InstalledPackage(package["name"], package["version"], Path(package["dist_info"]),
                                 tuple(package["tags"]))
        index, found = find_on_index(shell, package["indexes"], session, token)
        facts.update(index=index, url=found.url, index_sha256=found.sha256)
        budget = sum(f["size"] + (f["size"] >> 8) + MEMBER_SLACK for f in package["files"])
        try:
            with RemoteWheel(found.url, budget=budget + (32 << 20) + 2 * TAIL_BYTES, token=token,
                             session=session) as wheel:
                try:
                    copies = _copy_members(wheel, package, folder, token)
                finally:
                    facts.update(ranged=True, transferred=wheel.fetched, wheel_bytes=wheel.size)
            percent = max(1, round(100 * facts["transferred"] / max(1, facts["wheel_bytes"])))
            on_output(said("repair.restore.fetched.ranged", wheel=package["wheel"], count=len(copies),
                           percent=percent, host=urlparse(found.url).hostname))
        except RangeNotSupported:
            path = folder / package["wheel"]
            download(found.url, path, max_bytes=found.size or WHOLE_WHEEL_BYTES, sha256=found.sha256, token=token,
                     progress=on_progress, session=session)
            facts.update(ranged=False, transferred=path.stat().st_size, wheel_bytes=path.stat().st_size)
            with LocalWheel(path) as wheel:
                copies = _copy_members(wheel, package, folder, token)
            path.unlink()
            key = "repair.restore.fetched.whole" if found.sha256 else "repair.restore.fetched.whole_unhashed"
            on_output(said(key, wheel=package["wheel"], count=len(copies), host=urlparse(found.url).hostname))
        transaction.note({"restored_from": facts})
        return copies


def _members(wheel: RangedWheel, package: dict) -> dict[str, str]:
    """Installed path (as RECORD writes it) -> the wheel member holding it (`*.data/purelib/...` unfolded)."""
    data = f"{package['dist_info'].removesuffix('.dist-info')}.data/".lower()
    members = {}
    for name in wheel.names():
        installed = name
        if name.lower().startswith(data):
            scheme, _, rest = name[len(data):].partition("/")
            if scheme not in ("purelib", "platlib"):
                continue
            installed = rest
        members[installed.lower()] = name
    return members


def _copy_members(wheel: RangedWheel, package: dict, folder: Path,
                  token: Optional[CancelToken]) -> list[tuple[Path, Path, str]]:
    """Each damaged file out of the wheel, checked against the size and SHA-256 the installed RECORD pins."""
    members = _members(wheel, package)
    missing = [f["path"] for f in package["files"] if f["path"].lower() not in members]
    if missing:
        raise WheelError(f"the package does not hold {', '.join(missing[:3])}", host=wheel.host)
    copies = []
    for number, entry in enumerate(package["files"]):
        if token is not None:
            token.check()
        out_path = folder / f"{number}.part"
        with open(out_path, "wb") as out:
            copied = wheel.copy(members[entry["path"].lower()], out, entry["size"])
            out.flush()
            os.fsync(out.fileno())
        if copied.sha256 != entry["sha256"] or copied.size != entry["size"]:
            out_path.unlink()
            raise DownloadError("hash-mismatch", host=wheel.host)
        copies.append((out_path, Path(entry["target"]), copied.sha256))
    return copies

