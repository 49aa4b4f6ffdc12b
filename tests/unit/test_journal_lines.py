"""The journal tells a line a power cut left (the first bytes of a record) from damage: every prefix of a real record,
cut anywhere (in a character too, or with the zeros some file systems leave), is a tear; a byte changed in the middle,
a record of the wrong form, a bit flipped in a whole line (its CRC) or a line lost (the running numbers) is not. A
write that a full disk cut short, caught by its caller, is a tear too: the same process writes on after it."""

from __future__ import annotations

import errno
import json
import os

import pytest

from app.repair.journal import ROLLED_BACK, Journal, RollbackStopped, Transaction, _cut_short, _line, _record

RECORDS = [
    {"at": "2026-12-04T10:00:00.123456+00:00", "kind": "intent", "step": 1, "op": "file",
     "target": os.path.join(os.path.abspath(os.sep), "Users", "张伟", "ComfyUI", "venv", "Lib", "site-packages",
                            "torch", "lib", "libomp140.x86_64.dll"),  # a path of this computer, as the journal keeps
     "before": None, "sha256": "ab" * 32, "created": True, "size": 1234567, "ratio": 0.5, "mode": -1,
     "machine": {"id": "C:", "names": ["a", "b"], "empty": {}}, "control": "tab\there \u0001"},
    {"at": "2026-12-04T10:00:01+00:00", "kind": "applied", "step": 1, "exit_code": 3010, "outcome": "restart-needed",
     "restart_needed": False, "took_s": 12.5e-3},
]


def line_of(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")  # as Transaction._write writes them


@pytest.mark.parametrize("written", [line_of, lambda r: _line({**r, "n": 7})[:-1]], ids=["before-crc", "with-crc"])
@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r["kind"])
def test_every_prefix_of_a_record_is_a_tear(record, written):
    line = written(record)
    assert _record(line) in (record, {**record, "n": 7})
    for cut in range(len(line)):
        assert _record(line[:cut]) is None
        assert _cut_short(line[:cut]), line[:cut]
        assert _cut_short(line[:cut] + b"\0" * 7)  # a lost tail filled with zeros


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r["kind"])
def test_a_byte_changed_in_the_middle_is_damage(record):
    line = line_of(record)
    for at in (line.index(b'"kind"'), line.index(b'"step"') + 6, line.index(b"}")):
        damaged = line[:at] + b"\xff" + line[at + 1:]
        assert _record(damaged) is None and not _cut_short(damaged)
        damaged = line[:at] + b"#" + line[at + 1:]
        assert _record(damaged) is None and not _cut_short(damaged)


@pytest.mark.parametrize("line", [b'{"kind": "intent", "op": "file"}', b'{"kind": "applied", "step": "1"}',
                                  b'{"kind": "restored", "step": true}', b'{"kind": "intent", "step": 2}',
                                  b'["intent"]', b'{"kind": 3}', b"null"])
def test_a_record_of_the_wrong_form_is_no_record_and_no_tear(line):
    assert _record(line) is None and not _cut_short(line)


def test_one_flipped_bit_in_a_whole_line_is_damage_by_its_crc():
    line = _line({**RECORDS[0], "n": 1})[:-1]
    assert _record(line) is not None
    for old, new in ((b'"kind": "intent"', b'"kind": "inteNt"'), (b"ComfyUI", b"ComfyUi"),
                     (b'"step": 1', b'"step": 2')):
        changed = line.replace(old, new)
        assert _record(changed) is None and not _cut_short(changed), new


def finished(tmp_path, *extra: dict) -> Transaction:
    transaction = Journal(tmp_path).begin({}, "place-libomp140", None, None, {})
    for record in extra:
        transaction._write(record)
    transaction.finish({"state": "fixed"})
    transaction.release()
    return transaction


def test_a_line_lost_from_the_middle_is_damage_by_the_running_numbers(tmp_path):
    transaction = finished(tmp_path, {"kind": "note", "a": 1}, {"kind": "note", "b": 2})
    path = transaction.folder / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:1] + lines[2:]))  # the first note gone, every other line whole
    again = Journal(tmp_path).get(transaction.id)
    assert again.damaged == [2]
    with pytest.raises(RollbackStopped) as stop:
        again.rollback(None)
    assert stop.value.code == "journal-damaged" and stop.value.values["line"] == "2"


def test_a_kind_flipped_in_a_journal_is_never_undone_as_all_put_back(tmp_path):
    transaction = finished(tmp_path, {"kind": "intent", "step": 1, "op": "file", "target": "C:\\torch\\lib\\x.dll"},
                           {"kind": "applied", "step": 1})
    path = transaction.folder / "journal.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"kind": "intent"', b'"kind": "inteNt"'))
    again = Journal(tmp_path).get(transaction.id)
    assert again.damaged == [2] and again.steps() == []
    with pytest.raises(RollbackStopped):
        again.rollback(None)
    assert again.state != ROLLED_BACK


def test_a_note_torn_by_a_full_disk_and_caught_is_no_damage(tmp_path, monkeypatch):
    """restore_files' _fetch_local writes a note inside `except OSError` and goes on with the next source: the torn
    line is followed by the same process's records, and is still a tear."""
    transaction = Journal(tmp_path).begin({}, "restore-files", None, None, {})
    real, left = Transaction._write, ["note"]

    def write(self, record):
        if record["kind"] in left:
            left.remove(record["kind"])
            with open(self.folder / "journal.jsonl", "ab") as journal:
                journal.write(_line({**record, "n": len(self._records)})[:40])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, record)

    monkeypatch.setattr(Transaction, "_write", write)
    with pytest.raises(OSError):
        transaction.note({"restored_from": {"source": "local.whl"}})
    transaction.note({"restored_from": {"source": "index"}})
    transaction.finish({"state": "fixed"})
    transaction.release()
    again = Journal(tmp_path).get(transaction.id)
    assert again.damaged == []
    again.rollback(None)  # no step to undo
    assert again.state == ROLLED_BACK


def test_a_write_taken_for_failed_that_reached_the_disk_repeats_a_number_and_is_no_damage(tmp_path, monkeypatch):
    """fsync raised after the bytes were written: the writer did not count the record, so the next one repeats
    its number; nothing is lost."""
    transaction = Journal(tmp_path).begin({}, "x", None, None, {})
    real_fsync, left = __import__("os").fsync, [1]

    def fsync(fd):
        real_fsync(fd)
        if left:
            left.pop()
            raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr("app.repair.journal.os.fsync", fsync)
    with pytest.raises(OSError):
        transaction.note({"a": 1})
    transaction.note({"b": 2})
    transaction.finish({"state": "fixed"})
    transaction.release()
    again = Journal(tmp_path).get(transaction.id)
    assert again.damaged == [] and [r.get("n") for r in again.records] == [0, 1, 1, 2]
    again.rollback(None)  # another process numbers on from what it read: never a gap
    last = Journal(tmp_path).get(transaction.id)
    assert last.damaged == [] and [r.get("n") for r in last.records] == [0, 1, 1, 2, 3, 4]
    assert last.state == ROLLED_BACK


def test_a_numbered_record_without_its_crc_or_an_old_one_after_numbered_ones_is_damage(tmp_path):
    transaction = finished(tmp_path, {"kind": "note", "a": 1})
    path = transaction.folder / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"crc"', b'"crb"')  # one byte of the key's name
    lines.insert(2, json.dumps({"at": "2026-12-04T10:00:00+00:00", "kind": "note"}).encode() + b"\n")
    path.write_bytes(b"".join(lines))
    assert Journal(tmp_path).get(transaction.id).damaged == [2, 3]
