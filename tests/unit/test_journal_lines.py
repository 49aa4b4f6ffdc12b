"""The journal tells a line a power cut left (the first bytes of a record) from damage: every prefix of a real record,
cut anywhere (in a character too, or with the zeros some file systems leave), is a tear; a byte changed in the middle,
or a record of the wrong form, is not."""

from __future__ import annotations

import json

import pytest

from app.repair.journal import _cut_short, _record

RECORDS = [
    {"at": "2026-12-04T10:00:00.123456+00:00", "kind": "intent", "step": 1, "op": "file",
     "target": "C:\\Users\\张伟\\ComfyUI\\venv\\Lib\\site-packages\\torch\\lib\\libomp140.x86_64.dll",
     "before": None, "sha256": "ab" * 32, "created": True, "size": 1234567, "ratio": 0.5, "mode": -1,
     "machine": {"id": "C:", "names": ["a", "b"], "empty": {}}, "control": "tab\there \u0001"},
    {"at": "2026-12-04T10:00:01+00:00", "kind": "applied", "step": 1, "exit_code": 3010, "outcome": "restart-needed",
     "restart_needed": False, "took_s": 12.5e-3},
]


def line_of(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")  # as Transaction._write writes them


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r["kind"])
def test_every_prefix_of_a_record_is_a_tear(record):
    line = line_of(record)
    assert _record(line) == record
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
