"""Rules of the house that a reader should not have to check by hand."""

from __future__ import annotations

import ast
import re
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


def _top_level_modules() -> set[str]:
    """app's own modules and packages, as import-linter names them."""
    app = REPO / "app"
    return ({f"app.{p.stem}" for p in app.glob("*.py") if p.stem != "__init__"}
            | {f"app.{p.name}" for p in app.iterdir() if (p / "__init__.py").is_file()})


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _named_in_layers(layers: list[str]) -> set[str]:
    names = set()
    for layer in layers:
        for part in layer.replace("|", ":").split(":"):
            names.add(part.strip().strip("()").strip())
    return names


def _left_out(modules: set[str], layers: list[str]) -> set[str]:
    return modules - _named_in_layers(layers)


def test_every_module_of_app_is_in_a_layer():
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    modules = _top_level_modules()
    assert {"app.i18n", "app.cancel", "app.failures", "app.resources", "app.data_folder", "app.system"} <= modules
    assert _left_out(modules, layers) == set()
    assert _named_in_layers(layers) <= modules  # and nothing named that is gone


def test_the_layer_rule_sees_a_module_left_out():
    assert _left_out({"app.system", "app.newcomer"}, ["app.ui", "(app.repair) | app.system"]) == {"app.newcomer"}


def test_the_qt_and_windows_rules_name_every_module_but_their_own():
    contracts = {c["name"]: c for c in _contracts()}
    modules = _top_level_modules()
    assert set(contracts["Only app/ui imports Qt"]["source_modules"]) == modules - {"app.ui"}
    assert set(contracts["Only app/system touches winreg and ctypes"]["source_modules"]) == modules - {
        "app.ui", "app.repair", "app.system"}


HISTORY = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(st|nd|rd|th)|last|next) (session|round)\b"
    r"|\bround (one|two|three|four|five|\d+)\b|\b(issue|item) \d+\b|\bmy own\b|\b(learned|found|done) this session\b"
    r"|/work/|/root/|/home/[a-z]|\bthe same round\b|\.\./shared\b", re.IGNORECASE)
# texts pasted from public threads, quoted as their authors wrote them; and this file, whose examples are the rule's
SKIPPED = ("tests/data/", "tests/unit/test_house_rules.py")  # this file: the rule's own pattern


def _history_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if HISTORY.search(line)]


def test_the_documents_and_the_code_speak_of_the_product_alone():
    """No work sessions, rounds, tracker numbers, first person, or paths of the machine it was built on."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found = {}
    for name in tracked:
        path = REPO / name
        if name.startswith(SKIPPED) or path.suffix in (".png", ".ico", ".qm", ".gz", ".pfx") or not path.is_file():
            continue
        lines = _history_lines(path.read_text(encoding="utf-8", errors="replace"))
        if lines:
            found[name] = lines
    assert found == {}


def test_the_history_rule_sees_history():
    # the examples are put together here, so that this file does not hold the words it looks for
    history = ["Measured in the eighth " + "session.", "round " + "three", "see issue " + "28 item 1",
               "/" + "work/main/app"]
    assert _history_lines("\n".join(history)) == history
    assert _history_lines("What this session did (the wizard's report)\nthe round trip of a path") == []


def _test_module_imports(tree: ast.AST) -> list[int]:
    """Lines that import a test module (a module whose last part starts with `test_`) or anything from one:
    `from tests.x.test_y import ...`, `import tests.x.test_y`, `from tests.x import test_y`, `from .test_y import`;
    and any import of tests/conftest.py."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""] + [f"{node.module or ''}.{alias.name}" for alias in node.names]
        else:
            continue
        if any(module.rsplit(".", 1)[-1].startswith("test_") or module.startswith("tests.conftest")
               for module in modules):  # a conftest gives fixtures through pytest, its helpers live in tests/helpers
            lines.append(node.lineno)
    return sorted(lines)


def test_no_test_module_imports_another():
    """A test module takes its fixtures from a conftest.py (pytest finds them) and its helpers from tests/helpers/,
    never from another test module or a conftest.py: a fixture imported from one is redefined by the test's
    argument of that name (ruff's F811), and an imported autouse fixture runs for every test of the importing module
    too."""
    found = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        found += [f"{path.relative_to(REPO).as_posix()}:{line}: {lines[line - 1].strip()}"
                  for line in _test_module_imports(ast.parse(text))]
    assert found == [], "\n".join(found)


def test_the_import_rule_sees_an_import_of_a_test_module():
    code = ("from tests.gui.test_ui import forward\nimport tests.unit.test_diagnose\n"
            "from tests.helpers.wizard import ready\nfrom tests.unit import test_discovery\n"
            "def helper():\n    from tests.wheels.test_cli import blind_once_the_runtime_is_placed\n"
            "from .test_trust import ctx\nimport tests.conftest\nfrom tests import realfiles\n")
    assert _test_module_imports(ast.parse(code)) == [1, 2, 4, 6, 7, 8]
    assert _test_module_imports(ast.parse("from tests.conftest import real\n")) == [1]


def _ruff_ignores_of(code: str) -> list[str]:
    """The files for which pyproject.toml switches off ruff's rule `code`."""
    import tomllib

    lint = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    return sorted(name for name, codes in lint.get("per-file-ignores", {}).items() if code in codes)


def test_ruff_checks_every_file_for_a_name_defined_twice():
    """ruff's F811 (a name defined again before it was used) holds in every file: no per-file exception in
    pyproject.toml, no file-wide `# ruff: noqa: F811` in the tests."""
    assert _ruff_ignores_of("F811") == []
    file_wide = re.compile(r"^# ruff: noqa: [A-Z0-9, ]*\bF811\b", re.MULTILINE)
    assert [p.relative_to(REPO).as_posix() for p in sorted((REPO / "tests").rglob("*.py"))
            if file_wide.search(p.read_text(encoding="utf-8"))] == []
