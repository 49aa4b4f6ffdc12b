"""The probe framework: a probe asks one question of a machine or an environment and yields Findings."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from app.cancel import CancelToken
from app.engine.graph import DependencyGraph, PECache
from app.engine.loader import LoaderModel
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.integrity import SeenFiles
from app.inventory.machine import MachineFacts
from app.inventory.search_context import loader_for
from app.probes.finding import Finding
from app.system.base import System
from app.system.folders import Listings, child, names

MACHINE, ENVIRONMENT = "machine", "environment"


@dataclass(frozen=True)
class Program:
    """The program that shows the error, as the user named it (the wizard's question, `diagnose --app` and
    `--import-first`): a known AI app of resources/ai_apps.json, and modules it imports before torch. Left empty,
    it is the environment's own app, as discovery labelled it."""

    app: Optional[str] = None
    imports_first: tuple[str, ...] = ()


@dataclass
class ProbeContext:
    """What a probe may look at. The dependency graph is built once per environment and shared."""

    system: System
    machine: MachineFacts
    env: Optional[PythonEnvironment] = None
    cancel: CancelToken = field(default_factory=CancelToken)
    cache: PECache = field(default_factory=PECache)
    program: Program = field(default_factory=Program)
    seen: SeenFiles = field(default_factory=SeenFiles)  # one per diagnosis: files already read, by identity
    listings: Listings = field(default_factory=Listings)  # the environment's folders, listed once for its checks
    _graph: Optional[DependencyGraph] = None
    _loader: Optional[LoaderModel] = None
    _dlls: Optional[tuple[Path, ...]] = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def display(self, path: Optional[Path]) -> Optional[str]:
        return self.system.windows_path(path) if path is not None else None

    @property
    def python(self) -> Optional[str]:
        return self.display(self.env.python) if self.env else None

    def finding(self, code: str, severity: str, evidence: Optional[dict] = None, repairs: Iterable[str] = (),
                variant: Optional[str] = None) -> Finding:
        return Finding(code, severity, evidence or {}, list(repairs), self.python, variant)

    def loader(self) -> LoaderModel:
        with self._lock:
            if self._loader is None:
                self._loader = loader_for(self.system, self.env)
            return self._loader

    def torch_dlls(self) -> list[Path]:
        """torch\\lib\\*.dll in the order torch's glob loads them (NTFS lists names case-insensitively sorted)."""
        if self.env is None or self.env.torch is None:
            return []
        if self._dlls is None:  # listed once: every check of the environment asks (the same moment of the folder)
            lib = child(self.env.torch.folder, "lib")
            self._dlls = tuple(lib / name for name in sorted(names(lib), key=lambda n: (n.lower(), n))
                               if os.path.splitext(name)[1].lower() == ".dll")
        return list(self._dlls)

    def graph(self) -> DependencyGraph:
        """The full dependency graph of torch\\lib, as torch loads it (built on first use)."""
        loader = self.loader()
        with self._lock:
            if self._graph is None:
                graph = DependencyGraph(loader, cache=self.cache, cancel=self.cancel)
                for dll in self.torch_dlls():
                    graph.add_root(dll)
                graph.expand_all()
                self._graph = graph
            return self._graph


@dataclass(frozen=True)
class Probe:
    id: str
    scope: str  # MACHINE (once) or ENVIRONMENT (once per environment with torch)
    run: Callable[[ProbeContext], Iterable[Finding]]
    needs_live: bool = False  # runs programs: skipped (with an info finding) on an offline image

    @property
    def label(self) -> dict[str, str]:
        """What the progress list shows while it runs ("Checking the NVIDIA driver…"), per language."""
        return {lang: words(f"probe.{self.id}.label", lang) for lang in LANGUAGES}

    @property
    def name(self) -> dict[str, str]:
        """What it checks, as a noun phrase ("Not checked: the NVIDIA driver"), per language."""
        return {lang: words(f"probe.{self.id}.name", lang) for lang in LANGUAGES}
