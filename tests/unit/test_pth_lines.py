"""One way to split `.pth` and `._pth` files into lines: pth_lines, as site.addpackage and getpath do, with the
offset of each line's bytes so that a repair changes one line and keeps every other byte."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.inventory.python_path import PthReading, pth_lines

REPO = Path(__file__).resolve().parents[2]
SPLITTER = {"app/inventory/python_path.py": {"pth_lines", "_pth_text"}}  # the one place allowed to split
OTHER_FILES = {"app/inventory/environment.py": {"_read_cfg"}}  # functions that split files other than .pth ones
LINE_BREAK = re.compile(r"\\[nr]|[\n\r]")


def texts(data: bytes, reading) -> list[str]:
    return [line.text for line in pth_lines(data, reading)]


def test_site_from_3_12_4_ends_a_line_where_str_splitlines_does():
    data = "a\x0cb\u2028c\x1cd\x1de\x1ef\x85g\vh\r\ni\rj\n".encode("utf-8")
    assert texts(data, PthReading(utf8_first=True)) == list("abcdefghij")
    lines = pth_lines(data, PthReading(utf8_first=True))
    assert all(data[line.start:].decode("utf-8").startswith(line.text) for line in lines)


def test_site_before_3_12_4_and_getpath_end_lines_their_own_ways():
    data = b"a\x0cb\r\nc\rd\n\xef\xbb\xbfe"
    assert texts(data, PthReading(utf8_first=False, locale="cp1252")) == ["a\x0cb", "c", "d", "\xef\xbb\xbfe"]
    assert texts(data, None) == ["a\x0cb", "c\rd", "\ufeffe"]  # getpath: \n alone ends a line
    assert texts(b"\xef\xbb\xbfLib\r\n", None) == ["Lib"] and pth_lines(b"\xef\xbb\xbfLib\n", None)[0].start == 3


def test_bytes_python_cannot_decode_are_said_and_kept():
    assert pth_lines(b"caf\xe9\n", PthReading(utf8_first=True, locale="utf-8")) is None  # the interpreter stops
    assert texts(b"caf\xe9\n", PthReading(utf8_first=True, locale="cp1252")) == ["caf\xe9"]
    line = pth_lines(b"x\ncaf\xe9\n", None)[1]
    assert line.text == "caf\ufffd" and line.start == 2


def _offenders(path: str, source: str) -> list[str]:
    """In a module that speaks of .pth files, the functions that split text into lines themselves."""
    if not re.search(r"(?<![a-z])pth(?![a-z])", source, re.I):  # .pth, ._pth, PTH_FILE; not "depth"
        return []
    found = []
    allowed = SPLITTER.get(path, set()) | OTHER_FILES.get(path, set())
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name in allowed:
            continue
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
            constants = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if call.func.attr == "splitlines" or (call.func.attr in ("split", "findall", "finditer", "partition")
                                                  and any(LINE_BREAK.search(c) for c in constants)):
                found.append(f"{path}:{call.lineno} {node.name}")
    return found


def test_no_other_function_splits_pth_text_into_lines():
    offenders = []
    for file in sorted((REPO / "app").rglob("*.py")):
        path = file.relative_to(REPO).as_posix()
        offenders += _offenders(path, file.read_text(encoding="utf-8"))
    assert offenders == []


def test_the_rule_sees_a_pth_file_split_by_hand():
    code = ("PTH = 'x.pth'\ndef commented(data):\n    return data.splitlines(keepends=True)\n"
            "def read(text):\n    return re.split(r'\\r\\n|\\n', text)\n"
            "def other(text):\n    return text.split(';')\n")
    assert _offenders("app/x.py", code) == ["app/x.py:3 commented", "app/x.py:5 read"]
    assert _offenders("app/y.py", code.replace("PTH = 'x.pth'", "")) == []
