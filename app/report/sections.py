"""What a report says, once for every renderer: an ordered list of sections built from the JSON document.

Each section has a stable id (`summary`, `problems`, `computer`, ...), a title in the reader's language and
blocks: paragraphs, labelled facts, tables, problem cards, groups and preformatted text. The text and HTML
renderers only lay these blocks out, so neither can show a fact the other lacks.
"""

from __future__ import annotations

import json
import ntpath
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Union

from app.i18n import started_as, words
from app.inventory.machine import VARIABLE_PREFIXES
from app.resources import resources_folder

MAX_VALUE = 1500  # a detail longer than this (a whole stderr, a long search list) is cut, with " ..."


@dataclass(frozen=True)
class Paragraph:
    text: str
    style: str = ""  # "" | "summary" (the verdict) | "note" (an aside)


@dataclass(frozen=True)
class Fact:
    """A labelled fact ("Windows: 10.0.22631 (AMD64)"); several values are listed one per line."""
    key: str  # stable: the ui_text key of the label
    label: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Items:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Preformatted:
    """Text whose layout matters (a dependency tree): kept as it is, folded away in HTML under `caption`."""
    caption: str
    text: str


@dataclass(frozen=True)
class Group:
    """A heading with its own blocks: one environment, one Visual Studio install."""
    heading: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Card:
    """One problem: its cause, what it means and what to do; `details` are the technical facts of each finding."""
    severity: str  # blocker | warning | info
    severity_word: str
    title: str
    code: str
    blocks: tuple[Block, ...]
    details_label: str
    details: tuple[Group, ...]


Block = Union[Paragraph, Facts, Table, Items, Preformatted, Group, Card]


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Report:
    lang: str
    title: str
    meta: tuple[str, ...]  # created, source, redaction
    sections: tuple[Section, ...] = field(default=())


# in this order; "loaded" only when PyTorch was started for real, "log" only when the wizard adds the end of its log
# (document["log"]: lines, already redacted); "session" only when the wizard repaired something (document["session"]:
# what the first check found, each repair and whether it was undone)
SECTION_IDS = ("summary", "session", "problems", "computer", "visual-studio", "variables", "path", "environments",
               "loaded", "dependencies", "log")


def build_report(document: dict, trees: dict[str, str], lang: str) -> Report:
    """Every section of the report of `document` (app.report.document), with the dependency `trees` as text."""
    meta = [words("report.created", lang, created=document["created"], version=document["tool"]["version"]),
            words(f"report.source.{document['source']['kind']}", lang, root=document["source"].get("root") or "")]
    if document["redacted"]:
        meta.append(words("report.redacted", lang))
    program = document.get("program")
    if program:  # the checks assumed a program that imports something before torch
        first = ", ".join(program["imports_first"])
        if program["app"]:
            meta.append(words("report.program.app_first", lang, app=program["app"], modules=first))
        else:
            meta.append(words("report.program.first", lang, modules=first))
    nothing = document.get("nothing_checked")
    windows = nothing != "no-windows"  # a folder with no Windows in it: nothing about a computer to say
    sections = [_summary(document, lang), _session(document, lang), _problems(document, lang),
                _computer(document, lang) if windows else None,
                _visual_studio(document, lang) if windows else None,
                _variables(document, lang) if windows else None, _path(document, lang) if windows else None,
                _environments(document, lang), _loaded(document, lang),
                _dependencies(trees, lang) if trees or not nothing else None, _log(document, lang)]
    return Report(lang, words("report.title", lang), tuple(meta), tuple(s for s in sections if s is not None))


def _section(section_id: str, title_key: str, lang: str, *blocks: Block) -> Section:
    return Section(section_id, words(title_key, lang), tuple(blocks))


def _fact(key: str, lang: str, *values: str) -> Fact:
    return Fact(key, words(key, lang), tuple(values) or (words("report.none", lang),))


# -- summary and problems -------------------------------------------------------------------------------------
def _summary(document: dict, lang: str) -> Section:
    """Whether every check ran (first), then the count of problems: causes, not findings."""
    summary = document["summary"]
    blocks = []
    if not document["complete"]:
        failed = [f for f in document["findings"] if f["code"] == "check-failed"]
        blocks.append(Paragraph(words("report.incomplete", lang, count=max(1, len(failed))), "summary"))
    nothing = document.get("nothing_checked")
    if nothing:  # no Windows, or no PyTorch: what was and was not found, never "nothing stops PyTorch"
        found = sum(1 for env in document["environments"])
        blocks.append(Paragraph(words(f"report.nothing.{nothing}", lang, pythons=found), "summary"))
    elif summary["blockers"] or summary["warnings"] or not document["complete"]:
        blocks.append(Paragraph(words("report.summary.counts", lang, **summary), "summary"))
    else:
        blocks.append(Paragraph(words("report.summary.ok", lang), "summary"))
    return _section("summary", "report.summary", lang, *blocks)


def _problems(document: dict, lang: str) -> Section:
    if not document["problems"]:  # "no problems" only where every check could see what it checks
        key = ("report.no_findings.nothing_checked" if document.get("nothing_checked")
               else "report.no_findings" if document["complete"] else "report.no_findings.incomplete")
        return _section("problems", "report.findings", lang, Paragraph(words(key, lang)))
    findings = document["findings"]
    cards = []
    for problem in document["problems"]:
        members = [findings[i] for i in problem["findings"]]
        facts = [_fact("report.for_python", lang, problem["environment"] or words("report.whole_machine", lang)),
                 _fact("report.what_it_means", lang, problem["explanation"])]
        blocks: list[Block] = [Facts(tuple(facts))]
        if problem["contradicted_by_replay"]:
            blocks.append(Paragraph(words("report.contradicted", lang), "note"))
        after = [_fact("report.what_to_do", lang, problem["action"])]
        if problem["repairs"]:
            after.append(_fact("report.repairs", lang, ", ".join(problem["repairs"])))
            if problem["environment"]:  # the command that runs each, as a forum helper pastes it back
                after.append(_fact("report.repair_commands", lang,
                                   *(repair_command(document, problem["environment"], r) for r in problem["repairs"])))
        if len(members) > 1:
            after.append(_fact("report.evidence", lang, *(f"{f['title']}  ({f['code']})" for f in members[1:])))
        blocks.append(Facts(tuple(after)))
        details = tuple(Group(f"{f['title']}  ({f['code']})", (Facts(_evidence_facts(f["evidence"], lang)),))
                        for f in members)
        cards.append(Card(problem["severity"], words(f"report.severity.{problem['severity']}", lang),
                          problem["title"], problem["code"], tuple(blocks), words("report.details", lang), details))
    return _section("problems", "report.findings", lang, *cards)


def _evidence_facts(evidence: dict, lang: str) -> tuple[Fact, ...]:
    """A finding's evidence as one labelled line per key; texts stored in both languages in the reader's."""
    labels = evidence_labels()
    return tuple(Fact(key, labels.get(key, {}).get(lang, key), (_evidence_value(value, lang),))
                 for key, value in evidence.items())


@cache
def evidence_labels() -> dict[str, dict[str, str]]:
    """resources/evidence_labels.json: each evidence key's label in each language."""
    return json.loads((resources_folder() / "evidence_labels.json").read_text(encoding="utf-8"))["labels"]


def _evidence_value(value: object, lang: str) -> str:
    text = _plain(value, lang) if value not in (None, "", [], {}) else words("report.none", lang)
    return text[:MAX_VALUE] + (" ..." if len(text) > MAX_VALUE else "")


def _plain(value: object, lang: str, depth: int = 0) -> str:
    """A value of evidence without JSON's brackets and quotes, two levels deep: paths and records one per line
    ("dll: a.dll, functions: f g"), other lists on one; a text stored in both languages in the reader's."""
    if isinstance(value, dict) and "en" in value and all(isinstance(v, str) for v in value.values()):
        return value.get(lang) or value["en"]
    nested = isinstance(value, dict) or isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)
    if depth >= 2 and nested:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_plain(v, lang, depth + 1)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list):
        items = [_plain(v, lang, depth + 1) for v in value]
        one_per_line = depth == 0 and (nested or any("\\" in item for item in items))
        return ("\n" if one_per_line else " " if depth else ", ").join(items)
    return "" if value is None else str(value)


# -- the computer ---------------------------------------------------------------------------------------------
def _computer(document: dict, lang: str) -> Section:
    machine = document["machine"]
    unknown = words("report.unknown", lang)
    long_paths = {True: words("report.yes", lang), False: words("report.long_paths.off", lang), None: unknown}
    facts = [
        _fact("report.machine.windows", lang,
              f"{machine['windows_version'] or unknown} ({machine['architecture'] or unknown})"),
        _fact("report.machine.language", lang,
              f"{machine['ui_language'] or unknown} / {machine['code_page'] or unknown}"),
        _fact("report.machine.long_paths", lang, long_paths[machine["long_paths_enabled"]]),
        _fact("report.machine.vc_runtime", lang, *(f"{e['arch']} {e['version'] or unknown} ({e['view']})"
                                                   for e in machine["vc_runtimes"] if e["installed"])),
        _fact("report.machine.runtime_dlls", lang, *(f"{d['path']}  {d['version'] or unknown}"
                                                     for d in machine["runtime_dlls"])),
        _fact("report.machine.nvidia", lang, machine["nvidia_driver"] or words("report.none", lang)),
    ]
    if machine.get("problems"):
        facts.append(_fact("report.machine.problems", lang, *machine["problems"]))
    return _section("computer", "report.machine", lang, Facts(tuple(facts)))


def _visual_studio(document: dict, lang: str) -> Section:
    installs = document["machine"]["visual_studio"]
    if not installs:
        return _section("visual-studio", "report.visual_studio", lang,
                        Paragraph(words("report.visual_studio.none", lang)))
    groups = [Group(v["name"], (Facts((_fact("report.visual_studio.folder", lang, v["path"] or "?"),
                                       _fact("report.visual_studio.copies", lang, *v["libomp140"]))),))
              for v in installs]
    return _section("visual-studio", "report.visual_studio", lang,
                    Paragraph(words("report.visual_studio.intro", lang)), *groups)


def _variables(document: dict, lang: str) -> Section:
    variables = document["machine"]["variables"]
    intro = Paragraph(words("report.variables.intro", lang, prefixes=", ".join(VARIABLE_PREFIXES)))
    if not variables:
        return _section("variables", "report.variables", lang, intro, Paragraph(words("report.variables.none", lang)))
    table = Table((words("report.variables.name", lang), words("report.variables.value", lang)),
                  tuple((name, value) for name, value in variables.items()))
    return _section("variables", "report.variables", lang, intro, table)


def _path(document: dict, lang: str) -> Section:
    """The PATH folders in the order Windows searches them, each with where it is set."""
    path = document["machine"]["path"]
    machine = {ntpath.normcase(p) for p in path["machine"]}
    user = {ntpath.normcase(p) for p in path["user"]}
    intro = Paragraph(words("report.path.intro", lang))
    if not path["effective"]:
        return _section("path", "report.path", lang, intro, Paragraph(words("report.path.none", lang)))
    rows = []
    for number, folder in enumerate(path["effective"], 1):
        key = ntpath.normcase(folder)
        origin = "machine" if key in machine else "user" if key in user else "process"
        rows.append((str(number), words(f"report.path.origin.{origin}", lang), folder))
    columns = (words("report.path.order", lang), words("report.path.origin", lang), words("report.path.folder", lang))
    return _section("path", "report.path", lang, intro, Table(columns, tuple(rows)))


# -- environments, what torch loaded, the trees ---------------------------------------------------------------
def _environments(document: dict, lang: str) -> Section:
    if not document["environments"]:
        return _section("environments", "report.environments", lang,
                        Paragraph(words("report.no_environments", lang)))
    groups = []
    for env in document["environments"]:
        app = f" - {env['app']}" if env.get("app") else ""
        python = words("report.environment.line", lang, arch=env["python_arch"] or "?", kind=env["kind"], app=app,
                       python_version=env["python_version"] or words("report.unknown", lang))
        torch = env.get("torch")
        torch_line = (words("report.environment.torch", lang, **torch) if torch
                      else words("report.environment.no_torch", lang))
        also = env.get("also_at") or []  # a junction or link to the same folder: one environment, its other paths
        also_line = (words("report.environment.also_at", lang, paths=", ".join(also)),) if also else ()
        groups.append(Group(env["python"] or "?", (Items((python, torch_line, *also_line)),)))
    return _section("environments", "report.environments", lang, *groups)


def _loaded(document: dict, lang: str) -> Section | None:
    """Per environment, the runtime copies the live replay's process really loaded, against the prediction."""
    groups = []
    columns = (words("report.loaded.dll", lang), words("report.loaded.version", lang),
               words("report.loaded.path", lang), words("report.loaded.check", lang))
    for finding in document["findings"]:
        replayed = finding["code"] in ("import-ok", "import-failed")
        copies = finding["evidence"].get("runtime_copies") if replayed else None
        if not copies:
            continue
        rows = tuple((c["dll"], c["version"] or words("report.unknown", lang), c["path"], _verdict(c, lang))
                     for c in copies)
        groups.append(Group(finding["environment"] or "?", (Table(columns, rows),)))
    if not groups:
        return None
    return _section("loaded", "report.loaded", lang, Paragraph(words("report.loaded.intro", lang)), *groups)


def _verdict(copy: dict, lang: str) -> str:
    if copy["agrees"] is None:
        return words("report.loaded.unpredicted", lang)
    return (words("report.loaded.agrees", lang) if copy["agrees"]
            else words("report.loaded.differs", lang, predicted=copy["predicted"]))


def _session(document: dict, lang: str) -> Section | None:
    """What this session did, before the state now that the rest of the report shows: what the first check found,
    each repair made, and whether it was undone since."""
    session = document.get("session")
    if not session:
        return None
    before = session.get("before") or []
    facts = [_fact("report.session.before", lang, *(before or [words("report.session.nothing_before", lang)]))]
    for repair in session.get("repairs") or []:
        facts.append(_fact("report.session.repair", lang, words(f"report.session.{repair['state']}", lang,
                                                                 name=repair["name"], id=repair["id"],
                                                                 when=repair["when"])))
    return _section("session", "report.session", lang, Paragraph(words("report.session.intro", lang)),
                    Facts(tuple(facts)))


def _log(document: dict, lang: str) -> Section | None:
    """The end of the wizard's log: what went wrong in this session, for whoever helps the user."""
    lines = document.get("log")
    if not lines:
        return None
    return _section("log", "report.log", lang, Paragraph(words("report.log.intro", lang)),
                    Preformatted("torch-dll-doctor.log", "\n".join(lines)))


def _dependencies(trees: dict[str, str], lang: str) -> Section:
    return _section("dependencies", "report.dependencies", lang, Paragraph(words("report.dependencies.legend", lang)),
                    *(Preformatted(python, tree) for python, tree in trees.items()))


def repair_command(document: dict, environment: str, action: str) -> str:
    """`python -m app repair --env "..." --action ID`, with where the diagnosis looked: a copied drive's --root,
    the demo computer's --demo; in the command the program was started as."""
    source = document.get("source") or {}
    where = (" --demo" if source.get("kind") == "demo" else
             f' --root "{source["root"]}"' if source.get("kind") == "image" and source.get("root") else "")
    return f'{started_as()} repair{where} --env "{_runnable(environment)}" --action {action}'


_REDACTED_PROFILE = re.compile(r"(?i)^[a-z]:\\Users\\<user>(?=\\|$)")


def _runnable(path: str) -> str:
    """A redacted path as a command can take it: the profile folder as %USERPROFILE%, which cmd expands and the
    app expands itself elsewhere (PowerShell, a copied drive: app/system/typed_path.py)."""
    return _REDACTED_PROFILE.sub("%USERPROFILE%", path, count=1)
