"""The one confinement rule (app/system/confine.py) for paths read from files a user or a package can write, and
the list of every place that reads such a file and joins a path: a new join there that does not go through the
rule fails this test until it does, or until it is listed below with why it is confined by construction."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from app.repair.journal import _line, _record
from app.system.confine import host_absolute, inside, relative_parts, windows_absolute

APP = Path(__file__).resolve().parents[2] / "app"

# Calls that hand a function text read from a file a user or a package can write: RECORD, a conda record, a
# launcher's settings, pyvenv.cfg, a .pth or ._pth file, the journal.
READERS = {"read_record", "record_lines", "_parsed_record", "pth_lines", "_read_cfg", "_json_value", "_read",
           "_shortcut_folder", "steps", "_record"}
# The functions such text is handed to as an argument: a .pth line, a setting's folder, an intent an undo replays.
TAKERS = {("app/inventory/python_path.py", name) for name in ("entry_folder", "_pth_target", "_resolve",
                                                             "host_folder", "read_interpreter")} | {
    ("app/repair/changes/files.py", "undo"), ("app/repair/changes/files.py", "_put_back"),
    ("app/repair/changes/renames.py", "undo"), ("app/repair/changes/packages.py", "undo")}
# The rule itself, and the one gate from a Windows path to this machine's (System.host_path takes whole Windows
# paths only: test_host_path_takes_only_whole_windows_paths).
RULE = {"inside", "relative_parts", "windows_absolute", "host_absolute", "host_path"}
_INTENT = "an intent's paths keep the rule when the journal is read (journal._confined), or the line is damaged"
# Joins in those functions that are confined by construction, each with why.
REVIEWED = {
    ("app/repair/changes/files.py", "undo", "Path(intent['target'])"): _INTENT,
    ("app/repair/changes/files.py", "undo", "transaction.folder / before['backup']"): _INTENT,
    ("app/repair/changes/files.py", "_put_back", "transaction.folder / before['backup']"): _INTENT,
    ("app/repair/changes/packages.py", "undo", "Path(intent['site_packages'])"): _INTENT,
    ("app/repair/changes/renames.py", "undo", "Path(intent['source'])"): _INTENT,
    ("app/repair/changes/renames.py", "undo", "Path(intent['target'])"): _INTENT,
    ("app/repair/journal.py", "__init__", "folder / LOCK"): "the lock's own constant name",
}


def _joins(function: ast.AST) -> list[str]:
    """Each path join in `function` whose added part is not a constant: `a / b`, os.path.join, joinpath, Path(x)."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and not _constant(node.right):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("os.path.join", "ntpath.join") or name.endswith(".joinpath"):
                if not all(_constant(a) for a in node.args[1:] if name != "joinpath") or \
                        (name.endswith(".joinpath") and not all(_constant(a) for a in node.args)):
                    found.append(ast.unparse(node))
            elif name == "Path" and node.args and isinstance(node.args[0], ast.Subscript):
                found.append(ast.unparse(node))
    return found


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.JoinedStr) and all(
        isinstance(v, ast.Constant) for v in node.values))


def _calls(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _unconfined() -> dict[tuple[str, str], list[str]]:
    """Every function that reads such text and joins a path without the rule: {(file, function): [joins]}."""
    found = {}
    for path in sorted(APP.rglob("*.py")):
        relative = path.relative_to(APP.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = _calls(node)
            if not (calls & READERS or (relative, node.name) in TAKERS):
                continue
            joins = [j for j in _joins(node) if (relative, node.name, j) not in REVIEWED]
            if joins and not calls & RULE:
                found[(relative, node.name)] = joins
    return found


def test_every_reader_of_a_writable_file_joins_paths_through_the_one_rule():
    assert _unconfined() == {}


def test_the_listing_finds_a_reader_that_joins_on_its_own(tmp_path, monkeypatch):
    module = tmp_path / "app" / "probes" / "new_probe.py"
    module.parent.mkdir(parents=True)
    module.write_text("def owned(site, record):\n    return [site / e.path for e in read_record(record)]\n")
    monkeypatch.setattr(sys.modules[__name__], "APP", tmp_path / "app")
    assert list(_unconfined()) == [("app/probes/new_probe.py", "owned")]


@pytest.mark.parametrize("line", ["../../../../../bob/Tools/Render/libiomp5md.dll", "torch/lib/../../../x.dll",
                                  "C:/Users/bob/x.dll", "c:x.dll", "/etc/passwd", "\\\\server\\share\\x.dll",
                                  "\\Windows\\x.dll", "torch//lib/x.dll", "./torch/x.dll", "torch/lib/x.dll:stream",
                                  "torch/lib/x\0.dll", "torch/\ud800.dll", "", "a/" * 20_000 + "x.dll"])
def test_a_relative_path_that_could_leave_its_folder_is_passed_over(line, tmp_path):
    assert relative_parts(line) is None and inside(tmp_path, line) is None


def test_a_relative_path_inside_its_folder_is_joined_with_either_separator(tmp_path):
    assert inside(tmp_path, "torch/lib/c10.dll") == tmp_path / "torch" / "lib" / "c10.dll"
    assert inside(tmp_path, "torch\\lib\\c10.dll") == tmp_path / "torch" / "lib" / "c10.dll"
    assert inside(tmp_path, "torch/lib/..dll") == tmp_path / "torch" / "lib" / "..dll"  # a name, not a step up


@pytest.mark.parametrize("text, expected", [
    ("C:\\Users\\alice\\pinokio", "C:\\Users\\alice\\pinokio"),
    ("D:/AI/pinokio/../pinokio", "D:\\AI\\pinokio"),
    ("\\\\nas\\share\\ai", "\\\\nas\\share\\ai"),
    ("pinokio", None), ("..\\..\\Windows", None), ("\\Windows", None), ("C:relative", None),
    ("C:\\a\0b", None), ("C:\\\ud800", None), ("C:\\" + "a" * 40_000, None)])
def test_a_path_from_a_setting_is_a_whole_windows_path_or_nothing(text, expected):
    assert windows_absolute(text) == expected


def test_a_journal_path_is_a_whole_path_of_this_computer_without_steps_up(tmp_path):
    assert host_absolute(str(tmp_path / "x.dll")) == tmp_path / "x.dll"
    for text in ("x.dll", str(tmp_path / ".." / "x.dll"), str(tmp_path) + "\0", str(tmp_path / "\ud800")):
        assert host_absolute(text) is None


def _intent(**changed) -> bytes:
    site = os.path.join(os.path.abspath(os.sep), "env", "Lib", "site-packages")
    intent = {"at": "2026-12-04T10:00:00+00:00", "kind": "intent", "step": 1, "op": "file",
              "target": os.path.join(site, "torch", "lib", "c10.dll"), "shown": "c10.dll",
              "before": {"sha256": "ab" * 32, "backup": "backups/1", "size": 3}, "after": "cd" * 32, "n": 1}
    for name, value in changed.items():
        if name == "backup":
            intent["before"]["backup"] = value
        else:
            intent[name] = value
    return _line(intent)[:-1]  # as the journal's reader hands a line over


@pytest.mark.parametrize("changed", [{"backup": "../../../Startup/run.cmd"}, {"backup": "/etc/passwd"},
                                     {"target": "relative\\c10.dll"}, {"target": "/env/../Windows/c10.dll"},
                                     {"after": "../../x"}, {"target": 7}])
def test_a_journal_intent_that_points_outside_is_damaged_even_with_a_good_crc(changed):
    assert _record(_intent()) is not None
    assert _record(_intent(**changed)) is None


def test_a_damaged_intent_stops_the_undo_with_words_and_touches_nothing(tmp_path, data_dir):
    from app.repair.journal import Journal, RollbackStopped
    from app.system.offline import OfflineImage

    outside = tmp_path / "outside.txt"
    outside.write_text("theirs", encoding="utf-8")
    journal = Journal()
    transaction = journal.begin({"id": "m"}, "restore-torch-files", None, "env", {})
    intent = json.loads(_intent(target=str(outside), backup="../../../../x"))
    transaction._write({k: v for k, v in intent.items() if k not in ("n", "crc", "at")})
    transaction.release()
    again = journal.get(transaction.id)
    assert again.damaged and not again.steps()
    with pytest.raises(RollbackStopped) as stop:
        again.rollback(OfflineImage(tmp_path))
    assert stop.value.code == "journal-damaged" and outside.read_text(encoding="utf-8") == "theirs"


def test_a_record_reaches_its_environment_and_no_further(tmp_path):
    site = tmp_path / "venv" / "Lib" / "site-packages"
    within = tmp_path / "venv"
    assert inside(site, "../../Library/bin/libiomp5md.dll", within) == within / "Library" / "bin" / "libiomp5md.dll"
    assert inside(site, "..\\..\\Scripts\\torchrun.exe", within) == within / "Scripts" / "torchrun.exe"
    for line in ("../../../bob/libiomp5md.dll", "../../..", "../..", "../../C:/x.dll", "/x.dll"):
        assert inside(site, line, within) is None, line
    assert inside(tmp_path / "elsewhere", "x.dll", within) is None  # a base outside the environment


def test_a_pth_line_stepping_up_never_leaves_a_copied_drive(machine):
    from app.inventory.python_path import _resolve
    from app.system.offline import OfflineImage
    from tests.helpers.pe_machine import VENV

    system = OfflineImage(machine.root)
    base = machine.host(VENV) / "Lib" / "site-packages"
    for line in ("..\\" * 40 + "etc", "../" * 40 + "etc", "..\\..\\..\\..\\..\\.."):
        found = _resolve(system, base, line)
        assert found is None or found.is_relative_to(system.root), (line, found)
    assert _resolve(system, base, "..\\..\\Scripts") == machine.host(VENV) / "Scripts"


@pytest.mark.parametrize("text", ["ComfyUI\\venv", "..\\..\\Windows", "\\Windows\\System32", "C:relative", ""])
def test_host_path_takes_only_whole_windows_paths(machine, text):
    from app.system.live import LiveWindows
    from app.system.offline import OfflineImage

    assert LiveWindows.host_path(None, text) is None  # it reads nothing of the machine: no Windows needed
    assert OfflineImage(machine.root).host_path(text) is None
    assert LiveWindows.host_path(None, "C:\\Users\\alice\\" + text) is not None


def test_a_journal_line_nested_deeper_than_any_record_is_damage_not_a_crash(tmp_path, data_dir):
    from app.repair.journal import Journal, _cut_short

    deep = b'{"kind": "note", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert _record(deep) is None and _cut_short(deep[:-50]) is False
    journal = Journal()
    transaction = journal.begin({"id": "m"}, "restore-torch-files", None, "env", {})
    transaction.release()
    with open(transaction.folder / "journal.jsonl", "ab") as f:
        f.write(deep + b"\n")
    assert journal.get(transaction.id).damaged
