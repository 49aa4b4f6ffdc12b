"""Files and paths from the computer that no parser or file system takes as they are: settings files nested 100,000
deep, a copied drive's registry.json nested as deep, a home folder JSON-escaped with a lone surrogate, a home of
5,000 characters. Each is passed over with a note; discovery finds the rest; the command line never says
"internal error" and prints no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.inventory.discovery import DiscoveryReport, discover
from app.system.offline import OfflineImage
from app.system.user_json import JsonNotRead, depth_of, loads, read_json

REPO = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000
SETTINGS_FILES = (r"C:\Users\alice\.pinokio\config.json",  # Pinokio, both places it records its home
                  r"C:\Users\alice\AppData\Roaming\Pinokio\config.json",
                  r"C:\Users\alice\AppData\Roaming\StabilityMatrix\library.json",
                  r"C:\Users\alice\AppData\Roaming\ComfyUI\config.json",  # ComfyUI Desktop
                  r"C:\Users\alice\AppData\Roaming\Invoke Community Edition\config.json")  # the Invoke launcher
PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"


def drive(root: Path) -> ImageBuilder:
    """A copied drive with one python.org Python, found however the user's other settings look."""
    image = ImageBuilder(root)
    image.write(r"C:\Windows\System32\kernel32.dll", build_pe(machine="x64", dll_name="kernel32.dll"))
    image.write(PYTHON + r"\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(PYTHON + r"\python312.dll", build_pe(machine="x64", dll_name="python312.dll",
                                                     file_version=(3, 12, 9150, 1013)))
    return image


def discovered(root: Path) -> tuple[list[str], list[str]]:
    """(the environments discovery finds, every note it and the image left)."""
    system, report = OfflineImage(root), DiscoveryReport()
    found = [system.windows_path(env.exec_prefix) for env in discover(system, budget_s=60, report=report)]
    return found, report.problems + system.problems


def diagnose(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "diagnose", "--root", str(root)], cwd=REPO,
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=300)


def assert_no_internal_error(run: subprocess.CompletedProcess, codes=(0, 1, 3)) -> None:
    said = run.stdout + run.stderr
    assert run.returncode in codes, said[-2000:]
    assert "Traceback" not in said and "internal error" not in said


def test_every_launchers_settings_nested_100000_deep_is_passed_over_with_a_note(tmp_path):
    image = drive(tmp_path / "image")
    for settings in SETTINGS_FILES:
        image.write(settings, DEEP)
    found, notes = discovered(image.root)
    assert found == [PYTHON]
    for settings in SETTINGS_FILES:
        assert any(note.startswith(settings) and "100000 levels deep" in note for note in notes), notes
    assert_no_internal_error(diagnose(image.root))


def test_a_copied_drives_registry_nested_100000_deep_is_a_note(tmp_path):
    image = drive(tmp_path / "image")
    (image.root / "registry.json").write_text('{"HKLM\\\\x": ' + DEEP + "}", encoding="utf-8")
    found, notes = discovered(image.root)
    assert found == [PYTHON] and any("registry.json could not be read" in note for note in notes)
    assert_no_internal_error(diagnose(image.root))


@pytest.mark.parametrize("home, why", [
    ("C:\\Users\\al\ud800ice", "a lone surrogate"),
    ("C:\\Users\\" + "\\".join(["x" * 99] * 50), "longer than this file system takes"),
], ids=["lone surrogate", "5,000 characters"])
def test_a_home_no_file_here_can_have_is_passed_over_with_a_note(tmp_path, home, why):
    image = drive(tmp_path / "image")
    image.set_variable("user", "USERPROFILE", home)  # saved JSON-escaped: "\ud800"
    found, notes = discovered(image.root)
    assert found == [PYTHON]
    assert [note for note in notes if why in note] == [notes[0]] and notes[0].startswith("the path 'C:\\\\Users\\\\")
    run = diagnose(image.root)
    assert_no_internal_error(run)
    assert why in run.stdout


def test_a_root_longer_than_the_file_system_takes_is_said_and_exit_2(tmp_path):
    run = diagnose(tmp_path.joinpath(*["x" * 99] * 50))
    assert_no_internal_error(run, codes=(2,))
    assert "cannot be opened" in run.stderr


def test_depth_counts_brackets_outside_strings_only():
    assert depth_of('{"a": [1, {"b": "[[[\\"["}]}') == 3
    assert depth_of('"[[[') == 0  # an unclosed string runs to the end
    assert depth_of("7") == 0


def test_too_deep_or_too_big_is_a_plain_value_error(tmp_path):
    with pytest.raises(JsonNotRead, match="100000 levels deep"):
        loads(DEEP)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(["x" * 2000]), encoding="utf-8")
    with pytest.raises(JsonNotRead, match="larger than"):
        read_json(big, max_bytes=1000)
    assert read_json(big) == ["x" * 2000] and issubclass(JsonNotRead, ValueError)


def test_a_settings_file_passed_over_is_said_in_the_report_and_never_all_clear(tmp_path):
    image = drive(tmp_path / "img")
    image.write(SETTINGS_FILES[0], DEEP)
    run = subprocess.run([sys.executable, "-m", "app", "diagnose", "--root", str(image.root), "--json", "-"],
                         cwd=REPO, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert_no_internal_error(run, codes=(1, 3))
    notes = [f["evidence"]["error"] for f in json.loads(run.stdout)["findings"] if f["code"] == "check-failed"]
    assert any("config.json was passed over" in note and "nested 100000 levels" in note for note in notes), notes
