"""The dependency graph as an indented text tree, like Dependency Walker's, for `deps` and text reports.

Statuses are the stable codes in English (`ok`, `MISSING`, ...) and words in Chinese (缺失); the rule that found each
DLL is in the reader's words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from app.engine.graph import OK, DependencyGraph, Edge, Node
from app.i18n import words, words_keys

STATUS_WORDS = frozenset(k for k in words_keys() if k.startswith("tree.status."))

MAX_LISTED = 12


def _listed(items: list[str]) -> str:
    return ", ".join(items[:MAX_LISTED]) + (" ..." if len(items) > MAX_LISTED else "")


def render_tree(graph: DependencyGraph, display_path: Callable[[Path], str] = str, lang: str = "en",
                max_depth: int = 32) -> str:
    statuses = graph.statuses()
    lines: list[str] = []
    shown: set[int] = set()

    def label(node: Node, edge: Optional[Edge]) -> str:
        status = statuses[node]
        name = edge.name if edge is not None else display_path(node.path) if node.path else node.name
        shown = f"tree.status.{status}"
        parts = [name, words(shown, lang) if shown in STATUS_WORDS else status if status == OK else status.upper()]
        rule = node.resolution.rule if node.resolution else None
        if edge is not None and edge.kind == "delay":
            parts.append(words("tree.delay", lang))
        if node.resolution is not None and node.resolution.api_set_host:
            parts.append(f"-> {node.resolution.api_set_host}")
        if rule:
            parts.append(f"({words(f'tree.rule.{rule}', lang)})")
        return "  ".join(parts)

    def visit(node: Node, edge: Optional[Edge], depth: int) -> None:
        indent = "    " * depth
        lines.append(indent + label(node, edge))
        detail = indent + "      "
        if node.reason:
            lines.append(detail + words("tree.why", lang, reason=node.reason))
        wanted = [str(m.function) for m in node.missing_exports if edge is None or m.importer == edge.source.name]
        if wanted:
            lines.append(detail + words("tree.lacks", lang, functions=_listed(wanted)))
        if node.path is None and node.resolution is not None and not node.resolution.found:
            if edge is not None and edge.functions:
                lines.append(detail + words("tree.needs", lang, importer=edge.source.name,
                                            functions=_listed([str(f) for f in edge.functions])))
            folders = [display_path(Path(folder)) for _, folder in node.resolution.tried]
            lines.append(detail + words("tree.searched", lang, folders="; ".join(dict.fromkeys(folders))))
        if node.is_leaf or depth >= max_depth:
            return
        if node.id in shown:
            if graph.children(node):
                lines.append(detail + words("tree.listed_above", lang))
            return
        shown.add(node.id)
        for child in graph.children(node):
            visit(child.target, child, depth + 1)

    for root in graph.roots:
        visit(root, None, 0)
    return "\n".join(lines)
