"""`explain --json`: the answer as one JSON document on standard output with `-` (the words on standard error),
the option anywhere after the pasted text, and the user's name redacted."""

from __future__ import annotations

import json
import subprocess
import sys

PASTED = ('OSError: [WinError 126] The specified module could not be found. Error loading '
          '"C:\\Users\\bob\\venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.')


def _explain(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "explain", *argv], capture_output=True, text=True,
                          encoding="utf-8", timeout=60)


def test_json_after_the_text_is_the_document_alone_on_standard_output():
    result = _explain(PASTED, "--json", "-")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == "torch-dll-doctor.explain/1" and document["winerror"] == 126
    assert document["dll"] == "fbgemm.dll" and "bob" not in result.stdout and "<user>" in document["dll_path"]
    assert document["title"] in result.stderr and "--json" not in document["explanation"]


def test_json_written_to_a_file_in_chinese_with_the_words_still_printed(tmp_path):
    target = tmp_path / "answer.json"
    result = _explain("--json=" + str(target), "--lang", "zh_CN", "0x8007007E")
    document = json.loads(target.read_text(encoding="utf-8"))
    assert result.returncode == 0 and document["hresult"] == "0x8007007E" and document["lang"] == "zh_CN"
    assert document["title"] in result.stdout
