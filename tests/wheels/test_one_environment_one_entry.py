"""One environment, one entry: a folder reached by two paths (Pinokio's bin\\miniconda, a junction to
bin\\miniforge; a link to a venv; another case) is listed and checked once, with its other paths in its details.
A copied drive holds the junction as a symbolic link."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from app.inventory.discovery import discover
from app.main import main
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import pip_install, python_at, torch_core, windows_drive

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

HOME = r"C:\Users\alice"
PINOKIO = HOME + r"\AppData\Local\PinokioData"
CONDA = HOME + r"\miniconda3"


def test_pinokios_miniconda_junction_is_one_environment_with_one_of_each_problem(tmp_path, capsys):
    image = windows_drive(tmp_path / "image")
    image.write(HOME + r"\.pinokio\config.json", json.dumps({"home": PINOKIO}))
    image.write(PINOKIO + r"\ENVIRONMENT", "")
    python_at(image, PINOKIO + r"\bin\miniforge")
    image.mkdir(PINOKIO + r"\bin\miniforge\conda-meta")
    pip_install(image, realfiles.TORCH_240, PINOKIO + r"\bin\miniforge\Lib\site-packages", keep=torch_core)
    os.symlink("miniforge", image.host(PINOKIO + r"\bin") / "miniconda", target_is_directory=True)
    text = tmp_path / "report.txt"
    capsys.readouterr()
    code = main(["diagnose", "--root", str(image.root), "--json", "-", "--no-redact", "--report", str(text)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    [env] = report["environments"]
    assert env["prefix"] == PINOKIO + r"\bin\miniforge" and env["also_at"] == [PINOKIO + r"\bin\miniconda"]
    assert any(f["code"] == "missing-dll" for f in report["findings"])
    titles = Counter(problem["title"] for problem in report["problems"])
    assert titles and max(titles.values()) == 1, titles
    findings = Counter(json.dumps([f["code"], f["evidence"]], sort_keys=True) for f in report["findings"])
    assert max(findings.values()) == 1, findings
    shown = text.read_text(encoding="utf-8")
    assert PINOKIO + r"\bin\miniforge" in shown and PINOKIO + r"\bin\miniconda" in shown


def test_a_link_to_a_conda_environment_and_its_name_in_another_case_are_one_environment(tmp_path):
    image = windows_drive(tmp_path / "image")
    python_at(image, CONDA)
    image.mkdir(CONDA + r"\conda-meta")
    python_at(image, CONDA + r"\envs\comfy")
    os.symlink(image.host(CONDA + r"\envs\comfy"), image.host(HOME) / "comfy-link", target_is_directory=True)
    image.write(HOME + r"\.conda\environments.txt",
                "c:\\users\\alice\\MINICONDA3\\ENVS\\COMFY\r\nC:\\Users\\alice\\comfy-link\r\n")
    system = OfflineImage(image.root)
    envs = list(discover(system, budget_s=60))
    comfy = [env for env in envs if os.path.samefile(env.exec_prefix, image.host(CONDA + r"\envs\comfy"))]
    assert len(comfy) == 1 and len(envs) == 2
    assert [system.windows_path(p) for p in comfy[0].also_at] == [HOME + r"\comfy-link"]
