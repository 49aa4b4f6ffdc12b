"""The report's entry points: the versioned JSON document, redaction (user names, on by default), and
`render_report` in the three formats. What the text and HTML reports say is built once, in
app.report.sections; app.report.text and app.report.html lay it out."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from app import __version__
from app.engine.graph import DependencyGraph
from app.engine.pe import CPU_NAMES
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.probes.causes import count_by_severity, group_by_cause
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.probes.runtime_copies import program_imports
from app.report.html import html_report
from app.report.text import text_report
from app.report.tree_text import render_tree

__all__ = ["REPORT_FORMATS", "SCHEMA", "DependencyTrees", "build_document", "diagnosis_report", "html_report",
           "redact", "render_report", "report_format", "text_report"]
SCHEMA = "torch-dll-doctor.diagnosis/2"  # 2: `summary` counts problems (causes); `problems` added
# the profile folder's name runs to the next separator: names may hold spaces ("John Smith")
_USER_IN_PATH = re.compile(r"(?i)([\\/]Users[\\/])(?!<user>)([^\\/\"'\n\r\t,;]+)")
# account names that are ordinary words: replacing them everywhere would garble the text
_COMMON_NAMES = {"user", "users", "admin", "administrator", "owner", "guest", "pc", "default", "public"}
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")  # kana, CJK ideographs, Hangul


def redact(value: Any, names: Iterable[str] = ()) -> Any:
    """Replace the user's name: the profile folder in every path (…\\Users\\alice\\… -> …\\Users\\<user>\\…),
    and the given account names where they stand as whole words (a Chinese, Japanese or Korean one wherever it
    stands). Keys are redacted as paths only. The patterns
    are made once per call, and a text that holds neither "users" nor a name is passed over (a report of many
    environments holds hundreds of thousands of texts)."""
    names = [n for n in names if n.lower() not in _COMMON_NAMES]
    words = [n for n in names if len(n) >= 3 and not _CJK.search(n)]
    # Chinese, Japanese and Korean names are often two characters, and their text has no spaces between words:
    # such a name is replaced wherever it stands (张伟 in "张伟的桌面" is the name too)
    cjk = [n for n in names if len(n) >= 2 and _CJK.search(n)]
    parts = ([f"(?<![\\w<])(?:{'|'.join(re.escape(n) for n in words)})(?![\\w>])"] if words else []) + \
        [re.escape(n) for n in cjk]
    pattern = re.compile("(?i)" + "|".join(parts)) if parts else None
    needles = re.compile("(?i)" + "|".join(re.escape(n) for n in ["users", *words, *cjk]))
    return _redact(value, pattern, needles)


_USERS = re.compile("(?i)users")


def _redact(value: Any, pattern: Optional[re.Pattern], needles: re.Pattern) -> Any:
    if isinstance(value, str):
        if needles.search(value) is None:
            return value
        text = _USER_IN_PATH.sub(r"\1<user>", value)
        return pattern.sub("<user>", text) if pattern is not None else text
    if isinstance(value, list):
        return [_redact(v, pattern, needles) for v in value]
    if isinstance(value, dict):
        return {_redact(k, None, _USERS): _redact(v, pattern, needles) for k, v in value.items()}
    return value


def _loading(env, shown) -> Optional[dict]:
    """What Python loads (app/inventory/python_path.py): sys.path in order, every torch on it, the one imported."""
    loading = env.loading
    if loading is None:
        return None
    imported = loading.imported
    return {"sys_path": [{"folder": shown(e.folder), "origin": e.origin,
                          "added_by": shown(e.source) if e.source else None} for e in loading.path],
            "torch_copies": [{"folder": shown(c.folder), "kind": c.kind, "origin": c.entry.origin,
                              "imported": c is imported} for c in loading.copies],
            "pth_file": shown(loading.pth_file) if loading.pth_file else None,
            "user_site": shown(loading.user_site) if loading.user_site else None, "user_site_on": loading.user_site_on,
            "unseen": [{"folder": path, "origin": origin} for path, origin in loading.unseen],
            "variables": [{"name": v.name, "value": v.value, "scope": v.scope} for v in loading.variables],
            "interpreter": {"home": loading.interpreter.home, "exists": loading.interpreter.exists,
                            "made_with": loading.interpreter.made_with, "runs": loading.interpreter.runs}
            if loading.interpreter else None}


def build_document(machine: MachineFacts, environments: list[PythonEnvironment], findings: list[Finding],
                   graphs: dict[str, DependencyGraph], display: Callable[[Path], str], *, lang: str = "en",
                   source: str = "live", source_root: Optional[str] = None, redact_names: Iterable[str] = (),
                   redacted: bool = True, complete: bool = True, elapsed_s: float = 0.0,
                   nothing_checked: Optional[str] = None,
                   program: Optional[dict] = None) -> dict:
    def shown(path: Optional[Path]) -> Optional[str]:
        return display(path) if path is not None else None

    problems = group_by_cause(findings, graphs)
    findings = [f for problem in problems for f in problem.findings]  # each problem's findings together
    index = {id(f): number for number, f in enumerate(findings)}
    counts = count_by_severity(problems)
    document = {
        "schema": SCHEMA,
        "tool": {"name": "Torch DLL Doctor", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "language": lang,
        "source": {"kind": source, "root": source_root},
        "redacted": redacted,
        "complete": complete,
        "nothing_checked": nothing_checked,  # "no-windows" / "no-torch": nothing was there to check
        "elapsed_s": round(elapsed_s, 3),
        "program": program,  # {"app", "imports_first"}: the program the checks assumed, when the user named one
        "summary": {"blockers": counts[BLOCKER], "warnings": counts[WARNING], "infos": counts[INFO],
                    "findings": len(findings)},
        "machine": {
            "windows_version": machine.windows_version, "windows_build": machine.windows_build,
            "architecture": machine.architecture, "code_page": machine.code_page, "ui_language": machine.ui_language,
            "long_paths_enabled": machine.long_paths_enabled,
            "vc_runtimes": [{"arch": e.arch, "view": e.view, "installed": e.installed, "version": e.version}
                            for e in machine.vc_runtimes],
            "runtime_dlls": [{"folder": d.folder, "name": d.name, "path": shown(d.path), "version": d.version}
                             for d in machine.runtime_dlls],
            "visual_studio": [{"name": v.name, "path": shown(v.path), "libomp140": [shown(p) for p in v.libomp140]}
                              for v in machine.visual_studio],
            "nvidia_driver": machine.nvidia_driver, "nvidia_driver_source": machine.nvidia_driver_source,
            "path": {"machine": machine.path_machine, "user": machine.path_user, "effective": machine.path_effective},
            "variables": machine.variables, "problems": machine.problems,
        },
        "environments": [{
            "python": shown(env.python), "python_version": env.python_version,
            "python_arch": CPU_NAMES.get(env.python_cpu_type or 0) if env.python_cpu_type else None,
            "kind": env.kind, "prefix": shown(env.exec_prefix), "app": env.app, "found_by": env.found_by,
            "unread_install": env.unread_install, "also_at": [shown(p) for p in env.also_at],
            "torch": {"version": env.torch.version, "build": env.torch.build, "path": shown(env.torch.folder)}
            if env.torch else None,
            "python_loading": _loading(env, shown),
        } for env in environments],
        "problems": [],
        "findings": [],
        "dependencies": [{"environment": python, **graph.to_dict(display, all_functions=False)}
                         for python, graph in graphs.items()],
    }
    for number, problem in enumerate(problems):
        text = problem.lead.text(lang)
        document["problems"].append({
            "code": problem.lead.code, "severity": problem.severity, "title": text.title,
            "explanation": text.explanation, "action": text.action, "repairs": problem.repairs,
            "environment": problem.environment, "contradicted_by_replay": problem.contradicted,
            "findings": [index[id(f)] for f in problem.findings]})
        for finding in problem.findings:
            text = finding.text(lang)
            document["findings"].append({
                "code": finding.code, "severity": finding.severity, "title": text.title,
                "explanation": text.explanation, "action": text.action, "evidence": finding.evidence,
                "repairs": finding.repairs, "environment": finding.environment, "variant": finding.variant,
                "problem": number})
    return redact(document, redact_names) if redacted else document


class DependencyTrees(Mapping):
    """The dependency trees as text, by environment (its python.exe, redacted as a key is), each drawn when it is
    first read: a JSON report has none, and a diagnosis of many environments would draw them all for nothing.
    `names`: the account names to redact, None for none."""

    def __init__(self, graphs: dict[str, DependencyGraph], display: Callable[[Path], str], lang: str = "en",
                 names: Optional[list[str]] = None) -> None:
        self._graphs, self._display, self._lang, self._names = graphs, display, lang, names
        self._keys = {(_redact(python, None, _USERS) if names is not None else python): python for python in graphs}
        self._drawn: dict[str, str] = {}

    def __getitem__(self, python: str) -> str:
        drawn = self._drawn.get(python)
        if drawn is None:
            tree = render_tree(self._graphs[self._keys[python]], self._display, self._lang)
            drawn = self._drawn[python] = redact(tree, self._names) if self._names is not None else tree
        return drawn

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def diagnosis_report(diagnosis: Any, system: Any, *, lang: str, source: str, source_root: Optional[str] = None,
                     redacted: bool = True) -> tuple[dict, DependencyTrees]:
    """The JSON document and the dependency trees of a finished diagnosis (app.probes.runner.Diagnosis), with
    this computer's user name redacted unless `redacted` is False. The CLI and the wizard both report this way."""
    user = system.variable("USERNAME")
    names = [user] if user and redacted else []
    document = build_document(
        diagnosis.machine, diagnosis.environments, diagnosis.findings, diagnosis.graphs, system.windows_path,
        lang=lang, source=source, source_root=source_root, redact_names=names, redacted=redacted,
        complete=diagnosis.complete, elapsed_s=diagnosis.elapsed_s, program=_program(diagnosis),
        nothing_checked=getattr(diagnosis, "nothing_checked", None))
    return document, DependencyTrees(diagnosis.graphs, system.windows_path, lang, names if redacted else None)


def _program(diagnosis: Any) -> Optional[dict]:
    """The program the checks assumed, with what it imports before torch (its app's known imports, then the
    modules named), or None when the user named none."""
    program = getattr(diagnosis, "program", None)
    if program is None or not (program.app or program.imports_first):
        return None
    return {"app": program.app, "imports_first": program_imports(program)}


REPORT_FORMATS = ("text", "html", "json")


def report_format(path: str) -> str:
    """The format a file name asks for: .html/.htm a web page, .json the JSON document, anything else text."""
    suffix = Path(path).suffix.lower()
    return "html" if suffix in (".html", ".htm") else "json" if suffix == ".json" else "text"


def render_report(document: dict, trees: dict[str, str], lang: str, fmt: str) -> str:
    if fmt == "html":
        return html_report(document, trees, lang)
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False)
    return text_report(document, trees, lang)
