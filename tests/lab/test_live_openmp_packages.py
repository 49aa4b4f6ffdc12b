"""OpenMP that another package brings, for real: the real ctranslate2 wheel (behind faster-whisper and WhisperX)
beside the real torch 2.4.1 wheel, under Windows CPython in Wine. ctranslate2 4.5.0 ships a 2022 build of Intel's
libiomp5md.dll in its own folder (4.8.5 ships a 2025 build, which aborts under Wine 8 with OMP Error #179 before
anything else, as intel-openmp's 2025 builds do), and loads every DLL of that folder by its full path when imported.

What Wine shows: the live check loads ctranslate2's copy by its full path beside torch's and makes one OpenMP call
into it, and the process ends with "OMP: Error #15", as the static check predicts from the files; after the copy is
set aside (a journalled rename) the same check runs its calculation to the right result, and undo puts the copy
back byte for byte."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests import realfiles
from tests.helpers.lab import app_in_lab, lab_env
from tests.winelab import _extract_wheel, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]



def test_ctranslate2s_openmp_beside_torchs_ends_in_error_15_until_set_aside(lab, tmp_path):
    env = lab_env(lab, "openmp-ctranslate2-241", torch_version="2.4.1")
    site = env / "Lib" / "site-packages"
    _extract_wheel(realfiles.download("ctranslate2==4.5.0"), site)
    theirs = site / "ctranslate2" / "libiomp5md.dll"
    before = hashlib.sha256(theirs.read_bytes()).digest()
    journal = {"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}

    def app(*argv: str):
        return app_in_lab(lab, env, journal, *argv)

    def diagnose() -> tuple[int, list[dict]]:
        result = app("diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet", "--no-redact")
        assert result.returncode in (0, 1) and result.stdout.strip(), (result.returncode, result.stderr[-3000:])
        return result.returncode, json.loads(result.stdout)["findings"]

    code, findings = diagnose()
    conflicts = [f for f in findings if f["code"] == "openmp-conflict"]
    static = [f for f in conflicts if f["evidence"].get("package") == "ctranslate2"]
    replayed = [f for f in conflicts if f["evidence"].get("omp_output")]
    assert code == 1 and len(static) == 1 and static[0]["severity"] == "blocker", findings
    assert static[0]["evidence"]["other"].lower().endswith(r"\ctranslate2\libiomp5md.dll")
    assert len(replayed) == 1 and replayed[0]["evidence"]["message"].startswith("OMP: Error #15"), conflicts
    assert replayed[0]["evidence"]["last_step"]["step"] == "openmp_user"

    repaired = app("repair", "--env", to_windows_path(env), "--action", "remove-duplicate-openmp", "--yes",
                   "--json", "-")
    assert repaired.returncode == 0, (repaired.stdout[-3000:], repaired.stderr[-3000:])
    assert not theirs.exists()
    code, findings = diagnose()
    assert code == 0 and not [f for f in findings if f["code"] == "openmp-conflict"], findings
    parallel = next(f for f in findings if f["code"] == "import-ok")["evidence"]["replay"]["parallel"]
    assert parallel["finished"] is True and parallel["ok"] is True

    undone = app("undo", "--last")
    assert undone.returncode == 0, undone.stderr[-3000:]
    assert hashlib.sha256(theirs.read_bytes()).digest() == before
