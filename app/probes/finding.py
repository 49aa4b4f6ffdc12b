"""Findings: what the diagnosis found, with stable codes (docs/design.md) and plain words from a catalogue.

The words live in `resources/findings.json`, one entry per code (or `code@variant`), each with `en` and
`zh_CN` texts: a title, what it means for the user, and what to do next. Evidence values fill the
`{placeholders}`; nothing is built by joining translated fragments.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from typing import Any, Optional

from app.i18n import supported
from app.probes.evidence import missing_keys
from app.resources import resources_folder


class Severity(str, Enum):
    """How much a finding matters, with docs/design.md's strings (what the JSON document and the catalogue say)."""

    BLOCKER = "blocker"  # PyTorch cannot load (or cannot load here) until this is fixed
    WARNING = "warning"  # it loads, but something is fragile or will fail later
    INFO = "info"  # a fact worth knowing

    __str__ = str.__str__
    __format__ = str.__format__


BLOCKER, WARNING, INFO = Severity
SEVERITY_ORDER = {BLOCKER: 0, WARNING: 1, INFO: 2}
# Within a severity, the most telling finding first: the replayed failure, then the specific causes,
# then the generic DLL findings they explain.
CODE_PRIORITY = ("import-failed", "python-32bit", "vc-runtime-missing", "vc-runtime-too-old", "openmp-runtime-missing",
                 "torch-known-bad-build", "torch-files-missing", "gpu-driver-too-old", "missing-dll",
                 "wrong-architecture", "missing-export", "dll-damaged", "dll-unreadable")
LIST_SEPARATOR = {"en": ", ", "zh_CN": "、"}


@dataclass(frozen=True)
class FindingText:
    title: str
    explanation: str
    action: str


@dataclass
class Finding:
    code: str
    severity: Severity  # a string of docs/design.md is taken too, and made a Severity
    evidence: dict[str, Any] = field(default_factory=dict)
    repairs: list[str] = field(default_factory=list)
    environment: Optional[str] = None  # python.exe (Windows spelling) it concerns; None: the whole machine
    variant: Optional[str] = None  # picks `code@variant` in the catalogue when present

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)
        missing = missing_keys(self.code, self.evidence)  # what the readers of this code rely on (probes/evidence.py)
        if missing:
            raise ValueError(f"a {self.code} finding lacks {', '.join(missing)} in its evidence")

    @property
    def sort_key(self) -> tuple:
        rank = CODE_PRIORITY.index(self.code) if self.code in CODE_PRIORITY else len(CODE_PRIORITY)
        return (SEVERITY_ORDER.get(self.severity, 9), self.environment or "", rank, self.code)

    def text(self, lang: str = "en") -> FindingText:
        return finding_text(self.code, self.variant, self.evidence, lang)


@cache
def catalogue() -> dict[str, dict[str, dict[str, str]]]:
    return json.loads((resources_folder() / "findings.json").read_text(encoding="utf-8"))


def finding_text(code: str, variant: Optional[str], evidence: dict[str, Any], lang: str) -> FindingText:
    lang = supported(lang)
    entries = catalogue()
    entry = entries.get(f"{code}@{variant}") if variant else None
    entry = entry or entries.get(code) or entries["unknown"]
    texts = entry[lang]
    values = _Values(evidence, lang)
    formatter = string.Formatter()
    return FindingText(*(formatter.vformat(texts[key], (), values) for key in ("title", "explanation", "action")))


class _Values(dict):
    """Evidence as text for placeholders: lists joined, {"en": ..., "zh_CN": ...} in the reader's language,
    a missing value shown as a dash (never a crash)."""

    def __init__(self, evidence: dict[str, Any], lang: str) -> None:
        super().__init__(evidence)
        self.lang = lang

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if isinstance(value, dict) and self.lang in value:
            value = value[self.lang]
        if value is None:
            return "-"
        if isinstance(value, (list, tuple)):
            return LIST_SEPARATOR[self.lang].join(_plain(v) for v in value)
        return _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("dll") or value.get("path") or value)
    return str(value)
