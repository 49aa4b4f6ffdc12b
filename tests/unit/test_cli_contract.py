"""The command line's contract where a script or a forum helper reads it: exit 1 always has its one-line reason on
standard error, a JSON document to standard output included, and with several environments each progress line
names the environment its check belongs to."""

from __future__ import annotations

import json
import shutil

from app.main import main
from tests.helpers.pe_machine import VENV


def _diagnose(capsys, image, *extra) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_exit_1_says_why_on_standard_error_when_the_json_document_has_standard_output(machine, capsys):
    (machine.host(VENV) / "Lib" / "site-packages" / "torch" / "lib" / "c10.dll").unlink()
    code, out, err = _diagnose(capsys, machine, "--json", "-")
    assert code == 1 and json.loads(out)["findings"]
    last = err.strip().splitlines()[-1]
    assert last.startswith("Exit code 1: PyTorch does not load here.") and "c10.dll" in last, err
    code, out, err = _diagnose(capsys, machine, "--json", "-", "--lang", "zh_CN", "--quiet")
    assert code == 1 and err.strip().startswith("退出代码 1") and len(err.strip().splitlines()) == 1, err


def test_a_healthy_diagnosis_has_no_exit_line(machine, capsys):
    code, out, err = _diagnose(capsys, machine, "--json", "-")
    assert code == 0 and "Exit code" not in err, err


def test_with_two_environments_each_progress_line_names_its_environment(machine, capsys):
    shutil.copytree(machine.host(VENV), machine.host(VENV).parent / "venv2", symlinks=True)
    code, out, err = _diagnose(capsys, machine, "--json", "-")
    progress = [line for line in err.splitlines() if line.startswith("[")]
    named = [line for line in progress if line.endswith("python.exe)")]
    assert {line.rsplit("\\", 3)[-3] for line in named} == {"venv", "venv2"}, progress


def test_with_one_environment_progress_lines_stay_short(machine, capsys):
    code, out, err = _diagnose(capsys, machine)
    assert not [line for line in err.splitlines() if line.startswith("[") and line.endswith(".exe)")], err


def test_a_folder_with_no_windows_gets_no_empty_sections(tmp_path, capsys):
    (tmp_path / "Windows").mkdir()
    capsys.readouterr()
    assert main(["diagnose", "--root", str(tmp_path), "--report", str(tmp_path / "r.html")]) == 3
    text = capsys.readouterr().out
    for title in ("Computer\n", "PATH: the folders", "DLL Dependencies", "Visual Studio", "Settings (environment"):
        assert title not in text, title
    assert "Nothing was checked" in text and "No Python environment was found." in text
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "id='computer'" not in page and "id='dependencies'" not in page and "id='summary'" in page


def test_a_computer_without_pytorch_keeps_its_computer_but_no_empty_dependency_tree(machine, capsys):
    shutil.rmtree(machine.host(VENV) / "Lib" / "site-packages" / "torch")
    code, out, err = _diagnose(capsys, machine)
    assert code == 3 and "Computer\n" in out and "DLL Dependencies" not in out, out
