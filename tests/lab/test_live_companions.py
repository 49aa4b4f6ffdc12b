"""`match-companions` for real in the Windows lab: Windows CPython, the real torch 2.4.1 wheel and torchvision 0.20.1
(made for torch 2.5.1) installed beside it with the environment's own pip (`--no-deps`, from a local folder of
wheels, as a mirror would be named), under Wine. One scenario: torchvision; torchaudio is the same code path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.inventory.packages import installed_versions
from tests.helpers.lab import lab_env
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
USE_TORCHVISION = ("import torch, torchvision; print(torchvision.__version__, "
                   "torchvision.ops.nms(torch.tensor([[0., 0., 1., 1.]]), torch.tensor([1.]), 0.5).tolist())")


def test_torchvision_made_for_251_beside_241_is_replaced_by_0191_then_undo_puts_0201_back(lab, tmp_path):
    from tests import realfiles
    from tests.winelab import _extract_wheel

    env = lab_env(lab, "companions-241", torch_version="2.4.1")
    site = env / "Lib" / "site-packages"
    _extract_wheel(realfiles.download("pip==24.2"), site)
    wheels = [realfiles.download(req) for req in ("torchvision==0.20.1", "torchvision==0.19.1", "numpy==1.26.4",
                                                  "pillow==10.4.0")]
    folder = tmp_path / "wheels"  # one folder for pip, wherever each wheel was cached
    folder.mkdir()
    for wheel in wheels:
        os.link(wheel, folder / Path(wheel).name)
    pip_config = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": to_windows_path(folder), "PIP_NO_COMPILE": "1",
                  "TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}
    installed = lab.run_python(["-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                                "torchvision==0.20.1", "numpy==1.26.4", "pillow==10.4.0"],
                               env=pip_config, timeout=1200, torch_env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]

    broken = lab.run_python(["-c", USE_TORCHVISION], torch_env=env, timeout=600)
    assert broken.returncode != 0 and "torchvision" in broken.stderr, broken.stdout + broken.stderr[-2000:]

    def app(*argv):
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
        return lab.run_python(["-c", code], env=pip_config, timeout=1200, torch_env=env)

    diagnosed = app("diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet")
    document = json.loads(diagnosed.stdout[diagnosed.stdout.index("{"):])
    found = [f for f in document["findings"] if f["code"] == "companion-mismatch"]
    assert diagnosed.returncode == 1 and [f["evidence"]["package"] for f in found] == ["torchvision"]
    assert [m["function"] for m in found[0]["evidence"]["missing"]] == [
        "at::SavedTensorDefaultHooks::set_tracing(bool)"]

    planned = app("repair", "--env", to_windows_path(env), "--action", "match-companions", "--plan")
    change = "Install the torchvision made for your PyTorch: 0.20.1 -> 0.19.1"
    assert planned.returncode == 0 and change in planned.stdout, planned.stdout + planned.stderr[-2000:]
    repaired = app("repair", "--env", to_windows_path(env), "--action", "match-companions", "--yes", "--json", "-")
    assert repaired.returncode == 0, repaired.stdout[-2000:] + repaired.stderr[-3000:]
    outcome = json.loads(repaired.stdout[repaired.stdout.index("{"):])
    assert outcome["state"] == "fixed"
    assert outcome["plan"]["packages"]["before"] == {"torchvision": "0.20.1"}
    assert outcome["plan"]["packages"]["after"] == {"torchvision": "0.19.1"}
    assert outcome["plan"]["downloads"] is True  # pip fetches the package from the index
    assert installed_versions(site, ["torch", "torchvision"]) == {"torch": "2.4.1", "torchvision": "0.19.1"}
    works = lab.run_python(["-c", USE_TORCHVISION], torch_env=env, timeout=600)
    assert works.returncode == 0 and works.stdout.split() == ["0.19.1+cpu", "[0]"], works.stderr[-2000:]

    undone = app("undo", "--last")
    assert "Undone" in undone.stdout, undone.stdout[-2000:] + undone.stderr[-3000:]
    # torch itself untouched both ways: undo put 0.20.1 back without following its torch==2.5.1
    assert installed_versions(site, ["torch", "torchvision"]) == {"torch": "2.4.1", "torchvision": "0.20.1"}
    again = lab.run_python(["-c", USE_TORCHVISION], torch_env=env, timeout=600)
    assert again.returncode != 0 and "torchvision" in again.stderr
