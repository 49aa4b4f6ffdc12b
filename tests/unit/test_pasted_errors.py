"""`explain` on real pasted errors: tests/data/pasted_errors.json holds texts copied from public issue threads
(each with its thread), and the cause each thread established: the kind of error, the DLL (clean file name,
or null when the text names none) and the kind of advice that fixed it. `explain` must be right on at least 90%
of them: kind, DLL and advice all three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.probes.error_text import ADVICE, KINDS, LIKELY_COVERS, classify_error

CORPUS = json.loads((Path(__file__).parent.parent / "data" / "pasted_errors.json").read_text(encoding="utf-8"))


def _misses() -> list[str]:
    misses = []
    for entry in CORPUS:
        cause = classify_error(entry["text"])
        # an advice that lists the likely causes in order counts when the thread's fix is among them
        advice = entry["advice"] if entry["advice"] in LIKELY_COVERS.get(cause.advice, ()) else cause.advice
        got = (cause.kind, (cause.dll or "").lower() or None, advice)
        want = (entry["kind"], (entry["dll"] or "").lower() or None, entry["advice"])
        if got != want:
            misses.append(f"{entry['source']}: got {got}, want {want}")
    return misses


def test_the_corpus_is_real_and_well_formed():
    assert len(CORPUS) >= 60
    assert len({entry["source"] for entry in CORPUS}) >= 55  # threads, not one thread many times
    for entry in CORPUS:
        assert entry["source"].startswith("https://"), entry
        assert entry["text"].strip(), entry
        assert entry["kind"] in KINDS, entry
        assert entry["advice"] in ADVICE, entry
        assert entry["dll"] is None or ("\\" not in entry["dll"] and '"' not in entry["dll"]), entry


def test_explain_is_right_on_at_least_90_percent_of_real_pasted_errors():
    misses = _misses()
    score = 1 - len(misses) / len(CORPUS)
    print(f"\nscore {score:.3f} over {len(CORPUS)} pasted errors; misses:\n" + "\n".join(misses))
    assert score >= 0.9, "\n".join(misses)


@pytest.mark.parametrize("entry", [e for e in CORPUS if e["kind"] == "not-a-dll-error"], ids=lambda e: e["source"])
def test_what_is_not_a_dll_error_is_said_without_talking_about_torch(entry):
    cause = classify_error(entry["text"])
    for lang in ("en", "zh_CN"):
        words = " ".join(cause.text(lang).values()).lower()
        assert "torch" not in words and "pytorch" not in words


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e["source"])
def test_a_version_is_stated_only_when_the_text_shows_it(entry):
    """A cause is stated as fact only with its evidence: a release number in what explain says (its title and
    explanation) is one the pasted text shows, or stands in a list of likely causes ("most likely")."""
    import re

    said = classify_error(entry["text"]).text("en")
    for field in ("title", "explanation"):
        if "most likely" in said[field].lower():
            continue
        for version in re.findall(r"\b\d+\.\d+\.\d+\b", said[field]):
            assert version in entry["text"], (field, version, said[field])


# --- the command: `explain -`, empty input, nothing echoed raw, the language --------------------------------


def _stdin(monkeypatch, data: bytes) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_explain_dash_reads_a_megabyte_paste_from_standard_input(monkeypatch, capsys):
    from app.main import main

    frame = '  File "C:\\\\ComfyUI\\\\main.py", line 136, in <module>\n    import comfy.utils\n'
    seed = ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\\\ComfyUI\\\\venv'
            '\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\fbgemm.dll" or one of its dependencies.\n')
    paste = frame * (1_000_000 // len(frame)) + seed
    assert len(paste) >= 1_000_000
    _stdin(monkeypatch, paste.encode("utf-8"))
    assert main(["explain", "-", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "fbgemm.dll" in out and "2.4.1" in out


def test_explain_dash_reads_utf16_and_the_console_code_page(monkeypatch, capsys):
    from app.main import main

    _stdin(monkeypatch, "OSError: [WinError 1455] 页面文件太小，无法完成操作。".encode("utf-16"))
    assert main(["explain", "-", "--lang", "zh_CN"]) == 0
    assert "虚拟内存" in capsys.readouterr().out


@pytest.mark.parametrize("argv, stdin", [(["explain", ""], b""), (["explain"], b""), (["explain", "-"], b""),
                                         (["explain", "-"], b" \n\t\x1b[0m\n"), (["explain", " ", "\n"], b"")])
def test_empty_input_gets_its_own_message_and_exit_1(monkeypatch, capsys, argv, stdin):
    from app.main import main

    _stdin(monkeypatch, stdin)
    assert main([*argv, "--lang", "en"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("Nothing to explain")


def test_nothing_from_the_paste_is_echoed_as_an_escape_sequence(capsys):
    from app.main import main

    assert main(["explain", "The code execution cannot proceed because \x1b[31mevil\x1b]0;title\x07.dll was not "
                 "found.\x1b[2J", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "evil.dll" in out
    assert not any(ord(ch) < 32 and ch != "\n" or 0x7F <= ord(ch) < 0xA0 for ch in out)


def test_explain_speaks_the_computers_language_unless_told(monkeypatch, capsys):
    from app.main import main

    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["explain", "126"]) == 0
    assert "缺失" in capsys.readouterr().out
    assert main(["explain", "126", "--lang", "en"]) == 0
    assert "missing" in capsys.readouterr().out
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    assert main(["explain", "126"]) == 0
    assert "missing" in capsys.readouterr().out


# what a driver or a package named as a fact needs the pasted text to show (a name it comes with)
NAMED_AS_FACT = {
    "NVIDIA": r"nvidia|cuda|\bcu\d{2,3}\b|nvcuda|cublas|cudnn|cudart|nvrtc|nvml|rtx|geforce",
    "AMD": r"\bamd|hip|rocm|zluda|radeon",
    "xformers": r"xformers",
    "torchvision": r"torchvision",
    "torchcodec": r"torchcodec",
    "torch-directml": r"directml",
    "FFmpeg": r"torchcodec|ffmpeg|avcodec",
}


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e["source"])
def test_a_driver_or_a_package_is_named_as_the_cause_only_when_the_text_shows_it(entry):
    """The rule of evidence for drivers and packages: a title, and an explanation that does not list likely causes,
    names NVIDIA, AMD or a package only when the pasted text shows something of theirs."""
    import re

    said = classify_error(entry["text"]).text("en")
    for field in ("title", "explanation"):
        if field == "explanation" and "most likely" in said[field].lower():
            continue
        for name, evidence in NAMED_AS_FACT.items():
            if re.search(rf"\b{re.escape(name)}\b", said[field]) and not re.search(evidence, entry["text"], re.I):
                sentence = next(s for s in re.split(r"(?<=[.!?])\s+", said[field]) if name in s)
                assert re.search(r"\bnot\b|\bnor\b|\bno\b|\bneither\b", sentence), (field, name, sentence)


def test_every_corpus_text_passed_as_one_argument_is_explained_never_an_internal_error(capsys):
    """The most common use: the whole traceback pasted as one argument. A text with a stretch of more than 255
    bytes without a slash is a file name no file system takes (errno 36): it is text, never a file to open."""
    from app.main import main

    assert any(len(max(e["text"].split("/"), key=len).encode()) > 255 for e in CORPUS)
    for entry in CORPUS:
        capsys.readouterr()
        code = main(["explain", entry["text"], "--lang", "en"])
        out, err = capsys.readouterr()
        assert code == 0 and out.strip() and "internal error" not in (out + err).lower(), entry["source"]
    long_line = "OSError: [WinError 126] " + "x" * 5000 + ' Error loading "C:\\torch\\lib\\fbgemm.dll"'
    assert main(["explain", long_line]) == 0
    assert "internal error" not in capsys.readouterr().err.lower()


def test_explain_reads_only_the_start_of_a_huge_log(tmp_path, capsys):
    """A log of gigabytes (sparse here) is read from its start, never whole: in a process allowed 1 GB of memory,
    a 3 GB log is explained (read whole, it would end in MemoryError)."""
    import subprocess
    import sys

    log = tmp_path / "huge.log"
    with open(log, "wb") as f:
        f.write(b'OSError: [WinError 126] Error loading "C:\\x\\torch\\lib\\fbgemm.dll" or one of its dependencies.\n')
        f.truncate(3 << 30)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from app.main import main; sys.exit(main(['explain', sys.argv[1], '--lang', 'en']))")
    done = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent.parent.parent)
    assert done.returncode == 0 and "fbgemm.dll" in done.stdout, done.stderr[-2000:]
