"""The text and HTML reports: built from one list of sections, so each holds every section and every fact
the other holds, in both languages; user names are redacted from both alike."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.demo.computer import build_demo_image
from app.demo.pe_writer import build_pe
from app.inventory.discovery import discover
from app.probes.replay import SCRIPT, replay_script
from app.probes.runner import run_diagnosis
from app.report.document import diagnosis_report, render_report
from app.report.html import render_html
from app.report.sections import SECTION_IDS, Report, build_report
from app.report.text import render_text, width
from app.system.base import NotAvailable, RunResult
from app.system.offline import OfflineImage
from tests.helpers.images import PYTHON_HOME, TORCH_LIB

VS = r"C:\Program Files\Microsoft Visual Studio\2022\BuildTools"
VS_LIBOMP = VS + r"\VC\Redist\MSVC\14.40.33807\debug_nonredist\x64\Microsoft.VC143.OpenMP.LLVM\libomp140.x86_64.dll"
SYS32 = r"C:\Windows\System32"
# what the replay's process had loaded at the end: python.org's own VC runtime beside python.exe, System32's
# msvcp140 and vcruntime140_1 (not python.exe's), the OpenMP runtimes of torch\lib, and DLLs nobody watches
LOADED = [PYTHON_HOME + r"\vcruntime140.dll", SYS32 + r"\vcruntime140_1.dll", SYS32 + r"\msvcp140.dll",
          TORCH_LIB + r"\libiomp5md.dll", TORCH_LIB + r"\libomp140.x86_64.dll", TORCH_LIB + r"\c10.dll",
          SYS32 + r"\kernel32.dll"]


class ReplayedImage(OfflineImage):
    """An image whose Python "runs" the replay script: its answer is the script's own report (the structure of
    resources/replay_loader.py, `_new_report`) for a successful import, with `loaded_at_end` set."""
    can_run_programs = True

    def run(self, argv, timeout, env=None, cwd=None, cancel=None, on_output=None):
        if self.windows_path(SCRIPT) not in argv:
            raise NotAvailable("only the replay runs here")
        script = replay_script()
        report = script._new_report()
        report.update(status="replayed", platform="win32", python_version="3.12.9", bits=64, loaded_at_end=LOADED)
        report["import"].update(attempted=True, ok=True, version="2.4.0+cpu")
        return RunResult(0, script.MARKER + json.dumps(report) + "\n", "")


def diagnosed(system, lang="en", redacted=True):
    diagnosis = run_diagnosis(system, list(discover(system)))
    return diagnosis_report(diagnosis, system, lang=lang, source="image", source_root=str(system.root),
                            redacted=redacted)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return OfflineImage(build_demo_image(tmp_path_factory.mktemp("demo")))


@pytest.fixture
def full_image(torch_image):
    """The real torch 2.4.0 wheel image, with Build Tools carrying libomp140, long paths off, variables that
    matter to torch, PATH folders of both kinds, and a live replay that loaded real files of the image (with
    libomp140 placed, as in the Windows lab's test of the copies torch loaded)."""
    image = torch_image(libomp=True)
    image.write(VS_LIBOMP, build_pe(dll_name="libomp140.x86_64.dll"))
    image.write(r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\abc\state.json",
                json.dumps({"installationPath": VS}))
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 0)
    image.set_variable("user", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    image.set_variable("system", "KMP_DUPLICATE_LIB_OK", "TRUE")
    image.set_variable("user", "OMP_NUM_THREADS", "4")
    image.mkdir(r"C:\Users\alice\tools\bin")
    image.add_to_path(r"C:\Users\alice\tools\bin")
    image.mkdir(r"C:\Program Files\Git\cmd")
    image.add_to_path(r"C:\Program Files\Git\cmd", scope="system")
    return ReplayedImage(image.root)


# -- reading a rendered report back, by section ---------------------------------------------------------------
def text_sections(text: str, report: Report) -> dict[str, str]:
    """Each section's text, found by its heading (a title underlined with "=")."""
    titles = {s.title: s.id for s in report.sections}
    lines = text.splitlines()
    starts = [(i, titles[lines[i]]) for i in range(len(lines) - 1)
              if lines[i] in titles and re.fullmatch(r"=+", lines[i + 1])]
    ends = [i for i, _ in starts[1:]] + [len(lines)]
    return {sid: "\n".join(lines[i:end]) for (i, sid), end in zip(starts, ends)}


def html_sections(page: str) -> dict[str, str]:
    """Each <section>'s text content, unescaped, tags taken out."""
    found = re.findall(r"<section id='([^']+)'>(.*?)</section>", page, re.S)
    return {sid: html.unescape(re.sub(r"<[^>]+>", " ", body)) for sid, body in found}


def expected_facts(document: dict) -> dict[str, list[str]]:
    """Per section, the facts read straight from the JSON document: paths, versions, names and values."""
    machine = document["machine"]
    facts = {
        "problems": [p["title"] for p in document["problems"]] + [p["code"] for p in document["problems"]]
        + [f["code"] for f in document["findings"]],
        "computer": [machine["windows_version"]] + [d["path"] for d in machine["runtime_dlls"]]
        + [d["version"] for d in machine["runtime_dlls"] if d["version"]]
        + [e["version"] for e in machine["vc_runtimes"] if e["installed"] and e["version"]],
        "visual-studio": [v["path"] for v in machine["visual_studio"]]
        + [p for v in machine["visual_studio"] for p in v["libomp140"]],
        "variables": [text for item in machine["variables"].items() for text in item],
        "path": machine["path"]["effective"],
        "environments": [e["python"] for e in document["environments"]]
        + [e["torch"][key] for e in document["environments"] if e["torch"] for key in ("version", "path")],
        "loaded": [text for f in document["findings"] for c in f["evidence"].get("runtime_copies") or []
                   for text in (c["path"], c["version"]) if text],
        "dependencies": [d["environment"] for d in document["dependencies"]]
        + [n["path"] for d in document["dependencies"] for n in d["nodes"] if n["root"]],  # torch\lib's DLLs
    }
    return {sid: values for sid, values in facts.items() if values}


def mismatches(document: dict, trees: dict[str, str], lang: str, text: str, page: str) -> list[str]:
    """What one rendering lacks: a section, or a fact of a section."""
    report = build_report(document, trees, lang)
    ids = [s.id for s in report.sections]
    by_text, by_html = text_sections(text, report), html_sections(page)
    problems = [f"text sections {list(by_text)} != {ids}"] if list(by_text) != ids else []
    problems += [f"html sections {list(by_html)} != {ids}"] if list(by_html) != ids else []
    for sid, facts in expected_facts(document).items():
        for name, rendered in (("text", by_text), ("html", by_html)):
            problems += [f"{name} {sid} lacks {fact!r}" for fact in facts if fact not in rendered.get(sid, "")]
    return problems


def both(document, trees, lang):
    return render_report(document, trees, lang, "text"), render_report(document, trees, lang, "html")


# -- the same sections and facts in both ----------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_demo_text_and_html_reports_hold_the_same_sections_and_facts(demo, lang):
    document, trees = diagnosed(demo, lang)
    text, page = both(document, trees, lang)
    assert mismatches(document, trees, lang, text, page) == []
    ids = [s.id for s in build_report(document, trees, lang).sections]
    # the demo's PyTorch was never started, and no repair was made
    assert ids == [i for i in SECTION_IDS if i not in ("loaded", "log", "session")]
    assert "libomp140.x86_64.dll" in html_sections(page)["problems"]


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_visual_studio_long_paths_variables_path_and_what_torch_loaded_are_in_both(full_image, lang):
    document, trees = diagnosed(full_image, lang)
    document["log"] = ["2026-12-01 14:05:09,120 ERROR 0.1.0 RepairRun failed", "OSError: [WinError 5] C:\\x.dll"]
    document["session"] = {"before": ["libomp140.x86_64.dll is missing"], "repairs": [
        {"id": "20261201-140509-1", "action": "place-libomp140", "state": "undone", "name": "Add the runtime",
         "when": "14:05"}]}
    text, page = both(document, trees, lang)
    assert mismatches(document, trees, lang, text, page) == []
    assert [s.id for s in build_report(document, trees, lang).sections] == list(SECTION_IDS)
    assert "RepairRun failed" in text and "RepairRun failed" in html_sections(page)["log"]
    machine = document["machine"]
    assert machine["long_paths_enabled"] is False and len(machine["visual_studio"]) == 1
    assert set(machine["variables"]) == {"PYTORCH_CUDA_ALLOC_CONF", "KMP_DUPLICATE_LIB_OK", "OMP_NUM_THREADS"}
    assert r"C:\Program Files\Git\cmd" in machine["path"]["effective"]
    (ok,) = [f for f in document["findings"] if f["code"] == "import-ok"]
    copies = {c["dll"]: c for c in ok["evidence"]["runtime_copies"]}
    assert set(copies) == {"vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll", "libiomp5md.dll",
                           "libomp140.x86_64.dll"}
    assert all(c["version"] for c in copies.values())  # read from the real files of the image
    differs = [c for c in copies.values() if c["agrees"] is False]
    for rendered in (text_sections(text, build_report(document, trees, lang)), html_sections(page)):
        assert "VC143.OpenMP.LLVM" in rendered["visual-studio"]
        assert "260" in rendered["computer"]  # "no (paths longer than 260 characters can fail)"
        assert "expandable_segments:True" in rendered["variables"]
        for copy in differs:  # the copy the check predicted instead is named
            assert copy["predicted"] in rendered["loaded"]


def test_a_section_dropped_from_one_renderer_is_caught(demo):
    document, trees = diagnosed(demo)
    report = build_report(document, trees, "en")
    fewer = Report(report.lang, report.title, report.meta, tuple(s for s in report.sections if s.id != "path"))
    text, page = render_text(report), render_html(fewer)
    assert mismatches(document, trees, "en", text, page) == [
        f"html sections {[s.id for s in fewer.sections]} != {[s.id for s in report.sections]}",
        *(f"html path lacks {folder!r}" for folder in document["machine"]["path"]["effective"])]


# -- redaction ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["text", "html"])
def test_user_names_are_redacted_from_both_reports_alike(full_image, fmt):
    full_image_name = "alice"
    document, trees = diagnosed(full_image, redacted=False)
    shown = render_report(document, trees, "en", fmt)
    assert r"C:\Users\alice\tools\bin" in html.unescape(shown)  # the PATH, the environments, the trees ...
    document, trees = diagnosed(full_image)
    hidden = html.unescape(render_report(document, trees, "en", fmt))
    assert full_image_name not in hidden.lower()
    assert r"C:\Users\<user>\tools\bin" in hidden and r"C:\Users\<user>\ComfyUI\venv" in hidden


# -- laid out for people ------------------------------------------------------------------------------------
def test_html_report_escapes_every_text_and_fetches_nothing(demo):
    document, trees = diagnosed(demo)
    document["machine"]["variables"]["PYTORCH_X"] = "<script>alert(1)</script> & \"quoted\""
    page = render_report(document, trees, "en", "html")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;" in page
    assert "src=" not in page and "http://" not in page and "<link" not in page
    assert "<style>" in page and ".card" in page  # resources/report.css, inline


def test_text_report_columns_line_up_with_chinese_headings(full_image):
    document, trees = diagnosed(full_image, "zh_CN")
    text = render_report(document, trees, "zh_CN", "text")
    section = text_sections(text, build_report(document, trees, "zh_CN"))["path"].splitlines()
    header = next(i for i, line in enumerate(section) if line.startswith("序号"))
    rows = section[header + 2:]
    column = width(section[header].split("文件夹")[0])  # where the folder column starts, in screen columns
    assert {width(line.split("C:\\")[0]) for line in rows} == {column}
    assert len(rows) == len(document["machine"]["path"]["effective"])
    assert "适用于：" in text and "Applies to" not in text


def test_the_chinese_text_report_has_no_english_keys_or_statuses(capsys, tmp_path, monkeypatch):
    """Every label of the details and every status of the dependency tree in Chinese: never `needed_by`, `MISSING`."""
    from app.main import main

    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path))
    main(["diagnose", "--demo", "--lang", "zh_CN", "--quiet"])
    text = capsys.readouterr().out
    assert "被谁需要" in text and "缺失" in text
    assert not re.search(r"^\s+[a-z]+(_[a-z0-9]+)+[:：]", text, re.M), re.findall(r"^\s+[a-z_]+[:：]", text, re.M)
    assert not re.search(r"\b(MISSING|CORRUPT|UNREADABLE)\b", text)


def test_every_evidence_key_the_checks_write_has_a_chinese_label():
    import glob
    from pathlib import Path

    from app.report.sections import evidence_labels

    repo = Path(__file__).resolve().parents[2]
    keys = set()
    for path in glob.glob(str(repo / "app" / "probes" / "*.py")):
        if path.endswith(("error_text.py", "dll_facts.py")):  # explain's tables of pasted texts, not evidence
            continue
        keys |= set(re.findall(r'"([a-z][a-z0-9_]+)":', Path(path).read_text(encoding="utf-8")))
    labels = evidence_labels()
    assert sorted(k for k in keys if k not in labels) == []
    assert all(set(v) == {"en", "zh_CN"} and all(v.values()) for v in labels.values())
    assert json.loads((repo / "resources" / "evidence_labels.json").read_text(encoding="utf-8"))["_comment"]
