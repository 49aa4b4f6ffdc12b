"""The dependency graph: one node per resolved file, edges for normal and delay-load imports.

Expansion is lazy (a tree view asks for a node's children when the user opens it) and cycle-safe;
Windows' own DLLs are leaves. Statuses follow lucasg/Dependencies: a node's own problem first, else
`children-error` when something it needs at load time is broken.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from app.cancel import CancelToken, Progress, check, no_progress
from app.engine.loader import LoaderModel, Resolution
from app.engine.pe import CPU_NAMES, ImportedFunction, PEError, PEInfo, read_pe, read_pe_as
from app.system.once_per_file import keeps_what_files_gave

OK = "ok"
MISSING = "missing"
MISSING_DELAY = "missing-delay"
WRONG_ARCHITECTURE = "wrong-architecture"
MISSING_EXPORT = "missing-export"
CORRUPT = "corrupt"
UNREADABLE = "unreadable"  # the file (or a folder it may be in) is there but could not be read
CHILDREN_ERROR = "children-error"
BLOCKING = frozenset({MISSING, WRONG_ARCHITECTURE, MISSING_EXPORT, CORRUPT, UNREADABLE, CHILDREN_ERROR})
MAX_FORWARDER_DEPTH = 16
_COPIES_TRIED = 4  # parses of one name and size a new file is checked against before it is parsed itself


class Unreadable(str):
    """Why a file could not be opened or read (an OSError): a locked or blocked file, not a damaged one."""


FileIdentity = tuple[int, int, int, int]  # device, file number, size, modification time (ns)


class PECache:
    """PE facts kept by the file's identity: its device, file number, size and modification time (on a copied
    drive, the host file's). Re-reading an unchanged 1 GB DLL costs one stat, and the environments uv links to one
    copy of torch share one parse of each file and one set of tables: the probes of several environments run at
    once, so a file being parsed for one waits for that parse. No sample of a file's bytes tells two files apart
    (damage in the middle of a table keeps the size, the headers and the tail), so a copy of its own (pip's) is
    checked by the reader's own reads: a file of the same name and size as one parsed before is read at the very
    ranges that parse read (`PEInfo.read_ranges`, 8 MB of torch_cpu.dll's 226 MB) and, when their SHA-256 is that
    parse's `read_digest`, it is that parse (`read_pe_as`); else it is parsed, and a parse that read the very bytes
    another read shares that one's tables and their answers. A file with no file number (some network drives) is
    not kept; nor is anything read before the app changed files (`forget`, through
    app.system.once_per_file.forget_every_file)."""

    def __init__(self, max_entries: int = 2048) -> None:
        self.max_entries = max_entries
        self._entries: dict[tuple[str, FileIdentity], Union[PEInfo, str]] = {}  # by path and identity
        self._by_file: dict[FileIdentity, Union[PEInfo, str]] = {}  # by identity, for the file's other links
        self._by_reads: dict[tuple[int, bytes], PEInfo] = {}  # by size and read_digest, for copies
        self._by_name: dict[tuple[int, str], list[PEInfo]] = {}  # by size and name: whose reads a copy may give
        self._parsing: dict[FileIdentity, threading.Event] = {}
        self._lock = threading.Lock()
        self._forgotten = 0  # how many times `forget` was called: a parse begun before one is not kept
        self.parsed = 0  # files read by read_pe (the benchmark and the tests count them)
        self.recognised = 0  # copies found to give the very bytes a parse read (read_pe_as)
        keeps_what_files_gave(self)

    def forget(self) -> None:
        """The app changed files: every file is read again."""
        with self._lock:
            self._entries.clear()
            self._by_file.clear()
            self._by_reads.clear()
            self._by_name.clear()
            self._forgotten += 1

    def get(self, path: Path) -> Union[PEInfo, str]:
        """The file's PEInfo, or a plain-words reason: `Unreadable` when it could not be read, else damaged."""
        try:
            stat = os.stat(path)
        except (OSError, ValueError) as exc:
            return Unreadable(f"the file cannot be read ({getattr(exc, 'strerror', None) or exc})")
        identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns) if stat.st_ino else None
        key = (str(path), identity)
        with self._lock:
            forgotten = self._forgotten
            found = self._entries.get(key) if identity is not None else None
        if found is not None:
            return found
        shared = self._shared(identity) if identity is not None else None
        if shared is not None:
            found = replace(shared, path=str(path)) if isinstance(shared, PEInfo) else shared
        else:
            copy = None
            try:
                copy = self._copy_of(path, stat.st_size)
                found = copy or self._twin_of(read_pe(path), forgotten)
            except PEError as exc:
                found = str(exc)
            except OSError as exc:  # not cached: a lock or a scan is often over by the next look
                return Unreadable(f"the file cannot be read ({exc.strerror or exc})")
            finally:  # whatever happened, a thread waiting for this parse goes on (and parses itself if none)
                self._done(identity, found, forgotten, parsed=copy is None)
        with self._lock:
            if identity is not None and forgotten == self._forgotten:
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
                    self._by_file.clear()
                    self._by_reads.clear()
                    self._by_name.clear()
                self._entries[key] = found
        return found

    def _copy_of(self, path: Path, size: int) -> Optional[PEInfo]:
        """The facts of a file of this name and size parsed before, when this one gives the very bytes it gave at
        every range its parse read (read_pe_as); None: parse it."""
        with self._lock:
            candidates = list(self._by_name.get((size, path.name.lower()), ()))
        for known in candidates:
            found = read_pe_as(path, known)
            if found is not None:
                return found
        return None

    def _twin_of(self, info: PEInfo, forgotten: int) -> PEInfo:
        """The facts of a copy read before whose reads were these very bytes (under this file's path), else these."""
        with self._lock:
            twin = self._by_reads.get((info.size, info.read_digest))
            if twin is None and forgotten == self._forgotten:
                self._by_reads[(info.size, info.read_digest)] = info
                same_name = self._by_name.setdefault((info.size, Path(info.path).name.lower()), [])
                same_name.insert(0, info)  # the newest first; a few kept: each costs its reads to try
                del same_name[_COPIES_TRIED:]
        return info if twin is None else replace(twin, path=info.path)

    def _shared(self, identity: FileIdentity) -> Optional[Union[PEInfo, str]]:
        """The facts of this file, parsed already through another link or being parsed by another thread (waited
        for); None: this caller parses it (and must call _done)."""
        while True:
            with self._lock:
                found = self._by_file.get(identity)
                if found is not None:
                    return found
                parsing = self._parsing.get(identity)
                if parsing is None:
                    self._parsing[identity] = threading.Event()
                    return None
            parsing.wait()

    def _done(self, identity: Optional[FileIdentity], found: Optional[Union[PEInfo, str]], forgotten: int,
              parsed: bool) -> None:
        with self._lock:
            if found is not None:
                self.parsed += parsed
                self.recognised += not parsed
                if identity is not None and forgotten == self._forgotten:
                    self._by_file[identity] = found
            parsing = self._parsing.pop(identity, None) if identity is not None else None
        if parsing is not None:
            parsing.set()


@dataclass(frozen=True)
class MissingExport:
    importer: str
    function: ImportedFunction
    reason: Optional[str] = None  # when the DLL names it but it cannot be used (a forwarder loop)


@dataclass(eq=False)
class Node:
    id: int
    name: str
    path: Optional[Path]
    resolution: Optional[Resolution]  # None for a root
    load_folder: Optional[Path]
    info: Optional[PEInfo] = None
    problem: Optional[str] = None  # the node's own status when it is not ok
    reason: Optional[str] = None
    missing_exports: list[MissingExport] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    incoming: list[Edge] = field(default_factory=list)
    expanded: bool = False

    @property
    def is_leaf(self) -> bool:
        return self.path is None or (self.resolution is not None and self.resolution.is_system)

    @property
    def own_status(self) -> str:
        if self.path is None and self.resolution is not None and not self.resolution.found:
            if self.resolution.unreadable:  # it may be in a folder that could not be read: not surely missing
                return UNREADABLE
            return MISSING if any(e.kind == "import" for e in self.incoming) else MISSING_DELAY
        if self.problem:
            return self.problem
        return MISSING_EXPORT if self.missing_exports else OK

    def shown_reason(self, display_path: Callable[[Path], str] = str) -> Optional[str]:
        """The reason, with a folder that could not be read named as the reader knows it."""
        if self.path is None and self.own_status == UNREADABLE:
            folder, why = self.resolution.unreadable[0]
            return f"the folder {display_path(Path(folder))} could not be read ({why})"
        return self.reason


@dataclass(eq=False)
class Edge:
    source: Node
    target: Node
    kind: str  # "import" or "delay"
    name: str  # the DLL name as the importer spells it
    functions: tuple[ImportedFunction, ...]


class _ForwarderLoop(Exception):
    pass


SHARED_CACHE = PECache()  # one per process: dropped whenever the app changes files (forget_every_file)


class DependencyGraph:
    def __init__(self, loader: LoaderModel, *, cache: Optional[PECache] = None,
                 cancel: Optional[CancelToken] = None) -> None:
        self.loader = loader
        self.cache = cache or PECache()
        self.cancel = cancel
        self.cpu_type = loader.context.cpu_type
        self.nodes: dict[str, Node] = {}
        self.roots: list[Node] = []
        self._statuses: Optional[dict[Node, str]] = None
        self._failed: set[Node] = set()  # nodes with a load-time dependency that cannot load for them

    # -- building ---------------------------------------------------------------------------------------
    def add_root(self, path: Path) -> Node:
        node = self._file_node(path, None, path.parent)
        if node not in self.roots:
            self.roots.append(node)
        return node

    def children(self, node: Node) -> list[Edge]:
        """The node's dependencies, read on first request."""
        if not node.expanded:
            self._expand(node)
        return node.edges

    def expand_all(self, progress: Progress = no_progress) -> None:
        """Expand everything reachable from the roots (breadth-first, each node once)."""
        queue = list(self.roots)
        seen = {id(n) for n in queue}
        done = 0
        while queue:
            check(self.cancel)
            node = queue.pop(0)
            progress(done, done + len(queue) + 1, node.name)
            for edge in self.children(node):
                if id(edge.target) not in seen:
                    seen.add(id(edge.target))
                    queue.append(edge.target)
            done += 1
        progress(done, done, "")

    def _file_node(self, path: Path, resolution: Optional[Resolution], load_folder: Optional[Path]) -> Node:
        key = os.path.normcase(os.path.abspath(path)).lower()
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(len(self.nodes), path.name, path, resolution, load_folder)
            self._statuses = None
        return node

    def _target(self, resolution: Resolution, load_folder: Optional[Path]) -> Node:
        if resolution.path is not None:
            return self._file_node(resolution.path, resolution, load_folder)
        prefix = "missing" if not resolution.found else resolution.rule
        key = f"{prefix}:{resolution.name.lower()}"
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(len(self.nodes), resolution.name, None, resolution, load_folder)
            node.reason = node.shown_reason()
            self._statuses = None
        return node

    def _info(self, node: Node) -> Optional[PEInfo]:
        if node.info is None and node.path is not None and node.problem is None:
            found = self.cache.get(node.path)
            if isinstance(found, str):
                node.problem, node.reason = UNREADABLE if isinstance(found, Unreadable) else CORRUPT, found
                self._statuses = None
            else:
                node.info = found
        return node.info

    def _expand(self, node: Node) -> None:
        node.expanded = True
        self._statuses = None
        info = self._info(node)
        if info is None:
            return
        if self.cpu_type is None:
            self.cpu_type = info.cpu_type
        if node.is_leaf:
            return  # Windows' own DLLs: on ARM64 Windows they are ARM64(X) files that serve x64 programs too
        if info.cpu_type != self.cpu_type:
            node.problem = WRONG_ARCHITECTURE
            node.reason = (f"the file is built for {info.cpu_name}, "
                           f"the program loading it is {CPU_NAMES.get(self.cpu_type, hex(self.cpu_type))}")
            return
        for imported in info.imports:
            resolution = self.loader.resolve(imported.name, node.load_folder, node.name)
            target = self._target(resolution, node.load_folder)
            edge = Edge(node, target, "delay" if imported.delay else "import", imported.name, imported.functions)
            node.edges.append(edge)
            target.incoming.append(edge)
            self._check_exports(edge)

    # -- exports -----------------------------------------------------------------------------------------
    def _check_exports(self, edge: Edge) -> None:
        target = edge.target
        if target.path is None or not edge.functions:
            return
        info = self._info(target)
        if info is None:
            return
        exports = info.exports
        for function in edge.functions if exports is None else exports.not_plain(edge.functions):
            try:
                if not self._exports(target, info, function, set()):
                    target.missing_exports.append(MissingExport(edge.source.name, function))
            except _ForwarderLoop as loop:  # only this export is unusable: the DLL still loads for the others
                target.missing_exports.append(
                    MissingExport(edge.source.name, function, f"it forwards in a loop ({loop})"))

    def _exports(self, node: Node, info: PEInfo, function: ImportedFunction, visiting: set) -> bool:
        exports = info.exports
        if exports is None:
            return False
        ordinal = exports.ordinal_of(function)
        if ordinal is None:
            return False
        forwarder = exports.forwarders.get(ordinal)
        if forwarder is None:
            return True
        key = (node.path, ordinal)
        if key in visiting or len(visiting) >= MAX_FORWARDER_DEPTH:
            raise _ForwarderLoop(" -> ".join(sorted(f"{p.name}#{o}" for p, o in visiting)))
        visiting.add(key)
        dll, _, target_name = forwarder.rpartition(".")
        if not dll:
            return False
        dll = dll if dll.lower().endswith(".dll") else dll + ".dll"
        resolution = self.loader.resolve(dll, node.load_folder, node.name)
        if resolution.path is None:
            return resolution.found  # an API set or a part of Windows: trust it; not found: missing
        target_node = self._file_node(resolution.path, resolution, node.load_folder)
        target_info = self._info(target_node)
        if target_info is None:
            return False
        wanted = (ImportedFunction(ordinal=int(target_name[1:])) if target_name.startswith("#")
                  and target_name[1:].isdigit() else ImportedFunction(name=target_name))
        return self._exports(target_node, target_info, wanted, visiting)

    # -- statuses ----------------------------------------------------------------------------------------
    def status(self, node: Node) -> str:
        return self.statuses()[node]

    def statuses(self) -> dict[Node, str]:
        """Every node's status: its own problem first, else `children-error` when something it needs at load
        time (not delay) cannot load for it. Cycle-safe."""
        if self._statuses is None:
            failed = self._failed = self._children_failed()
            self._statuses = {node: CHILDREN_ERROR if node.own_status == OK and node in failed else node.own_status
                              for node in self.nodes.values()}
        return self._statuses

    def children_error(self, node: Node) -> bool:
        """Something the node needs at load time cannot load for it; true beside its own problem too."""
        self.statuses()
        return node in self._failed

    def _children_failed(self) -> set[Node]:
        # any problem but a missing export stops the DLL loading at all, for every importer
        queue = [n for n in self.nodes.values() if n.own_status in BLOCKING and n.own_status != MISSING_EXPORT]
        failed: set[Node] = set()

        def fail(parent: Node) -> None:
            if parent not in failed:
                failed.add(parent)
                queue.append(parent)  # it cannot load now, so its own importers fail too

        for node in self.nodes.values():  # a missing export alone breaks only the importers that need it
            needing = {m.importer for m in node.missing_exports}
            for edge in node.incoming:
                if edge.kind == "import" and edge.source.name in needing:
                    fail(edge.source)
        while queue:
            for edge in queue.pop().incoming:
                if edge.kind == "import":
                    fail(edge.source)
        return failed

    def walk(self) -> Iterator[Node]:
        return iter(sorted(self.nodes.values(), key=lambda n: n.id))

    # -- output ------------------------------------------------------------------------------------------
    def to_dict(self, display_path: Callable[[Path], str] = str, all_functions: bool = True) -> dict:
        """The JSON form docs/design.md specifies: nodes and edges with statuses. Each edge lists the functions it
        imports; with `all_functions` False only an edge into a DLL with a problem of its own does (a diagnosis
        report of many environments would otherwise hold every import of every DLL, hundreds of thousands of
        names, that no reader of the report needs)."""
        statuses = self.statuses()
        nodes = []
        for node in self.walk():
            resolution = node.resolution
            nodes.append({
                "id": node.id,
                "name": node.name,
                "path": display_path(node.path) if node.path else None,
                "status": statuses[node],
                "machine": node.info.cpu_name if node.info else None,
                "missing_exports": [
                    {"importer": m.importer, "name": m.function.name, "ordinal": m.function.ordinal,
                     **({"reason": m.reason} if m.reason else {})}
                    for m in node.missing_exports],
                "children_error": node in self._failed,  # also beside its own problem, e.g. missing-export
                "rule": "root" if resolution is None else resolution.rule,
                "searched": [] if resolution is None or resolution.path is not None and resolution.rule
                else [display_path(Path(folder)) for _, folder in resolution.tried],
                "api_set_host": resolution.api_set_host if resolution else None,
                "reason": node.shown_reason(display_path),
                "file_version": node.info.file_version if node.info else None,
                "dependent_load_flags": node.info.dependent_load_flags if node.info else None,
                "root": node in self.roots,
            })
        edges = [{"from": e.source.id, "to": e.target.id, "kind": e.kind, "name": e.name,
                  "functions": [str(f) for f in e.functions]
                  if all_functions or statuses[e.target] not in (OK, CHILDREN_ERROR) else []}
                 for node in self.walk() for e in node.edges]
        return {"nodes": nodes, "edges": edges}
