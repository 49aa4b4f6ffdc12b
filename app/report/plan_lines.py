"""A repair plan's changes in the reader's words, for the command line and the wizard's plan page."""

from __future__ import annotations

from app.i18n import words
from app.probes.finding import LIST_SEPARATOR
from app.repair.plan import Plan
from app.report.units import size_text

SHOWN_ONE_BY_ONE = 12  # more changes of one kind of file than this are said as one line: how many, where, how much
SUMMED_KINDS = ("restore-file", "repair-file")


def change_lines(plan: Plan, lang: str) -> list[str]:
    """The plan's changes in the reader's words, for the command line and the wizard: each one, or, for many files
    of one kind (an install cut short puts back thousands), how many, in which folders (the three with most) and
    how many bytes."""
    lines: list[str] = []
    for kind in dict.fromkeys(c.kind for c in plan.changes):
        changes = [c for c in plan.changes if c.kind == kind]
        if kind not in SUMMED_KINDS or len(changes) <= SHOWN_ONE_BY_ONE:
            lines += [words(f"cli.repair.change.{kind}", lang, **c.to_dict()) for c in changes]
            continue
        folders: dict[str, int] = {}
        for change in changes:
            folder = change.target.rpartition("\\")[0]
            folders[folder] = folders.get(folder, 0) + 1
        top = sorted(folders.items(), key=lambda item: (-item[1], item[0]))[:3]
        lines.append(words(f"cli.repair.change.{kind}.many", lang, count=len(changes), source=changes[0].source,
                           folder_count=len(folders), size=size_text(sum(c.size or 0 for c in changes)),
                           folders=LIST_SEPARATOR[lang].join(f"{f} ({n})" for f, n in top)))
    return lines
