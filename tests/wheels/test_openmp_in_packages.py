"""OpenMP runtimes that other packages bring: the real ctranslate2 wheel (behind faster-whisper and WhisperX) ships
Intel's libiomp5md.dll in its own folder and loads every DLL there by its full path when it is imported, so any
program that imports it and PyTorch holds two copies of one runtime ("OMP: Error #15"). Found from the packages'
records, named with what loads it, set aside by a journalled rename, and undone byte for byte."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.main import main
from tests.helpers.ctranslate2 import SITE, VENV, image_with_ctranslate2

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]


def diagnosis(capsys, image, *extra) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), "--env", VENV, "--json", "-", "--no-redact", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out[out.index("{"):])


def test_ctranslate2s_own_openmp_beside_torchs_is_a_blocker_set_aside_and_undone(tmp_path, capsys):
    image = image_with_ctranslate2(tmp_path / "img")
    theirs = image.host(SITE + r"\ctranslate2\libiomp5md.dll")
    before = hashlib.sha256(theirs.read_bytes()).hexdigest()
    code, document = diagnosis(capsys, image)
    conflicts = [f for f in document["findings"] if f["code"] == "openmp-conflict"]
    assert code == 1 and len(conflicts) == 1, [f["code"] for f in document["findings"]]
    (conflict,) = conflicts
    evidence = conflict["evidence"]
    assert conflict["severity"] == "blocker" and conflict["repairs"] == ["remove-duplicate-openmp"]
    assert evidence["other"] == SITE + r"\ctranslate2\libiomp5md.dll"
    assert evidence["torch_copy"]["path"] == SITE + r"\torch\lib\libiomp5md.dll"
    assert evidence["owner"]["package"] == "ctranslate2" and evidence["package"] == "ctranslate2"
    assert "full path" in evidence["loaded_by"]["en"]
    assert "ctranslate2" in conflict["title"] and "Intel" in conflict["action"] and "KMP_DUPLICATE_LIB_OK" in \
        conflict["action"]
    code, chinese = diagnosis(capsys, image, "--lang", "zh_CN")
    assert any("ctranslate2" in f["title"] and "OpenMP" in f["title"] for f in chinese["findings"])

    repair = ["repair", "--root", str(image.root), "--env", VENV, "--action", "remove-duplicate-openmp"]
    assert main([*repair, "--yes", "--json", "-"]) == 0, capsys.readouterr()
    capsys.readouterr()
    assert not theirs.exists() and theirs.with_name("libiomp5md.dll.set-aside-by-torch-dll-doctor").is_file()
    code, document = diagnosis(capsys, image)
    assert not [f for f in document["findings"] if f["code"] == "openmp-conflict"] and code == 0
    assert main(["undo", "--last"]) == 0
    assert hashlib.sha256(theirs.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("spelled", ["../../../../../bob/Tools/Render/libiomp5md.dll", "rooted"])
def test_a_record_line_that_leaves_site_packages_never_steers_a_diagnosis_or_a_rename(tmp_path, capsys, spelled):
    """A package's RECORD that names another user's file, by steps up or as a rooted path: that file is neither
    diagnosed as in a folder PyTorch searches nor renamed by remove-duplicate-openmp."""
    image = image_with_ctranslate2(tmp_path / "img")
    ours = image.host(SITE + r"\ctranslate2\libiomp5md.dll")
    theirs = image.host(r"C:\Users\bob\Tools\Render\libiomp5md.dll")
    theirs.parent.mkdir(parents=True)
    ours.replace(theirs)
    before = hashlib.sha256(theirs.read_bytes()).hexdigest()
    line = spelled if spelled != "rooted" else theirs.as_posix()
    record = next(image.host(SITE).glob("ctranslate2-*.dist-info")) / "RECORD"
    text = record.read_text(encoding="utf-8")
    assert "ctranslate2/libiomp5md.dll," in text
    record.write_text(text.replace("ctranslate2/libiomp5md.dll,", line + ","), encoding="utf-8")

    code, document = diagnosis(capsys, image)
    assert not [f for f in document["findings"] if f["code"] == "openmp-conflict"], document["findings"]
    repair = ["repair", "--root", str(image.root), "--env", VENV, "--action", "remove-duplicate-openmp", "--yes"]
    main(repair)
    capsys.readouterr()
    assert hashlib.sha256(theirs.read_bytes()).hexdigest() == before
    assert [p.name for p in theirs.parent.iterdir()] == ["libiomp5md.dll"]
