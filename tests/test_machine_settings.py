"""Machine-wide settings on offline images: `enable-long-paths` writes LongPathsEnabled into registry.json directly
(an image has no elevation), journalled with the value before; undo puts registry.json back as it was. And the
elevated helper's own job runner (app/repair/elevated.py perform) on an image: results after each step."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.main import main
from app.repair.elevated import perform, read_results
from app.repair.journal import Journal
from app.system.base import RegistryValue
from app.system.offline import OfflineImage
from tests.conftest import VENV

PYTHON = VENV + r"\Scripts\python.exe"
FS = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("before", [0, None])
def test_enable_long_paths_in_an_image_and_undo(torch_image, capsys, before):
    image = torch_image()
    if before is not None:
        image.registry.setdefault(FS, {})["LongPathsEnabled"] = {"type": "REG_DWORD", "data": before}
    image.save()
    original = (image.root / "registry.json").read_bytes()
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "enable-long-paths"]

    assert main([*argv, "--plan"]) == 0
    assert "LongPathsEnabled" in capsys.readouterr().out
    main([*argv, "--yes"])
    capsys.readouterr()
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") == RegistryValue("REG_DWORD", 1)
    (transaction,) = Journal().transactions()
    (step,) = transaction.steps()
    assert step.applied and step.intent["op"] == "machine-value"
    assert step.intent["before"] == (None if before is None else {"type": "REG_DWORD", "data": before})
    assert main([*argv, "--plan"]) == 1  # nothing left to do
    capsys.readouterr()

    main(["undo", "--last"])
    assert "Undone" in capsys.readouterr().out
    after = OfflineImage(image.root)
    assert after.registry_value(FS, "LongPathsEnabled") == (None if before is None else
                                                            RegistryValue("REG_DWORD", before))
    def meaning(data: bytes) -> dict:  # a key left empty by the undo holds what an absent key holds: no values
        return {k: v for k, v in json.loads(data).items() if v}

    assert meaning((image.root / "registry.json").read_bytes()) == meaning(original)


def test_the_helper_performs_a_job_and_writes_results_after_each_step(torch_image, tmp_path):
    image = torch_image()
    image.save()
    system = OfflineImage(image.root)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"steps": [
        {"op": "restore-point", "description": "test"},
        {"op": "set-value", "key": FS, "name": "LongPathsEnabled", "value": {"type": "REG_DWORD", "data": 1},
         "record": "1" * 32},
        {"op": "set-value", "key": r"HKCU\Environment", "name": "X", "value": {"type": "REG_SZ", "data": "1"},
         "record": "2" * 32},
        {"op": "set-value", "key": FS, "name": "Never", "value": {"type": "REG_DWORD", "data": 1}, "record": "3" * 32},
    ]}), encoding="utf-8")
    assert perform(system, job, hashlib.sha256(job.read_bytes()).hexdigest(), tmp_path / "records") == 1
    results = read_results(job)
    # HKCU\Environment and FS\Never are not values the helper writes: the whole job is refused before any step
    # runs (tests/test_elevated.py has the helper's other refusals, and a job that runs step by step)
    assert [(r["op"], r["ok"]) for r in results] == [("job", False)]
    assert "is not a value this app changes" in results[0]["detail"]
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") is None
    assert OfflineImage(image.root).registry_value(FS, "Never") is None
