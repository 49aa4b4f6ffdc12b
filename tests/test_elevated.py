"""The elevated helper's refusals, without Wine: app/repair/elevated.py `perform` (what `elevated-step JOB SHA256`
runs) on an offline image, whose machine values are real writes into its registry.json. A job is pinned by the
SHA-256 it was started with, and only the steps this app makes are performed; anything else is refused before any
step runs. The installer's own checks (copied to an admin-only folder, its hash and signature there) need Windows:
tests/test_live_elevation.py runs them under Wine."""

from __future__ import annotations

import hashlib
import json
import secrets

import pytest

from app.repair.elevated import (
    FILE_SYSTEM_KEY,
    MACHINE_ENVIRONMENT_KEY,
    MEMORY_MANAGEMENT_KEY,
    JobRefused,
    perform,
    read_results,
    run_job,
)
from app.system.base import RegistryValue
from app.system.offline import OfflineImage

LONG_PATHS = {"op": "set-value", "key": FILE_SYSTEM_KEY, "name": "LongPathsEnabled",
              "value": {"type": "REG_DWORD", "data": 1}}
INSTALLER = {"op": "run-installer", "installer": r"C:\Users\alice\AppData\Local\TorchDllDoctor\vc_redist.x64.exe",
             "sha256": "ab" * 32, "arguments": ["/install", "/quiet", "/norestart", "/log",
                                                r"C:\Users\alice\AppData\Local\TorchDllDoctor\vc_redist.x64.log"],
             "retry": {"tries": 5, "wait_s": 60}}


@pytest.fixture
def image(tmp_path):
    root = tmp_path / "image"
    (root / "Windows" / "System32").mkdir(parents=True)
    return OfflineImage(root)


def write_job(folder, steps) -> tuple:
    """A job as the unelevated side writes it: each set-value names the record the helper keeps of it."""
    steps = [{**step, "record": secrets.token_hex(16)} if step.get("op") == "set-value" and "record" not in step
             else step for step in steps]
    job = folder / "elevated-1.json"
    data = json.dumps({"steps": steps}).encode("utf-8")
    job.write_bytes(data)
    return job, hashlib.sha256(data).hexdigest()


def long_paths(image):
    return OfflineImage(image.root).registry_value(FILE_SYSTEM_KEY, "LongPathsEnabled")


def refusal(job) -> str:
    (result,) = read_results(job)
    assert result["op"] == "job" and result["ok"] is False
    return result["detail"]


def test_a_job_performs_its_steps_and_writes_results_after_each(image, tmp_path):
    path = {"op": "set-value", "key": MACHINE_ENVIRONMENT_KEY, "name": "Path",
            "value": {"type": "REG_EXPAND_SZ", "data": r"%SystemRoot%\system32"}}
    job, digest = write_job(tmp_path, [{"op": "restore-point", "description": "test"}, LONG_PATHS, INSTALLER, path])

    assert perform(image, job, digest, tmp_path / "records") == 1
    results = read_results(job)
    assert [(r["op"], r["ok"]) for r in results] == [("restore-point", False), ("set-value", True),
                                                     ("run-installer", False)]  # a failed step stops the job
    assert "unavailable" in results[0]["detail"]
    assert "only on a live Windows" in results[2]["detail"]
    assert long_paths(image) == RegistryValue("REG_DWORD", 1)
    assert OfflineImage(image.root).registry_value(MACHINE_ENVIRONMENT_KEY, "Path") is None


def test_a_job_changed_after_it_was_written_is_refused_and_nothing_runs(image, tmp_path):
    job, digest = write_job(tmp_path, [LONG_PATHS])
    # another program of the same user rewrites the job while the permission prompt is up: still a valid job
    swapped = {**LONG_PATHS, "value": {"type": "REG_DWORD", "data": 0}}
    job.write_bytes(json.dumps({"steps": [swapped]}).encode("utf-8"))

    assert perform(image, job, digest, tmp_path / "records") == 1
    assert "the job file changed after it was written" in refusal(job)
    assert long_paths(image) is None


@pytest.mark.parametrize("given", [None, "", "not-a-hash"])
def test_a_job_without_its_hash_is_refused(image, tmp_path, given):
    job, _ = write_job(tmp_path, [LONG_PATHS])

    assert perform(image, job, given, tmp_path / "records") == 1
    assert "no SHA-256 of the job was given" in refusal(job)
    assert long_paths(image) is None


@pytest.mark.parametrize(("step", "why"), [
    ({"op": "run", "argv": [r"C:\Windows\System32\cmd.exe", "/c", "whoami"]}, "unknown step 'run'"),
    ({"op": "delete-file", "path": r"C:\Windows\System32\ntdll.dll"}, "unknown step"),
    ({"op": "set-value", "key": r"HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Run", "name": "evil",
      "value": {"type": "REG_SZ", "data": r"C:\Users\alice\evil.exe"}}, "is not a value this app changes"),
    ({"op": "set-value", "key": FILE_SYSTEM_KEY, "name": "NtfsDisable8dot3NameCreation",
      "value": {"type": "REG_DWORD", "data": 1}}, "is not a value this app changes"),
    ({"op": "set-value", "key": FILE_SYSTEM_KEY + r"\..\Session Manager", "name": "LongPathsEnabled",
      "value": {"type": "REG_DWORD", "data": 1}}, "is not a value this app changes"),
    ({"op": "set-value", "key": FILE_SYSTEM_KEY, "name": "LongPathsEnabled",
      "value": {"type": "REG_SZ", "data": "1"}}, "is written as REG_DWORD"),
    ({"op": "set-value", "key": FILE_SYSTEM_KEY, "name": "LongPathsEnabled",
      "value": {"type": "REG_DWORD", "data": 7}}, "is 0 or 1"),
    ({"op": "set-value", "key": MACHINE_ENVIRONMENT_KEY, "name": "Path", "value": None}, "is never deleted"),
    ({"op": "set-value", "key": MACHINE_ENVIRONMENT_KEY, "name": "Path",
      "value": {"type": "REG_MULTI_SZ", "data": ["x"]}}, "is written as REG_SZ or REG_EXPAND_SZ"),
    ({"op": "set-value", "key": MEMORY_MANAGEMENT_KEY, "name": "PagingFiles",
      "value": {"type": "REG_SZ", "data": r"C:\pagefile.sys 0 0"}}, "is written as REG_MULTI_SZ"),
    ({"op": "restore-point", "kind": 99}, "not a restore point kind"),
    ({**INSTALLER, "installer": r"vc_redist.x64.exe"}, "absolute path"),
    ({**INSTALLER, "installer": r"\\attacker\share\vc_redist.x64.exe"}, "absolute path"),
    ({**INSTALLER, "installer": r"C:\Users\alice\setup.bat"}, "absolute path"),
    ({**INSTALLER, "sha256": None}, "SHA-256 from its check is missing"),
    ({**INSTALLER, "arguments": ["/install", "/quiet", "/norestart", "/log", "x.log"]}, "not vc_redist's switches"),
    ({**INSTALLER, "arguments": ["/install", "/quiet", "/norestart", "/log", r"C:\l.log", "/extra"]},
     "not vc_redist's switches"),
    ({**INSTALLER, "arguments": ["/layout", r"C:\x", "/norestart", "/log", r"C:\l.log"]}, "not vc_redist's switches"),
    ({**INSTALLER, "retry": {"tries": 1000, "wait_s": 1}}, "a retry policy is 1 to 10 tries"),
    ({**INSTALLER, "retry": {"tries": 2, "wait_s": 86400}}, "a retry policy"),
])
def test_a_step_the_helper_does_not_make_refuses_the_whole_job(image, tmp_path, step, why):
    job, digest = write_job(tmp_path, [LONG_PATHS, step])  # the allowed first step does not run either

    assert perform(image, job, digest, tmp_path / "records") == 1
    assert why in refusal(job)
    assert long_paths(image) is None


def test_the_values_this_app_writes_are_written(image, tmp_path):
    steps = [{"op": "set-value", "key": "HKEY_LOCAL_MACHINE" + FILE_SYSTEM_KEY[4:].upper(), "name": "longpathsenabled",
              "value": {"type": "REG_DWORD", "data": 1}},
             {"op": "set-value", "key": MEMORY_MANAGEMENT_KEY, "name": "PagingFiles",
              "value": {"type": "REG_MULTI_SZ", "data": [r"C:\pagefile.sys 16384 32768"]}},
             {"op": "set-value", "key": FILE_SYSTEM_KEY, "name": "LongPathsEnabled", "value": None}]
    job, digest = write_job(tmp_path, steps)

    assert perform(image, job, digest, tmp_path / "records") == 0
    assert [r["ok"] for r in read_results(job)] == [True, True, True]
    assert OfflineImage(image.root).registry_value(MEMORY_MANAGEMENT_KEY, "PagingFiles") == RegistryValue(
        "REG_MULTI_SZ", [r"C:\pagefile.sys 16384 32768"])
    assert long_paths(image) is None  # written, then deleted: what undo does when there was no value before


def test_a_job_the_helper_would_refuse_is_refused_before_the_permission_prompt(image, tmp_path):
    with pytest.raises(JobRefused, match="is not a value this app changes"):
        run_job(image, tmp_path / "elevated", [{**LONG_PATHS, "name": "Anything"}])
    assert not (tmp_path / "elevated").exists() or not any((tmp_path / "elevated").iterdir())


def test_an_undo_restores_only_the_value_the_helper_recorded_never_the_journals(image, tmp_path):
    """Any program of the user can edit the journal: an undo job names the helper's own record, and the helper
    writes back what it saw there itself. A folder the journal claims was first on the machine PATH never is."""
    before = r"%SystemRoot%\system32;%SystemRoot%"
    machine = OfflineImage(image.root)
    machine.set_machine_value(MACHINE_ENVIRONMENT_KEY, "Path", RegistryValue("REG_EXPAND_SZ", before + r";C:\gone"))
    record = secrets.token_hex(16)
    job, digest = write_job(tmp_path, [{"op": "set-value", "key": MACHINE_ENVIRONMENT_KEY, "name": "Path",
                                        "value": {"type": "REG_EXPAND_SZ", "data": before}, "record": record}])
    assert perform(machine, job, digest, tmp_path / "records") == 0
    kept = json.loads((tmp_path / "records" / f"{record}.json").read_text())
    assert kept["before"] == {"type": "REG_EXPAND_SZ", "data": before + r";C:\gone"}
    # the undo job carries no value at all: a value in it is refused, the helper's record is what is written
    job, digest = write_job(tmp_path, [{"op": "restore-value", "record": record,
                                        "value": {"type": "REG_SZ", "data": r"C:\Users\alice\evil;" + before}}])
    assert perform(machine, job, digest, tmp_path / "records") == 0
    assert OfflineImage(image.root).registry_value(MACHINE_ENVIRONMENT_KEY, "Path").data == before + r";C:\gone"
    # a record the helper never made is refused; so is writing over one it made
    job, digest = write_job(tmp_path, [{"op": "restore-value", "record": "f" * 32}])
    assert perform(machine, job, digest, tmp_path / "records") == 1
    assert "no record" in read_results(job)[-1]["detail"]
    job, digest = write_job(tmp_path, [{"op": "set-value", "key": MACHINE_ENVIRONMENT_KEY, "name": "Path",
                                        "value": {"type": "REG_EXPAND_SZ", "data": "x"}, "record": record}])
    assert perform(machine, job, digest, tmp_path / "records") == 1
    assert OfflineImage(image.root).registry_value(MACHINE_ENVIRONMENT_KEY, "Path").data == before + r";C:\gone"


def test_an_undo_without_the_helpers_record_stops_instead_of_writing_the_journals_value(tmp_path):
    from app.repair.changes import RollbackStopped, machine_values

    class Elevating(OfflineImage):
        elevates_machine_changes = True

    root = tmp_path / "image"
    (root / "Windows" / "System32").mkdir(parents=True)
    system = Elevating(root)
    system.set_machine_value(FILE_SYSTEM_KEY, "LongPathsEnabled", RegistryValue("REG_DWORD", 1))
    intent = {"op": "machine-value", "key": FILE_SYSTEM_KEY, "name": "LongPathsEnabled", "shown": "x",
              "before": None, "after": {"type": "REG_DWORD", "data": 1}}  # "record" removed from the journal
    with pytest.raises(RollbackStopped) as stopped:
        machine_values.undo(system, None, intent, True)
    assert stopped.value.code == "setting-no-record"
    assert system.registry_value(FILE_SYSTEM_KEY, "LongPathsEnabled") == RegistryValue("REG_DWORD", 1)


def test_the_helper_writes_only_new_numbered_results_in_its_own_folder_never_in_the_users(image, tmp_path):
    """Each save is a new file (a reader holding the last one open never makes the helper fail, as replacing an
    open file does on Windows), in the helper's result folder; the user's folder gets nothing from the helper."""
    user = tmp_path / "transaction" / "elevated"
    user.mkdir(parents=True)
    job, digest = write_job(user, [{"op": "restore-point", "description": "x"}, LONG_PATHS])
    own = tmp_path / "admin-only" / digest[:32]
    before = sorted(p.name for p in user.iterdir())
    assert perform(image, job, digest, tmp_path / "records", results_at=own) == 0
    assert sorted(p.name for p in user.iterdir()) == before  # nothing written beside the job
    assert sorted(p.name for p in own.iterdir()) == ["result-1.json", "result-2.json"]
    first = json.loads((own / "result-1.json").read_text())["results"]
    assert [r["op"] for r in first] == ["restore-point"]  # kept as it was when the second was written
