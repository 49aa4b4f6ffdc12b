"""RECORD searched once per file: `record_lines` (the OpenMP and runtime-copy searches), and the runtime-copy search's
rule for a RECORD row: the file's own name, in any folder, any case."""

from __future__ import annotations

import re

from app.inventory.integrity import record_lines
from app.inventory.runtime_copies import _record_lines

ROWS = """torch/lib/msvcp140.dll,sha256=AAAA,10
PyQt5\\Qt5\\bin\\VCRUNTIME140.DLL,sha256=BBBB,20
msvcp140_1.dll,sha256=CCCC,30
pkg/foo_msvcp140.dll,sha256=DDDD,40
pkg/msvcp140.dll.bak,sha256=EEEE,50
"""


def test_a_runtime_dll_is_matched_by_its_own_name_in_any_folder_and_case(tmp_path):
    record = tmp_path / "RECORD"
    record.write_text(ROWS, encoding="utf-8")
    pattern = _record_lines(frozenset({"msvcp140.dll", "vcruntime140.dll", "msvcp140_1.dll"}))
    assert record_lines(record, pattern) == ("torch/lib/msvcp140.dll", "PyQt5\\Qt5\\bin\\VCRUNTIME140.DLL",
                                             "msvcp140_1.dll")


def test_a_record_is_searched_once_and_again_when_it_is_written_again(tmp_path, monkeypatch):
    from pathlib import Path

    record = tmp_path / "RECORD"
    record.write_text(ROWS, encoding="utf-8")
    pattern = re.compile(r"^([^,\n]*\.dll),", re.I | re.M)
    reads = []
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self) or real(self, *a, **k))
    first = record_lines(record, pattern)
    assert record_lines(record, pattern) == first and len(reads) == 1  # the second answer costs a stat
    record.write_text(ROWS + "new/omp.dll,sha256=FFFF,60\n", encoding="utf-8")
    assert record_lines(record, pattern)[-1] == "new/omp.dll" and len(reads) == 2
