"""Repair for real in the Windows lab: Windows CPython and the real torch 2.4.0 wheel under Wine.

`import torch` fails with WinError 126 on fbgemm.dll -> `python -m app repair --action openmp-runtime --source
torch-bundled --yes` (run by that same Windows Python) -> `import torch` and a matmul work -> `undo --last` ->
WinError 126 again, and torch\\lib is byte-identical to before."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import lab_env
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
MATMUL = "import torch; print(float(torch.ones(3) @ torch.ones(3)))"


def hashes(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_repair_then_undo_of_torch_240_for_real(lab, tmp_path):
    env = lab_env(lab, "repair-240", torch_version="2.4.0")
    lib = env / "Lib" / "site-packages" / "torch" / "lib"
    before = hashes(lib)
    data = {"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}

    def app(*argv):
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
        return lab.run_python(["-c", code], env=data, timeout=600, torch_env=env)

    broken = lab.run_python(["-c", MATMUL], torch_env=env)
    assert broken.returncode != 0 and "WinError 126" in broken.stderr and "fbgemm.dll" in broken.stderr

    repaired = app("repair", "--env", to_windows_path(env), "--action", "openmp-runtime", "--source",
                   "torch-bundled", "--yes", "--json", "-")
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    outcome = json.loads(repaired.stdout[repaired.stdout.index("{"):])
    assert outcome["state"] == "fixed" and outcome["plan"]["source"] == "torch-bundled"
    assert (lib / "libomp140.x86_64.dll").read_bytes() == (lib / "libiomp5md.dll").read_bytes()

    works = lab.run_python(["-c", MATMUL], torch_env=env)
    assert works.returncode == 0 and works.stdout.strip() == "3.0", works.stderr[-2000:]

    history = app("history", "--json", "-")
    (item,) = json.loads(history.stdout)["transactions"]
    assert item["state"] == "done" and item["machine"] == {"kind": "live"}

    undone = app("undo", "--last")
    assert "Undone" in undone.stdout, undone.stderr[-2000:]
    assert hashes(lib) == before
    again = lab.run_python(["-c", MATMUL], torch_env=env)
    assert again.returncode != 0 and "WinError 126" in again.stderr
