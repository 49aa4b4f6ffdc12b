"""The HTML report: one self-contained page (resources/report.css inline, no scripts, nothing fetched) a person
can attach to a forum post. The sections of app.report.sections, each a <section id="...">; every text is
escaped."""

from __future__ import annotations

from html import escape

from app.report.sections import Block, Card, Facts, Group, Items, Paragraph, Preformatted, Report, Table, build_report
from app.resources import resources_folder


def html_report(document: dict, trees: dict[str, str], lang: str) -> str:
    return render_html(build_report(document, trees, lang))


def render_html(report: Report) -> str:
    css = (resources_folder() / "report.css").read_text(encoding="utf-8")
    e = escape
    parts = [f'<!DOCTYPE html><html lang="{"zh-CN" if report.lang == "zh_CN" else "en"}"><head><meta charset="utf-8">',
             f"<title>{e(report.title)}</title><style>{css}</style></head><body>",
             f"<h1>{e(report.title)}</h1>", f"<p class='meta'>{'<br>'.join(e(line) for line in report.meta)}</p>"]
    for section in report.sections:
        parts.append(f"<section id='{e(section.id)}'><h2>{e(section.title)}</h2>")
        parts.extend(_block(block) for block in section.blocks)
        parts.append("</section>")
    parts.append("</body></html>")
    return "".join(parts)


def _lines(values: tuple[str, ...]) -> str:
    return "<br>".join(escape(line) for value in values for line in value.splitlines() or [""])


def _block(block: Block) -> str:
    e = escape
    if isinstance(block, Paragraph):
        return f"<p class='{e(block.style)}'>{e(block.text)}</p>" if block.style else f"<p>{e(block.text)}</p>"
    if isinstance(block, Facts):
        rows = "".join(f"<tr><th>{e(f.label)}</th><td>{_lines(f.values)}</td></tr>" for f in block.facts)
        return f"<table class='facts'>{rows}</table>"
    if isinstance(block, Table):
        head = "".join(f"<th>{e(c)}</th>" for c in block.columns)
        body = "".join("<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in block.rows)
        return f"<table class='grid'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(block, Items):
        return "<ul>" + "".join(f"<li>{e(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Preformatted):
        return f"<details><summary><code>{e(block.caption)}</code></summary><pre>{e(block.text)}</pre></details>"
    if isinstance(block, Group):
        return (f"<div class='group'><h3><code>{e(block.heading)}</code></h3>"
                + "".join(_block(b) for b in block.blocks) + "</div>")
    if isinstance(block, Card):
        severity = e(block.severity)
        details = "".join(f"<h4>{e(g.heading)}</h4>" + "".join(_block(b) for b in g.blocks) for g in block.details)
        return (f"<div class='card {severity}'><div><span class='tag {severity}'>{e(block.severity_word)}</span>"
                f"<strong>{e(block.title)}</strong> <span class='code'>{e(block.code)}</span></div>"
                + "".join(_block(b) for b in block.blocks)
                + f"<details><summary>{e(block.details_label)}</summary>{details}</details></div>")
    raise TypeError(f"no HTML layout for {type(block).__name__}")
