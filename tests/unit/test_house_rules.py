"""Rules of the house that a reader should not have to check by hand."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MUTATORS = {"append", "extend", "clear", "remove", "insert", "pop", "update", "add", "discard"}


def _is_session(node: ast.AST) -> bool:
    """`session` or `<anything>.session`."""
    return (isinstance(node, ast.Name) and node.id == "session") or (
        isinstance(node, ast.Attribute) and node.attr == "session")


def _writes(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for item in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if isinstance(item, ast.Attribute) and _is_session(item.value):
                    lines.append(node.lineno)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
                and isinstance(node.func.value, ast.Attribute) and _is_session(node.func.value.value)):
            lines.append(node.lineno)
    return lines


def test_only_the_session_writes_its_fields():
    """ui/session.py:Session is written only through its own methods: a page or model that wants it changed asks."""
    offenders = {}
    for path in sorted((REPO / "app" / "ui").rglob("*.py")):
        if path == REPO / "app" / "ui" / "session.py":
            continue
        lines = _writes(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            offenders[str(path.relative_to(REPO))] = lines
    assert offenders == {}


def test_the_rule_sees_a_write():
    code = "self.session.env = None\nsession.outcomes.append(1)\na, session.lang = 1, 2"
    assert sorted(_writes(ast.parse(code))) == [1, 2, 3]
