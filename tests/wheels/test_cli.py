"""The command line as a package (app/cli/): each command's exit codes, its words on the streams it is handed,
undo saying what state PyTorch is in now, one download line for the CLI and the wizard, and one rule for a path
the user typed. Every command runs for real on the demo computer."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import commands as commands_module
from app.cli import repair as repair_command
from app.cli.base import ExitCode
from app.cli.commands import COMMANDS, run_command
from app.cli.output import Output
from app.cli.parser import build_parser
from app.demo.computer import DEMO_TORCH_LIB, DEMO_VENV, build_demo_image
from app.i18n import words
from app.main import main
from app.report.units import download_line, size_pair_text, size_text, speed_text, time_left_text
from app.sources.download import DownloadProgress
from app.system.offline import OfflineImage
from app.system.typed_path import resolve_typed_path
from tests.helpers.faults import blind_once_the_runtime_is_placed
from tests.helpers.images import VENV

REPO = Path(__file__).resolve().parents[2]
LIBOMP = "libomp140.x86_64.dll"
DEMO_PYTHON = DEMO_VENV + r"\Scripts\python.exe"
PYTHON = VENV + r"\Scripts\python.exe"  # in the test images of tests/conftest.py


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("TDD_DATA_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """One demo computer for the tests that change nothing."""
    return build_demo_image(tmp_path_factory.mktemp("demo") / "image")


@pytest.fixture
def fresh_demo(tmp_path) -> Path:
    """A demo computer a test repairs."""
    return build_demo_image(tmp_path / "demo")


class Terminal(io.StringIO):
    """Standard input where somebody sits at a terminal and types the given answer."""

    def isatty(self) -> bool:
        return True


def run(*argv: str, stdin: io.StringIO | None = None) -> tuple[int, str, str]:
    """A command with its own streams: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    code = run_command(build_parser().parse_args(list(argv)), Output(out, err, stdin or io.StringIO()))
    return code, out.getvalue(), err.getvalue()


def place_argv(root: Path, *extra: str) -> list[str]:
    return ["repair", "--root", str(root), "--env", DEMO_VENV, "--action", "place-libomp140",
            "--source", "torch-bundled", *extra]


def hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


# -- exit codes ---------------------------------------------------------------------------------------------------
def test_exit_codes_are_the_contracts_numbers():
    assert (ExitCode.OK, ExitCode.PROBLEM, ExitCode.ERROR) == (0, 1, 2)


EXITS = [
    ("deps of torch\\lib: libomp140 missing", ["deps", DEMO_TORCH_LIB, "--root", "{root}"], ExitCode.PROBLEM),
    ("deps of a DLL that loads", ["deps", DEMO_TORCH_LIB + r"\c10.dll", "--root", "{root}"], ExitCode.OK),
    ("deps of a path that is not there", ["deps", r"C:\nowhere\x.dll", "--root", "{root}"], ExitCode.ERROR),
    ("diagnose finds the blocker", ["diagnose", "--root", "{root}", "--quiet"], ExitCode.PROBLEM),
    ("diagnose of a drive that is not there", ["diagnose", "--root", "{root}/nowhere"], ExitCode.ERROR),
    ("diagnose of a folder that is no Python", ["diagnose", "--root", "{root}", "--env", r"C:\Windows"],
     ExitCode.ERROR),
    ("explain a DLL error", ["explain", "OSError: [WinError 126] The specified module could not be found."],
     ExitCode.OK),
    ("explain nothing", ["explain", "   "], ExitCode.PROBLEM),
    ("history, empty", ["history"], ExitCode.OK),
    ("undo with nothing to undo", ["undo", "--last"], ExitCode.PROBLEM),
    ("undo of a repair that does not exist", ["undo", "--transaction", "20260101-000000-abcdef"], ExitCode.ERROR),
    ("repair --plan", [*place_argv(Path("{root}"), "--plan")], ExitCode.OK),
    ("repair where nobody can answer", place_argv(Path("{root}")), ExitCode.ERROR),
    ("repair refused: pip cannot run in a copied drive",
     ["repair", "--root", "{root}", "--env", DEMO_VENV, "--action", "upgrade-torch", "--yes"], ExitCode.PROBLEM),
    ("repair of a folder that is not there", ["repair", "--root", "{root}", "--env", r"C:\nowhere",
                                              "--action", "place-libomp140"], ExitCode.ERROR),
    ("repair with a repair id that does not exist",
     ["repair", "--root", "{root}", "--env", DEMO_VENV, "--action", "unknown"], ExitCode.ERROR),
    ("diagnose of a drive given as a file", ["diagnose", "--root", "{root}/registry.json"], ExitCode.ERROR),
]


@pytest.mark.parametrize("argv, expected", [e[1:] for e in EXITS], ids=[e[0] for e in EXITS])
def test_each_command_exits_with_the_contracts_code_and_writes_only_to_its_own_streams(demo, argv, expected,
                                                                                       capsys):
    before = hashes(demo / DEMO_TORCH_LIB[3:].replace("\\", "/"))
    code, out, err = run(*[a.replace("{root}", str(demo)) for a in argv])
    assert code == expected and isinstance(code, ExitCode), (code, out[-2000:], err[-2000:])
    if expected == ExitCode.ERROR:  # usage or internal error: one line on standard error
        assert len(err.strip().splitlines()) == 1, err
    assert out or err
    assert capsys.readouterr() == ("", "")  # nothing went past the streams it was handed
    assert hashes(demo / DEMO_TORCH_LIB[3:].replace("\\", "/")) == before  # none of these changes a byte


def test_every_command_of_the_parser_has_a_module():
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == set(COMMANDS)
    assert all(commands_module.command(name).__module__ == f"app.cli.{name}" for name in COMMANDS)


def test_a_command_imports_only_what_it_needs():
    """`--version` ends in the parser, and `explain` reads a pasted error without the diagnosis's modules."""
    code = ("import sys\nfrom app.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('app.probes.every_probe', 'app.inventory', "
            "'app.repair', 'app.report.sections', 'PySide6'))))")
    # explain reads the DLL index (and its package names) for whose each DLL is, never the diagnosis's modules
    index = ["app.inventory", "app.inventory.dll_index", "app.inventory.packages"]
    for argv, allowed in ((["--version"], []), (["explain", "[WinError 126] fbgemm.dll"], index)):
        done = subprocess.run([sys.executable, "-c", code.format(argv=argv)], cwd=REPO, capture_output=True,
                              text=True, timeout=60)
        assert done.stdout.strip().splitlines()[-1] == str(allowed), (argv, done.stdout[-500:], done.stderr[-500:])


def test_main_and_python_dash_m_app_give_the_same_exit_code(capsys):
    assert type(main(["undo", "--transaction", "nope"])) is int
    assert "nope" in capsys.readouterr().err
    done = subprocess.run([sys.executable, "-m", "app", "undo", "--transaction", "nope"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == ExitCode.ERROR and done.stdout == ""
    assert done.stderr.strip() == words("cli.undo.no_such", id="nope")


# -- streams -----------------------------------------------------------------------------------------------------
def test_explain_reads_the_paste_from_the_stdin_it_is_handed_also_as_utf16():
    pasted = "无法定位程序输入点 omp_get_max_threads 于动态链接库 libomp140.x86_64.dll 上。"
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe" + pasted.encode("utf-16-le")))  # PowerShell's way
    code, out, err = run("explain", "-", "--lang", "zh_CN", stdin=stdin)
    assert code == ExitCode.OK and "libomp140.x86_64.dll" in out and err == ""


def test_explain_reads_a_file_that_holds_the_text(tmp_path):
    saved = tmp_path / "error.txt"
    saved.write_bytes(b"\xff\xfe" + ('OSError: [WinError 126] Error loading "C:\\x\\torch\\lib\\fbgemm.dll" or one of '
                                     'its dependencies.').encode("utf-16-le"))
    code, out, err = run("explain", str(saved))
    assert code == ExitCode.OK and "fbgemm.dll" in out, err


def test_the_windowed_exe_asks_nothing_on_a_console_it_borrowed_from_the_shell(fresh_demo, monkeypatch):
    """cmd and PowerShell do not wait for the windowed TorchDllDoctor.exe: a "y" typed there goes to the shell. So
    no question is asked (the console program TorchDllDoctor-cli.exe is named), and explain - reads nothing."""
    lib = fresh_demo / DEMO_TORCH_LIB[3:].replace("\\", "/")
    console = Terminal("y\n")
    monkeypatch.setattr(sys, "_tdd_borrowed_console", True, raising=False)
    monkeypatch.setattr(sys, "__stdin__", console)
    code, out, err = run(*place_argv(fresh_demo), stdin=console)
    assert code == ExitCode.ERROR and words("cli.repair.needs_yes.windowed") in err
    assert "TorchDllDoctor-cli.exe" in err and not (lib / LIBOMP).exists()
    assert console.readline() == "y\n", "the answer was read"
    code, out, err = run("explain", "-", stdin=console)
    assert code == ExitCode.ERROR and words("explain.shell_console") in err
    monkeypatch.setattr(sys, "_tdd_borrowed_console", False)
    code, out, err = run(*place_argv(fresh_demo), stdin=Terminal("y\n"))
    assert code == ExitCode.OK, err


def test_a_repair_asks_on_the_terminal_it_is_handed_and_a_no_changes_nothing(fresh_demo):
    lib = fresh_demo / DEMO_TORCH_LIB[3:].replace("\\", "/")
    code, out, err = run(*place_argv(fresh_demo), stdin=Terminal("n\n"))
    assert code == ExitCode.PROBLEM, err
    assert words("cli.repair.confirm") in out and out.rstrip().endswith(words("cli.repair.declined"))
    assert not (lib / LIBOMP).exists()

    code, out, err = run(*place_argv(fresh_demo), stdin=Terminal("y\n"))
    assert code == ExitCode.OK, err
    assert words("cli.repair.fixed") in out and (lib / LIBOMP).read_bytes() == (lib / "libiomp5md.dll").read_bytes()


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_repair_whose_check_afterwards_could_not_finish_is_never_called_fixed(fresh_demo, monkeypatch, lang):
    from app.probes import runner as runner_module
    from app.probes.base import ENVIRONMENT, Probe
    from app.probes.every_probe import ALL_PROBES

    monkeypatch.setattr(runner_module, "ALL_PROBES", (*ALL_PROBES, Probe("gpu", ENVIRONMENT,
                                                                          blind_once_the_runtime_is_placed)))
    lib = fresh_demo / DEMO_TORCH_LIB[3:].replace("\\", "/")
    code, out, err = run(*place_argv(fresh_demo, "--yes", "--lang", lang, "--json", str(fresh_demo / "out.json")))
    assert (lib / LIBOMP).exists(), err  # the repair was made
    assert code == ExitCode.PROBLEM, out
    assert words("cli.repair.fixed", lang) not in out
    unchecked = words("cli.repair.unchecked", lang, checks=words("probe.gpu.name", lang))
    assert unchecked in out
    assert json.loads((fresh_demo / "out.json").read_text(encoding="utf-8"))["state"] == "unchecked"


def test_a_repair_that_ends_in_exit_1_with_its_document_on_standard_output_says_why_on_standard_error(
        fresh_demo, monkeypatch):
    """`--json -`: standard output is the one JSON document, nothing else; how it ended, and why exit 1, is on
    standard error, with the plan (a script reads the document, a person sees the words)."""
    from app.probes import runner as runner_module
    from app.probes.base import ENVIRONMENT, Probe
    from app.probes.every_probe import ALL_PROBES

    monkeypatch.setattr(runner_module, "ALL_PROBES", (*ALL_PROBES, Probe("gpu", ENVIRONMENT,
                                                                          blind_once_the_runtime_is_placed)))
    code, out, err = run(*place_argv(fresh_demo, "--yes", "--json", "-"))
    assert code == ExitCode.PROBLEM, err
    assert json.loads(out)["state"] == "unchecked"  # the whole of standard output is the document
    assert words("cli.repair.unchecked", "en", checks=words("probe.gpu.name", "en")) in err
    assert words("cli.repair.undoable", "en") in err


def test_history_with_its_document_on_standard_output_writes_nothing_else_there(fresh_demo):
    assert run(*place_argv(fresh_demo, "--yes"))[0] == ExitCode.OK
    code, out, err = run("history", "--json", "-")
    assert code == ExitCode.OK, err
    assert json.loads(out)["transactions"]


# -- undo says what state PyTorch is in now --------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_successful_undo_exits_0_and_says_pytorch_does_not_load_again_as_before(fresh_demo, lang):
    lib = fresh_demo / DEMO_TORCH_LIB[3:].replace("\\", "/")
    before = hashes(lib)
    code, _, err = run(*place_argv(fresh_demo, "--yes"))
    assert code == ExitCode.OK, err
    code, out, err = run("undo", "--last", "--lang", lang)
    assert code == ExitCode.OK, err
    done, state = out.strip().splitlines()
    assert done.startswith("Undone" if lang == "en" else "已撤销")
    broken_again = words("cli.undo.state.broken", lang, problems="")
    assert state.startswith(broken_again) and LIBOMP in state[len(broken_again):]
    assert hashes(lib) == before
    assert run("undo", "--last")[0] == ExitCode.PROBLEM  # nothing left to undo


def test_an_undo_after_which_pytorch_still_loads_says_so(torch_image):
    image = torch_image(libomp=True)
    image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    code, _, err = run("repair", "--root", str(image.root), "--env", PYTHON, "--action", "unset-env-var", "--yes")
    assert code == ExitCode.OK, err
    code, out, err = run("undo", "--last")
    assert code == ExitCode.OK, err
    assert out.strip().splitlines()[-1] == words("cli.undo.state.loads")
    assert OfflineImage(image.root).environment("user")["KMP_DUPLICATE_LIB_OK"] == "TRUE"


def test_an_undo_whose_environment_is_gone_says_pytorch_was_not_checked(torch_image):
    image = torch_image(libomp=True)
    image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    assert run("repair", "--root", str(image.root), "--env", PYTHON, "--action", "unset-env-var", "--yes")[0] == 0
    image.host(PYTHON).unlink()  # the venv was deleted since
    code, out, err = run("undo", "--last", "--lang", "zh_CN")
    assert code == ExitCode.OK, err
    assert out.strip().splitlines()[-1] == words("cli.undo.state.gone", "zh_CN", environment=PYTHON)
    assert OfflineImage(image.root).environment("user")["KMP_DUPLICATE_LIB_OK"] == "TRUE"


def test_an_undo_stopped_by_a_changed_file_exits_1_with_failure_texts_words(fresh_demo):
    placed = fresh_demo / DEMO_TORCH_LIB[3:].replace("\\", "/") / LIBOMP
    assert run(*place_argv(fresh_demo, "--yes"))[0] == ExitCode.OK
    placed.write_bytes(b"MZ the user's own copy")
    code, out, err = run("undo", "--last", "--lang", "zh_CN")
    assert code == ExitCode.PROBLEM and out == ""
    assert "撤销已停止" in err and str(LIBOMP) in err
    assert placed.read_bytes() == b"MZ the user's own copy"


# -- one download line for the CLI and the wizard ------------------------------------------------------------------
def progress(done: int, total: int | None, speed: float, eta: float | None) -> DownloadProgress:
    return DownloadProgress("https://example.invalid/vc_redist.x64.exe", done, total, speed, eta, 1)


@pytest.mark.parametrize("lang, line", [
    ("en", "12.3 / 45.6 MB, 1.5 MB/s, 22 s left"),
    ("zh_CN", "12.3 / 45.6 MB，1.5 MB/秒，还剩 22 秒"),
])
def test_the_download_line_gives_bytes_done_of_the_total_speed_and_time_left(lang, line):
    assert download_line(progress(12_300_000, 45_600_000, 1_500_000, 21.2), lang) == line


@pytest.mark.parametrize("lang, line", [("en", "12.3 MB, 1.5 MB/s"), ("zh_CN", "12.3 MB，1.5 MB/秒")])
def test_the_download_line_without_a_total_shows_what_has_arrived(lang, line):
    assert download_line(progress(12_300_000, None, 1_500_000, None), lang) == line


@pytest.mark.parametrize("seconds, en, zh", [
    (0.2, "1 s left", "还剩 1 秒"),
    (185, "3 min 5 s left", "还剩 3 分 5 秒"),
    (4000, "1 h 6 min left", "还剩 1 小时 6 分"),
])
def test_time_left_reads_in_minutes_and_hours_when_long(seconds, en, zh):
    assert (time_left_text(seconds, "en"), time_left_text(seconds, "zh_CN")) == (en, zh)


def test_sizes_pick_a_unit_and_a_pair_shares_the_larger_ones():
    assert [size_text(n) for n in (512, 64_000, 640_000, 25_300_000, 1_250_000_000)] == [
        "512 B", "64 KB", "0.6 MB", "25.3 MB", "1.25 GB"]
    assert size_pair_text(50_000, 25_300_000) == "0.1 / 25.3 MB"
    assert speed_text(0, "en") == "0 B/s"


def test_the_cli_prints_a_download_at_most_twice_a_second_and_always_its_end(monkeypatch):
    from app.repair.run import DownloadMoved, OutputLine, RunStep, StepReached

    clock = iter([10.0, 10.1, 10.2, 10.9])
    monkeypatch.setattr(repair_command.time, "monotonic", lambda: next(clock))
    err = io.StringIO()
    show = repair_command.event_printer("zh_CN", Output(io.StringIO(), err))
    for done, eta in ((1_000_000, 9.0), (2_000_000, 8.0), (10_000_000, 0.0), (10_000_000, 0.0)):
        show(DownloadMoved(progress(done, 10_000_000, 1_000_000, eta)))
    show(StepReached(RunStep.VERIFYING))  # the command line says nothing of its own steps
    show(OutputLine({"en": "Waiting…\n", "zh_CN": "正在等待…\n"}))
    lines = err.getvalue().splitlines()
    assert lines[0] == "正在下载：1.0 / 10.0 MB，1.0 MB/秒，还剩 9 秒"
    assert len(lines) == 4 and all(line.startswith("正在下载：10.0 / 10.0 MB") for line in lines[1:3])
    assert lines[3] == "    正在等待…"


# -- one rule for a typed path ---------------------------------------------------------------------------------
def test_a_typed_path_is_found_here_or_inside_the_copied_drive_quotes_and_blanks_ignored(demo):
    system = OfflineImage(demo)
    inside = demo / DEMO_PYTHON[3:].replace("\\", "/")
    assert resolve_typed_path(system, f'  "{DEMO_PYTHON}" ') == inside  # Explorer's "Copy as path"
    assert resolve_typed_path(system, DEMO_PYTHON.lower()) == inside  # Windows paths ignore case
    assert resolve_typed_path(system, str(inside)) == inside
    for nothing in ("", "   ", '""', r"C:\nowhere\python.exe", "D:\\", "x" * 5000):
        assert resolve_typed_path(system, nothing) is None, nothing


def test_the_wizard_and_the_cli_find_the_same_environment_for_a_quoted_path(demo):
    from app.ui.session import choose_environment

    env = choose_environment(OfflineImage(demo), f'"{DEMO_VENV}"')
    assert env is not None and env.python == demo / DEMO_PYTHON[3:].replace("\\", "/")
    code, out, err = run("diagnose", "--root", str(demo), "--env", f'"{DEMO_PYTHON}"', "--quiet")
    assert code == ExitCode.PROBLEM and LIBOMP in out, err


def test_a_reader_that_stops_reading_never_stops_a_repair(fresh_demo, data_dir):
    """`repair ... | head -1`: the pipe closes after the first line; the repair still finishes, and no error is
    printed about the pipe (a real pipe, a real process)."""
    from app.repair.journal import Journal

    lib = OfflineImage(fresh_demo).host_path(DEMO_TORCH_LIB)
    argv = [sys.executable, "-m", "app", *place_argv(fresh_demo, "--yes", "--lang", "en")]
    child = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "TDD_DATA_DIR": str(data_dir)})
    child.stdout.readline()
    child.stdout.close()  # as `head -1` does
    with child.stderr:
        err = child.stderr.read().decode("utf-8", "replace")
    assert child.wait(timeout=300) == 0, err
    assert "Broken pipe" not in err and "BrokenPipeError" not in err, err
    assert (lib / "libomp140.x86_64.dll").is_file()
    assert next(Journal(data_dir).transactions()).state == "done"


def test_when_standard_errors_reader_goes_first_progress_never_lands_in_the_result():
    """`diagnose --json - 2>&1 | ...` style pipes close stderr's reader first: the notes after that go nowhere, and
    standard output still holds only the result (the JSON a program reads)."""

    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    out = io.StringIO()
    output = Output(out, Gone(), io.StringIO())
    output.note("[1/17] checking…")
    output.note("[2/17] checking…")
    output.document("-", '{"schema": "x"}')
    assert out.getvalue() == '{"schema": "x"}\n'


def test_a_folder_that_is_not_a_windows_drive_is_nothing_to_check_never_all_clear(tmp_path, capsys):
    (tmp_path / "Users" / "alice").mkdir(parents=True)
    code = main(["diagnose", "--root", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    assert code == 3  # it was 0, "Nothing stops PyTorch from loading"
    assert "Nothing stops PyTorch" not in captured.out and "Windows\\System32" in captured.err
    main(["diagnose", "--root", str(tmp_path)])  # the report itself: its problems section is not "no problems"
    report = capsys.readouterr().out
    assert "No problems found" not in report and "None could be looked for" in report
    code = main(["diagnose", "--root", str(tmp_path), "--json", "-", "--quiet"])
    document = json.loads(capsys.readouterr().out)
    assert code == 3 and document["nothing_checked"] == "no-windows"


def test_a_windows_drive_without_any_torch_is_nothing_to_check_in_both_languages(tmp_path, capsys):
    from app.demo.image_builder import ImageBuilder

    image = ImageBuilder(tmp_path / "image")
    image.write(r"C:\Users\alice\AppData\Local\Programs\Python\Python312\python.exe", b"MZ")
    for lang, words_seen in (("en", "no Python with PyTorch"), ("zh_CN", "没有找到装有 PyTorch 的 Python")):
        code = main(["diagnose", "--root", str(image.root), "--lang", lang])
        captured = capsys.readouterr()
        assert code == 3 and words_seen in captured.err + captured.out
        assert "Nothing stops PyTorch" not in captured.out and "没有发现阻止" not in captured.out


def test_an_output_folder_that_does_not_exist_is_said_before_any_check(tmp_path, capsys):
    code = main(["diagnose", "--demo", "--json", str(tmp_path / "missing" / "out.json")])
    captured = capsys.readouterr()
    assert code == 2 and "does not exist" in captured.err
    assert "Checking" not in captured.err  # no check ran
    code = main(["diagnose", "--demo", "--report", str(tmp_path)])
    assert code == 2 and "is a folder" in capsys.readouterr().err


def test_redirected_output_is_written_in_the_consoles_code_page_where_the_shell_reads_it_so():
    """Windows PowerShell 5.1 decodes a program's piped output with the console's code page (936 on a Chinese
    Windows): UTF-8 there garbles every Chinese word. A console itself, or no console at all, gets UTF-8."""
    from app.system.console import output_encoding

    assert output_encoding(False, 936) == "cp936"
    assert "没有检查".encode(output_encoding(False, 936)).decode("gbk") == "没有检查"
    assert output_encoding(True, 936) == "utf-8"  # Python writes Unicode to a console itself
    assert output_encoding(False, 65001) == output_encoding(False, None) == output_encoding(False, 437) == "utf-8"


def test_json_to_a_stream_in_a_code_page_stays_json_and_keeps_every_character():
    """`diagnose --json - > d.json` on a Chinese Windows: the stream is cp936, which JSON readers (jq, json.load of
    the bytes) do not read, and a Hangul folder name or an emoji has no cp936 form. The document is written with
    \\u escapes there: ASCII bytes, the same document. A UTF-8 stream gets the characters themselves."""
    import io

    document = {"path": "C:\\用户\\한글 폴더\\😀", "n": 1}
    text = json.dumps(document, ensure_ascii=False, indent=2)
    for encoding, escaped in (("cp936", True), ("utf-8", False)):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace")
        Output(out=stream).document("-", text)
        stream.flush()
        data = raw.getvalue()
        assert json.loads(data.decode("utf-8")) == document, encoding
        assert data.isascii() == escaped and (b"?" not in data), encoding


@pytest.mark.parametrize("encoding", ["cp1252", "utf-8"])
def test_a_report_in_a_code_page_without_its_characters_is_written_whole_not_an_internal_error(encoding):
    """The Chinese report (or a Chinese user's folder in an English one) redirected in a code page that cannot
    write it, here chosen by the user with PYTHONIOENCODING: before, the report stopped halfway with "internal
    error (UnicodeEncodeError...)" and exit 2. The frozen app met the same in the lab (its Python ignores that
    variable and wrote code page 1252). The characters the code page lacks become "?", the report is whole."""
    done = subprocess.run([sys.executable, "-m", "app", "diagnose", "--demo", "--lang", "zh_CN"], cwd=REPO,
                          capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": encoding})
    assert done.returncode == 1, done.stderr.decode(encoding, "replace")[-1500:]
    text = done.stdout.decode(encoding)
    assert "libomp140.x86_64.dll" in text and "(openmp-runtime-missing)" in text
    assert ("诊断报告" in text) == (encoding == "utf-8") and ("?" in text.splitlines()[0]) == (encoding == "cp1252")


def test_an_internal_error_is_one_line_and_its_traceback_goes_to_the_log_or_here_with_debug(monkeypatch, tmp_path,
                                                                                             capsys):
    """As Picard's cli/base.py: the failure is logged in the wizard's rotating log, and `--debug` prints it."""
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))

    def broken(args, output):
        raise ZeroDivisionError("deep inside")

    monkeypatch.setattr(commands_module, "command", lambda name: broken if name == "explain" else None)
    assert main(["explain", "x"]) == 2
    err = capsys.readouterr().err
    assert "internal error (ZeroDivisionError: deep inside)" in err and "Traceback" not in err
    log = (tmp_path / "data" / "logs" / "torch-dll-doctor.log").read_text(encoding="utf-8")
    assert "Traceback" in log and "ZeroDivisionError: deep inside" in log and str(tmp_path) in err
    assert main(["--debug", "explain", "x"]) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_drive_given_as_a_file_is_called_a_file(demo):
    code, out, err = run("diagnose", "--root", str(demo / "registry.json"))
    assert code == ExitCode.ERROR and "is a file, not a folder" in err and "does not exist" not in err


def test_undo_of_a_repair_already_undone_says_so_and_does_nothing(demo, data_dir):
    from app.repair.journal import Journal

    assert run(*place_argv(demo, "--yes"))[0] == ExitCode.OK
    (transaction,) = Journal().transactions()
    assert run("undo", "--transaction", transaction.id)[0] == ExitCode.OK
    code, out, err = run("undo", "--transaction", transaction.id)
    assert code == ExitCode.PROBLEM and "already undone" in err and "Undone" not in out + err


def test_a_forum_helper_can_repair_and_undo_the_demo_computer_from_the_command_line(data_dir):
    """`repair --demo` and `undo --demo` act on one demo computer, kept in the data folder as the repairs left it;
    the text report gives the command that runs each repair."""
    code, out, _ = run("diagnose", "--demo", "--no-redact")
    assert code == ExitCode.PROBLEM
    command = next(line.strip() for line in out.splitlines() if "--action place-libomp140" in line)
    assert command.startswith("python -m app repair --demo --env ") and DEMO_VENV in command
    code, out, err = run("repair", "--demo", "--action", "place-libomp140", "--source", "torch-bundled", "--yes")
    assert code == ExitCode.OK, (out, err)
    assert run("diagnose", "--demo")[0] == ExitCode.OK  # the same computer, repaired
    code, out, err = run("undo", "--demo", "--last")
    assert code == ExitCode.OK and "Undone" in out, (out, err)
    assert run("diagnose", "--demo")[0] == ExitCode.PROBLEM
    assert run("repair", "--action", "place-libomp140")[0] == ExitCode.ERROR  # neither --env nor --demo


def test_every_line_printed_is_redacted_unless_asked_not_to(data_dir):
    """People copy the whole terminal into a forum post: the progress lines on standard error too."""
    code, out, err = run("diagnose", "--demo")
    assert "alice" not in (out + err).lower() and r"C:\Users\<user>\ComfyUI" in err
    code, out, err = run("diagnose", "--demo", "--no-redact")
    assert r"C:\Users\alice\ComfyUI" in err
