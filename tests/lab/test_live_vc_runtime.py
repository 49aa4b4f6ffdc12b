"""`repair --action install-vc-runtime` end to end in the Windows lab, once per installer exit code.

Windows CPython under Wine runs the CLI (app.main.main) for a real torch 2.4.1 install. The only thing changed
in-process is the catalog's download URL (resources/catalog.json's aka.ms link -> our HTTPS test server on
127.0.0.1, trusted through REQUESTS_CA_BUNDLE); the rest is the real path: plan (the registry says no runtime
is installed), download with the real downloader, verify (LiveWindows.verify_signature = WinVerifyTrust, signer
"Microsoft Corporation", ProductVersion read by app/engine/pe.py >= min_version), run it through
LiveWindows.run_elevated (ShellExecuteExW "runas"), journal, exit-code mapping, the registry read again,
diagnosis again, and `history` / `undo --last`. The busy case also shortens BUSY_WAIT_S (60 s -> 2 s), and
every run counts the real LiveWindows.run_elevated calls (one call, one permission prompt).

The installer is the stand-in vc_redist (tests/standin: a real mingw-w64 program with a 14.44.35211.0 version
resource) signed with osslsigncode by a certificate made for the run with subject CN "Microsoft Corporation".
Wine's WinVerifyTrust does not check roots (docs/knowledge.md "Signatures under Wine"), so it answers "trusted":
this proves OUR flow, not Windows' trust decision. The real trust checks (genuine Microsoft files trusted, a
self-made "Microsoft Corporation" certificate refused by the pinned roots, tampering, no signature) are in
tests/wheels/test_signature.py and tests/lab/test_live_signature.py. The unsigned copy is refused under Wine too.

The stand-in is told what to do through TDD_STANDIN_* variables (the app downloads it into a folder of its
own, where no standin.cfg is; under Wine the "elevated" program gets its caller's environment).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.lab import lab_env, wine_unavailable
from tests.helpers.machine_settings import OWNERS_NOTED
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]

RUNTIMES = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
INSTALLED = {"Installed": 1, "Version": "v14.44.35211.00", "Major": 14, "Minor": 44, "Bld": 35211, "Rbld": 0}

SCRIPT = r"""
import json, sys
sys.path.insert(0, {repo!r})
import app.resources
import app.repair.vc_runtime as vc
import app.sources.vc_redist as vc_source

_catalog = app.resources.download_catalog
def catalog():  # the test's one override: where vc_redist.x64.exe is downloaded from
    entry = _catalog()
    entry["vc_redist"]["x64"]["url"] = {url!r}
    return entry
vc.download_catalog = vc_source.download_catalog = catalog
vc.BUSY_WAIT_S = {busy_wait_s!r}
from app.main import main
from app.system.live import LiveWindows
elevations = []
_run_elevated = LiveWindows.run_elevated
def run_elevated(self, argv, timeout, cancel=None, on_stop_asked=lambda: None):  # the real one, counted: one
    elevations.append(argv)                                                     # call is one permission prompt
    return _run_elevated(self, argv, timeout, cancel, on_stop_asked)
LiveWindows.run_elevated = run_elevated
if {swap!r}:  # another program of the user swaps the checked installer after its check
    import shutil
    _fetch = vc.fetch_installer
    def fetch_installer(*args, **kwargs):
        path, verified = _fetch(*args, **kwargs)
        shutil.copyfile({swap!r}, path)
        return path, verified
    vc.fetch_installer = fetch_installer
try:
    code = main({argv!r})
finally:
    sys.stdout.flush()
    sys.stderr.flush()
x64 = {{k: v.data for k, v in LiveWindows().registry_values({key!r}).items()}}
print("\n@@RESULT " + json.dumps({{"exit": code, "x64": x64, "elevations": len(elevations)}}))
"""


@pytest.fixture(scope="module")
def setup(lab, tmp_path_factory):
    """(env, server): the signed stand-in served as /vc_redist.x64.exe, the unsigned
    one as /unsigned/vc_redist.x64.exe."""
    from tests.https_server import HttpsServer
    from tests.standin import StandinUnavailable, build_standin, sign_standin

    folder = tmp_path_factory.mktemp("vc runtime 运行库")
    try:
        exe = build_standin()
        signed = sign_standin(exe, folder / "signed" / "vc_redist.x64.exe")
    except StandinUnavailable as exc:
        wine_unavailable(str(exc))
    unsigned = folder / "unsigned" / "vc_redist.x64.exe"
    unsigned.parent.mkdir()
    shutil.copyfile(exe, unsigned)
    env = lab_env(lab, "vc-runtime", torch_version="2.4.1")
    with HttpsServer(folder / "certs") as server:
        server.files["/vc_redist.x64.exe"] = signed
        server.files["/unsigned/vc_redist.x64.exe"] = unsigned
        yield env, server


def run_app(lab, setup, data, argv, path="/vc_redist.x64.exe", busy_wait_s=5, swap=None, elevations=None,
            **standin):
    """Run the CLI in the env's Windows Python; returns (exit code, stdout before the result, stderr, x64 key).
    `elevations`, a list, gets the number of run_elevated calls (permission prompts); `swap`, a file, replaces the
    installer after its check."""
    env, server = setup
    script = data / "run_app.py"
    data.mkdir(parents=True, exist_ok=True)
    text = SCRIPT.format(repo=to_windows_path(REPO_ROOT), url=server.url(path), argv=argv, key=RUNTIMES + "\\x64",
                         busy_wait_s=busy_wait_s, swap=to_windows_path(swap) if swap else "")
    script.write_text(text, encoding="utf-8")
    variables = {"REQUESTS_CA_BUNDLE": to_windows_path(server.ca), "TDD_DATA_DIR": to_windows_path(data / "journal"),
                 "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "TDD_STANDIN_EXIT": "0"}
    variables.update({f"TDD_STANDIN_{k.upper()}": str(v) for k, v in standin.items()})
    result = lab.run_python([script], env=variables, timeout=900, torch_env=env)
    assert "@@RESULT " in result.stdout, (result.returncode, result.stdout[-3000:], result.stderr[-5000:])
    before, _, tail = result.stdout.rpartition("@@RESULT ")
    out = json.loads(tail.strip())
    if elevations is not None:
        elevations.append(out["elevations"])
    return out["exit"], before, result.stderr, out["x64"]


def repair(lab, setup, data, **standin):
    env = setup[0]
    return run_app(lab, setup, data, ["repair", "--env", to_windows_path(env), "--action", "install-vc-runtime",
                                      "--yes", "--json", "-"], **standin)


def notes(data, name):
    return [r[name] for r in journal_records(data) if r["kind"] == "note" and name in r]


def journal_records(data):
    (transaction,) = (data / "journal" / "transactions").iterdir()
    return [json.loads(line) for line in (transaction / "journal.jsonl").read_text(encoding="utf-8").splitlines()]


def installer_records(data):
    records = journal_records(data)
    intents = [r for r in records if r["kind"] == "intent" and r["op"] == "installer"]
    applied = [r for r in records if r["kind"] == "applied" and r["step"] in {i["step"] for i in intents}]
    return intents, applied


def whole_output(data, exit_code, stdout, stderr) -> str:
    """A repair's whole output, for an assertion's message: its exit code, both streams in full, and its journal's
    records (the transactions under `data`), so that a failure says how the repair ended and why."""
    journals = sorted((data / "journal" / "transactions").glob("*/journal.jsonl"))
    records = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in journals) or "(no journal)"
    return (f"\nexit code: {exit_code}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- journal ---\n"
            f"{records}")


def history(lab, setup, data):
    code, stdout, stderr, _ = run_app(lab, setup, data, ["history", "--json", "-"])
    assert code == 0, stderr[-3000:]
    return json.loads(stdout[stdout.index("{"):])["transactions"]


@pytest.mark.parametrize(("code", "outcome"), [(0, "installed"), (3010, "restart-needed"), (1638, "newer-present")])
def test_the_installer_succeeds(lab, setup, clean_runtimes, tmp_path, code, outcome):
    standin = {"exit": code}
    expected = INSTALLED
    if code == 1638:  # as the machine is when vc_redist says "a newer version is already installed"
        standin.update(register=1, version="14.50.35719.0")
        expected = {"Installed": 1, "Version": "v14.50.35719.00", "Major": 14, "Minor": 50, "Bld": 35719,
                    "Rbld": 0}
    trace = tmp_path / "trace.txt"
    started = time.monotonic()
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, trace=to_windows_path(trace), **standin)
    seconds = time.monotonic() - started
    shown = whole_output(tmp_path, exit_code, stdout, stderr)

    assert exit_code == 0, shown
    result = json.loads(stdout)  # standard output is the document alone; the words are on standard error
    assert result["state"] == "fixed" and result["plan"]["action"] == "install-vc-runtime", shown
    assert x64 == expected, shown
    intents, applied = installer_records(tmp_path)
    assert [i["arch"] for i in intents] == ["x64"], shown
    assert intents[0]["argv"][1:] == ["/install", "/quiet", "/norestart"], shown  # no log path: Burn writes its own
    assert [(a["exit_code"], a["outcome"]) for a in applied] == [(code, outcome)], shown
    # it ran once, itself (nothing of ours between), from where it was downloaded and checked, held there
    (run,) = trace.read_text(encoding="utf-8-sig").splitlines()
    assert "\\downloads\\vc_redist.x64.exe" in run.partition(" cwd=")[0], run
    assert run.partition(" cwd=")[2].partition(" cmd=")[0].lower() == "c:\\windows\\system32", run  # not ours
    assert run.rstrip().endswith("/install /quiet /norestart"), run
    assert "Program Files" not in run
    (item,) = history(lab, setup, tmp_path)
    assert item["state"] == "done" and item["action"] == "install-vc-runtime"
    assert [(c["op"], c["arch"]) for c in item["changes"]] == [("installer", "x64")]
    assert [(r["exit_code"], r["outcome"]) for r in item["results"]] == [(code, outcome)]
    # the restore point is Windows Installer's own: the plan says so, and nothing of ours asks for one
    assert "Windows Installer, which does the installer's work, makes a restore point itself" in stderr
    assert not [r for r in journal_records(tmp_path) if r["kind"] == "note" and "restore_point" in r]
    # its own log, from %TEMP%, is kept with the transaction for the report
    (transaction,) = (tmp_path / "journal" / "transactions").iterdir()
    (kept,) = (transaction / "downloads").glob("*.log")
    assert "Command line: action=install, ui=quiet, norestart=yes" in kept.read_text(encoding="utf-8-sig")
    assert ("needs a restart" in stderr) == (code == 3010), shown
    print(f"exit {code}: repair took {seconds:.1f} s")

    if code == 0:  # undo leaves the shared runtime alone and says so, as it is now (never "every change put back")
        undo_code, undo_out, undo_err, x64_after = run_app(lab, setup, tmp_path, ["undo", "--last"])
        assert "except Microsoft's Visual C++ runtime (x64 14." in undo_out, (undo_code, undo_out, undo_err[-3000:])
        assert "every change" not in undo_out
        assert undo_code == 0, undo_err[-3000:]
        assert x64_after == INSTALLED
        (item,) = history(lab, setup, tmp_path)
        assert item["state"] == "rolled-back"


@pytest.mark.parametrize(("code", "words"), [
    (1602, "The installation was cancelled, so nothing was installed."),
    (1603, "The installer failed (code 1603). The end of its log:"),
])
def test_the_installer_fails(lab, setup, clean_runtimes, tmp_path, code, words):
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, exit=code)

    assert exit_code == 1, (stdout[-2000:], stderr[-4000:])
    assert words in stderr
    if code == 1603:
        tail = stderr[stderr.index(words):]
        assert "Error 0x80070643: Failed to install MSI package." in tail
        assert "Exit code: 0x643, restarting: No" in tail
    assert x64 == {}
    intents, applied = installer_records(tmp_path)
    assert len(intents) == 1 and applied == []  # the step never completed: InstallerFailed came out of it
    (item,) = history(lab, setup, tmp_path)
    assert item["state"] == "rolled-back"


def test_busy_once_then_installed_after_asking_again(lab, setup, clean_runtimes, tmp_path):
    """1618 once although Windows Installer's busy flag was not set: the app waits (BUSY_WAIT_S, 2 s here) and asks
    again (a second permission prompt, said), the wait really passed (the stand-in's own clock)."""
    state, trace = tmp_path / "busy-once.flag", tmp_path / "trace.txt"
    elevations: list[int] = []
    started = time.monotonic()
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, busy_wait_s=2, elevations=elevations, exit=0,
                                            first_exit=1618, state=to_windows_path(state),
                                            trace=to_windows_path(trace))
    seconds = time.monotonic() - started

    assert exit_code == 0, stderr[-4000:]
    assert state.exists()
    assert elevations == [2], "not one permission prompt per try"
    assert stderr.count("Another installation is running; trying again in 2 s") == 1, stderr[-3000:]
    assert x64 == INSTALLED
    _, applied = installer_records(tmp_path)
    assert [(a["exit_code"], a["outcome"]) for a in applied] == [(0, "installed")]
    (run,) = notes(tmp_path, "installer_run")
    assert run["tries"] == [1618, 0]
    first, second = (int(line.split(" ")[1]) / 1000 for line in trace.read_text("utf-8-sig").splitlines())
    assert second - first >= 2, (first, second)
    print(f"1618 then 0: {second - first:.2f} s between the tries, {elevations[0]} elevations, repair took "
          f"{seconds:.1f} s")


def test_an_installer_swapped_after_its_check_is_not_run(lab, setup, clean_runtimes, tmp_path):
    """The checked download is replaced (by another signed file) after its check: the bytes read through the held
    file have another SHA-256 than the one checked, so nothing is started."""
    from tests.standin import build_standin, sign_standin

    other = sign_standin(build_standin(), tmp_path / "other" / "vc_redist.x64.exe")
    trace = tmp_path / "trace.txt"
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, swap=other, exit=0, trace=to_windows_path(trace))

    assert exit_code == 1, stderr[-4000:]
    assert "The installer was not run" in stderr and "checked: " in stderr, stderr[-3000:]
    assert x64 == {} and not trace.exists()
    (item,) = history(lab, setup, tmp_path)
    assert item["state"] == "rolled-back"


@pytest.fixture
def old_runtime_dll(lab, tmp_path):
    """System32\\vcruntime140.dll as an older runtime left it (14.29.30133.0: a small PE file from the test-side
    PE writer; the app reads only its version), and a folder with the real 14.51 vcruntime140.dll
    (msvc-runtime) for the stand-in to put in its place. Wine's placeholder is put back afterwards."""
    from app.demo.pe_writer import write_pe
    from tests import realfiles
    from tests.helpers.images import real

    new = tmp_path / "new runtime"
    new.mkdir()
    (source,) = [p for p in real(realfiles.msvc_runtime_dlls) if p.name == "vcruntime140.dll"]
    shutil.copyfile(source, new / "vcruntime140.dll")
    system32 = lab.prefix / "drive_c" / "windows" / "system32"
    target, aside = system32 / "vcruntime140.dll", tmp_path / "vcruntime140.dll.wine"
    os.replace(target, aside)
    write_pe(target, dll_name="vcruntime140.dll", file_version=(14, 29, 30133, 0),
             product_version=(14, 29, 30133, 0))
    try:
        yield new
    finally:
        os.replace(aside, target)
        (system32 / "vcruntime140.dll.tdd-pending").unlink(missing_ok=True)
        lab.wine_reg(["delete", r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager", "/v",
                      "PendingFileRenameOperations", "/f"])


def test_restart_needed_keeps_the_repair_when_the_old_dlls_wait_for_the_restart(lab, setup, clean_runtimes,
                                                                                tmp_path, old_runtime_dll):
    """3010: vc_redist found the runtime DLLs in use and replaces them at the next restart (the stand-in stages
    the new vcruntime140.dll and schedules it with MoveFileExW); until then System32 holds the old one. That is
    no failure: not rolled back, the journal says a restart is needed and which file waits."""
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, exit=3010,
                                            runtime_dlls=to_windows_path(old_runtime_dll))

    assert exit_code in (0, 1) and x64 == INSTALLED, stderr[-4000:]
    result = json.loads(stdout)
    assert result["state"] in ("fixed", "restart-needed"), result  # what torch 2.4.1 still needs: nothing
    assert exit_code == (0 if result["state"] == "fixed" else 1)
    _, applied = installer_records(tmp_path)
    assert [(a["exit_code"], a["outcome"]) for a in applied] == [(3010, "restart-needed")]
    (waiting,) = [r for r in journal_records(tmp_path) if r["kind"] == "note" and r.get("restart_needed")]
    assert waiting["dll"].lower() == r"c:\windows\system32\vcruntime140.dll" and waiting["version"] == "14.29.30133.0"
    (item,) = history(lab, setup, tmp_path)
    assert item["state"] == "done" and item["restart_needed"] is True
    assert "restart" in stderr.lower()
    pending = subprocess.run(["wine", "reg", "query", r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager",
                              "/v", "PendingFileRenameOperations"], env=lab.base_env(), capture_output=True)
    assert b"vcruntime140.dll.tdd-pending" in pending.stdout.replace(b"\x00", b""), pending.stdout[-500:]
    print(f"3010 with the old vcruntime140.dll kept: state {result['state']}, exit {exit_code}")


def test_old_dlls_without_a_restart_pending_fail_the_repair(lab, setup, clean_runtimes, tmp_path, old_runtime_dll):
    """The same old file, but the installer said 0 (no restart) and left it: that is a failed repair."""
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, exit=0)

    assert exit_code == 1, stderr[-4000:]
    assert "is still version 14.29.30133.0" in stderr, stderr[-3000:]
    (item,) = history(lab, setup, tmp_path)
    assert item["state"] == "rolled-back"
    assert not [r for r in journal_records(tmp_path) if r["kind"] == "note" and r.get("restart_needed")]


def test_an_unsigned_installer_is_refused_before_it_runs(lab, setup, clean_runtimes, tmp_path):
    exit_code, stdout, stderr, x64 = repair(lab, setup, tmp_path, path="/unsigned/vc_redist.x64.exe", exit=0)

    assert exit_code == 1, stderr[-4000:]
    assert "The downloaded file did not pass the safety check" in stderr
    assert x64 == {}
    assert installer_records(tmp_path) == ([], [])  # never run
    (transaction,) = (tmp_path / "journal" / "transactions").iterdir()
    downloads = transaction / "downloads"
    assert not downloads.exists() or not any(downloads.iterdir()), "the refused file was kept"
    assert setup[1].requests_for("/unsigned/vc_redist.x64.exe"), "the unsigned installer was never downloaded"



def test_an_installer_the_user_downloaded_is_checked_copied_and_run_with_no_download(lab, setup, clean_runtimes,
                                                                                      tmp_path):
    """`--source`: the user's own vc_redist (a computer without internet). An unsigned one is refused at the plan,
    in words, before anything begins; the signed one's folder is used: copied into the transaction, checked again,
    run, and nothing is downloaded."""
    env, server = setup
    signed, unsigned = server.files["/vc_redist.x64.exe"], server.files["/unsigned/vc_redist.x64.exe"]
    requests = len(server.log)
    argv = ["repair", "--env", to_windows_path(env), "--action", "install-vc-runtime", "--yes", "--source"]

    code, stdout, stderr, x64 = run_app(lab, setup, tmp_path / "refused", [*argv, to_windows_path(unsigned)])
    assert code == 1 and "is not used: it is not Microsoft's own installer" in stderr, stderr[-3000:]
    assert x64 == {} and not list((tmp_path / "refused" / "journal").glob("transactions/*"))

    code, stdout, stderr, x64 = run_app(lab, setup, tmp_path / "used", [*argv, to_windows_path(signed.parent)])
    assert code == 0, stderr[-4000:]
    assert "from the file " + to_windows_path(signed) in stdout
    assert x64["Installed"] == 1
    assert len(server.log) == requests, "something was downloaded"
    (copied,) = notes(tmp_path / "used", "installer_copied")
    assert copied["from"] == to_windows_path(signed)
    intents, applied = installer_records(tmp_path / "used")
    assert len(applied) == 1 and "\\downloads\\vc_redist.x64.exe" in intents[0]["argv"][0], intents

# -- the same repair, clicked through in the wizard ----------------------------------------------------------------
WIZARD = r"""
import json, sys
sys.path.insert(0, {repo!r})
import app.resources
import app.repair.vc_runtime as vc
import app.sources.vc_redist as vc_source

_catalog = app.resources.download_catalog
def catalog():  # the test's one override, as for the CLI above
    entry = _catalog()
    entry["vc_redist"]["x64"]["url"] = {url!r}
    return entry
vc.download_catalog = vc_source.download_catalog = catalog
""" + OWNERS_NOTED + r"""
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from app.ui.application import application, new_wizard
from app.ui.pages.base import FINDINGS, FINISH, PLAN, REPAIR, VERIFY
from app.ui.screenshots import drive, settle, wait_until

qt = application(["-platform", "offscreen"])
wizard = new_wizard(env={env!r}, lang="en")
seen = {{}}

def at_page(page):
    session = wizard.session
    seen.setdefault("pages", []).append(page)
    if page == FINDINGS:
        seen["blockers"] = sorted(p.lead.code for p in session.blockers())
        tree = wizard.pages[FINDINGS].tree
        tree.problems_only.setChecked(False)
        tree.search.setText("vcruntime140.dll")
        settle()
        found = tree.filter.match(tree.filter.index(0, 0), Qt.ItemDataRole.DisplayRole, "vcruntime140.dll", 1,
                                  Qt.MatchFlag.MatchRecursive | Qt.MatchFlag.MatchFixedString)
        tree.view.setCurrentIndex(found[0])
        settle()
        seen["detail"] = tree.detail.toPlainText()
    elif page == PLAN:
        seen["chosen"] = [o.action for o in session.chosen]
    elif page == REPAIR:
        seen["repair"] = wizard.pages[REPAIR].state
        seen["repair_status"] = wizard.pages[REPAIR].status.text()
    elif page == VERIFY:
        seen["verdict"] = wizard.pages[VERIFY].headline.text()
        seen["after_blockers"] = [p.lead.code for p in session.blockers(session.after)]
    elif page == FINISH:
        finish = wizard.pages[FINISH]
        seen["summary"] = finish.summary.text()
        if finish.undo.isVisible():  # the user undoes the repair from the last page
            finish.undo.click()  # Undo asks first: answered "Undo them", as the user would
            wait_until(lambda: finish.confirm is not None and finish.confirm.isVisible(), 60)
            finish.confirm.button(QMessageBox.StandardButton.Yes).click()
            wait_until(lambda: not finish.undo.isVisible() or finish.undo.isEnabled(), 300)
            seen["undone"] = finish.message_label.text()

drive(wizard, at_page)
seen["owners"], seen["window"] = owners, int(wizard.winId())
wizard.shutdown()
print("\n@@RESULT " + json.dumps(seen))
"""


def test_the_wizard_runs_the_runtime_installer_and_shows_the_copy_torch_really_loaded(lab, setup, clean_runtimes,
                                                                                     tmp_path):
    """Windows CPython under Wine runs the wizard (PySide6's Windows wheel, offscreen) on the live lab machine with
    no VC++ runtime (System32's msvcp140 / vcruntime140_1 gone, the app-local copy removed): diagnose (the live
    replay included), the tree's detail pane, the recommended repair (install-vc-runtime: the signed stand-in,
    downloaded, verified, run through the elevated step), verify, finish, clicked through as by a user. The
    stand-in registers the runtime but puts no DLL in place, so the app must say plainly that PyTorch still
    does not load, not claim a fix."""
    from app.inventory.machine import CORE_VC_DLLS

    _, server = setup
    env = lab_env(lab, "wizard-no-vc", torch_version="2.4.1")
    (env / "vcruntime140_1.dll").unlink(missing_ok=True)
    gone = [name for name in CORE_VC_DLLS if name != "vcruntime140.dll"]
    script = tmp_path / "wizard.py"
    script.write_text(WIZARD.format(repo=to_windows_path(REPO_ROOT), url=server.url("/vc_redist.x64.exe"),
                                    env=to_windows_path(env)), encoding="utf-8")
    variables = {"REQUESTS_CA_BUNDLE": to_windows_path(server.ca), "TDD_DATA_DIR": to_windows_path(tmp_path / "j"),
                 "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "TDD_STANDIN_EXIT": "0",
                 "TDD_FONT_DIR": to_windows_path(lab.font_dir())}
    app_python = lab.app_python()
    with lab.without_system_dlls(gone) as no_runtime:
        result = lab.run_python([script], env={**variables, **no_runtime}, timeout=900, torch_env=app_python)
    assert "@@RESULT " in result.stdout, (result.returncode, result.stdout[-3000:], result.stderr[-5000:])
    seen = json.loads(result.stdout.rpartition("@@RESULT ")[2].strip())
    assert "vc-runtime-missing" in seen["blockers"], seen
    # what the user's own python.exe really had loaded, in the tree's detail pane (Process Monitor's evidence)
    assert "What PyTorch really loaded" in seen["detail"] and "vcruntime140.dll" in seen["detail"].lower(), seen
    assert seen["chosen"] == ["install-vc-runtime"], seen
    assert seen["repair"] in ("done", "failed"), seen
    # Windows' permission prompt for the installer belongs to the wizard's window (SHELLEXECUTEINFO.hwnd), as the
    # undo's after it, never to none (a flashing taskbar button behind a wizard that looks hung)
    assert seen["window"] and seen["owners"] and set(seen["owners"]) == {seen["window"]}, seen
    assert "still does not load" in seen["verdict"] and "vc-runtime-missing" in seen["after_blockers"], seen
    assert "except Microsoft's Visual C++ runtime: it stays installed" in seen["summary"], seen
    assert "except Microsoft's Visual C++ runtime, now installed (x64 14.44.35211" in seen["undone"], seen


def test_an_installer_already_in_downloads_is_used_when_it_passes_and_named_when_it_does_not(lab, setup,
                                                                                          clean_runtimes, tmp_path):
    """No --source: a vc_redist the user already has in Downloads is checked at the plan; the unsigned one is named
    ("Not used: …") and Microsoft's link is used; a signed one is copied and run, and nothing is downloaded."""
    env, server = setup
    signed, unsigned = server.files["/vc_redist.x64.exe"], server.files["/unsigned/vc_redist.x64.exe"]
    argv = ["repair", "--env", to_windows_path(env), "--action", "install-vc-runtime", "--yes"]
    downloaded = lab.user_folder("Downloads") / "vc_redist.x64.exe"
    asked = len(server.requests_for("/vc_redist.x64.exe"))
    try:
        shutil.copyfile(unsigned, downloaded)
        code, stdout, stderr, x64 = run_app(lab, setup, tmp_path / "unsigned", argv)
        assert code == 0, stderr[-4000:]
        assert "Not used: " in stdout and "Downloads\\vc_redist.x64.exe" in stdout, stdout[-3000:]
        assert len(server.requests_for("/vc_redist.x64.exe")) == asked + 1  # downloaded from "Microsoft" instead

        lab.wine_reg(["delete", RUNTIMES + "\\x64", "/f", "/reg:64"])
        shutil.copyfile(signed, downloaded)
        code, stdout, stderr, x64 = run_app(lab, setup, tmp_path / "signed", argv)
        assert code == 0, stderr[-4000:]
        assert "from the file " in stdout and "Not used" not in stdout, stdout[-3000:]
        assert x64["Installed"] == 1
        assert len(server.requests_for("/vc_redist.x64.exe")) == asked + 1, "downloaded although Downloads had it"
    finally:
        downloaded.unlink(missing_ok=True)

STOP_WHILE_INSTALLING = """
import os
from PySide6.QtCore import QTimer
trace = os.environ["TDD_STANDIN_TRACE"]
def stop_once_installing():  # the user presses Stop while Microsoft's installer runs
    page = wizard.pages[REPAIR]
    if wizard.currentId() == REPAIR and os.path.exists(trace) and page.stop.isEnabled():
        seen["working_status"] = page.status.text()
        seen["working_row"] = page.rows[0]["state"].text()
        poll.stop()
        page.stop.click()
poll = QTimer()
poll.timeout.connect(stop_once_installing)
poll.start(200)
"""


def stop_while_installing(lab, setup, tmp_path, install_ms: int, before: str = "") -> tuple[dict, Path]:
    """The wizard (as above, on a computer without the runtime) with Stop pressed once the stand-in installer,
    taking `install_ms`, has started; `before`: more of the script, run before the wizard is driven. (what the
    script saw, the stand-in's trace); returns once the stand-in has ended, so that no later test sees it write
    the runtime's keys."""
    from app.inventory.machine import CORE_VC_DLLS

    _, server = setup
    env = lab_env(lab, "wizard-no-vc", torch_version="2.4.1")
    (env / "vcruntime140_1.dll").unlink(missing_ok=True)
    gone = [name for name in CORE_VC_DLLS if name != "vcruntime140.dll"]
    script = tmp_path / "wizard.py"
    text = WIZARD.format(repo=to_windows_path(REPO_ROOT), url=server.url("/vc_redist.x64.exe"),
                         env=to_windows_path(env))
    script.write_text(text.replace("drive(wizard, at_page)", before + STOP_WHILE_INSTALLING + "drive(wizard, at_page)"),
                      encoding="utf-8")
    trace = tmp_path / "standin.trace"
    variables = {"REQUESTS_CA_BUNDLE": to_windows_path(server.ca), "TDD_DATA_DIR": to_windows_path(tmp_path / "j"),
                 "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "TDD_STANDIN_EXIT": "0",
                 "TDD_STANDIN_SLEEP_MS": str(install_ms), "TDD_STANDIN_TRACE": to_windows_path(trace),
                 "TDD_FONT_DIR": to_windows_path(lab.font_dir())}
    try:
        with lab.without_system_dlls(gone) as no_runtime:
            result = lab.run_python([script], env={**variables, **no_runtime}, timeout=900,
                                    torch_env=lab.app_python())
    finally:
        deadline = time.monotonic() + 120
        while lab.processes("vc_redist") and time.monotonic() < deadline:
            time.sleep(1)
    assert "@@RESULT " in result.stdout, (result.returncode, result.stdout[-3000:], result.stderr[-5000:])
    return json.loads(result.stdout.rpartition("@@RESULT ")[2].strip()), trace


def test_stop_in_the_wizard_while_the_installer_runs_lets_it_finish_and_says_the_runtime_stays(
        lab, setup, clean_runtimes, tmp_path):
    """The same wizard; Stop is pressed once the stand-in installer has started (a 6 s install). The page said
    beforehand that a started installer is let finish; after the rollback it says everything was put back except
    the runtime, as the registry names it now, never "everything was put back as it was"."""
    seen, trace = stop_while_installing(lab, setup, tmp_path, install_ms=6000)
    assert "is let finish" in seen["working_status"], seen
    assert seen["working_row"] == "working…", seen  # the installer runs: no longer "downloading 86 / 86 KB"
    assert seen["repair"] == "rolled-back", seen
    assert "except Microsoft's Visual C++ runtime, now installed (x64 14.44.35211" in seen["repair_status"], seen
    assert trace.read_text(encoding="utf-8").count("run ") == 1

TIME_OUT_AFTER_STOP = """
vc.TIMEOUT_S = 5  # the app stops waiting for Microsoft's installer before it has ended (30 minutes in the app)
_at_page = at_page
def at_page(page):
    _at_page(page)
    if page == REPAIR:
        shown = wizard.pages[REPAIR]
        seen["row"] = shown.rows[0]["state"].text()
        seen["error"] = shown.error_text.text() if shown.error.isVisible() else ""
        seen["retry"] = shown.retry.isVisible()
"""


def test_stop_then_the_wait_running_out_says_the_installer_still_runs_never_that_all_was_put_back(
        lab, setup, clean_runtimes, tmp_path):
    """Stop while the stand-in installer runs (a 20 s install), and the app's wait for it ends first (its time-out,
    shortened to 5 s): the installer is not stopped, so the page must not say everything was put back. It says
    the installer still runs and may still install the runtime, to wait until it has ended, and offers no Retry
    (a second installer would only wait for the first); the installer then finishes on its own."""
    seen, trace = stop_while_installing(lab, setup, tmp_path, install_ms=20000, before=TIME_OUT_AFTER_STOP)
    assert seen["repair"] == "rolled-back", seen
    assert "Microsoft's installer is still running" in seen["repair_status"], seen
    assert "put back as it was" not in seen["repair_status"], seen
    assert seen["row"] == "not finished: Microsoft's installer is still running", seen
    assert "It was not stopped, and it may still install the runtime" in seen["error"], seen
    assert "Restart the computer" not in seen["error"] and seen["retry"] is False, seen
    assert trace.read_text(encoding="utf-8").count("run ") == 1  # one installer, never a second
    assert lab.wine_reg(["query", RUNTIMES + "\\x64", "/v", "Installed", "/reg:64"]) == 0, "it did not finish"


# The two points where an installer differs from the other kinds (before it ran; after it ran and before that was
# recorded). begin, applied:1 and finish are the journal's own, killed for every other kind in the fast suite's
# fault matrix (tests/wheels/test_fault_matrix.py); each lab kill costs a minute of Wine.
@pytest.mark.parametrize("point", ["intent:1", "change:1"])
def test_a_repair_killed_at_a_journal_point_is_found_and_rolled_back_at_the_next_start(lab, setup, clean_runtimes,
                                                                                       tmp_path, point):
    """The fault matrix's install-vc-runtime row: the process ended (TerminateProcess) at each journal point. The
    next start finds the repair interrupted (its lock died with it), and one undo ends it rolled back; what the
    shared installer installed stays, as the plan says (Windows' own uninstaller undoes it)."""
    env, server = setup
    data = tmp_path / "data"
    data.mkdir()
    script = data / "run_app.py"
    script.write_text(SCRIPT.format(repo=to_windows_path(REPO_ROOT), url=server.url("/vc_redist.x64.exe"),
                                    argv=["repair", "--env", to_windows_path(env), "--action", "install-vc-runtime",
                                          "--yes"], key=RUNTIMES + "\\x64", busy_wait_s=5, swap=""),
                      encoding="utf-8")
    variables = {"REQUESTS_CA_BUNDLE": to_windows_path(server.ca), "TDD_DATA_DIR": to_windows_path(data / "journal"),
                 "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "TDD_STANDIN_EXIT": "0",
                 "TDD_CRASH_AT": point}
    killed = lab.run_python([script], env=variables, timeout=900, torch_env=env)
    assert "@@RESULT " not in killed.stdout, (point, killed.stdout[-2000:])  # it died there
    records = journal_records(data)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "begin" and ("finish" in kinds) == (point == "finish"), kinds
    states = {t["id"]: t["state"] for t in history(lab, setup, data)}
    (state,) = states.values()
    assert state == ("done" if point == "finish" else "interrupted"), (point, state)  # not "running": nobody holds it
    code, stdout, stderr, x64 = run_app(lab, setup, data, ["undo", "--last"])
    assert code == 0, (point, stdout[-2000:], stderr[-3000:])
    (state,) = {t["state"] for t in history(lab, setup, data)}
    assert state == "rolled-back"
    if point in ("change:1", "applied:1", "finish"):  # the installer ran: the runtime it installed stays
        assert x64.get("Installed") == 1
