"""Compare torch\\lib with the wheel's RECORD: files missing, or changed, usually mean an antivirus
quarantined them or an install was interrupted. Sizes first (one stat each); hashes only when asked,
with progress by bytes, since torch\\lib holds up to several GB."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.cancel import CancelToken, Progress, check, no_progress
from app.inventory.environment import PythonEnvironment
from app.system.folders import children, descend

CHUNK = 1 << 20


@dataclass(frozen=True)
class RecordEntry:
    path: str  # as written in RECORD: "torch/lib/fbgemm.dll"
    sha256: Optional[str]  # urlsafe base64 without padding, as RECORD writes it
    size: Optional[int]


@dataclass
class IntegrityReport:
    record: Optional[Path]
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    size_changed: list[str] = field(default_factory=list)
    hash_changed: list[str] = field(default_factory=list)
    hashed: bool = False
    problem: Optional[str] = None  # why no check was possible

    @property
    def ok(self) -> bool:
        return self.record is not None and not (self.missing or self.size_changed or self.hash_changed)


def find_record(env: PythonEnvironment) -> Optional[Path]:
    """The RECORD of the installed torch (site-packages\\torch-<version>.dist-info\\RECORD); when an older
    dist-info was left behind, the one named for torch's own version."""
    infos = [f for f in children(env.site_packages)
             if f.name.lower().startswith("torch-") and f.name.lower().endswith(".dist-info")]
    release = env.torch.release if env.torch else None
    infos.sort(key=lambda f: f.name[len("torch-"):-len(".dist-info")].split("+")[0] != release)
    for folder in infos:
        record = descend(folder, "RECORD")
        if record is not None:
            return record
    return None


def read_record(path: Path, prefix: str = "torch/lib/") -> list[RecordEntry]:
    entries = []
    text = path.read_text(encoding="utf-8", errors="replace")
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 3 or not row[0].replace("\\", "/").lower().startswith(prefix):
            continue
        digest = row[1].split("=", 1)[1] if row[1].startswith("sha256=") else None
        size = int(row[2]) if row[2].isascii() and row[2].isdigit() else None
        entries.append(RecordEntry(row[0].replace("\\", "/"), digest, size))
    return entries


def check_torch_files(env: PythonEnvironment, *, hashes: bool = False, cancel: Optional[CancelToken] = None,
                      progress: Progress = no_progress) -> IntegrityReport:
    """Check torch\\lib against RECORD: presence and size always; SHA-256 when `hashes` is set."""
    record = find_record(env) if env.site_packages else None
    report = IntegrityReport(record)
    if record is None:
        report.problem = "torch's install record (RECORD) was not found"
        return report
    try:
        entries = read_record(record)
    except (OSError, csv.Error, ValueError) as exc:
        report.problem = f"torch's install record could not be read ({getattr(exc, 'strerror', None) or exc})"
        return report
    present = []
    for entry in entries:
        check(cancel)
        path = descend(env.site_packages, *entry.path.split("/"))
        report.checked += 1
        if path is None or not path.is_file():
            report.missing.append(entry.path)
        elif entry.size is not None and path.stat().st_size != entry.size:
            report.size_changed.append(entry.path)
        else:
            present.append((entry, path))
    if hashes:
        report.hashed = True
        total = sum(path.stat().st_size for _, path in present)
        done = 0
        for entry, path in present:
            if entry.sha256 is None:
                continue
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                while True:
                    check(cancel)
                    block = f.read(CHUNK)
                    if not block:
                        break
                    digest.update(block)
                    done += len(block)
                    progress(done, total, entry.path)
            if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != entry.sha256:
                report.hash_changed.append(entry.path)
    return report
