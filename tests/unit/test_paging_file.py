"""WinError 1455 on offline images: the paging-file probe reads PagingFiles (registry.json) in each form Windows writes,
the commit figures and free space recorded in environment.json, and the sizes of a CUDA build's torch\\lib DLLs (small
PE files made sparse to GBs); `paging-file-system-managed` writes `?:\\pagefile.sys` into registry.json, ends as
"restart needed", and undo puts registry.json back byte for byte."""

from __future__ import annotations

import json

import pytest

from app.inventory.environment import inspect_environment
from app.inventory.paging import PagingFile, parse_paging_files
from app.main import main
from app.probes import paging_file
from app.probes.error_text import classify_error
from app.probes.runner import run_diagnosis
from app.repair.journal import Journal
from app.system.offline import OfflineImage
from tests.helpers.paging_file import FIXED_2GB, GB, MM, PYTHON, sd_image


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))


def paging_findings(root, complete: bool = True):
    system = OfflineImage(root)
    env = inspect_environment(system, system.host_path(PYTHON))
    diagnosis = run_diagnosis(system, [env])
    assert diagnosis.complete is complete
    return [f for f in diagnosis.findings if f.code == paging_file.CODE], diagnosis


def test_the_paging_file_forms_windows_writes_are_read():
    assert parse_paging_files([r"?:\pagefile.sys"]) == (PagingFile(r"?:\pagefile.sys"),)
    assert parse_paging_files([r"C:\pagefile.sys 0 0"])[0].system_managed
    assert parse_paging_files([r"D:\pagefile.sys"])[0].system_managed
    fixed = parse_paging_files([r"C:\pagefile.sys 1024 4096"])[0]
    assert (fixed.initial_mb, fixed.maximum_mb, fixed.system_managed, fixed.drive) == (1024, 4096, False, "C:")
    assert parse_paging_files([]) == () and parse_paging_files([""]) == ()  # no paging file
    assert parse_paging_files([r"C:\pagefile.sys 1024"]) is None and parse_paging_files(["pagefile"]) is None


def test_a_fixed_paging_file_too_small_for_the_cuda_dlls_is_repaired_restart_needed_and_undone_byte_for_byte(
        tmp_path, capsys):
    image = sd_image(tmp_path / "image")
    (finding,), diagnosis = paging_findings(image.root)
    assert not [f for f in diagnosis.blockers if f.code != paging_file.CODE]  # the only blocker of this layout
    assert (finding.severity, finding.variant, finding.repairs) == ("blocker", "custom", ["paging-file-system-managed"])
    evidence = finding.evidence
    assert evidence["setting"] == [FIXED_2GB] and evidence["maximum"] == "2,048 MB"
    assert (evidence["needed"], evidence["room"], evidence["limit"], evidence["used"]) == (
        "4,096 MB", "2,048 MB", "16,384 MB", "14,336 MB")  # RAM 14 GB + at most 2 GB: 2 GB of room for 4 GB
    assert evidence["largest"][0] == "cudnn_cnn_infer64_8.dll"
    assert "2,048 MB" in finding.text("en").explanation and "页面文件" in finding.text("zh_CN").explanation
    original = (image.root / "registry.json").read_bytes()
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "paging-file-system-managed"]

    assert main([*argv, "--plan"]) == 0
    plan = capsys.readouterr().out
    assert r"?:\pagefile.sys" in plan and "restart" in plan and FIXED_2GB in plan
    assert (image.root / "registry.json").read_bytes() == original  # a plan changes nothing

    assert main([*argv, "--yes", "--json", str(tmp_path / "outcome.json")]) == 1  # done, but not until the restart
    capsys.readouterr()
    assert json.loads((image.root / "registry.json").read_text("utf-8"))[MM]["PagingFiles"] == {
        "type": "REG_MULTI_SZ", "data": [r"?:\pagefile.sys"]}
    outcome = json.loads((tmp_path / "outcome.json").read_text("utf-8"))
    assert outcome["state"] == "restart-needed" and outcome["problems_left"] == [paging_file.CODE]
    (transaction,) = Journal().transactions()
    assert transaction.restart_needed
    (step,) = transaction.steps()
    assert step.intent["before"] == {"type": "REG_MULTI_SZ", "data": [FIXED_2GB]}
    (after,), _ = paging_findings(image.root)  # measured with the old setting: the new one waits for the restart
    assert (after.variant, after.repairs, after.evidence["pending_restart"]) == ("restart", [], True)
    assert "Restart" in after.text("en").title and "重启" in after.text("zh_CN").title

    assert main(["undo", "--last"]) == 0
    said = capsys.readouterr().out
    assert "Undone" in said and "paging file is too small" in said  # as before the repair
    assert (image.root / "registry.json").read_bytes() == original


@pytest.mark.parametrize("empty", [[], [""]])
def test_no_paging_file_is_repaired_and_undone_however_windows_spells_the_empty_setting(tmp_path, capsys, empty):
    image = sd_image(tmp_path / "image", paging_files=empty)
    (finding,), _ = paging_findings(image.root)
    assert (finding.variant, finding.repairs) == ("none", ["paging-file-system-managed"])
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "paging-file-system-managed", "--yes"]
    assert main(argv) == 1  # done; it takes effect at the restart
    capsys.readouterr()
    assert json.loads((image.root / "registry.json").read_text("utf-8"))[MM]["PagingFiles"]["data"] == [
        r"?:\pagefile.sys"]
    assert main(["undo", "--last"]) == 0, capsys.readouterr().err  # never "not a value this app writes"
    assert "Undone" in capsys.readouterr().out
    assert json.loads((image.root / "registry.json").read_text("utf-8"))[MM]["PagingFiles"] == {
        "type": "REG_MULTI_SZ", "data": []}  # no paging file, as before
    (again,), _ = paging_findings(image.root)
    assert again.variant == "none"


@pytest.mark.parametrize("paging_files, memory, severity, variant", [
    ([], None, "blocker", "none"),  # no paging file: the 16 GB limit is all there is
    ([r"C:\pagefile.sys 1024 4096"], {"commit_limit": 16 * GB, "commit_total": 15 * GB, "physical_total": 14 * GB},
     "blocker", "custom"),  # grows to 14 + 4 = 18 GB: 3 GB of room for 4 GB
    ([r"C:\pagefile.sys 1024 8192"], {"commit_limit": 16 * GB, "commit_total": 14 * GB, "physical_total": 14 * GB},
     "warning", "tight"),  # 8 GB of room: one process (4 GB) fits, a second (8 GB in all) does not quite
    ([r"C:\pagefile.sys 1024 65536"], {"commit_limit": 16 * GB, "commit_total": 14 * GB, "physical_total": 14 * GB},
     None, None),  # grows to 78 GB
    ([r"C:\pagefile.sys 1024 4096"], {"commit_limit": 16 * GB, "commit_total": 15 * GB}, None, None),  # RAM unknown
    ([r"C:\pagefile.sys 2048 2048"], {"commit_limit": 16 * GB, "commit_total": 15 * GB}, "blocker", "custom"),
])
def test_each_paging_file_setting_against_what_windows_can_commit(tmp_path, paging_files, memory, severity,
                                                                   variant):
    if memory is not None:
        memory = {**memory, "paging_files": paging_files}
    image = sd_image(tmp_path / "image", paging_files, memory=memory)
    found, _ = paging_findings(image.root)
    assert [(f.severity, f.variant) for f in found] == ([(severity, variant)] if severity else [])
    for finding in found:
        assert finding.repairs == ["paging-file-system-managed"]
        texts = [finding.text(lang) for lang in ("en", "zh_CN")]
        assert all(part.strip() != "-" and "{" not in part for t in texts for part in t.__dict__.values())


@pytest.mark.parametrize("setting", [r"?:\pagefile.sys", r"C:\pagefile.sys 0 0"])
def test_a_system_managed_paging_file_is_stopped_only_by_a_full_drive(tmp_path, setting):
    full = sd_image(tmp_path / "full", [setting], free=3 * GB)  # 2 GB + (3 - 1) GB of room for 4 GB
    (finding,), _ = paging_findings(full.root)
    assert (finding.severity, finding.variant, finding.repairs) == ("blocker", "disk", [])
    assert finding.evidence["free"] == "3,072 MB" and "C:" in finding.text("en").title
    roomy = sd_image(tmp_path / "roomy", [setting], free=200 * GB)
    assert paging_findings(roomy.root)[0] == []
    unknown = sd_image(tmp_path / "unknown", [setting])  # free space not recorded: it may grow
    assert paging_findings(unknown.root)[0] == []


def test_a_cpu_build_has_no_paging_file_finding(tmp_path):
    image = sd_image(tmp_path / "image", [], cuda=None)
    assert paging_findings(image.root)[0] == []


@pytest.mark.parametrize("case", ["no figures", "no setting", "damaged figures", "damaged setting"])
def test_unknown_facts_give_no_blocker(tmp_path, case):
    paging_files = None if case == "no setting" else ["junk"] if case == "damaged setting" else []
    memory = False if case == "no figures" else None
    image = sd_image(tmp_path / "image", paging_files, memory=memory)
    if case == "damaged figures":
        image.env["memory"] = {"commit_limit": "16 GB", "commit_total": 14}
        image.save()
    damaged = case.startswith("damaged")  # there, but unreadable: said, and never "all clear"
    found, diagnosis = paging_findings(image.root, complete=not damaged)
    assert found == [] and diagnosis.blockers == []
    failed = [f for f in diagnosis.findings if f.code == "check-failed"]
    assert [f.variant for f in failed] == (["settings"] if damaged else [])
    if case == "damaged figures":
        assert any("memory table" in p for p in diagnosis.machine.problems)
        assert "memory table" in failed[0].evidence["error"] and "Windows" in failed[0].text("en").title
    if case == "damaged setting":
        assert "junk" in failed[0].text("en").explanation and failed[0].evidence["probe"] == "paging-file"


def test_the_repair_refuses_a_system_managed_or_unknown_setting(tmp_path, capsys):
    argv = ["--env", PYTHON, "--action", "paging-file-system-managed", "--plan"]
    managed = sd_image(tmp_path / "managed", [r"?:\pagefile.sys"])
    assert main(["repair", "--root", str(managed.root), *argv]) == 1
    assert "nothing" in capsys.readouterr().err
    absent = sd_image(tmp_path / "absent", None)
    assert main(["repair", "--root", str(absent.root), *argv]) == 1
    assert "could not be read" in capsys.readouterr().err


@pytest.mark.parametrize("setting", [r"D:\swap\pagefile.sys 1024 2048", r"C:\pagefile.sys  1024 2048",
                                     r"C:\pagefile.sys 1024"])
def test_a_setting_in_no_form_windows_writes_is_said_and_never_changed_by_a_repair_it_could_not_undo(
        tmp_path, capsys, setting):
    """The undo writes back only the form Windows writes (changes/machine_values.py): a folder, two spaces or one
    size were read as a custom size, repaired, and the undo then refused for good. Now it is a setting the check
    could not read, no repair is named, and the repair refuses before anything changes."""
    image = sd_image(tmp_path / "image", [setting])
    found, diagnosis = paging_findings(image.root, complete=False)
    assert found == [] and [f.variant for f in diagnosis.findings if f.code == "check-failed"] == ["settings"]
    assert not any("paging-file-system-managed" in f.repairs for f in diagnosis.findings)
    before = (image.root / "registry.json").read_bytes()
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "paging-file-system-managed", "--yes"]
    assert main(argv) == 1 and "could not be read" in capsys.readouterr().err
    assert (image.root / "registry.json").read_bytes() == before


def test_explain_of_winerror_1455_points_to_the_paging_file_repair():
    text = (r'OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading '
            r'"C:\sd\venv\lib\site-packages\torch\lib\cudnn_cnn_infer64_8.dll" or one of its dependencies.')
    cause = classify_error(text)
    words = cause.text("en")
    assert cause.advice == "paging-file" and "cudnn_cnn_infer64_8.dll" in words["title"]
    assert "manage the paging file size" in words["action"] and "undone" in words["action"]
    assert "自动管理页面文件大小" in cause.text("zh_CN")["action"]
    for lang in ("en", "zh_CN"):  # the reader sees words, never a repair's id (the Welcome page shows this too)
        assert "paging-file-system-managed" not in cause.text(lang)["action"]
