"""Every regular expression of app/ that may see pasted text, a log or a file from the computer runs in time bounded
by the length of its input: long runs of each kind of character, nested brackets, runs built from the pattern's own
words, and 1 MB lines. Patterns are found by themselves: each module's and class's compiled patterns, and each
`re.compile`/`re.search`... with a literal pattern inside a function (by the source's syntax tree). `explain` as the
command line and the Welcome page's paste box run it is timed on 1 MB too.

Times are measured against a baseline on the same input (a simple linear pattern), so a busy machine moves both."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
import time
from pathlib import Path
from re import _parser  # type: ignore[attr-defined]

import pytest

import app
from app.probes.error_text import classify_error

REPO = Path(__file__).resolve().parents[2]
KB100 = 100_000
RUN_CHARS = "a1. \\/\"':-[({中\n\t"
# Allowed: this many times the baseline's time, and never less than 50 ms per 100 KB.
BASELINE_FACTOR = 50
FLOOR_S_PER_100KB = 0.05
# a linear pattern that tries a few words at every position, as most of app/'s do
_BASELINE = re.compile(r"(?:alpha|beta|gamma|delta)-\d+\.dll", re.I)
_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
ANCHORED = {"match", "fullmatch"}  # tried at the start only: timed as used, since a search would try every start
UNANCHORED = ("search", "findall")
# Patterns that see only the program's own words (resources, names it made itself), never the user's text.
ONLY_OWN_WORDS: dict[str, str] = {}


def _modules() -> list:
    """Every module of app/ (the Qt pages too: the paste box is one), imported."""
    names = [m.name for m in pkgutil.walk_packages(app.__path__, "app.") if m.name != "app.__main__"]
    return [importlib.import_module(name) for name in names]


def _compiled(value: object) -> list[re.Pattern]:
    if isinstance(value, re.Pattern):
        return [value]
    if isinstance(value, (list, tuple)):
        return [p for item in value for p in _compiled(item)]
    return []


def _flags_of(node: ast.AST, module) -> int:
    """The flags an argument spells (re.I, a module's alias of it, a | of them); 0 when it is not one."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flags_of(node.left, module) | _flags_of(node.right, module)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        return int(getattr(re, node.attr, 0))
    if isinstance(node, ast.Name) and isinstance(getattr(module, node.id, None), re.RegexFlag):
        return int(getattr(module, node.id))
    return 0


def _literal_calls(module) -> list[tuple[str, re.Pattern, tuple[str, ...]]]:
    """`re.<call>("literal", ..., flags)` anywhere in a module's source, compiled, with the calls to time."""
    source = Path(module.__file__).read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, (str, bytes))):
            continue
        flag_args = [k.value for k in node.keywords if k.arg == "flags"]
        flag_args += node.args[1:2] if node.func.attr == "compile" else node.args[3:4]
        flags = sum(_flags_of(arg, module) for arg in flag_args)
        calls = (node.func.attr,) if node.func.attr in ANCHORED else UNANCHORED
        found.append((f"{module.__name__}:{node.lineno}", re.compile(first.value, flags), calls))
    return found


def _calls_on(source: str, name: str) -> tuple[str, ...]:
    """The calls to time for a pattern kept in a name: those the module makes on it when all are anchored."""
    used = set(re.findall(rf"\b{re.escape(name.rsplit('.', 1)[-1])}\.(\w+)\(", source))
    return tuple(sorted(used)) if used and used <= ANCHORED else UNANCHORED


def every_pattern() -> dict[str, tuple[re.Pattern, tuple[str, ...]]]:
    """name -> (pattern, the calls to time), each (pattern, flags) once."""
    named: dict[tuple, tuple[str, re.Pattern, tuple[str, ...]]] = {}
    for module in _modules():
        source = Path(module.__file__).read_text(encoding="utf-8")
        values = [(name, value) for name, value in vars(module).items()]
        values += [(f"{name}.{inner}", v) for name, value in vars(module).items()
                   if isinstance(value, type) and value.__module__ == module.__name__
                   for inner, v in vars(value).items()]
        found = [(f"{module.__name__}.{name}", p, _calls_on(source, name)) for name, value in values
                 for p in _compiled(value)]
        named.update({(p.pattern, p.flags): (name, p, calls) for name, p, calls in found})
        for name, pattern, calls in _literal_calls(module):  # a module's compiled pattern is known by its name
            named.setdefault((pattern.pattern, pattern.flags), (name, pattern, calls))
    return {name: (pattern, calls) for name, pattern, calls in named.values()}


def _fragments(pattern: re.Pattern) -> list[str]:
    """The runs of literal characters in a pattern ("could", "dll", "错误"), as the parser sees them."""
    runs: list[str] = []

    def walk(items, current: list[str]) -> None:
        for op, arg in items:
            if op is _parser.LITERAL:
                current.append(chr(arg))
                continue
            if current:
                runs.append("".join(current))
                current.clear()
            for sub in (arg if isinstance(arg, (list, tuple)) else [arg]):
                if isinstance(sub, _parser.SubPattern):
                    walk(sub, [])
                elif isinstance(sub, (list, tuple)):
                    for inner in sub:
                        if isinstance(inner, _parser.SubPattern):
                            walk(inner, [])
        if current:
            runs.append("".join(current))

    source = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode("latin-1")
    walk(_parser.parse(source, pattern.flags & ~re.ASCII if isinstance(pattern.pattern, str) else 0), [])
    return sorted({run for run in runs if run.strip()}) or ["x"]


def adversarial(pattern: re.Pattern, size: int = KB100) -> dict[str, str]:
    """Inputs that make a backtracking pattern slow, each `size` characters long."""
    inputs = {f"run of {ch!r}": ch * size for ch in RUN_CHARS}
    inputs["nested brackets"] = ("([{<" * size)[:size // 2] + (">}])" * size)[:size // 2]
    fragments = _fragments(pattern)
    glued = "".join(fragments)
    inputs["its words glued"] = glued * (size // len(glued) + 1)
    inputs["its words apart"] = " ".join(fragments) * (size // (len(" ".join(fragments)) + 1) + 1)
    for ch in "a1. \\\"中\n":
        inputs[f"its words, then a run of {ch!r}"] = glued + ch * size
        inputs[f"its words and {ch!r}"] = (glued + ch * 40) * (size // (len(glued) + 40) + 1)
    inputs["a DLL name run"] = "a.dll " * (size // 6)
    return {name: text[:size] for name, text in inputs.items()}


def _once(run, text) -> float:
    started = time.perf_counter()
    run(text)
    return time.perf_counter() - started


_baselines: dict[str, float] = {}


def baseline(text: str) -> float:
    """The time a simple linear pattern takes on `text`, searched and listed as each pattern is (kept per text)."""
    if text not in _baselines:
        _baselines[text] = min(_once(lambda s: (_BASELINE.search(s), _BASELINE.findall(s)), text) for _ in range(2))
    return _baselines[text]


def _as_subject(pattern: re.Pattern, text: str):
    return text.encode("utf-8", "surrogatepass") if isinstance(pattern.pattern, bytes) else text


def over_budget(pattern: re.Pattern, text: str, calls: tuple[str, ...] = UNANCHORED) -> float:
    """How many times its budget the pattern took on `text` (its `calls`); measured again when over, so a busy
    moment of the machine is not taken for the pattern."""
    budget = max(BASELINE_FACTOR * baseline(text), FLOOR_S_PER_100KB * len(text) / KB100)
    subject = _as_subject(pattern, text)
    run = [getattr(pattern, call) for call in calls]
    took = _once(lambda s: [call(s) for call in run], subject)
    for _ in range(2):
        if took <= budget:
            break
        took = min(took, _once(lambda s: [call(s) for call in run], subject))
    return took / budget


def slowest(pattern: re.Pattern, inputs: dict[str, str], calls: tuple[str, ...] = UNANCHORED) -> tuple[float, str]:
    """(how many times its budget the slowest input took, that input's name)."""
    return max((over_budget(pattern, text, calls), name) for name, text in inputs.items())


PATTERNS = every_pattern()


def test_the_search_finds_the_patterns_of_modules_classes_and_functions():
    names = set(PATTERNS)
    assert "app.probes.error_text._OWN_WORDS_MISSING" in names  # a module's
    assert any(name.startswith("app.probes.error_text._MESSAGES") for name in names)  # in a list
    assert any(name.startswith("app.probes.error_text:") for name in names)  # inside a function
    assert len(PATTERNS) > 100


@pytest.mark.parametrize("name", sorted(set(PATTERNS) - set(ONLY_OWN_WORDS)))
def test_every_pattern_runs_in_linear_time_on_100_kb(name):
    pattern, calls = PATTERNS[name]
    # 10 KB first: a quadratic pattern fails there in milliseconds, not minutes
    small = {text_name: over_budget(pattern, text, calls)
             for text_name, text in adversarial(pattern, KB100 // 10).items()}
    worst = max(small, key=small.__getitem__)
    assert small[worst] < 1, f"{name} took {small[worst]:.1f}x its budget on {worst} of 10 KB"
    # 100 KB: every run of one character, and what took a share of its budget at 10 KB that growing could make 1
    large = {text_name: text for text_name, text in adversarial(pattern, KB100).items()
             if text_name.startswith("run of") or small[text_name] >= 0.02}
    ratio, worst = slowest(pattern, large, calls)
    assert ratio < 1, f"{name} took {ratio:.1f}x its budget on {worst} of 100 KB"


@pytest.mark.parametrize("name", sorted(set(PATTERNS) - set(ONLY_OWN_WORDS)))
def test_every_pattern_runs_in_bounded_time_on_a_1_mb_line(name):
    pattern, calls = PATTERNS[name]
    for size in (KB100 // 10, 10 * KB100):  # 10 KB first: a quadratic pattern would take hours on 1 MB
        line = ("C:\\Users\\a.b-c d\\ 1:2 'x' \"y\" [z] 中文 " * size)[:size]
        ratio = over_budget(pattern, line, calls)
        assert ratio < 1, f"{name} took {ratio:.1f}x its budget on a line of {size} characters"


def test_the_allowed_patterns_exist():
    assert set(ONLY_OWN_WORDS) <= set(PATTERNS)


def test_the_timing_sees_a_quadratic_pattern():
    quadratic = re.compile(r"\w+\.dll\b")  # from each start, a run of letters is read to its end and given back
    assert slowest(quadratic, {"letters": "a" * 20_000})[0] > 1


@pytest.mark.slow
@pytest.mark.parametrize("run", ["1", ".", "中", "a."])
def test_explain_answers_a_1_mb_paste_in_linear_time(run):
    """What the command line's `explain` and the Welcome page's paste box run, on pastes of one run of 10 KB,
    100 KB and 1 MB: each ten times longer takes at most about ten times as long (a quadratic step: a hundred)."""
    took = []
    for size in (KB100 // 10, KB100, 10 * KB100):
        text = (run * size)[:size]
        took.append(min(_once(classify_error, text) for _ in range(2 if size < 10 * KB100 else 1)))
        assert took[0] < 1.5, f"{took[0]:.2f} s for 10 KB"
        assert len(took) == 1 or took[-1] < 40 * took[-2] + 2, f"{took} s for 10 KB, 100 KB, 1 MB"  # quadratic: 100x


def _explain(argument: str) -> float:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "app", "explain", argument], cwd=REPO, capture_output=True,
                         text=True, encoding="utf-8", errors="replace", timeout=600)
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr[-2000:]
    return time.perf_counter() - started


@pytest.mark.slow
def test_the_command_lines_explain_reads_a_1_mb_log_in_linear_time(tmp_path):
    """`explain FILE` as a person runs it, on a log of one 1 MB line of digits, dots and CJK characters."""
    log = tmp_path / "log.txt"
    log.write_text("1" * KB100 * 4 + "." * KB100 * 3 + "中" * KB100 * 3 + "\n", encoding="utf-8")
    assert _explain(str(log)) < _explain("126") + 60  # 25 s here; before, a 150 KB run alone took minutes
