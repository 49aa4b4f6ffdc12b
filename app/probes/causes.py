"""One problem per cause: the findings that show the same root cause, grouped under the one that names it.

Probes answer separate questions, so one missing file shows up several times: torch 2.4.0 without
`libomp140.x86_64.dll` gives `openmp-runtime-missing`, `missing-dll`, `torch-known-bad-build` and, live, the
replay's `import-failed`. A reader counts those as four things to fix. Here they become one Problem: the most
specific finding leads (its title is the problem's), the others are its evidence, and the repairs are listed
once. The grouping follows what the findings are about (a DLL, the VC++ runtime) and, for the replay's error,
the dependency graph: the DLL torch named is linked to the broken DLLs below it. A torch DLL that is gone or
damaged is one cause with `torch-files-missing`, which lists it (one repair, restore-torch-files, fixes both).

Reconciliation: when the live replay imported torch, the static model's blockers for that environment cannot
all be right (the real loader found what the model did not). They become warnings that say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from app.engine.graph import BLOCKING, DependencyGraph
from app.probes.finding import BLOCKER, INFO, SEVERITY_ORDER, WARNING, Finding
from app.resources import known_issues

# The most specific cause leads its problem; the replay's error and the generic DLL findings are evidence.
LEAD_PRIORITY = ("python-32bit", "python-version-unsupported", "torch-wrong-abi", "app-control-blocks",
                 "vc-runtime-missing", "vc-runtime-too-old",
                 "openmp-runtime-missing", "torch-files-missing", "gpu-driver-too-old", "dll-unreadable",
                 "missing-dll", "wrong-architecture", "missing-export", "dll-damaged", "missing-delay-dll",
                 "torch-known-bad-build", "runtime-copy-too-old", "import-failed")
# Findings about one DLL in the load chain: grouped by that DLL (the VC++ runtime's DLLs by the runtime).
DLL_CODES = frozenset({"missing-dll", "missing-delay-dll", "openmp-runtime-missing", "missing-export",
                       "wrong-architecture", "dll-damaged", "dll-unreadable", "app-control-blocks"})
VC_RUNTIME_CODES = frozenset({"vc-runtime-missing", "vc-runtime-too-old"})
TORCH_FILES = "torch-files-missing"  # the code, and the subject of the DLL findings about the files it lists
# Static predictions that a real, successful import contradicts.
STATIC_LOAD_CODES = DLL_CODES | VC_RUNTIME_CODES | {"torch-known-bad-build", "runtime-copy-too-old"}
RUNTIME_COPY = "runtime-copy-too-old"  # an old runtime inside another package: WinError 1114 when it loads first
CONTRADICTED = "contradicted_by_replay"
UNEXPLAINED = "unexplained"  # the replay failed and no check found why


@dataclass
class Problem:
    """One cause, as a reader should count it: a lead finding and the findings that are its evidence."""

    lead: Finding
    evidence: list[Finding] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [self.lead, *self.evidence]

    @property
    def severity(self) -> str:
        return min((f.severity for f in self.findings), key=lambda s: SEVERITY_ORDER.get(s, 9))

    @property
    def environment(self) -> Optional[str]:
        return self.lead.environment

    @property
    def repairs(self) -> list[str]:
        """Every repair of its findings, once, the lead's first."""
        return list(dict.fromkeys(r for f in self.findings for r in f.repairs))

    @property
    def contradicted(self) -> bool:
        """The static model said it stops torch, but the live import worked."""
        return bool(self.lead.evidence.get(CONTRADICTED))

    @property
    def sort_key(self) -> tuple:
        return (SEVERITY_ORDER.get(self.severity, 9), self.environment or "", _lead_rank(self.lead), self.lead.code)


def _lead_rank(finding: Finding) -> int:
    return LEAD_PRIORITY.index(finding.code) if finding.code in LEAD_PRIORITY else len(LEAD_PRIORITY)


def _subject(finding: Finding, torch_files: frozenset[str] = frozenset()) -> Optional[str]:
    """What the finding is about, when other findings can be about the same thing: a DLL, the VC++ runtime, or
    torch's own files gone or changed (`torch_files`: the names torch-files-missing lists for that environment)."""
    if finding.code in VC_RUNTIME_CODES:
        return "vc-runtime"
    if finding.code == TORCH_FILES:
        return TORCH_FILES
    if finding.code == RUNTIME_COPY:
        return RUNTIME_COPY + ":" + str(finding.evidence.get("path") or "").lower()
    dll = finding.evidence.get("dll")
    if finding.code == "torch-known-bad-build":
        dll = finding.evidence.get("missing_dll") if finding.severity == BLOCKER else None
    elif finding.code not in DLL_CODES:
        return None
    if not isinstance(dll, str) or not dll:
        return None
    name = dll.lower()
    if name in known_issues()["vc_runtime_dlls"]:
        return "vc-runtime"
    # a torch DLL that is gone or damaged is one cause with torch-files-missing: restore-torch-files fixes both
    return TORCH_FILES if finding.code in DLL_CODES and name in torch_files else "dll:" + name


def _torch_files(findings: list[Finding]) -> dict[Optional[str], frozenset[str]]:
    """Per environment, the names of the DLLs torch-files-missing lists as gone or changed (lower case)."""
    named: dict[Optional[str], frozenset[str]] = {}
    for finding in findings:
        files = finding.evidence.get("files") if finding.code == TORCH_FILES else None
        if isinstance(files, list):
            names = {f.lower() for f in files if isinstance(f, str) and f.lower().endswith(".dll")}
            named[finding.environment] = named.get(finding.environment, frozenset()) | names
    return named


def _broken_below(graph: DependencyGraph, dll: str) -> list[str]:
    """The subjects of the broken DLLs that the named DLL needs at load time (breadth-first, nearest first)."""
    statuses = graph.statuses()
    start = [node for node in graph.walk() if node.name.lower() == dll.lower()]
    seen = {id(node) for node in start}
    queue, found = list(start), []
    while queue:
        node = queue.pop(0)
        for edge in node.edges:
            target = edge.target
            if edge.kind != "import" or id(target) in seen:
                continue
            seen.add(id(target))
            if statuses.get(target) in BLOCKING:
                found.append(target.name.lower())
                queue.append(target)
    return found


def reconcile(findings: list[Finding]) -> None:
    """Where the live import worked, static blockers about loading become warnings marked as contradicted. Where it
    failed and no check found anything that stops PyTorch, the failure says so in its own words ("our checks
    found nothing, but PyTorch fails to start"), never as if a cause had been found."""
    loaded = {f.environment for f in findings if f.code == "import-ok"}
    for finding in findings:
        if finding.environment in loaded and finding.severity == BLOCKER and finding.code in STATIC_LOAD_CODES:
            finding.severity = WARNING
            finding.evidence[CONTRADICTED] = True
    explained = {f.environment for f in findings if f.severity == BLOCKER and f.code != "import-failed"}
    for finding in findings:
        if finding.code == "import-failed" and finding.variant is None and finding.environment not in explained:
            finding.variant = UNEXPLAINED


def group_by_cause(findings: list[Finding], graphs: Optional[dict[str, DependencyGraph]] = None) -> list[Problem]:
    """The findings as problems, one per cause, most serious first. Every finding is in exactly one problem."""
    graphs = graphs or {}
    groups: dict[tuple, list[Finding]] = {}
    replay_errors: list[Finding] = []
    torch_files = _torch_files(findings)
    for finding in findings:
        subject = _subject(finding, torch_files.get(finding.environment, frozenset()))
        if finding.code == "import-failed" and finding.variant in (None, "crashed", UNEXPLAINED):
            replay_errors.append(finding)
        elif subject is None:
            groups[(finding.environment, "finding", id(finding))] = [finding]
        else:
            groups.setdefault((finding.environment, subject), []).append(finding)
    for error in replay_errors:
        cause = _replay_cause(error, groups, graphs.get(error.environment or ""),
                              torch_files.get(error.environment, frozenset()))
        groups.setdefault(cause, []).append(error)
    problems = []
    for members in groups.values():
        members.sort(key=lambda f: (_lead_rank(f), f.sort_key))
        problems.append(Problem(members[0], members[1:]))
    problems.sort(key=lambda p: p.sort_key)
    return problems


def _replay_cause(error: Finding, groups: dict[tuple, list[Finding]], graph: Optional[DependencyGraph],
                  torch_files: frozenset[str] = frozenset()) -> tuple:
    """The group that explains the replay's error: the DLL it names, else a broken DLL below that one."""
    env = error.environment
    copy = _runtime_copy_cause(error, groups)
    if copy is not None:
        return copy
    dll = error.evidence.get("dll")
    if isinstance(dll, str) and dll:
        candidates = [dll.lower()] + (_broken_below(graph, dll) if graph is not None else [])
        for name in candidates:
            for subject in ("dll:" + name, "vc-runtime" if name in known_issues()["vc_runtime_dlls"] else None,
                            TORCH_FILES if name in torch_files else None):
                if subject and (env, subject) in groups:
                    return (env, subject)
    return (env, "finding", id(error))  # nothing links it to a known cause: it is a problem of its own


def _runtime_copy_cause(error: Finding, groups: dict[tuple, list[Finding]]) -> Optional[tuple]:
    """WinError 1114 with an old runtime copy of another package loaded (the replay's runtime_copies says which
    copy won), or, when the process listed nothing, with a module imported first: that copy's problem."""
    if error.evidence.get("winerror") != 1114:
        return None
    env = error.environment
    loaded = {str(c.get("path") or "").lower() for c in error.evidence.get("runtime_copies") or []
              if isinstance(c, dict)}
    copies = [key for key in groups if key[0] == env and str(key[1]).startswith(RUNTIME_COPY + ":")]
    for key in copies:
        if key[1].split(":", 1)[1] in loaded:
            return key
    return copies[0] if copies and not loaded and error.evidence.get("imported_first") else None


def count_by_severity(problems: list[Problem]) -> dict[str, int]:
    return {s: sum(p.severity == s for p in problems) for s in (BLOCKER, WARNING, INFO)}
