"""`explain` on the failures of 2025-26, as people pasted them in public threads (tests/data/pasted_errors_2025.json:
each text with its thread, the language of its words, and the cause, DLL, advice and owner it shows). The rules were
written with these texts at hand: the figure is what they do on them, not on texts never seen."""

from __future__ import annotations

import collections
import io
import json
from pathlib import Path

import pytest

from app.main import main
from app.probes.error_text import classify_error

CORPUS = json.loads((Path(__file__).parent.parent / "data" / "pasted_errors_2025.json").read_text(encoding="utf-8"))


def test_each_kind_has_real_texts_in_two_languages():
    by_kind = collections.defaultdict(set)
    for entry in CORPUS:
        assert entry["source"].startswith("https://github.com/") and entry["text"].strip(), entry
        by_kind[entry["category"]].add(entry["lang"])
    assert len(by_kind) >= 11
    for kind, languages in by_kind.items():
        assert len([e for e in CORPUS if e["category"] == kind]) >= 3, kind
        assert len(languages) >= 2, (kind, languages)


def test_explain_is_right_on_at_least_90_percent_of_them():
    misses = []
    for entry in CORPUS:
        cause = classify_error(entry["text"])
        got = (cause.kind, (cause.dll or "").lower() or None, cause.advice, cause.owner)
        want = (entry["kind"], entry["dll"], entry["advice"], entry["owner"])
        if got != want:
            misses.append(f"{entry['source']}: got {got}, want {want}")
    assert len(misses) <= len(CORPUS) // 10, "\n".join(misses)


@pytest.mark.parametrize("entry", [e for e in CORPUS if e["owner"]], ids=lambda e: e["source"].split("github.com/")[1])
def test_another_programs_dll_is_never_called_pytorchs(entry):
    """A DLL of torchcodec, onnxruntime, Triton, KoboldCpp...: the words name it, and say PyTorch only where the
    message shows PyTorch."""
    cause = classify_error(entry["text"])
    for lang in ("en", "zh_CN"):
        words = cause.text(lang)
        assert entry["owner"] in words["title"] + words["explanation"], (lang, words)
        if "torch" not in entry["text"].lower():
            assert "PyTorch" not in words["title"] + words["explanation"], (lang, words)


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e["source"].split("github.com/")[1])
def test_an_argument_standard_input_and_a_file_give_the_same_words(entry, tmp_path, capsys, monkeypatch):
    main(["explain", entry["text"], "--lang", "en"])
    as_argument = capsys.readouterr()
    assert "internal error" not in as_argument.err.lower()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(entry["text"].encode("utf-8")), encoding="utf-8"))
    main(["explain", "-", "--lang", "en"])
    as_input = capsys.readouterr()
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(entry["text"], encoding="utf-8")
    main(["explain", str(pasted), "--lang", "en"])
    as_file = capsys.readouterr()
    assert as_argument.out == as_input.out == as_file.out and as_argument.out.strip()
