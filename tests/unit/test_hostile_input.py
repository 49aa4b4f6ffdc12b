"""No input ends in "internal error": the files the diagnosis reads (pyvenv.cfg, a ._pth file, a .pth file, torch's
RECORD, a package's METADATA and WHEEL, the image's registry.json and environment.json) filled with random bytes and
texts, names longer than any file system takes, and random pasted texts for `explain`. Property-based (hypothesis):
a result is any exit code of the contract but an internal error."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.main import main

HOME = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\ComfyUI\venv"
SITE = VENV + r"\Lib\site-packages"
PORTABLE = r"C:\Users\alice\ComfyUI_windows_portable\python_embeded"
TARGETS = {
    "pyvenv.cfg": VENV + r"\pyvenv.cfg",
    "._pth": PORTABLE + r"\python312._pth",
    ".pth": SITE + r"\tools.pth",
    "RECORD": SITE + r"\torch-2.4.1.dist-info\RECORD",
    "METADATA": SITE + r"\torch-2.4.1.dist-info\METADATA",
    "WHEEL": SITE + r"\torch-2.4.1.dist-info\WHEEL",
    "registry.json": None,
    "environment.json": None,
}
CONTRACT = (0, 1, 3)  # no blocker, a blocker or a check that could not finish, nothing to check


def python_at(image: ImageBuilder, folder: str) -> None:
    image.write(folder + r"\python.exe", build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.write(folder + r"\python312.dll", build_pe(machine="x64", dll_name="python312.dll",
                                                      file_version=(3, 12, 9150, 1013)))


@pytest.fixture(scope="module")
def base_image(tmp_path_factory) -> Path:
    image = ImageBuilder(tmp_path_factory.mktemp("hostile") / "image")
    image.write(r"C:\Windows\System32\kernel32.dll", build_pe(machine="x64", dll_name="kernel32.dll"))
    python_at(image, HOME)
    image.venv(VENV, HOME, "3.12.9", python_exe=build_pe(machine="x64", dll=False, dll_name="python.exe"))
    image.torch_version_file(SITE, "2.4.1+cpu")
    image.write(SITE + r"\torch-2.4.1.dist-info\METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1\n")
    image.write(SITE + r"\torch-2.4.1.dist-info\WHEEL", "Wheel-Version: 1.0\nTag: cp312-cp312-win_amd64\n")
    image.write(SITE + r"\tools.pth", "C:\\Tools\n")
    python_at(image, PORTABLE)
    image.write(PORTABLE + r"\python312._pth", "python312.zip\n.\nimport site\n")
    image.torch_version_file(PORTABLE + r"\Lib\site-packages", "2.4.1+cpu")
    image.save()
    return image.root


def diagnose(root: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["diagnose", "--root", str(root), "--json", "-", "--quiet"])
    return code, err.getvalue()


contents = st.one_of(st.binary(max_size=2048), st.text(max_size=1024).map(lambda t: t.encode("utf-8", "replace")),
                     st.sampled_from([b"", b"\x00" * 300, b"\xff\xfe" + "home = C:\\x\n".encode("utf-16-le"),
                                      b"home = " + b"C:\\" + b"y" * 400 + b"\n", b"{", b"[]", b"null",
                                      b'{"user": {"PYTHONPATH": 5}}', b'{"HKCU": "x"}']))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(sorted(TARGETS)), data=contents)
def test_random_bytes_in_what_the_diagnosis_reads_never_end_in_an_internal_error(base_image, tmp_path_factory,
                                                                                  which, data):
    root = tmp_path_factory.mktemp("case") / "image"
    shutil.copytree(base_image, root, symlinks=True)
    windows = TARGETS[which]
    path = root / which if windows is None else ImageBuilder(root).host(windows)
    path.write_bytes(data)
    code, err = diagnose(root)
    assert code in CONTRACT and "internal error" not in err.lower(), (which, data[:80], err)


def test_names_longer_than_any_file_system_takes_are_folders_not_seen(base_image, tmp_path):
    """A .pth line and a PYTHONPATH entry naming a folder of 300 characters: "File name too long" on this machine,
    and on Windows too. The diagnosis says it could not look there (never "all clear"), with no internal error."""
    import json

    root = tmp_path / "image"
    shutil.copytree(base_image, root, symlinks=True)
    image = ImageBuilder(root)
    image.write(SITE + r"\tools.pth", "C:\\" + "x" * 300 + "\\lib\n")
    image.set_variable("user", "PYTHONPATH", "C:\\" + "y" * 300)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diagnose", "--root", str(root), "--env", VENV, "--json", "-", "--quiet"])
    document = json.loads(out.getvalue())
    assert code == 1 and any(f["code"] == "check-failed" and f.get("variant") == "path-unseen"
                             for f in document["findings"])


@settings(max_examples=80, deadline=None)
@given(text=st.text(min_size=1, max_size=3000))
def test_any_pasted_text_as_an_argument_is_explained_never_an_internal_error(text):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["explain", text, "--lang", "en"])
    assert code in (0, 1) and "internal error" not in err.getvalue().lower()
