"""The dependency graph as an indented text tree, like Dependency Walker's, for `deps` and text reports."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from app.core.graph import OK, DependencyGraph, Edge, Node

RULE_WORDS = {
    None: "",
    "root": "",
    "api-set": "Windows API set",
    "known-dll": "Windows (KnownDLLs)",
    "dll-folder": "same folder",
    "application-folder": "python.exe folder",
    "added-folder": "torch's DLL folders",
    "system32": "System32",
    "windows-component": "part of Windows",
    "legacy-application-folder": "python.exe folder (retry)",
    "legacy-system32": "System32 (retry)",
    "legacy-system": "Windows\\System (retry)",
    "legacy-windows": "Windows folder (retry)",
    "path-fallback": "PATH only (fragile)",
}


def render_tree(graph: DependencyGraph, display_path: Callable[[Path], str] = str,
                max_depth: int = 32) -> str:
    statuses = graph.statuses()
    lines: list[str] = []
    shown: set[int] = set()

    def label(node: Node, edge: Optional[Edge]) -> str:
        status = statuses[node]
        name = edge.name if edge is not None else display_path(node.path) if node.path else node.name
        parts = [name, status if status == OK else status.upper()]
        rule = RULE_WORDS.get(node.resolution.rule if node.resolution else "root", "")
        if edge is not None and edge.kind == "delay":
            parts.append("delay-load")
        if node.resolution is not None and node.resolution.api_set_host:
            parts.append(f"-> {node.resolution.api_set_host}")
        if rule:
            parts.append(f"({rule})")
        return "  ".join(parts)

    def visit(node: Node, edge: Optional[Edge], depth: int) -> None:
        indent = "    " * depth
        lines.append(indent + label(node, edge))
        detail = indent + "      "
        if node.reason:
            lines.append(f"{detail}why: {node.reason}")
        wanted = [str(m.function) for m in node.missing_exports if edge is None or m.importer == edge.source.name]
        if wanted:
            lines.append(f"{detail}lacks: {', '.join(wanted[:12])}{' ...' if len(wanted) > 12 else ''}")
        if node.path is None and node.resolution is not None and not node.resolution.found:
            if edge is not None and edge.functions:
                wanted = [str(f) for f in edge.functions]
                lines.append(f"{detail}{edge.source.name} needs: {', '.join(wanted[:12])}"
                             f"{' ...' if len(wanted) > 12 else ''}")
            folders = [display_path(Path(folder)) for _, folder in node.resolution.tried]
            lines.append(f"{detail}searched: {'; '.join(dict.fromkeys(folders))}")
        if node.is_leaf or depth >= max_depth:
            return
        if node.id in shown:
            if graph.children(node):
                lines.append(f"{detail}(its dependencies are listed above)")
            return
        shown.add(node.id)
        for child in graph.children(node):
            visit(child.target, child, depth + 1)

    for root in graph.roots:
        visit(root, None, 0)
    return "\n".join(lines)
