"""Repairs off the happy path, with real processes: a live repair is never taken for a crashed one (its lock dies
with its process), one repair or undo at a time, the newest repair is the last one, a rollback that Windows refuses
is recorded and said, and the downloads are not kept."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.failures import failure_text
from app.i18n import words
from app.main import main
from app.repair.changes.files import PutFile
from app.repair.journal import (
    DONE,
    INTERRUPTED,
    ROLLBACK_STOPPED,
    ROLLED_BACK,
    RUNNING,
    Journal,
    RepairBusy,
    Transaction,
    TransactionChanged,
)
from app.repair.run import roll_back, tidy, undo
from app.system.offline import OfflineImage
from tests.helpers.images import TORCH_LIB, tree_hashes
from tests.helpers.repair_process import BOOT, PYTHON, repair_argv, start_paused

LIBOMP = TORCH_LIB + r"\libomp140.x86_64.dll"


pytestmark = pytest.mark.usefixtures("data_dir")  # tests/conftest.py


@pytest.mark.parametrize("point", ["intent:1", "change:1"])
def test_a_running_repair_is_not_rolled_back_by_a_second_process(torch_image, data_dir, tmp_path, point, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    repair, go = start_paused(image, data_dir, point, tmp_path)
    try:
        (transaction,) = Journal().transactions()
        assert transaction.state == RUNNING  # held by a live process: not a crash
        assert Journal().unfinished() == [] and [t.id for t in Journal().running()] == [transaction.id]
        assert main(["undo", "--last"]) == 1  # the second window's undo is refused, and touches nothing
        err = capsys.readouterr().err
        assert "Another repair or undo is running right now" in err and str(repair.pid) in err
        with pytest.raises(RepairBusy):
            undo(Journal().get(transaction.id))
        assert main(["diagnose", "--root", str(image.root), "--quiet", "--json", os.devnull]) in (0, 1)
        assert "undo --transaction" not in capsys.readouterr().err  # not offered for rollback while it runs
    finally:
        go.write_text("go")
        out, err = repair.communicate(timeout=120)
    assert repair.returncode == 0, err
    assert (lib / "libomp140.x86_64.dll").read_bytes() == (lib / "libiomp5md.dll").read_bytes()
    (transaction,) = Journal().transactions()
    assert transaction.state == DONE  # the journal's state is the truth: the file is there, and undo removes it
    assert main(["undo", "--last"]) in (0, 1)
    capsys.readouterr()
    assert not (lib / "libomp140.x86_64.dll").exists() and Journal().get(transaction.id).state == ROLLED_BACK


def test_a_repair_killed_while_held_is_found_interrupted_and_rolled_back(torch_image, data_dir, tmp_path, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    repair, _go = start_paused(image, data_dir, "change:1", tmp_path)
    assert Journal().running()
    repair.kill()
    repair.communicate(timeout=30)
    (transaction,) = Journal().unfinished()  # its lock died with it
    assert transaction.state == INTERRUPTED
    assert main(["undo", "--transaction", transaction.id]) in (0, 1)
    capsys.readouterr()
    assert tree_hashes(lib) == before and Journal().get(transaction.id).state == ROLLED_BACK


def killed_after_the_change(image, data_dir: Path, tmp_path: Path) -> Transaction:
    """A repair killed just after libomp140 was placed: the interrupted transaction it leaves."""
    repair, _go = start_paused(image, data_dir, "change:1", tmp_path)
    repair.kill()
    repair.communicate(timeout=30)
    (transaction,) = Journal().unfinished()
    return transaction


@dataclass(frozen=True)
class AsPipLeftIt:
    """A packages step with its record as pip's upgrade leaves it, and no pip run."""

    intent: dict
    op = "packages"

    def prepare(self, system, transaction, number: int) -> dict:
        return self.intent

    def apply(self, system, transaction, intent: dict) -> None:
        return None


def test_a_file_restored_in_torch_and_a_torch_upgraded_after_it_are_undone_newest_first(torch_image, data_dir):
    """The upgrade changes torch's whole folder (pip replaces every file in it); a repair that put back one DLL in
    it before is the same files: its undo waits for the upgrade's (else pip's undo would put the old DLL over the
    restored one, whose own undo would then stop at "changed since"). Either order, and unrelated files not."""
    image = torch_image()
    lib = image.host(TORCH_LIB)
    system = OfflineImage(image.root)
    source = image.root / "restored.dll"
    source.write_bytes(b"restored")
    journal = Journal()
    restore = journal.begin({"id": "m"}, "restore-torch-files", None, "env", {})
    restore.step(system, PutFile(lib / "torch_cpu.dll", source))
    restore.finish({"state": "fixed"})
    restore.release()
    upgrade = journal.begin({"id": "m"}, "upgrade-torch", None, "env", {})
    upgrade.step(system, AsPipLeftIt({"op": "packages", "site_packages": str(lib.parent.parent),
                                      "before": {"torch": "2.4.0"}, "after": {"torch": "2.4.1"}}))
    upgrade.finish({"state": "fixed"})
    upgrade.release()
    assert journal.newer_on_same_files(restore).id == upgrade.id
    other = journal.begin({"id": "m"}, "place-libomp140", None, "env", {})
    other.step(system, PutFile(image.root / "elsewhere" / "torch_cpu.dll", source))  # not inside torch's folder
    other.finish({"state": "fixed"})
    other.release()
    assert journal.newer_on_same_files(upgrade) is None


def test_an_interrupted_repair_done_again_afterwards_is_undone_newest_first_back_to_the_start(
        torch_image, data_dir, tmp_path, capsys):
    """Killed just after libomp140 was placed, then run again (done): the undo the app offers for the first took the
    second's fix away while it stayed "done", and undoing both left the file behind. The older waits for the
    newer, with words; newest first, both undo back to the start."""
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    first = killed_after_the_change(image, data_dir, tmp_path)
    assert main(repair_argv(image)) == 0  # the user runs the repair again
    (second,) = [t for t in Journal().transactions() if t.id != first.id]
    capsys.readouterr()
    assert main(["undo", "--transaction", first.id, "--lang", "en"]) == 1
    err = capsys.readouterr().err
    assert f"a newer repair (place-libomp140, {second.id})" in err and f"undo --transaction {second.id}" in err
    assert (lib / "libomp140.x86_64.dll").is_file() and Journal().get(second.id).state == DONE
    assert main(["undo", "--transaction", second.id]) == 0
    assert main(["undo", "--transaction", first.id]) == 0
    capsys.readouterr()
    assert tree_hashes(lib) == before
    assert {t.state for t in Journal().transactions()} == {ROLLED_BACK}


@pytest.mark.parametrize("tear", ["mid-character", "mid-line"])
def test_a_journal_line_cut_short_by_a_power_cut_is_passed_over_and_the_repair_undone(torch_image, data_dir,
                                                                                       tmp_path, tear, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    transaction = killed_after_the_change(image, data_dir, tmp_path)
    # the power cut: a record being written, with a path in the account's name, is on disk only in part
    line = json.dumps({"at": "2026-12-03T10:00:00+00:00", "kind": "note", "folder": r"C:\Users\张伟\ComfyUI"},
                      ensure_ascii=False).encode("utf-8")
    cut = line.index("张".encode()) + (1 if tear == "mid-character" else 0)
    with open(transaction.folder / "journal.jsonl", "ab") as journal:
        journal.write(line[:cut])
    assert main(["diagnose", "--root", str(image.root), "--quiet", "--json", os.devnull]) in (0, 1)
    assert f"undo --transaction {transaction.id}" in capsys.readouterr().err  # still offered, not an error
    assert main(["undo", "--transaction", transaction.id]) in (0, 1)
    capsys.readouterr()
    assert tree_hashes(lib) == before
    # what the undo wrote after the torn line is read: rolled back, not offered again
    assert Journal().get(transaction.id).state == ROLLED_BACK and Journal().unfinished() == []


def damage_first(journal: Path, kind: str, how: str) -> int:
    """Damage the first `kind` record of a journal, `how`: a byte changed in its middle, a record of the wrong form,
    or the whole line lost (none a power cut leaves). Its line number."""
    lines = journal.read_bytes().splitlines(keepends=True)
    number = next(n for n, line in enumerate(lines) if json.loads(line)["kind"] == kind)
    line = lines[number]
    if how == "byte-changed":
        middle = line.index(b'"op"')
        lines[number] = line[:middle] + b"#" + line[middle + 1:]
    elif how == "wrong-form":
        lines[number] = json.dumps({"at": "2026-12-04T10:00:00+00:00", "kind": kind}).encode() + b"\n"
    else:  # "line-lost": every other line whole
        del lines[number]
    journal.write_bytes(b"".join(lines))
    return number + 1


@pytest.mark.parametrize("how", ["byte-changed", "wrong-form", "line-lost"])
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_journal_damaged_in_the_middle_is_never_undone_as_if_whole(torch_image, data_dir, how, lang, capsys):
    """Only a power cut's tear is passed over in silence. A line damaged or lost since may have been the change
    itself: the undo puts back all it can read, then says that the record could not all be read, at which line, and
    never "put back"; it is not offered again as if trying again could help."""
    image = torch_image()
    lib = image.host(TORCH_LIB)
    assert main(repair_argv(image)) == 0
    capsys.readouterr()
    (transaction,) = Journal().transactions()
    line = damage_first(transaction.folder / "journal.jsonl", "intent", how)
    assert main(["undo", "--transaction", transaction.id, "--lang", lang]) == 1
    err = capsys.readouterr().err
    journal = str(transaction.folder / "journal.jsonl")
    assert words("cli.undo.stopped.journal-damaged", lang, line=line, journal=journal) in err
    assert words("cli.undo.done", lang)[:10] not in err
    after = Journal().get(transaction.id)
    assert after.state == ROLLBACK_STOPPED and after.stop_is_final and after.damaged == [line]
    assert after.summary()["damaged_lines"] == [line]
    assert (lib / "libomp140.x86_64.dll").exists()  # the intent cannot be read: its change stays, as said


def full_disk_at(monkeypatch, *kinds: str, torn: bool = False) -> None:
    """The journal's disk is full for one record of each of `kinds` (then space is freed); `torn`: the line is
    written in part first. Every record reaches the disk through `_write_all`, several steps' in one write."""
    real_write, left = Transaction._write_all, list(kinds)

    def write(self, records):
        full = next((record for record in records if record["kind"] in left), None)
        if full is not None:
            left.remove(full["kind"])
            if torn:
                with open(self.folder / "journal.jsonl", "ab") as journal:
                    journal.write(json.dumps(full).encode()[:40])
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, records)

    monkeypatch.setattr(Transaction, "_write_all", write)


def test_a_repair_whose_first_record_cannot_be_written_leaves_nothing_behind(torch_image, data_dir, monkeypatch,
                                                                             capsys):
    image = torch_image()
    before = tree_hashes(image.host(TORCH_LIB))
    full_disk_at(monkeypatch, "begin", torn=True)  # the disk fills up halfway through the first line
    assert main(repair_argv(image)) == 1
    assert "full" in capsys.readouterr().err
    assert tree_hashes(image.host(TORCH_LIB)) == before
    assert list(Journal().transactions()) == []  # no ghost repair, listed as running or offered for rollback
    assert main(repair_argv(image)) == 0  # and the next try runs
    capsys.readouterr()
    assert (image.host(TORCH_LIB) / "libomp140.x86_64.dll").exists()


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_repair_whose_rollback_could_not_be_recorded_never_says_every_change_was_undone(torch_image, data_dir,
                                                                                          monkeypatch, lang, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    full_disk_at(monkeypatch, "applied", "rollback-begin")  # the file is placed; then nothing can be recorded
    assert main([*repair_argv(image), "--lang", lang]) == 1
    err = capsys.readouterr().err
    (transaction,) = Journal().transactions()
    assert words("cli.repair.failed", lang, error="X").split("X")[1] not in err  # never "every change … undone"
    assert f"undo --transaction {transaction.id}" in err and words("repair.os.full", lang, path="")[:8] in err
    assert (lib / "libomp140.x86_64.dll").exists()  # as said: still there, and recorded
    assert main(["undo", "--transaction", transaction.id]) in (0, 1)  # the space is back: the undo puts it back
    capsys.readouterr()
    assert tree_hashes(lib) == before and Journal().get(transaction.id).state == ROLLED_BACK


def test_a_repair_that_failed_after_its_last_change_says_the_changes_stay_and_how_to_undo_them(
        torch_image, data_dir, monkeypatch, capsys):
    import app.repair.run as run_module

    image = torch_image()

    def unreadable(system, python):
        raise PermissionError(errno.EACCES, "Access is denied", python)

    monkeypatch.setattr(run_module, "inspect_environment", unreadable)  # the check afterwards cannot start
    assert main(repair_argv(image)) == 1
    err = capsys.readouterr().err
    (transaction,) = Journal().transactions()
    assert "undo --transaction " + transaction.id in err and "could not all be undone" in err
    assert "Every change it had made was undone" not in err


def test_an_undo_that_could_not_finish_is_called_an_undo_not_a_repair(torch_image, data_dir, monkeypatch, capsys):
    image = torch_image()
    assert main(repair_argv(image)) == 0
    capsys.readouterr()
    full_disk_at(monkeypatch, "rollback-begin")
    assert main(["undo", "--last"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(words("cli.undo.failed", "en", error="X").split("X")[0]) and "The repair could" not in err
    assert main(["undo", "--last"]) == 0  # tried again, with space
    capsys.readouterr()


def test_a_second_repair_waits_for_none_and_says_why(torch_image, data_dir, tmp_path, capsys):
    image = torch_image()
    first, go = start_paused(image, data_dir, "intent:1", tmp_path)
    try:
        assert main(repair_argv(image)) == 1
        assert "Another repair or undo is running right now" in capsys.readouterr().err
        assert len(list(Journal().transactions())) == 1  # the second one began nothing
    finally:
        go.write_text("go")
        first.communicate(timeout=120)
    assert first.returncode == 0


def test_the_newest_of_two_repairs_made_in_one_second_is_the_last(data_dir):
    journal = Journal()
    older = journal.begin({"kind": "image", "root": "x"}, "place-libomp140", None, None, {})
    newer = journal.begin({"kind": "image", "root": "x"}, "unset-env-var", None, None, {})
    for transaction in (older, newer):
        transaction.finish({"state": "fixed"})
        transaction.release()
    assert older.id[:15] == newer.id[:15] or older.id < newer.id  # the same second, most of the time
    for _ in range(5):
        assert journal.last().id == newer.id
        assert [t.id for t in journal.transactions()] == [newer.id, older.id]


def test_an_old_journal_folder_of_whole_seconds_sorts_by_its_time(data_dir):
    journal = Journal()
    old = journal.folder / "20251201-100000-ffffff"  # whole seconds, a year ago
    old.mkdir(parents=True)
    (old / "journal.jsonl").write_text(json.dumps({"kind": "begin", "machine": {}}) + "\n")
    new = journal.begin({}, "place-libomp140", None, None, {})
    new.release()
    assert [t.id for t in journal.transactions()] == [new.id, old.name]


def mount(folder: Path, *options: str) -> bool:
    return subprocess.run(["mount", *options, str(folder)], capture_output=True).returncode == 0


def test_an_undo_windows_refuses_is_recorded_said_and_finishes_later(torch_image, tmp_path, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    original = tmp_path / "lib-original"
    os.rename(lib, original)
    lib.mkdir()
    if not mount(lib, "-t", "tmpfs", "-o", "size=64M", "tmpfs"):
        pytest.skip("cannot mount a disk here (needs root)")
    try:
        for dll in original.iterdir():  # torch's big DLLs stay where they are: only links on the small disk
            if dll.stat().st_size < (8 << 20):
                (lib / dll.name).write_bytes(dll.read_bytes())
            else:
                (lib / dll.name).symlink_to(dll)
        before = tree_hashes(lib)
        assert main(repair_argv(image)) == 0
        assert mount(lib, "-o", "remount,ro")  # the folder cannot be changed now, as when Windows says no
        assert main(["undo", "--last"]) == 1
        err = capsys.readouterr().err
        assert "Undo stopped at" in err and "Windows did not allow" in err and "Traceback" not in err
        (transaction,) = Journal().transactions()
        assert transaction.state == ROLLBACK_STOPPED  # recorded: not "running", not called a crash
        assert transaction.stopped["code"] == "refused" and "Read-only" in transaction.stopped["detail"]
        assert [t.id for t in Journal().unfinished()] == [transaction.id]
        assert mount(lib, "-o", "remount,rw")
        assert main(["undo", "--transaction", transaction.id]) in (0, 1)
        capsys.readouterr()
        assert tree_hashes(lib) == before and Journal().get(transaction.id).state == ROLLED_BACK
    finally:
        subprocess.run(["umount", str(lib)], capture_output=True)


def test_failure_words_of_a_busy_repair_are_plain_in_both_languages():
    busy = RepairBusy({"pid": 4120, "since": "2026-12-01T09:30:00+00:00", "purpose": "place-libomp140"})
    english, chinese = failure_text(busy, "en"), failure_text(busy, "zh_CN")
    assert "4120" in english and "Nothing was changed" in english and "T09" not in english
    assert "4120" in chinese and "另一个修复" in chinese


def test_downloads_are_not_kept_once_a_repair_is_finished_or_rolled_back(data_dir):
    journal = Journal()
    for end in ("finish", "rollback"):
        transaction = journal.begin({"kind": "image", "root": "x"}, "install-vc-runtime", None, None, {})
        downloads = transaction.folder / "downloads"
        downloads.mkdir()
        (downloads / "vc_redist.x64.exe").write_bytes(b"MZ" + bytes(1 << 20))
        (downloads / "vc_redist.x64.log").write_text("the installer's own log")
        if end == "finish":  # as apply_plan ends a repair
            transaction.finish({"state": "fixed"})
            tidy(transaction)
        else:
            roll_back(None, transaction)
        transaction.release()
        assert [p.name for p in downloads.iterdir()] == ["vc_redist.x64.log"]  # the installer is gone, its log stays
        assert (transaction.folder / "journal.jsonl").exists()


@pytest.mark.parametrize("how", ["rollback", "undo"])
def test_a_listed_interrupted_repair_undone_and_repaired_elsewhere_is_not_replayed_from_the_old_list(
        torch_image, data_dir, tmp_path, capsys, how):
    """The Welcome page lists an interrupted repair; the command line (a real second process) undoes it and
    repairs again; then "Roll back now" with the listed records must not remove the new repair's file: through
    the rollback itself, and through run.undo (what the Welcome page's worker calls), which holds the
    transaction first: holding it is where its journal is read again."""
    image = torch_image()
    lib = image.host(TORCH_LIB)
    repair, _go = start_paused(image, data_dir, "change:1", tmp_path)
    repair.kill()
    repair.communicate(timeout=30)
    (listed,) = Journal().unfinished()  # what the Welcome page read
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir)}
    for argv in (["undo", "--transaction", listed.id], repair_argv(image)):
        done = subprocess.run([sys.executable, "-c", BOOT, *argv], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode in (0, 1), done.stderr
    assert (lib / "libomp140.x86_64.dll").is_file()
    with pytest.raises(TransactionChanged) as changed:
        if how == "rollback":
            listed.rollback(OfflineImage(image.root))
        else:
            from app.repair.run import undo

            undo(listed, Journal())
    assert (lib / "libomp140.x86_64.dll").is_file()  # the new repair's file is untouched
    assert Journal().last().state == DONE
    words_en, words_zh = failure_text(changed.value, "en"), failure_text(changed.value, "zh_CN")
    assert "Nothing was touched" in words_en and "(it is now: undone)" in words_en and "没有动任何东西" in words_zh


def test_an_undo_never_renames_over_a_file_written_at_the_original_name_meanwhile(tmp_path):
    """The set-aside's undo: the original name taken after the check is refused by the rename itself."""
    from app.system.files import rename_file

    source, target = tmp_path / "libiomp5md.dll", tmp_path / "libiomp5md.dll.set-aside-by-torch-dll-doctor"
    target.write_bytes(b"set aside")
    source.write_bytes(b"written meanwhile")
    with pytest.raises(FileExistsError):
        rename_file(target, source)
    assert source.read_bytes() == b"written meanwhile" and target.read_bytes() == b"set aside"
    folder, taken = tmp_path / "torch.set-aside", tmp_path / "torch"
    (folder / "lib").mkdir(parents=True)
    taken.mkdir()
    (taken / "__init__.py").write_text("new")
    with pytest.raises(FileExistsError):
        rename_file(folder, taken)
    assert (taken / "__init__.py").read_text() == "new"


def test_a_file_security_software_stopped_or_removed_is_named_with_what_to_do_in_both_languages():
    """ERROR_VIRUS_INFECTED (225) and ERROR_VIRUS_DELETED (226), which Defender gives while a file is written:
    said as such, with Protection history and an exclusion, never as a raw error."""
    from app.failures import os_error_words, refusal_kind

    for code in (225, 226):
        error = OSError(22, "Operation did not complete successfully because the file contains a virus",
                        r"C:\venv\torch\lib\torch_cpu.dll")
        error.winerror = code
        assert refusal_kind(error) == "virus"
        english, chinese = os_error_words(error, "en"), os_error_words(error, "zh_CN")
        assert "Protection history" in english and "torch_cpu.dll" in english and "保护历史记录" in chinese


@pytest.mark.skipif(os.name == "nt", reason="Windows deletes no file still open (our copy until it is closed); "
                    "there security software removes it after the close, which this test cannot time")
def test_a_file_removed_as_soon_as_it_was_written_is_named_by_the_target_with_what_to_do(tmp_path):
    """Security software that removes the new file between our write and its rename over the target (the file is
    then simply gone: FileNotFoundError of a temporary the user never heard of): said of the file being replaced,
    with the most likely reason and Protection history, in both languages; the target is as it was."""
    from app.failures import os_error_words, refusal_kind
    from app.system.files import _atomic

    target = tmp_path / "torch" / "lib" / "libomp140.x86_64.dll"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"the old copy")

    def written_then_removed(out) -> None:
        out.write(b"the new copy")
        (removed,) = target.parent.glob(f".{target.name}.*.tmp")
        removed.unlink()  # as Defender does to a file it takes for a threat

    with pytest.raises(FileNotFoundError) as caught:
        _atomic(target, written_then_removed)
    error = caught.value
    assert refusal_kind(error) == "vanished" and error.filename == str(target)
    english, chinese = os_error_words(error, "en"), os_error_words(error, "zh_CN")
    assert str(target) in english and "most likely" in english and "Protection history" in english
    assert str(target) in chinese and "最可能" in chinese and "保护历史记录" in chinese
    assert target.read_bytes() == b"the old copy" and sorted(target.parent.iterdir()) == [target]


def test_a_failure_of_the_file_being_read_keeps_its_own_name(tmp_path):
    """Only a failure of the temporary copy is said of the target: the source that cannot be read is named."""
    from app.failures import refusal_kind
    from app.system.files import copy_file

    with pytest.raises(FileNotFoundError) as caught:
        copy_file(tmp_path / "gone.dll", tmp_path / "target.dll")
    assert caught.value.filename == str(tmp_path / "gone.dll") and refusal_kind(caught.value) == "other"
    unreadable = Path("/proc/self/mem")  # opens, then fails to read at offset 0 (EIO), as a failing disk or share
    if unreadable.exists():
        with pytest.raises(OSError) as caught:
            copy_file(unreadable, tmp_path / "target.dll")
        assert caught.value.filename == str(unreadable)
        assert not (tmp_path / "target.dll").exists()


def test_a_one_file_build_never_takes_the_users_folder_for_its_own(monkeypatch, tmp_path):
    """The one-file .exe runs from Downloads (or the Desktop, D:\\): only its extraction folder is the app's, so
    the user's PATH entries under Downloads stay in the replay and in the modelled PATH."""
    from app.system import process

    downloads = tmp_path / "Downloads"
    (downloads / "tools").mkdir(parents=True)
    bundle = tmp_path / "Temp" / "_MEI12345"
    bundle.mkdir(parents=True)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    monkeypatch.setattr(sys, "executable", str(downloads / "TorchDllDoctor.exe"))
    path = os.pathsep.join([str(downloads / "tools"), str(bundle)])
    kept = process.users_environment({"PATH": path})["PATH"].split(os.pathsep)
    assert kept == [str(downloads / "tools")]


def start_paused_command(argv: list[str], data_dir: Path, point: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """`argv` (the command line) in a real second process, held at `point` until the returned file is created."""
    go = tmp_path / f"go-{point.replace(':', '-')}"
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_PAUSE_AT": point, "TDD_PAUSE_FILE": str(go)}
    process = subprocess.Popen([sys.executable, "-c", BOOT, *argv], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, encoding="utf-8")
    reached = Path(str(go) + ".reached")
    deadline = time.monotonic() + 60
    while not reached.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"the command never reached {point}"
        time.sleep(0.02)
    return process, go


def test_ctrl_c_after_the_change_was_made_rolls_the_repair_back_with_words_not_a_traceback(torch_image, data_dir,
                                                                                            tmp_path):
    import signal

    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    repair, go = start_paused_command(repair_argv(image, "--lang", "en"), data_dir, "applied:1", tmp_path)
    repair.send_signal(signal.SIGINT)  # held just after the file was placed
    time.sleep(0.5)
    go.write_text("go")
    out, err = repair.communicate(timeout=120)
    assert repair.returncode == 1, (out, err)
    assert "Stopping… (Ctrl+C)" in err and "Traceback" not in err, err
    assert "The repair was stopped, and everything it had changed was put back as it was." in err
    assert tree_hashes(lib) == before
    (transaction,) = Journal().transactions()
    assert transaction.state == ROLLED_BACK


def test_ctrl_c_while_the_repair_checks_again_puts_everything_back_as_it_said(torch_image, data_dir, monkeypatch,
                                                                               capsys):
    """Ctrl+C in the check after the last change (on a real PC: the replayed import, seconds long) promised "every
    change is put back"; it was kept and called done (exit 0)."""
    import signal

    import app.repair.run as run_module

    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    real, calls = run_module.diagnose_environment, []

    def diagnose(system, env):
        calls.append(1)
        if len(calls) == 2:  # the check after the change
            os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl+C
            time.sleep(0.5)
        return real(system, env)

    monkeypatch.setattr(run_module, "diagnose_environment", diagnose)
    code = main(repair_argv(image, "--lang", "en"))
    said = capsys.readouterr()
    assert code == 1 and "Then every change is put back" in said.err
    assert "everything it had changed was put back as it was" in said.err and "Done." not in said.out
    (transaction,) = Journal().transactions()
    assert transaction.state == ROLLED_BACK and tree_hashes(lib) == before


def test_an_undo_whose_check_afterwards_cannot_read_the_environment_is_still_an_undo(torch_image, data_dir,
                                                                                     monkeypatch, capsys):
    """The rollback finished and was recorded; then the check after it was denied the environment. It said "The
    undo could not finish ... try the undo again", and that retry undid the repair before it."""
    import app.repair.run as run_module

    image = torch_image()
    lib = image.host(TORCH_LIB)
    assert main(repair_argv(image)) == 0  # repair A: libomp140 placed
    image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "unset-env-var", "--yes"]) == 0
    newer, older = Journal().transactions()
    capsys.readouterr()

    def denied(system, python):
        raise PermissionError(errno.EACCES, "Access is denied", str(python))

    with monkeypatch.context() as patched:
        patched.setattr(run_module, "inspect_environment", denied)
        code = main(["undo", "--last", "--lang", "en"])
    said = capsys.readouterr()
    assert code == 0 and "could not finish" not in said.err, said.err
    assert "not every check could finish" in said.out
    assert Journal().get(newer.id).state == ROLLED_BACK and Journal().get(older.id).state == DONE
    assert (lib / "libomp140.x86_64.dll").is_file()  # repair A is untouched


def test_ctrl_c_during_an_undo_is_said_and_the_undo_finishes(torch_image, data_dir, tmp_path, capsys):
    import signal

    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    assert main(repair_argv(image)) == 0
    capsys.readouterr()
    undo_process, go = start_paused_command(["undo", "--last", "--lang", "en"], data_dir, "restore:1", tmp_path)
    undo_process.send_signal(signal.SIGINT)  # halfway through the rollback
    time.sleep(0.5)
    undo_process.send_signal(signal.SIGINT)  # and again
    time.sleep(0.5)
    go.write_text("go")
    out, err = undo_process.communicate(timeout=120)
    assert undo_process.returncode == 0, (out, err)
    assert err.count("The undo goes on until it is finished") == 2 and "Traceback" not in err, err
    assert tree_hashes(lib) == before
    (transaction,) = Journal().transactions()
    assert transaction.state == ROLLED_BACK


def test_a_replaced_file_removed_since_the_repair_gets_its_original_back_on_undo(torch_image):
    """Security software quarantined the DLL the repair put in place (or the user deleted it): the undo puts the
    original back, overwriting nothing, instead of stopping with "was changed after the repair"."""
    image = torch_image()
    system = OfflineImage(image.root)
    target = image.host(TORCH_LIB) / "asmjit.dll"
    original = target.read_bytes()
    replacement = image.root / "asmjit.replacement.dll"
    replacement.write_bytes(original + b"\0replaced")
    transaction = Journal().begin({"kind": "image", "root": str(image.root)}, "test-replace", None, None, {})
    transaction.step(system, PutFile(target, replacement))
    transaction.finish({"state": "fixed"})
    transaction.release()
    target.unlink()  # quarantined
    undo(Journal().get(transaction.id))
    assert target.read_bytes() == original
    assert Journal().get(transaction.id).state == ROLLED_BACK


def test_undo_never_loses_a_file_written_at_the_name_while_it_works(torch_image, data_dir, tmp_path):
    """Undo sets the placed file aside (a rename), checks the set-aside copy, and only then removes it: a file that
    another program (pip, conda, the user) writes at that name while the undo works is a new file, and it stays.
    Two real processes: the undo, held just after its check, and this one, writing at the name."""
    image = torch_image()
    placed = image.host(TORCH_LIB) / "libomp140.x86_64.dll"
    assert main(repair_argv(image)) == 0 and placed.is_file()
    undo, go = start_paused_command(["undo", "--last"], data_dir, "undo-checked:libomp140.x86_64.dll", tmp_path)
    assert not placed.exists()  # set aside: the name is free, and ours is checked
    placed.write_bytes(b"written by another program while the undo worked")
    go.write_text("go")
    out, err = undo.communicate(timeout=120)
    assert undo.returncode == 0, (out, err)
    assert placed.read_bytes() == b"written by another program while the undo worked"
    assert [p.name for p in placed.parent.iterdir() if p.name.startswith(".")] == []  # nothing of ours is left


def test_undo_of_a_replaced_file_keeps_what_was_written_meanwhile_and_says_so(tmp_path, data_dir):
    """A file change over an existing file: undo sets ours aside, and puts the original back only while its name is
    free. Written meanwhile by a second process, the new file stays, the undo stops and says where the original is
    (the backup), and the journal says so: never "rolled back" over a lost file."""
    from app.demo.image_builder import ImageBuilder

    image = ImageBuilder(tmp_path / "img")
    target = image.write(r"C:\Tools\settings.txt", b"the original")
    image.save()
    source = tmp_path / "new.txt"
    source.write_bytes(b"what the repair wrote")
    system = OfflineImage(image.root)
    journal = Journal()
    transaction = journal.begin({"kind": "image", "root": str(image.root)}, "test", None, None, {})
    transaction.step(system, PutFile(target, source))
    transaction.finish({"state": "fixed"})
    transaction.release()
    undo, go = start_paused_command(["undo", "--last", "--root", str(image.root)], data_dir,
                                    "undo-checked:settings.txt", tmp_path)
    target.write_bytes(b"written meanwhile")
    go.write_text("go")
    out, err = undo.communicate(timeout=120)
    assert undo.returncode != 0 and target.read_bytes() == b"written meanwhile", (out, err)
    (done,) = Journal().transactions()
    assert done.state != ROLLED_BACK
    backups = list((done.folder / "backups").iterdir())
    assert [b.read_bytes() for b in backups] == [b"the original"]
    assert "is there again" in err, err  # cli.undo.stopped.rename-name-taken: both stay, and where each is
