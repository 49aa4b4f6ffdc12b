"""The plain-text report, like env_report.txt, that reads well in a forum post: the sections of
app.report.sections laid out with underlined headings, aligned tables and indented groups."""

from __future__ import annotations

import unicodedata

from app.i18n import words
from app.report.sections import Block, Card, Facts, Group, Items, Paragraph, Preformatted, Report, Table, build_report


def text_report(document: dict, trees: dict[str, str], lang: str) -> str:
    return render_text(build_report(document, trees, lang))


def render_text(report: Report) -> str:
    colon = words("report.colon", report.lang)
    out = [report.title, _underline(report.title), *report.meta]
    for section in report.sections:
        out.extend(["", section.title, _underline(section.title, minimum=8)])
        for number, block in enumerate(section.blocks):
            if number and isinstance(block, (Card, Group, Preformatted)):
                out.append("")
            out.extend(_block(block, "", colon))
    return "\n".join(out) + "\n"


def width(text: str) -> int:
    """Columns a text takes in a monospaced font: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _underline(title: str, minimum: int = 0) -> str:
    return "=" * max(minimum, width(title))


def _block(block: Block, indent: str, colon: str) -> list[str]:
    if isinstance(block, Paragraph):
        return [indent + block.text]
    if isinstance(block, Facts):
        lines = []
        for fact in block.facts:
            if len(fact.values) == 1 and "\n" not in fact.values[0]:
                lines.append(f"{indent}{fact.label}{colon}{fact.values[0]}")
            else:
                lines.append(f"{indent}{fact.label}{colon.strip()}")
                lines.extend(f"{indent}    {line}" for value in fact.values for line in value.splitlines())
        return lines
    if isinstance(block, Table):
        return _table(block, indent)
    if isinstance(block, Items):
        return [f"{indent}- {item}" for item in block.items]
    if isinstance(block, Preformatted):
        return [f"{indent}{block.caption}{colon.strip()}", *(indent + line for line in block.text.splitlines())]
    if isinstance(block, Group):
        return [f"{indent}{block.heading}"] + [line for b in block.blocks for line in _block(b, indent + "  ", colon)]
    if isinstance(block, Card):
        lines = [f"{indent}[{block.severity_word}] {block.title}  ({block.code})"]
        lines.extend(line for b in block.blocks for line in _block(b, indent + "  ", colon))
        lines.append(f"{indent}  {block.details_label}{colon.strip()}")
        lines.extend(line for group in block.details for line in _block(group, indent + "    ", colon))
        return lines
    raise TypeError(f"no text layout for {type(block).__name__}")


def _table(table: Table, indent: str) -> list[str]:
    """Columns padded to their widest cell; the last column (a path, a verdict) is never padded."""
    rows = [table.columns, *table.rows]
    widths = [max(width(row[i]) for row in rows) for i in range(len(table.columns) - 1)]

    def line(row: tuple[str, ...]) -> str:
        cells = [cell + " " * (widths[i] - width(cell)) for i, cell in enumerate(row[:-1])]
        return (indent + "  ".join([*cells, row[-1]])).rstrip()

    return [line(table.columns), indent + "  ".join("-" * w for w in [*widths, width(table.columns[-1])]),
            *(line(row) for row in table.rows)]
