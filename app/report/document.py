"""Reports: the versioned JSON document, a text report (env_report.txt style, with "DLL Dependencies"),
and a self-contained HTML page a person can attach to a forum post. User names are redacted by default."""

from __future__ import annotations

import datetime as _dt
import html
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from app import __version__
from app.engine.graph import DependencyGraph
from app.engine.pe import CPU_NAMES
from app.i18n import words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.probes.causes import count_by_severity, group_by_cause
from app.probes.finding import Finding
from app.report.tree_text import render_tree
from app.resources import resources_folder

SCHEMA = "torch-dll-doctor.diagnosis/2"  # 2: `summary` counts problems (causes); `problems` added
# the profile folder's name runs to the next separator: names may hold spaces ("John Smith")
_USER_IN_PATH = re.compile(r"(?i)([\\/]Users[\\/])(?!<user>)([^\\/\"'\n\r\t,;]+)")
# account names that are ordinary words: replacing them everywhere would garble the text
_COMMON_NAMES = {"user", "users", "admin", "administrator", "owner", "guest", "pc", "default", "public"}


def redact(value: Any, names: Iterable[str] = ()) -> Any:
    """Replace the user's name: the profile folder in every path (…\\Users\\alice\\… -> …\\Users\\<user>\\…),
    and the given account names where they stand as whole words. Keys are redacted as paths only."""
    names = [n for n in names if len(n) >= 3 and n.lower() not in _COMMON_NAMES]
    if isinstance(value, str):
        text = _USER_IN_PATH.sub(r"\1<user>", value)
        for name in names:
            text = re.sub(rf"(?i)(?<![\w<]){re.escape(name)}(?![\w>])", "<user>", text)
        return text
    if isinstance(value, list):
        return [redact(v, names) for v in value]
    if isinstance(value, dict):
        return {redact(k): redact(v, names) for k, v in value.items()}
    return value


def build_document(machine: MachineFacts, environments: list[PythonEnvironment], findings: list[Finding],
                   graphs: dict[str, DependencyGraph], display: Callable[[Path], str], *, lang: str = "en",
                   source: str = "live", source_root: Optional[str] = None, redact_names: Iterable[str] = (),
                   redacted: bool = True, complete: bool = True, elapsed_s: float = 0.0) -> dict:
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
        "elapsed_s": round(elapsed_s, 3),
        "summary": {"blockers": counts["blocker"], "warnings": counts["warning"], "infos": counts["info"],
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
            "torch": {"version": env.torch.version, "build": env.torch.build, "path": shown(env.torch.folder)}
            if env.torch else None,
        } for env in environments],
        "problems": [],
        "findings": [],
        "dependencies": [{"environment": python, **graph.to_dict(display)} for python, graph in graphs.items()],
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


def dependency_trees(graphs: dict[str, DependencyGraph], display: Callable[[Path], str],
                     lang: str = "en") -> dict[str, str]:
    return {python: render_tree(graph, display, lang) for python, graph in graphs.items()}


def diagnosis_report(diagnosis: Any, system: Any, *, lang: str, source: str, source_root: Optional[str] = None,
                     redacted: bool = True) -> tuple[dict, dict[str, str]]:
    """The JSON document and the dependency trees of a finished diagnosis (app.probes.runner.Diagnosis), with
    this computer's user name redacted unless `redacted` is False. The CLI and the wizard both report this way."""
    user = system.variable("USERNAME")
    names = [user] if user and redacted else []
    document = build_document(
        diagnosis.machine, diagnosis.environments, diagnosis.findings, diagnosis.graphs, system.windows_path,
        lang=lang, source=source, source_root=source_root, redact_names=names, redacted=redacted,
        complete=diagnosis.complete, elapsed_s=diagnosis.elapsed_s)
    trees = dependency_trees(diagnosis.graphs, system.windows_path, lang)
    return document, (redact(trees, names) if redacted else trees)


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


def _severity_word(severity: str, lang: str) -> str:
    return words(f"report.severity.{severity}", lang)


def _source_line(document: dict, lang: str) -> str:
    kind = document["source"]["kind"]
    return words(f"report.source.{kind}", lang, root=document["source"].get("root") or "")


def _environment_lines(env: dict, lang: str) -> list[str]:
    app = f" - {env['app']}" if env.get("app") else ""
    lines = [env["python"] or "?", "  " + words("report.environment.line", lang, python_version=env["python_version"]
                                                 or words("report.unknown", lang),
                                                 arch=env["python_arch"] or "?", kind=env["kind"], app=app)]
    torch = env.get("torch")
    lines.append("  " + (words("report.environment.torch", lang, **torch) if torch
                         else words("report.environment.no_torch", lang)))
    return lines


def _summary_lines(document: dict, lang: str) -> list[str]:
    """Whether every check ran (first), then the count of problems: causes, not findings."""
    summary = document["summary"]
    lines = []
    if not document["complete"]:
        failed = [f for f in document["findings"] if f["code"] == "check-failed"]
        lines.append(words("report.incomplete", lang, count=max(1, len(failed))))
    lines.append(words("report.summary.counts", lang, **summary) if summary["blockers"] or summary["warnings"]
                 else words("report.summary.ok", lang))
    return lines


def _loaded_lines(document: dict, lang: str) -> list[str]:
    """Per environment, the runtime copies the live replay's process really loaded, against the prediction."""
    lines = []
    for finding in document["findings"]:
        replayed = finding["code"] in ("import-ok", "import-failed")
        copies = finding["evidence"].get("runtime_copies") if replayed else None
        if not copies:
            continue
        lines.extend(["", f"{finding['environment']}:", words("report.loaded.intro", lang)])
        for copy in copies:
            verdict = (words("report.loaded.unpredicted", lang) if copy["agrees"] is None
                       else words("report.loaded.agrees", lang) if copy["agrees"]
                       else words("report.loaded.differs", lang, predicted=copy["predicted"]))
            lines.append(f"  {copy['dll']}  {copy['path']}  {copy['version'] or words('report.unknown', lang)}"
                         f"  ({verdict})")
    return lines


def _details(finding: dict) -> str:
    details = json.dumps(finding["evidence"], ensure_ascii=False)
    return details[:1500] + (" ..." if len(details) > 1500 else "")


def text_report(document: dict, trees: dict[str, str], lang: str) -> str:
    """A plain-text report, like env_report.txt, that reads well in a forum post."""
    out: list[str] = []

    def heading(text: str) -> None:
        out.extend(["", text, "=" * max(8, len(text.encode("gbk", "replace")))])

    title = words("report.title", lang)
    out.extend([title, "=" * len(title.encode("gbk", "replace")),
                words("report.created", lang, created=document["created"], version=document["tool"]["version"]),
                _source_line(document, lang)])
    if document["redacted"]:
        out.append(words("report.redacted", lang))
    heading(words("report.summary", lang))
    out.extend(_summary_lines(document, lang))
    heading(words("report.findings", lang))
    if not document["problems"]:
        out.append(words("report.no_findings", lang))
    findings = document["findings"]
    for problem in document["problems"]:
        where = problem["environment"] or words("report.whole_machine", lang)
        out.extend(["", f"[{_severity_word(problem['severity'], lang)}] {problem['title']}  ({problem['code']})",
                    f"  {words('report.for_python', lang)}: {where}",
                    f"  {words('report.what_it_means', lang)}: {problem['explanation']}"])
        if problem["contradicted_by_replay"]:
            out.append(f"  {words('report.contradicted', lang)}")
        out.append(f"  {words('report.what_to_do', lang)}: {problem['action']}")
        if problem["repairs"]:
            out.append(f"  {words('report.repairs', lang)}: {', '.join(problem['repairs'])}")
        lead, *evidence = (findings[i] for i in problem["findings"])
        out.append(f"  {words('report.details', lang)}: {_details(lead)}")
        if evidence:
            out.append(f"  {words('report.evidence', lang)}:")
        for finding in evidence:
            out.extend([f"    - {finding['title']}  ({finding['code']})", f"      {_details(finding)}"])
    heading(words("report.machine", lang))
    machine = document["machine"]
    unknown = words("report.unknown", lang)
    none = words("report.none", lang)
    vc = "; ".join(f"{e['arch']} {e['version'] or unknown} ({e['view']})" for e in machine["vc_runtimes"]
                   if e["installed"]) or none
    files = "; ".join(f"{d['path']} {d['version'] or unknown}" for d in machine["runtime_dlls"]) or none
    vs = "; ".join(f"{v['name']} ({len(v['libomp140'])} libomp140)" for v in machine["visual_studio"]) or none
    long_paths = {True: words("report.yes", lang), False: words("report.no", lang), None: unknown}
    rows = [
        ("report.machine.windows", f"{machine['windows_version'] or unknown} ({machine['architecture'] or unknown})"),
        ("report.machine.vc_runtime", vc), ("report.machine.runtime_dlls", files),
        ("report.machine.visual_studio", vs), ("report.machine.nvidia", machine["nvidia_driver"] or none),
        ("report.machine.long_paths", long_paths[machine["long_paths_enabled"]]),
        ("report.machine.language", f"{machine['ui_language'] or unknown} / {machine['code_page'] or unknown}"),
        ("report.machine.variables", ", ".join(f"{k}={v}" for k, v in machine["variables"].items()) or none),
        ("report.machine.path", "; ".join(machine["path"]["effective"]) or none),
    ]
    out.extend(f"{words(key, lang)}: {value}" for key, value in rows)
    heading(words("report.environments", lang))
    if not document["environments"]:
        out.append(words("report.no_environments", lang))
    for env in document["environments"]:
        out.extend(_environment_lines(env, lang))
    loaded = _loaded_lines(document, lang)
    if loaded:
        heading(words("report.loaded", lang))
        out.extend(loaded)
    heading(words("report.dependencies", lang))
    out.append(words("report.dependencies.legend", lang))
    for python, tree in trees.items():
        out.extend(["", f"{python}:", tree])
    return "\n".join(out) + "\n"




def html_report(document: dict, trees: dict[str, str], lang: str) -> str:
    """One self-contained HTML file (inline CSS, no scripts, no external resources)."""
    e = html.escape
    css = (resources_folder() / "report.css").read_text(encoding="utf-8")
    created = words("report.created", lang, created=document["created"], version=document["tool"]["version"])
    parts = [f'<!DOCTYPE html><html lang="{"zh-CN" if lang == "zh_CN" else "en"}"><head><meta charset="utf-8">',
             f"<title>{e(words('report.title', lang))}</title><style>{css}</style></head><body>",
             f"<h1>{e(words('report.title', lang))}</h1>",
             f"<p class='meta'>{e(created)}"
             f"<br>{e(_source_line(document, lang))}"
             + (f"<br>{e(words('report.redacted', lang))}" if document["redacted"] else "") + "</p>"]
    parts.append(f"<h2>{e(words('report.summary', lang))}</h2>"
                 + "".join(f"<p class='summary'>{e(line)}</p>" for line in _summary_lines(document, lang)))
    parts.append(f"<h2>{e(words('report.findings', lang))}</h2>")
    if not document["problems"]:
        parts.append(f"<p>{e(words('report.no_findings', lang))}</p>")
    findings = document["findings"]
    for problem in document["problems"]:
        severity = problem["severity"]
        where = problem["environment"] or words("report.whole_machine", lang)
        members = [findings[i] for i in problem["findings"]]
        evidence = "".join(f"<li>{e(f['title'])} <span class='code'>{e(f['code'])}</span></li>" for f in members[1:])
        details = [{"code": f["code"], "evidence": f["evidence"], "repairs": f["repairs"]} for f in members]
        parts.append(
            f"<div class='card {e(severity)}'><div><span class='tag {e(severity)}'>"
            f"{e(_severity_word(severity, lang))}</span><strong>{e(problem['title'])}</strong> "
            f"<span class='code'>{e(problem['code'])}</span></div>"
            f"<div class='meta'>{e(words('report.for_python', lang))}: {e(where)}</div>"
            f"<p><b>{e(words('report.what_it_means', lang))}:</b> {e(problem['explanation'])}</p>"
            + (f"<p class='note'>{e(words('report.contradicted', lang))}</p>" if problem["contradicted_by_replay"]
               else "")
            + f"<p><b>{e(words('report.what_to_do', lang))}:</b> {e(problem['action'])}</p>"
            + (f"<p><b>{e(words('report.evidence', lang))}:</b></p><ul>{evidence}</ul>" if evidence else "")
            + f"<details><summary>{e(words('report.details', lang))}</summary><pre>"
            f"{e(json.dumps(details, ensure_ascii=False, indent=1))}</pre></details></div>")
    machine = document["machine"]
    parts.append(f"<h2>{e(words('report.machine', lang))}</h2><table>")
    rows = [("report.machine.windows", f"{machine['windows_version'] or words('report.unknown', lang)} "
                                       f"({machine['architecture'] or words('report.unknown', lang)})"),
            ("report.machine.vc_runtime", "; ".join(f"{v['arch']} {v['version'] or words('report.unknown', lang)} "
                                                    f"({v['view']})"
                                                    for v in machine["vc_runtimes"] if v["installed"])
             or words("report.none", lang)),
            ("report.machine.runtime_dlls", "; ".join(f"{d['path']} {d['version'] or words('report.unknown', lang)}"
                                                      for d in machine["runtime_dlls"])
             or words("report.none", lang)),
            ("report.machine.nvidia", machine["nvidia_driver"] or words("report.none", lang)),
            ("report.machine.language", f"{machine['ui_language'] or words('report.unknown', lang)} / "
                                        f"{machine['code_page'] or words('report.unknown', lang)}")]
    parts.extend(f"<tr><th>{e(words(key, lang))}</th><td>{e(str(value))}</td></tr>" for key, value in rows)
    parts.append("</table>")
    parts.append(f"<h2>{e(words('report.environments', lang))}</h2>")
    if not document["environments"]:
        parts.append(f"<p>{e(words('report.no_environments', lang))}</p>")
    for env in document["environments"]:
        lines = _environment_lines(env, lang)
        parts.append(f"<p><code>{e(lines[0])}</code><br>{'<br>'.join(e(line.strip()) for line in lines[1:])}</p>")
    parts.append(f"<h2>{e(words('report.dependencies', lang))}</h2>"
                 f"<p>{e(words('report.dependencies.legend', lang))}</p>")
    for python, tree in trees.items():
        parts.append(f"<details><summary><code>{e(python)}</code></summary><pre>{e(tree)}</pre></details>")
    parts.append("</body></html>")
    return "".join(parts)
