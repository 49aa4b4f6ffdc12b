"""torch's files against its install record: quarantined or half-installed files, and an install that pip cut short
at Windows' path limit (long paths off: no file whose path reaches 260 characters can be created)."""

from __future__ import annotations

import ntpath
from typing import Iterator

from app.i18n import LANGUAGES, words
from app.inventory.integrity import check_torch_files
from app.inventory.security_events import (
    DEFENDER,
    DEFENDER_LOG,
    TOO_LARGE,
    SecurityEvent,
    SecurityLog,
    evidence_lines,
    path_key,
    security_log,
)
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding

MAX_PATH = 260  # a path of 260 characters or more cannot be created while LongPathsEnabled is 0
LOADS = (".dll", ".pyd", ".py")  # a file `import torch` reads: without it the import, or a part of torch, fails
SHOWN_FILES = 40  # the evidence names this many files; `count` says how many there are


def run(ctx: ProbeContext) -> Iterator[Finding]:
    if ctx.env is None or ctx.env.torch is None:
        return
    report = check_torch_files(ctx.env, cancel=ctx.cancel, shown_site=ctx.display(ctx.env.site_packages),
                               seen=ctx.seen, listings=ctx.listings)
    if report.record is None:  # installed without pip's record (conda, a copied folder): nothing to compare with,
        init = ctx.env.torch.folder / "__init__.py"  # but without its __init__.py torch cannot be PyTorch at all
        if not init.is_file():
            yield ctx.finding("torch-files-missing", BLOCKER, {
                "files": ["__init__.py"], "count": 1, "missing": ["torch/__init__.py"], "missing_count": 1,
                "folder": ctx.display(ctx.env.torch.folder), "init_missing": True, "record": None},
                ["start-fresh"], variant="no-record")
        else:  # nothing else could be compared: not "all clear" (the diagnosis is incomplete)
            yield ctx.finding("check-failed", INFO, {
                "check": PROBE.name, "probe": PROBE.id, "error": "no install record (RECORD)",
                "folder": ctx.display(ctx.env.torch.folder), "version": ctx.env.torch.version},
                variant="record-missing")
        return
    if report.problem:  # the record is there but cannot be read (denied, damaged): the files were not compared
        yield ctx.finding("check-failed", INFO, {
            "check": PROBE.name, "probe": PROBE.id, "error": report.problem, "record": ctx.display(report.record),
            "version": ctx.env.torch.version}, variant="record-unreadable")
        return
    changed = report.missing + report.size_changed + report.hash_changed
    if not changed:
        return
    loads = any(name.lower().endswith(LOADS) for name in changed)
    at_limit = report.longest_missing >= MAX_PATH and ctx.machine.long_paths_enabled is not True
    repairs = ["enable-long-paths", "restore-torch-files"] if at_limit else ["restore-torch-files"]
    init_missing = "torch/__init__.py" in {name.lower() for name in report.missing}
    evidence = {
        "files": _shown(changed), "count": len(changed),
        "missing": report.missing[:SHOWN_FILES], "missing_count": len(report.missing),
        "size_changed": report.size_changed[:SHOWN_FILES], "record": ctx.display(report.record),
        "checked": report.checked, "folder": ctx.display(ctx.env.torch.folder), "init_missing": init_missing,
        "longest_path": report.longest_missing, "long_paths_enabled": ctx.machine.long_paths_enabled}
    log = security_log(ctx.system)
    taken = _taken(ctx, log, report.missing + report.size_changed)
    evidence.update(taken)
    variant = "path-limit" if at_limit else "security" if taken else None
    yield ctx.finding("torch-files-missing", BLOCKER if loads else WARNING, evidence, repairs, variant=variant)
    yield from _unread_logs(ctx, log)


def _taken(ctx: ProbeContext, log: SecurityLog, changed: list[str]) -> dict:
    """The evidence of Windows Security's log for these files (RECORD paths) when it took one of them: the newest
    such action's date, threat and action, every record that names them, and what else the same detection took.
    Empty when no record names them or none took them: the cause is then not said as fact."""
    site = ctx.env.site_packages
    named: dict[str, list[SecurityEvent]] = {}
    for name in changed:
        shown = ctx.display(site.joinpath(*name.split("/"))) if site is not None else None
        events = log.naming(shown) if shown else []
        if events:
            named[shown] = events
    takes = sorted((e for events in named.values() for e in events if e.takes and e.kind == DEFENDER),
                   key=lambda e: e.time, reverse=True)
    if not takes:
        return {}
    lead = takes[0]
    lead_file = next(path for path, events in named.items() if lead in events)
    also = [p for p in log.taken_with(lead) if path_key(p) != path_key(lead_file)]
    events = sorted(set(e for found in named.values() for e in found), key=lambda e: (e.time, e.takes),
                    reverse=True)[:SHOWN_FILES]
    return {"security_file": ntpath.basename(lead_file), "security_date": lead.time.strftime("%Y-%m-%d"),
            "security_threat": lead.name or "-", "security_action": said_action(lead.action),
            "security_files": sorted(named)[:SHOWN_FILES],
            "security_also_taken": ([ntpath.basename(p) for p in also[:SHOWN_FILES]]  # names: the card shows them
                                    or _in_both_languages("security.also_taken.none")),
            "security_events": evidence_lines(events)}


def _unread_logs(ctx: ProbeContext, log: SecurityLog) -> Iterator[Finding]:
    """What kept Defender's log from telling who took the files, as a fact worth knowing beside them."""
    for channel, note in log.notes:
        if channel == DEFENDER_LOG.channel and note != TOO_LARGE:  # a large log's newest part is read, by design
            yield ctx.finding("security-log-unread", INFO, {"log": channel, "why": note}, variant=note)


def _shown(changed: list[str]) -> list[str]:
    """The names of every DLL and extension module among them (other findings are grouped by these), then the
    first others."""
    names = [name.rsplit("/", 1)[-1] for name in changed]
    loading = [n for n in names if n.lower().endswith((".dll", ".pyd"))]
    return loading + [n for n in names if not n.lower().endswith((".dll", ".pyd"))][:SHOWN_FILES]


def said_action(action: str) -> dict[str, str]:
    """What Windows Security did, in each language ("quarantined", "隔离")."""
    return _in_both_languages(f"security.action.{action}")


def _in_both_languages(key: str) -> dict[str, str]:
    return {lang: words(key, lang) for lang in LANGUAGES}


PROBE = Probe("integrity", ENVIRONMENT, run)
