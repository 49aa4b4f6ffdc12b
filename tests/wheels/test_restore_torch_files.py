"""`restore-torch-files` on copied drives holding the real torch 2.4.0 wheel's DLLs and its install record: a deleted
(fbgemm.dll), a truncated (torch_cpu.dll, cut to half) and an empty (c10.dll) DLL, counted as one problem, put back
from a real HTTPS index (by ranges, or the whole wheel where ranges are refused) or from a wheel already on the
drive, each file checked against RECORD; undo brings the damaged files back byte for byte."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time
import zipfile

import pytest

from app.main import main
from app.sources.torch_wheels import InstalledPackage, hex_digest, indexes_for
from tests import realfiles
from tests.helpers.damaged_torch import (
    DAMAGED,
    DIST_INFO,
    WHEEL_NAME,
    WHEEL_PATH,
    broken_image,
    damage_import_table,
    lib_state,
    serve,
)
from tests.helpers.files import sha
from tests.helpers.images import SITE, TORCH_LIB, VENV, real
from tests.https_server import Fault

PYTHON = VENV + r"\Scripts\python.exe"


@pytest.fixture(autouse=True)
def isolated(server, data_dir, monkeypatch):
    for name in ("REQUESTS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    server.faults.clear()
    server.log.clear()


def diagnose(image, capsys) -> dict:
    main(["diagnose", "--root", str(image.root), "--env", PYTHON, "--json", "-"])
    return json.loads(capsys.readouterr().out)


def repair(image, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "restore-torch-files", "--yes",
                 *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def restored_notes(data_dir) -> list[dict]:
    (folder,) = [p for p in (data_dir / "transactions").iterdir() if p.is_dir()]
    records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    return [r["restored_from"] for r in records if r["kind"] == "note" and "restored_from" in r]


def test_deleted_truncated_and_empty_torch_dlls_are_one_problem_restored_by_ranges_then_undone(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    image, original = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    before = diagnose(image, capsys)
    codes = {f["code"] for f in before["findings"]}
    assert {"torch-files-missing", "dll-damaged"} <= codes  # fbgemm.dll is below the damaged torch_cpu.dll
    for finding in before["findings"]:
        if finding["code"] in ("torch-files-missing", "missing-dll", "dll-damaged"):
            assert finding["repairs"] == ["restore-torch-files"], finding
    (problem,) = [p for p in before["problems"] if "restore-torch-files" in p["repairs"]]
    assert problem["code"] == "torch-files-missing" and problem["severity"] == "blocker"
    assert not [p for p in before["problems"] if p["code"] in ("missing-dll", "dll-damaged")]  # one cause, once
    damaged = lib_state(image)

    started = time.monotonic()
    code, out, err = repair(image, capsys, "--json", "-")
    seconds = time.monotonic() - started
    assert code == 0, err
    assert "Protection history" in out and "restore-torch-files" in out
    assert {name: lib_state(image)[name] for name in DAMAGED} == original
    wheel_requests = server.requests_for(WHEEL_PATH)
    assert wheel_requests and all(r.headers.get("Range") for r in wheel_requests)  # never the whole wheel
    (facts,) = restored_notes(data_dir)
    assert facts["ranged"] and facts["wheel_bytes"] == wheel.stat().st_size
    # the three members' compressed bytes (about 70.6 MB, torch_cpu.dll's 69 MB) plus the 1.3 MB directory
    with zipfile.ZipFile(wheel) as zipped:
        needed = sum(zipped.getinfo(f"torch/lib/{name}").compress_size for name in DAMAGED)
    assert needed < facts["transferred"] < needed + (3 << 20), facts
    with capsys.disabled():
        print(f"\nranged: {facts['transferred']} of {facts['wheel_bytes']} bytes "
              f"({facts['transferred'] / facts['wheel_bytes']:.1%}) in {seconds:.1f} s")

    after = diagnose(image, capsys)
    assert not {"torch-files-missing", "missing-dll", "dll-damaged"} & {f["code"] for f in after["findings"]}

    assert main(["undo", "--last"]) == 0
    capsys.readouterr()
    assert lib_state(image) == damaged  # the damaged files back, as they were


def test_one_deleted_torch_dll_is_one_problem_not_two(torch_image, installed, server, capsys):
    image, _ = broken_image(torch_image, installed, server, damage=("fbgemm.dll",))
    document = diagnose(image, capsys)
    (missing,) = [f for f in document["findings"] if f["code"] == "missing-dll"]
    (files,) = [f for f in document["findings"] if f["code"] == "torch-files-missing"]
    assert missing["evidence"]["dll"] == "fbgemm.dll" and files["evidence"]["files"] == ["fbgemm.dll"]
    assert missing["repairs"] == files["repairs"] == ["restore-torch-files"]
    blockers = [p for p in document["problems"] if p["severity"] == "blocker"]
    assert [p["code"] for p in blockers] == ["torch-files-missing"]  # one cause: one problem, one repair
    assert blockers[0]["repairs"] == ["restore-torch-files"]
    assert missing["problem"] == files["problem"] and document["summary"]["blockers"] == 1


def whole_fbgemm(image):
    """fbgemm.dll put back whole (it is quarantined in the broken image)."""
    fbgemm = image.host(TORCH_LIB) / "fbgemm.dll"
    shutil.copy2(real(realfiles.torch_lib, realfiles.TORCH_240) / "fbgemm.dll", fbgemm)
    return fbgemm


def damage_in_the_middle(dll) -> bytes:
    """The DLL's import table damaged, its size and its first and last 4 KB as they were; its bytes before."""
    whole = dll.read_bytes()
    damage_import_table(dll)
    damaged = dll.read_bytes()
    assert len(damaged) == len(whole) and damaged[:4096] == whole[:4096] and damaged[-4096:] == whole[-4096:]
    return whole


def test_a_dll_damaged_in_the_middle_is_found_by_the_check_after_one_of_it_whole(torch_image, installed, server,
                                                                                   capsys):
    image, _ = broken_image(torch_image, installed, server, damage=())
    fbgemm = whole_fbgemm(image)
    assert not {"missing-dll", "dll-damaged"} & {f["code"] for f in diagnose(image, capsys)["findings"]}
    damage_in_the_middle(fbgemm)
    found = [f for f in diagnose(image, capsys)["findings"] if f["code"] == "dll-damaged"]
    assert [f["evidence"]["dll"] for f in found] == ["fbgemm.dll"] and found[0]["repairs"] == ["restore-torch-files"]


def test_a_dll_damaged_in_the_middle_and_restored_is_fixed_by_the_repairs_own_check(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    image, original = broken_image(torch_image, installed, server, damage=())
    serve(server, wheel, wheel_sha256)
    fbgemm = whole_fbgemm(image)
    whole = damage_in_the_middle(fbgemm)
    code, out, err = repair(image, capsys, "--json", "-")
    assert code == 0, err  # the repair's own check after the restore: fixed
    assert fbgemm.read_bytes() == whole and sha(fbgemm) == original["fbgemm.dll"]


def test_of_two_environments_of_one_torch_the_one_damaged_in_the_middle_is_found_when_both_are_checked(
        torch_image, capsys):
    """The second environment's files linked to the first's, as uv makes them; its fbgemm.dll then damaged in the
    middle (a file of its own): checking every environment finds that one, and only that one."""
    image = torch_image(libomp=True)
    second = image.host(VENV).parent.parent / "ComfyUI-2" / "venv"
    shutil.copytree(image.host(VENV), second, copy_function=os.link)
    damage_in_the_middle(second / "Lib" / "site-packages" / "torch" / "lib" / "fbgemm.dll")
    main(["diagnose", "--root", str(image.root), "--json", "-"])
    document = json.loads(capsys.readouterr().out)
    assert len([e for e in document["environments"] if e.get("torch")]) == 2
    found = [f for f in document["findings"] if f["code"] == "dll-damaged"]
    assert [(f["evidence"]["dll"], f["environment"]) for f in found] == [
        ("fbgemm.dll", r"C:\Users\<user>\ComfyUI-2\venv\Scripts\python.exe")]  # user names redacted


def test_a_server_that_refuses_ranges_gets_the_whole_wheel_checked_against_the_index_hash(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    image, original = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    server.faults[WHEEL_PATH] = Fault(ignore_range=True)
    started = time.monotonic()
    code, out, err = repair(image, capsys)
    seconds = time.monotonic() - started
    assert code == 0, err
    assert "matched the index's fingerprint" in err
    assert {name: lib_state(image)[name] for name in DAMAGED} == original
    (facts,) = restored_notes(data_dir)
    assert not facts["ranged"] and facts["transferred"] == wheel.stat().st_size
    assert facts["index_sha256"] == wheel_sha256
    with capsys.disabled():
        print(f"\nwhole wheel: {facts['transferred']} bytes in {seconds:.1f} s")


def test_a_whole_wheel_whose_hash_is_not_the_indexs_is_refused_and_nothing_changes(
        torch_image, installed, server, wheel, data_dir, capsys):
    image, _ = broken_image(torch_image, installed, server)
    serve(server, wheel, "0" * 64)  # the index names another file under that name
    server.faults[WHEEL_PATH] = Fault(ignore_range=True)
    damaged = lib_state(image)
    code, _, err = repair(image, capsys)
    assert code == 1 and "fingerprint" in err
    assert lib_state(image) == damaged


def test_a_member_that_is_not_what_the_installed_record_pins_is_refused_and_nothing_changes(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    """RECORD says which bytes belong to this install: a wheel whose fbgemm.dll differs (another build under the
    same name) is not used, and the other files already fetched are not placed either."""
    image, _ = broken_image(torch_image, installed, server)
    record = image.host(SITE + "\\" + DIST_INFO + r"\RECORD")
    lines = record.read_text().splitlines()
    lines = [line if not line.startswith("torch/lib/fbgemm.dll,") else
             "torch/lib/fbgemm.dll,sha256=" + "A" * 43 + "," + line.rsplit(",", 1)[1] for line in lines]
    record.write_text("\n".join(lines) + "\n")
    serve(server, wheel, wheel_sha256)
    damaged = lib_state(image)
    code, _, err = repair(image, capsys)
    assert code == 1 and "fingerprint does not match" in err, err
    assert lib_state(image) == damaged


@pytest.mark.parametrize("where", [r"C:\Users\alice\Downloads\torch-2.4.0-cp312-cp312-win_amd64.whl",
                                   r"C:\Users\alice\AppData\Local\pip\cache\http-v2\a\1\c\9\e\0b1c2d.body"])
def test_a_wheel_already_on_the_drive_is_used_without_any_download(torch_image, installed, server, wheel,
                                                                     data_dir, capsys, where):
    """The user's Downloads, or pip's own cache (pip 23.3+ keeps a downloaded wheel as a `.body` file)."""
    image, original = broken_image(torch_image, installed, server, index="/no-such-index")
    image.copy(wheel, where, link=True)
    code, out, err = repair(image, capsys, "--lang", "en", "--json", "-")
    assert code == 0, err
    assert "nothing is downloaded" in out
    plan = json.loads(out[out.index('{\n  "schema"'):])["plan"]
    assert plan["source"] == "local" and plan["downloads"] is False  # the plan page says no download
    assert {name: lib_state(image)[name] for name in DAMAGED} == original
    assert not server.log  # no request at all
    (facts,) = restored_notes(data_dir)
    assert facts["source"] == str(image.host(where)) and facts["transferred"] == 0


def test_a_wheel_the_user_names_is_used_and_another_release_is_refused(torch_image, installed, server, data_dir,
                                                                         capsys, tmp_path):
    image, original = broken_image(torch_image, installed, server, index="/no-such-index")
    other = real(realfiles.download, realfiles.TORCH_241)
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / other.name).hardlink_to(other)
    code, _, err = repair(image, capsys, "--source", str(folder))
    assert code == 1 and f"{WHEEL_NAME} is not in" in err  # 2.4.1 is not the release installed
    (folder / WHEEL_NAME).hardlink_to(real(realfiles.download, realfiles.TORCH_240))
    code, _, err = repair(image, capsys, "--source", str(folder / WHEEL_NAME))
    assert code == 0, err
    assert {name: lib_state(image)[name] for name in DAMAGED} == original


def test_the_plan_names_each_file_and_says_how_to_stop_it_in_both_languages(torch_image, installed, server,
                                                                             capsys):
    image, _ = broken_image(torch_image, installed, server)
    for lang, words in (("en", ("Put back", "Replace the damaged", "Protection history", "exclusion")),
                        ("zh_CN", ("放回", "替换已损坏的", "保护历史记录", "排除项"))):
        code = main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "reinstall-torch", "--plan",
                     "--lang", lang])
        out = capsys.readouterr().out
        assert code == 0
        for word in words:
            assert word in out, (lang, word, out)
        assert out.count("fbgemm.dll") >= 1 and "torch_cpu.dll" in out and "c10.dll" in out
    assert not server.log  # planning downloads nothing


def test_a_pytorch_build_is_looked_for_on_pytorchs_index_for_its_variant_first():
    cuda = InstalledPackage("torch", "2.4.0+cu124", None, ("cp312-cp312-win_amd64",))
    assert cuda.wheel == "torch-2.4.0+cu124-cp312-cp312-win_amd64.whl"
    assert indexes_for(cuda, ["https://mirror.example/simple"]) == ["https://download.pytorch.org/whl/cu124",
                                                                    "https://mirror.example/simple"]
    assert cuda.matches("torch-2.4.0%2Bcu124-cp312-cp312-win_amd64.whl")  # as PyTorch's index links it
    assert not cuda.matches("torch-2.4.0+cu121-cp312-cp312-win_amd64.whl")
    assert not cuda.matches("torch-2.4.0+cu124-cp311-cp311-win_amd64.whl")
    plain = InstalledPackage("torch", "2.4.0", None, ("cp312-cp312-win_amd64",))
    assert indexes_for(plain, ["https://pypi.org/simple"]) == ["https://pypi.org/simple"]
    pure = InstalledPackage("typing_extensions", "4.12.2", None, ("py3-none-any",))
    assert pure.matches("typing_extensions-4.12.2-py3-none-any.whl")


def test_record_digests_are_converted_from_urlsafe_base64_to_hex():
    data = b"torch"
    record = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert hex_digest(record) == hashlib.sha256(data).hexdigest()


DOWNLOADS = r"C:\Users\alice\Downloads" + "\\" + WHEEL_NAME
PIP_BODY = r"C:\Users\alice\AppData\Local\pip\cache\http-v2\a\b\c\0f1e2d.body"


def test_a_same_named_wheel_with_other_contents_is_not_used_and_the_index_gives_the_right_files(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    """torch 2.4.1's wheel renamed to 2.4.0's name in Downloads: its own RECORD pins other files, so it is passed
    over (and said), and the user's index, which has the right wheel, is asked."""
    image, original = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    image.copy(real(realfiles.download, realfiles.TORCH_241), DOWNLOADS, link=True)
    code, out, err = repair(image, capsys, "--lang", "en")
    assert code == 0, err
    assert f"Not used: {DOWNLOADS}" in out and "other files than the installed ones" in out
    assert {name: lib_state(image)[name] for name in DAMAGED} == original
    (facts,) = restored_notes(data_dir)
    assert facts["ranged"] and "source" not in facts  # from the index, by ranges


def test_a_pip_cache_entry_of_the_same_release_for_another_python_is_judged_by_its_tags(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    image, original = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    image.copy(real(lambda: realfiles.download(realfiles.TORCH_240, python="3.11")), PIP_BODY, link=True)
    code, out, err = repair(image, capsys, "--lang", "zh_CN")
    assert code == 0, err
    assert "不使用" in out and "WHEEL 标记" in out
    assert {name: lib_state(image)[name] for name in DAMAGED} == original


def test_a_local_wheel_whose_member_is_not_the_installed_file_gives_way_to_the_index_at_apply(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    """Its WHEEL and RECORD are the installed ones, its fbgemm.dll is not: the copy fails RECORD's hash, and
    the next source (the index) is used; the words say the local one was tried."""
    image, original = broken_image(torch_image, installed, server, damage=("fbgemm.dll",))
    serve(server, wheel, wheel_sha256)
    fake = image.host(DOWNLOADS)
    fake.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as real_wheel, zipfile.ZipFile(fake, "w") as out:
        for name in (f"{DIST_INFO}/WHEEL", f"{DIST_INFO}/RECORD"):
            out.writestr(name, real_wheel.read(name))
        out.writestr("torch/lib/fbgemm.dll", b"MZ" + b"\0" * 4096)
    code, out, err = repair(image, capsys)
    assert code == 0, err
    assert sha(image.host(TORCH_LIB + r"\fbgemm.dll")) == original["fbgemm.dll"]
    (facts,) = restored_notes(data_dir)
    assert facts["ranged"]


def test_a_record_line_that_leads_out_of_site_packages_is_never_put_back(
        torch_image, installed, server, wheel, wheel_sha256, data_dir, capsys):
    startup = r"C:\Users\alice\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup"
    escape = "torch/lib/../../../../../../AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup/run.cmd"
    empty = "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0"
    hostile = dict(installed, RECORD=installed["RECORD"] + f"{escape},{empty}\n")
    image, original = broken_image(torch_image, hostile, server)
    serve(server, wheel, wheel_sha256)
    code, out, err = repair(image, capsys)
    assert code == 0, err
    assert not image.host(startup).exists()
    (folder,) = [p for p in (data_dir / "transactions").iterdir() if p.is_dir()]
    intents = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert not [r for r in intents if r["kind"] == "intent" and "Startup" in json.dumps(r)]  # never a change
    assert {name: lib_state(image)[name] for name in DAMAGED} == original


def test_an_older_torch_dist_info_left_behind_is_not_what_is_installed(torch_image, data_dir, capsys):
    """pip install --ignore-installed left torch-2.4.0.dist-info beside torch 2.5.1's: one file of 2.5.1 is
    missing, and only that file is put back, from 2.5.1's wheel; 2.5.1's working files are never touched."""
    from tests.helpers.images import pip_install

    image = torch_image(torch=realfiles.TORCH_241)  # python, a venv, System32's runtime (its lib is replaced)
    lib = image.host(TORCH_LIB)
    for dll in lib.glob("*.dll"):
        dll.unlink()
    shutil.rmtree(image.host(SITE + r"\torch-2.4.1.dist-info"))  # replaced too

    def keep(name: str) -> bool:
        return name in ("torch/__init__.py", "torch/version.py") or (name.startswith("torch/lib/")
                                                                     and name.endswith(".dll"))
    pip_install(image, realfiles.TORCH_240, SITE, keep=keep)
    pip_install(image, "torch==2.5.1", SITE, keep=keep)  # over it, as --ignore-installed does
    assert {p.name for p in image.host(SITE).iterdir() if p.name.endswith(".dist-info")} == {
        "torch-2.4.0.dist-info", "torch-2.5.1.dist-info"}
    image.copy(real(realfiles.download, "torch==2.5.1"), r"C:\Users\alice\Downloads\torch-2.5.1-cp312-cp312-"
               "win_amd64.whl", link=True)
    before = lib_state(image)
    (lib / "fbgemm.dll").unlink()
    document = diagnose(image, capsys)
    missing = next(f for f in document["findings"] if f["code"] == "torch-files-missing")
    assert missing["evidence"]["missing"] == ["torch/lib/fbgemm.dll"]
    assert "torch-2.5.1.dist-info" in missing["evidence"]["record"]
    code, out, err = repair(image, capsys, "--plan")
    assert out.count("Put back") + out.count("Repair") <= 3 and "torch-2.5.1" in out and "2.4.0" not in out
    code, out, err = repair(image, capsys)
    assert code == 0, err
    assert lib_state(image) == before  # 2.5.1's own fbgemm.dll back, nothing else changed


def test_ctrl_c_during_the_download_stops_the_repair_like_stop_and_puts_everything_back(
        torch_image, installed, server, wheel, wheel_sha256, data_dir):
    """The command line in a process of its own; the member's download stalls after 2 MB; Ctrl+C (SIGINT) is said
    at once, the download stopped, the transaction rolled back, and the words say so: no traceback, exit 1."""
    import os
    import signal
    import subprocess
    import sys

    image, _ = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    server.faults[WHEEL_PATH] = Fault(stall_at=2 << 20)  # the zip's directory (1.3 MB) comes; the member stalls
    damaged = lib_state(image)
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "repair", "--root", str(image.root), "--env", PYTHON,
         "--action", "restore-torch-files", "--yes", "--lang", "en"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=dict(os.environ))
    try:
        deadline, planned = time.monotonic() + 180, None
        while process.poll() is None and time.monotonic() < deadline:  # the repair began, then asked for a member
            if planned is None and list((data_dir / "transactions").glob("*/journal.jsonl")):
                planned = len(server.requests_for(WHEEL_PATH))  # the plan read the wheel's directory
            if planned is not None and len(server.requests_for(WHEEL_PATH)) > planned:
                break
            time.sleep(0.1)
        assert planned is not None and len(server.requests_for(WHEEL_PATH)) > planned, process.poll()
        time.sleep(1.0)
        asked = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)  # a few lines: the pipes never fill before this
        seconds = time.monotonic() - asked
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, (process.returncode, out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "Stopping… (Ctrl+C)" in err
    assert "The download was cancelled. Nothing was changed" in err  # the Stop button's words
    assert seconds < 30, seconds
    assert lib_state(image) == damaged
    (folder,) = [p for p in (data_dir / "transactions").iterdir() if p.is_dir()]
    kinds = [json.loads(line)["kind"] for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert kinds[-1] == "rolled-back" and "finish" not in kinds, kinds


def test_a_record_that_cannot_be_read_is_said_by_the_repair_as_the_diagnosis_says_it(torch_image, installed, server,
                                                                                       data_dir, capsys):
    """torch's RECORD zero-filled by a crash, and a DLL gone: the diagnosis says the record cannot be read; the
    repair says the same, never "found nothing that this repair would fix"."""
    image, _ = broken_image(torch_image, installed, server, damage=("fbgemm.dll",))
    record = next(image.host(SITE).glob("torch-*.dist-info")) / "RECORD"
    record.write_text("torch/lib/c10.dll,sha256=x,²\n" + "x" * 200_000 + "\n")
    document = diagnose(image, capsys)
    assert any(f["code"] == "check-failed" and f["variant"] == "record-unreadable" for f in document["findings"])
    code, out, err = repair(image, capsys)
    assert code == 1 and "cannot be read" in err and "nothing that this repair would fix" not in err, err


def test_files_placed_together_are_each_announced_before_any_is_placed_and_a_kill_among_them_is_rolled_back(
        torch_image, installed, server, wheel, wheel_sha256, data_dir):
    """The restored files are placed in groups under one pair of journal writes: every file's intent is on disk
    before the first file is placed, so a kill (as a power cut) after the second file leaves intents for all three
    and `applied` for none, and one undo brings every damaged file back byte for byte."""
    import subprocess
    import sys

    from app.repair.journal import Journal

    image, _ = broken_image(torch_image, installed, server)
    serve(server, wheel, wheel_sha256)
    damaged = lib_state(image)
    killed = subprocess.run(
        [sys.executable, "-m", "app", "repair", "--root", str(image.root), "--env", PYTHON,
         "--action", "restore-torch-files", "--yes", "--lang", "en"],
        env={**os.environ, "TDD_CRASH_AT": "change:2"}, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    (unfinished,) = Journal().unfinished()
    kinds = [(r["kind"], r.get("step")) for r in unfinished.records]
    assert [step for kind, step in kinds if kind == "intent"] == [1, 2, 3]
    assert not [step for kind, step in kinds if kind == "applied"]
    assert lib_state(image) != damaged  # the second file at least was placed
    assert main(["undo", "--transaction", unfinished.id]) == 0
    assert lib_state(image) == damaged


def test_a_small_file_is_kept_in_memory_once_checked_and_a_large_one_goes_through_a_file(wheel, tmp_path):
    """The thousands of small files of a cut-short install are checked in memory and written once, at their place;
    a DLL of megabytes goes through a file of the download folder, so memory stays bounded."""
    from app.repair.restore_files import IN_MEMORY_FILE, _copy_members
    from app.sources.wheel_member import LocalWheel

    with zipfile.ZipFile(wheel) as zipped:
        record = zipped.read(f"{DIST_INFO}/RECORD").decode()
    pinned = {path: (digest, int(size)) for path, digest, size in (line.rsplit(",", 2) for line in record.split())
              if digest.startswith("sha256=")}
    files = []
    for path in ("torch/__init__.py", "torch/lib/fbgemm.dll"):
        digest, size = pinned[path]
        files.append({"path": path, "target": str(tmp_path / "site" / path), "size": size,
                      "sha256": hex_digest(digest.removeprefix("sha256="))})
    assert files[0]["size"] <= IN_MEMORY_FILE < files[1]["size"]
    folder = tmp_path / "downloads"
    folder.mkdir()
    with LocalWheel(wheel) as opened:
        (small, _, small_digest), (large, _, large_digest) = _copy_members(
            opened, {"dist_info": DIST_INFO, "files": files}, folder, None)
    assert isinstance(small, bytes) and hashlib.sha256(small).hexdigest() == small_digest == files[0]["sha256"]
    assert [p.name for p in folder.iterdir()] == [large.name] and sha(large) == large_digest == files[1]["sha256"]
