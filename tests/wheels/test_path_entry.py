"""Where a folder on sys.path comes from, and the way out that changes exactly that entry: a line of a ._pth file,
a line of a .pth file in the user site, an entry of the user's PYTHONPATH. Real torch wheels on copied drives; each
repair is journalled and its undo puts back byte for byte what was there."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.main import main
from tests import realfiles
from tests.helpers.images import pip_install, python_at, torch_core, windows_drive

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

HOME = r"C:\Users\alice"
PORTABLE = HOME + r"\ComfyUI_windows_portable\python_embeded"
PYTHON = HOME + r"\AppData\Local\Programs\Python\Python312"
USER_SITE = HOME + r"\AppData\Roaming\Python\Python312\site-packages"
LIBS = r"C:\Tools\pylibs"


def diagnose(image, capsys, env) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), "--env", env, "--json", "-", "--no-redact"])
    return code, json.loads(capsys.readouterr().out)


def shadow(report) -> dict:
    return next(f for f in report["findings"] if f["code"] == "torch-shadowed")


def repair_then_undo(image, capsys, env, changed, check) -> None:
    before = changed.read_bytes() if changed is not None else None
    capsys.readouterr()
    assert main(["repair", "--root", str(image.root), "--env", env, "--action", "take-out-path-entry",
                 "--yes"]) == 0, capsys.readouterr()
    check()
    code, report = diagnose(image, capsys, env)
    assert not any(f["code"] == "torch-shadowed" for f in report["findings"]), report["findings"]
    assert main(["undo", "--last"]) == 0
    if changed is not None:
        assert hashlib.sha256(changed.read_bytes()).digest() == hashlib.sha256(before).digest()


def test_a_pth_files_line_that_puts_another_torch_first_becomes_a_comment(tmp_path, capsys):
    image = windows_drive(tmp_path / "img")
    python_at(image, PORTABLE)
    pth = image.write(PORTABLE + r"\python312._pth", b"python312.zip\r\n.\r\n..\\..\\..\\..\\Tools\\pylibs\r\n"
                                                    b"Lib\\site-packages\r\nimport site\r\n")
    pip_install(image, realfiles.TORCH_241, PORTABLE + r"\Lib\site-packages", keep=torch_core)
    pip_install(image, realfiles.TORCH_240, LIBS, keep=torch_core)
    code, report = diagnose(image, capsys, PORTABLE)
    found = shadow(report)
    assert found["evidence"]["origin"] == "pth-file" and found["evidence"]["entry"] == LIBS
    assert found["evidence"]["added_by"] == PORTABLE + r"\python312._pth"
    assert found["repairs"][0] == "take-out-path-entry" and code == 1
    capsys.readouterr()
    assert main(["repair", "--root", str(image.root), "--env", PORTABLE, "--action", "take-out-path-entry",
                 "--plan"]) == 0
    plan = capsys.readouterr().out
    assert "line 3" in plan and "python312._pth" in plan

    def commented():
        assert pth.read_bytes() == (b"python312.zip\r\n.\r\n#..\\..\\..\\..\\Tools\\pylibs\r\n"
                                    b"Lib\\site-packages\r\nimport site\r\n")
    repair_then_undo(image, capsys, PORTABLE, pth, commented)


def test_a_pth_file_in_the_user_site_that_adds_another_torch_first_loses_only_that_line(tmp_path, capsys):
    image = windows_drive(tmp_path / "img")
    python_at(image, PYTHON)
    pip_install(image, realfiles.TORCH_241, PYTHON + r"\Lib\site-packages", keep=torch_core)
    pip_install(image, realfiles.TORCH_240, LIBS, keep=torch_core)
    pth = image.write(USER_SITE + r"\tools.pth", "# a tool's folders\nC:\\Tools\\pylibs\nC:\\Tools\\other\n")
    image.mkdir(r"C:\Tools\other")
    code, report = diagnose(image, capsys, PYTHON)
    found = shadow(report)
    assert found["evidence"]["origin"] == "pth-line" and found["evidence"]["added_by"] == USER_SITE + r"\tools.pth"
    assert found["repairs"][0] == "take-out-path-entry"

    def commented():
        assert pth.read_text() == "# a tool's folders\n#C:\\Tools\\pylibs\nC:\\Tools\\other\n"
    repair_then_undo(image, capsys, PYTHON, pth, commented)


def test_one_pythonpath_entry_is_taken_out_and_the_others_kept(tmp_path, capsys):
    image = windows_drive(tmp_path / "img")
    python_at(image, PYTHON)
    pip_install(image, realfiles.TORCH_241, PYTHON + r"\Lib\site-packages", keep=torch_core)
    pip_install(image, realfiles.TORCH_240, LIBS, keep=torch_core)
    image.mkdir(r"C:\Tools\scripts")
    image.set_variable("user", "PYTHONPATH", r"C:\Tools\scripts;" + LIBS)
    code, report = diagnose(image, capsys, PYTHON)
    found = shadow(report)
    assert found["evidence"]["origin"] == "PYTHONPATH"
    assert found["repairs"][:2] == ["take-out-path-entry", "unset-env-var"]
    environment = image.root / "environment.json"
    before = environment.read_bytes()

    def kept():
        assert json.loads(environment.read_text())["user"]["PYTHONPATH"] == r"C:\Tools\scripts"
    repair_then_undo(image, capsys, PYTHON, None, kept)
    assert json.loads(environment.read_text())["user"]["PYTHONPATH"] == json.loads(before)["user"]["PYTHONPATH"]


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x1c"], ids=["form-feed", "line-separator", "x1c"])
def test_a_pth_line_that_python_3_12_4_ends_with_another_character_is_found_and_taken_out(tmp_path, capsys,
                                                                                          separator):
    """From 3.12.4 site.addpackage splits a .pth file with str.splitlines: the line after a form feed, U+2028 or
    \\x1c is a line of its own. The diagnosis names it, the repair comments out that line alone (the separator and
    the CRLF endings stay), and undo puts the file back byte for byte."""
    image = windows_drive(tmp_path / "img")
    python_at(image, PYTHON)
    pip_install(image, realfiles.TORCH_241, PYTHON + r"\Lib\site-packages", keep=torch_core)
    pip_install(image, realfiles.TORCH_240, LIBS, keep=torch_core)
    image.mkdir(r"C:\Tools\other")
    head = ("# a tool's folders\r\nC:\\Tools\\other" + separator).encode("utf-8")
    tail = b"C:\\Tools\\pylibs\r\nC:\\Tools\\other\r\n"
    pth = image.write(USER_SITE + r"\tools.pth", head + tail)
    code, report = diagnose(image, capsys, PYTHON)
    found = shadow(report)
    assert found["evidence"]["origin"] == "pth-line" and found["evidence"]["entry"] == LIBS
    assert found["evidence"]["added_by"] == USER_SITE + r"\tools.pth" and code == 1

    def commented():
        assert pth.read_bytes() == head + b"#" + tail
    repair_then_undo(image, capsys, PYTHON, pth, commented)
    assert pth.read_bytes() == head + tail
