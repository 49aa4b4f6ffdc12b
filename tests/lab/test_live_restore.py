"""`restore-torch-files` for real in the Windows lab: Windows CPython with the real torch 2.4.0 wheel under Wine, its
fbgemm.dll deleted (as security software quarantines it); the app, run by that Python, puts it back from a local
HTTPS index named by the user's pip settings (PIP_INDEX_URL, PIP_CERT), by ranges; `import torch` and a matmul work;
undo brings the error back."""

from __future__ import annotations

import json

import pytest

from tests import realfiles
from tests.helpers.files import sha
from tests.helpers.lab import lab_env
from tests.helpers.torch_check import MATMUL
from tests.https_server import HttpsServer
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
WHEEL_PATH = "/packages/7f/torch-2.4.0-cp312-cp312-win_amd64.whl"


def test_a_quarantined_fbgemm_dll_is_restored_from_the_users_index_torch_works_and_undo_brings_the_error_back(
        lab, tmp_path):
    env = lab_env(lab, "restore-240", torch_version="2.4.0", libomp=True)  # loads, until fbgemm.dll goes
    fbgemm = env / "Lib" / "site-packages" / "torch" / "lib" / "fbgemm.dll"
    original = sha(fbgemm)
    fbgemm.unlink()
    broken = lab.run_python(["-c", MATMUL], torch_env=env)
    assert broken.returncode != 0 and "WinError 126" in broken.stderr, broken.stderr[-2000:]

    wheel = realfiles.download(realfiles.TORCH_240)
    name = wheel.name
    with HttpsServer(tmp_path / "certs") as index:
        link = f'<a href="../../packages/7f/{name}#sha256={sha(wheel)}">{name}</a>'
        index.files["/simple/torch/"] = f"<html><body>{link}</body></html>".encode()
        index.files[WHEEL_PATH] = wheel
        config = {"PIP_INDEX_URL": index.url("/simple"), "PIP_CERT": to_windows_path(index.ca),
                  "TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}

        def app(*argv):
            code = RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
            return lab.run_python(["-c", code], env=config, timeout=1200, torch_env=env)

        repaired = app("repair", "--env", to_windows_path(env), "--action", "restore-torch-files", "--yes",
                       "--json", "-")
        assert repaired.returncode == 0, (repaired.stderr[-3000:], repaired.stdout[-6000:])  # the JSON: what was left
        assert "{" in repaired.stdout, (repaired.stdout[-3000:], repaired.stderr[-3000:])
        outcome = json.loads(repaired.stdout[repaired.stdout.index("{"):])
        assert outcome["state"] == "fixed"
        requests = index.requests_for(WHEEL_PATH)
        assert requests and all(r.headers.get("Range") for r in requests)  # only the parts needed
    assert sha(fbgemm) == original
    works = lab.run_python(["-c", MATMUL], torch_env=env)
    assert works.returncode == 0 and works.stdout.strip() == "3.0", works.stderr[-2000:]

    undone = app("undo", "--last")
    assert "Undone" in undone.stdout, undone.stderr[-3000:]
    assert not fbgemm.exists()
    again = lab.run_python(["-c", MATMUL], torch_env=env)
    assert again.returncode != 0 and "WinError 126" in again.stderr
