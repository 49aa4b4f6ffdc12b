"""`restore-torch-files` (alias `reinstall-torch`): the files of the installed torch that are missing or changed
(quarantined by security software, cut short by an interrupted copy or download, a half-finished `pip install`)
put back byte for byte, from the same release and build.

What is damaged: every entry of torch's install record (`torch-<version>.dist-info\\RECORD`) whose file is gone or
has another size, plus the files the diagnosis found damaged (a DLL that cannot be read); other packages too
(torchvision, torchaudio, ...) when a DLL or .pyd of theirs is gone or changed. Files pip itself makes (the .pyc
cache, `INSTALLER`, the launchers in Scripts) are not in the package and are left alone.

Where the originals come from (app/sources/torch_wheels.py): the wheel of that exact release and build, from a
path the user names, this computer's Downloads and pip's caches, else the package index (PyTorch's own for a local
version first, then the user's); only the members needed are fetched, by ranges (app/sources/wheel_member.py).
Every file is checked against the SHA-256 and size the installed RECORD pins before anything is placed, then
placed through the journal (a backup of the damaged file, undo byte for byte).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Union
from urllib.parse import urlparse

from app.cancel import CancelToken
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import RecordEntry, RecordFolders, installed_record, read_record
from app.inventory.machine import MachineFacts
from app.inventory.packages import canonical
from app.probes.evidence import DamagedFile, TakenBySecurity
from app.probes.finding import Finding
from app.repair.changes.files import PutFile
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, said
from app.sources.download import DownloadError, RangeNotSupported, download, new_session
from app.sources.pip_settings import read_pip_settings
from app.sources.torch_wheels import (
    InstalledPackage,
    SourcesFailed,
    find_on_index,
    hex_digest,
    indexes_for,
    installed_packages,
    local_candidates,
    local_wheels_for,
)
from app.sources.wheel_member import (
    BATCH_GAP,
    TAIL_BYTES,
    LocalWheel,
    MemberCopy,
    RangedWheel,
    RemoteWheel,
    WheelError,
)
from app.system.base import System
from app.system.folders import child
from app.system.typed_path import resolve_typed_path

if TYPE_CHECKING:
    import requests

LOADS = (".dll", ".pyd", ".exe")  # files whose loss stops a program, not only one Python feature
MADE_BY_PIP = ("installer", "requested", "direct_url.json", "record")  # dist-info files that are not in a wheel
WHOLE_WHEEL_BYTES = 6 << 30  # the largest CUDA torch wheels are about 2.5 GB
MEMBER_SLACK = 64 << 10  # a member's local header, name and extra field, beyond its compressed bytes
IN_MEMORY_FILE = 1 << 20  # a member up to this size is kept in memory once checked, not written twice
IN_MEMORY_TOTAL = 128 << 20  # ... while all kept so far stay under this (torch 2.4's 7,998 cut-short files: 47 MB)
PLACED_TOGETHER = 256  # files placed under one pair of journal records (intents, then `applied`)
PLACING_WORKERS = 4  # files placed side by side: the file system commits their fsyncs together


Checked = Union[Path, bytes]  # a file out of the wheel, checked against RECORD: its bytes, or a file holding them


@dataclass
class DamagedPackage:
    package: InstalledPackage
    files: list[RecordEntry] = field(default_factory=list)  # to put back, from the wheel
    left: list[str] = field(default_factory=list)  # missing too, but made by pip, not in the wheel


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
            now = folders.file(entry.path, entry.size)  # a line leading out of site-packages is never looked up
            changed = now is None or (entry.size is not None and now[1] != entry.size)
            if not changed and entry.path.lower() not in named:
                continue
            if _in_wheel(entry):
                found.files.append(entry)
            elif now is None and folders.find(entry.path)[0] is None and not entry.path.endswith(".pyc"):
                found.left.append(entry.path)
        is_torch = canonical(package.name) == "torch"
        if found.files and (is_torch or any(e.path.lower().endswith(LOADS) for e in found.files)):
            damaged.append(found)
    damaged.sort(key=lambda d: canonical(d.package.name) != "torch")
    return damaged


def _unreadable_record(site: Path) -> Optional[tuple[Path, str]]:
    """torch's install record, and why it cannot be read, when it cannot (check-failed@record-unreadable)."""
    record = installed_record(site)
    if record is None:
        return None
    try:
        read_record(record, prefix="")
    except (OSError, csv.Error, ValueError, UnicodeDecodeError) as exc:
        return record, f"{exc.__class__.__name__}: {exc}"
    return None


def _named_damaged(system: System, site: Path, findings: list[Finding]) -> set[str]:
    """RECORD paths (lower case) of the files the diagnosis found damaged although their size is right."""
    named = set()
    for finding in findings:
        shown = DamagedFile.of(finding).path if finding.code in DamagedFile.CODES else None
        host = system.host_path(shown) if isinstance(shown, str) else None
        if host is not None:
            try:
                named.add(host.relative_to(site).as_posix().lower())
            except ValueError:
                continue
    return named


def _why_note(folder: str, findings: list[Finding]) -> dict[str, str]:
    """Why the files went, as far as it is known: Windows Security's own record, with the two ways to keep them
    (an exclusion the user makes, a false positive reported), else the usual causes."""
    taken = next((TakenBySecurity.of(f) for f in findings if f.code in TakenBySecurity.CODES
                  and TakenBySecurity.of(f).security_file), None)
    if taken is None:
        return said("repair.note.restore.why", folder=folder)
    return {lang: words("repair.note.restore.taken_again", lang, date=taken.security_date, file=taken.security_file,
                        threat=taken.security_threat, folder=taken.folder or folder,
                        action=taken.security_action.get(lang, "-")) for lang in LANGUAGES}


# -- the repair ----------------------------------------------------------------------------------------------------


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
        unreadable = _unreadable_record(site)
        if unreadable is not None:  # which files belong to torch cannot be told: as the diagnosis says
            raise PlanRefused([said("repair.refused.restore.record_unreadable", record=system.windows_path(
                unreadable[0]), error=unreadable[1])])
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
                changes.append(Change(kind, system.windows_path(target), shown_source, host_target=target,
                                      size=entry.size))
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
        notes.append(_why_note(system.windows_path(env.torch.folder), findings))
        chosen = source or ("local" if all(p["local"] for p in packages) else "index")
        return Plan(self.id, chosen, system.windows_path(env.python), changes, downloads=chosen != "local",
                    download={"pip_prefix": str(env.exec_prefix), "packages": packages,
                              "cert": settings.cert}, notes=notes)

    def _candidates(self, system: System, source: Optional[str]) -> list[Path]:
        if source == "index":
            return []
        if source in (None, "local"):
            return list(local_candidates(system))
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
        fetched: list[tuple[Checked, Path, str]] = []
        try:
            for number, package in enumerate(plan.download["packages"]):
                fetched += self._fetch(package, folder / f"restore-{number}", session, transaction, on_output,
                                       on_progress, token)
        finally:
            session.close()
        for start in range(0, len(fetched), PLACED_TOGETHER):
            if token is not None:
                token.check()
            batch = fetched[start:start + PLACED_TOGETHER]
            for _, target, _ in batch:
                target.parent.mkdir(parents=True, exist_ok=True)  # a whole folder quarantined: its files come back
            distinct = len({str(target).lower() for _, target, _ in batch}) == len(batch)  # Windows: one name
            transaction.steps_at_once(system, [_placing(copy, target, digest) for copy, target, digest in batch],
                                      workers=PLACING_WORKERS if distinct else 1)
            for copy, _, _ in batch:
                if isinstance(copy, Path):
                    copy.unlink()  # the backup of what was there, and the journal, are what undo needs

    def _fetch(self, package: dict, folder: Path, session: requests.Session, transaction: Transaction,
               on_output, on_progress, token: Optional[CancelToken]) -> list[tuple[Checked, Path, str]]:
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
                     token: Optional[CancelToken]) -> list[tuple[Checked, Path, str]]:
        facts = {"package": package["name"], "wheel": package["wheel"], "files": [f["path"] for f in package["files"]]}
        with LocalWheel(local) as wheel:
            copies = _copy_members(wheel, package, folder, token)
        facts.update(source=str(local), ranged=False, transferred=0)
        transaction.note({"restored_from": facts})
        on_output(said("repair.restore.fetched.local", wheel=package["wheel"], count=len(copies), path=str(local)))
        return copies

    def _fetch_index(self, package: dict, folder: Path, session: requests.Session, transaction: Transaction,
                     on_output, on_progress, token: Optional[CancelToken]) -> list[tuple[Checked, Path, str]]:
        facts = {"package": package["name"], "wheel": package["wheel"], "files": [f["path"] for f in package["files"]]}
        shell = InstalledPackage(package["name"], package["version"], Path(package["dist_info"]),
                                 tuple(package["tags"]))
        index, found = find_on_index(shell, package["indexes"], session, token)
        facts.update(index=index, url=found.url, index_sha256=found.sha256)
        copies = fetch_members(found.url, found.sha256, found.size, package, folder, session, token, on_progress,
                               facts)
        host = urlparse(found.url).hostname
        if facts["ranged"]:
            percent = max(1, round(100 * facts["transferred"] / max(1, facts["wheel_bytes"])))
            on_output(said("repair.restore.fetched.ranged", wheel=package["wheel"], count=len(copies),
                           percent=percent, host=host))
        else:
            key = "repair.restore.fetched.whole" if found.sha256 else "repair.restore.fetched.whole_unhashed"
            on_output(said(key, wheel=package["wheel"], count=len(copies), host=host))
        transaction.note({"restored_from": facts})
        return copies


def fetch_members(url: str, sha256: Optional[str], size: Optional[int], package: dict, folder: Path,
                  session: requests.Session, token: Optional[CancelToken], on_progress, facts: dict,
                  ) -> list[tuple[Checked, Path, str]]:
    """The package's damaged files out of the wheel at `url`, each checked as RECORD pins it, the fastest way: its
    members by ranges, neighbours together (one read per group); or the whole wheel, checked against the index's
    `sha256`, when the server cannot do ranges or when that is faster (many reads, or most of the wheel: the
    wheel's `cost`). `facts` gets what was fetched and how."""
    # what the members need, the bytes between neighbours read together, and the directory
    budget = sum(f["size"] + (f["size"] >> 8) + MEMBER_SLACK + BATCH_GAP for f in package["files"])
    copies: Optional[list[tuple[Checked, Path, str]]] = None
    try:
        with RemoteWheel(url, budget=budget + (32 << 20) + 2 * TAIL_BYTES, token=token, session=session) as wheel:
            groups: list[list[str]] = []
            try:
                members = _members(wheel, package)
                groups = wheel.batches([members[f["path"].lower()] for f in package["files"]
                                        if f["path"].lower() in members])  # one missing: said when copied
                if wheel.cost(groups) < wheel.size:
                    copies = _copy_members(wheel, package, folder, token, groups)
            finally:
                facts.update(ranged=copies is not None, transferred=wheel.fetched, wheel_bytes=wheel.size,
                             reads=len(groups))
    except RangeNotSupported:
        pass
    if copies is not None:
        return copies
    path = folder / package["wheel"]
    download(url, path, max_bytes=size or WHOLE_WHEEL_BYTES, sha256=sha256, token=token, progress=on_progress,
             session=session)
    facts.update(ranged=False, transferred=facts.get("transferred", 0) + path.stat().st_size,
                 wheel_bytes=path.stat().st_size)
    with LocalWheel(path) as wheel:
        copies = _copy_members(wheel, package, folder, token)
    path.unlink()
    return copies


def _placing(copy: Checked, target: Path, digest: str) -> PutFile:
    if isinstance(copy, Path):
        return PutFile(target, copy, sha256=digest)
    return PutFile(target, None, sha256=digest, content=copy)


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


def _copy_members(wheel: RangedWheel, package: dict, folder: Path, token: Optional[CancelToken],
                  groups: Optional[list[list[str]]] = None) -> list[tuple[Checked, Path, str]]:
    """Each damaged file out of the wheel, checked against the size and SHA-256 the installed RECORD pins. With
    `groups` (a ranged wheel's `batches`), neighbours are read together, one read a group."""
    members = _members(wheel, package)
    missing = [f["path"] for f in package["files"] if f["path"].lower() not in members]
    if missing:
        raise WheelError(f"the package does not hold {', '.join(missing[:3])}", host=wheel.host)
    numbered = {members[entry["path"].lower()]: (number, entry) for number, entry in enumerate(package["files"])}
    copies: list[tuple[Checked, Path, str]] = []
    in_memory = 0
    for group in groups if groups is not None else [[name] for name in numbered]:
        if groups is not None:
            wheel.hold(group)
        for name in group:
            if token is not None:
                token.check()
            number, entry = numbered[name]
            if entry["size"] <= IN_MEMORY_FILE and in_memory + entry["size"] <= IN_MEMORY_TOTAL:
                copy, copied = _member_in_memory(wheel, name, entry)
                in_memory += copied.size
            else:
                copy, copied = _member_to_file(wheel, name, entry, folder / f"{number}.part")
            copies.append((copy, Path(entry["target"]), copied.sha256))
    return copies


def _checked(wheel: RangedWheel, copied: MemberCopy, entry: dict) -> None:
    if copied.sha256 != entry["sha256"] or copied.size != entry["size"]:
        raise DownloadError("hash-mismatch", host=wheel.host)


def _member_in_memory(wheel: RangedWheel, name: str, entry: dict) -> tuple[bytes, MemberCopy]:
    out = io.BytesIO()
    copied = wheel.copy(name, out, entry["size"])
    _checked(wheel, copied, entry)
    return out.getvalue(), copied


def _member_to_file(wheel: RangedWheel, name: str, entry: dict, path: Path) -> tuple[Path, MemberCopy]:
    with open(path, "wb") as out:  # not synced: it is read back at once, by the step that places it
        copied = wheel.copy(name, out, entry["size"])
    try:
        _checked(wheel, copied, entry)
    except DownloadError:
        path.unlink()
        raise
    return path, copied

