"""OMP Error #15 for real, in the Windows lab: Windows CPython and the real torch 2.4.1 wheel under Wine, with a
second Intel OpenMP runtime (the real intel-openmp 2023.2.0 build; the 2025 and 2026 builds abort under Wine 8 with
OMP Error #179 before anything else) in the environment's Library\\bin, listed by conda-meta as conda's intel-openmp.

What Wine's loader shows: with the other copy loaded by its full path and one OpenMP call into it after torch's first
parallel operation (what mkl's first call does in a program that also imports numpy), the process ends with
"OMP: Error #15". Wine binds torch's own DLLs by name to the first libiomp5md.dll loaded, so which copy each DLL
binds to on real Windows is not what this proves; it proves that the replay catches the abort, reports it with
OpenMP's own text, and that after the repair the same replay runs the calculation to its right result."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from app.repair.journal import ROLLED_BACK, Journal
from tests import realfiles
from tests.helpers.lab import app_in_lab, lab_env
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
OMP_15 = "OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized."


def by_code(document: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in document["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found


def test_omp_error_15_is_caught_by_the_replay_and_gone_after_the_copy_is_set_aside(lab, tmp_path):
    env = lab_env(lab, "openmp-conflict-241", torch_version="2.4.1")
    other = next(realfiles.extract("intel-openmp==2023.2.0", "*Library/bin/libiomp5md.dll")
                 .rglob("libiomp5md.dll"))
    library_copy = env / "Library" / "bin" / "libiomp5md.dll"
    library_copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(other, library_copy)
    (env / "conda-meta").mkdir(exist_ok=True)
    (env / "conda-meta" / "intel-openmp-2023.2.0-h57928b3_50497.json").write_text(json.dumps(
        {"name": "intel-openmp", "version": "2023.2.0", "depends": [], "files": ["Library/bin/libiomp5md.dll"]}))
    (env / "conda-meta" / "mkl-2023.1.0-h6b88ed4_46358.json").write_text(json.dumps(
        {"name": "mkl", "version": "2023.1.0", "depends": ["intel-openmp 2023.*"], "files": []}))
    journal = {"TDD_DATA_DIR": to_windows_path(tmp_path / "journal")}

    def app(*argv: str):
        return app_in_lab(lab, env, journal, *argv)

    def diagnose() -> tuple[int, dict]:
        result = app("diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet")
        assert result.returncode in (0, 1) and result.stdout.strip(), (result.returncode, result.stderr[-3000:])
        return result.returncode, json.loads(result.stdout)

    code, document = diagnose()
    found = by_code(document)
    replayed = [f for f in found.get("openmp-conflict", []) if f["evidence"].get("omp_output")]
    static = [f for f in found.get("openmp-conflict", []) if not f["evidence"].get("omp_output")]
    assert code == 1 and len(replayed) == 1 and len(static) == 1, document["findings"]
    assert replayed[0]["severity"] == "blocker" and replayed[0]["evidence"]["message"] == OMP_15
    assert replayed[0]["repairs"] == ["remove-duplicate-openmp", "start-fresh"]
    assert replayed[0]["evidence"]["last_step"]["step"] == "openmp_user"
    assert static[0]["severity"] == "blocker" and static[0]["evidence"]["owner"]["package"] == "intel-openmp"
    (ok,) = found["import-ok"]  # torch itself imported; the program died at its first parallel calculation
    assert ok["evidence"]["replay"]["parallel"]["finished"] is False

    repaired = app("repair", "--env", to_windows_path(env), "--action", "remove-duplicate-openmp", "--yes",
                   "--json", "-")
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    assert json.loads(repaired.stdout[repaired.stdout.index("{"):])["state"] == "fixed"
    set_aside = library_copy.with_name("libiomp5md.dll.set-aside-by-torch-dll-doctor")
    assert not library_copy.exists() and set_aside.read_bytes() == other.read_bytes()

    code, document = diagnose()
    found = by_code(document)
    assert code == 0 and "openmp-conflict" not in found, document["findings"]
    parallel = found["import-ok"][0]["evidence"]["replay"]["parallel"]
    assert parallel["finished"] is True and parallel["ok"] is True and parallel["sum"] == 262144.0
    assert parallel["openmp_users"] == [] and parallel["elapsed_s"] < 10

    undone = lab.run_python(["-c", RUN_APP.format(repo=to_windows_path(REPO_ROOT), argv=["undo", "--last"])],
                            env=journal, timeout=900, torch_env=env)
    assert undone.returncode == 0, undone.stderr[-3000:]
    (transaction,) = Journal(tmp_path / "journal").transactions()  # the journal, read here (the output may be lost)
    assert transaction.state == ROLLED_BACK
    assert hashlib.sha256(library_copy.read_bytes()).digest() == hashlib.sha256(other.read_bytes()).digest()
    code, document = diagnose()
    assert code == 1 and any(f["evidence"].get("message") == OMP_15 for f in by_code(document)["openmp-conflict"])
