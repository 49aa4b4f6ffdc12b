"""Windows Security's own records (Defender's and Code Integrity's Operational logs) read from the event XML Windows
renders, live through a stand-in wevtutil, and tied to torch's missing files on a copied drive: the cause said as
fact only where a record names the file. A real .evtx file: tests/wheels/test_event_log_files.py."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest

from app.inventory import security_events
from app.inventory.discovery import discover
from app.inventory.environment import inspect_environment
from app.inventory.machine import CI_POLICY_KEY, read_machine_facts
from app.inventory.security_events import (
    CODE_INTEGRITY,
    DAMAGED,
    DEFENDER,
    DEFENDER_LOG,
    HOSTILE,
    NEEDS_ADMIN,
    TOO_LARGE,
    parse_rendered,
    path_key,
    read_export,
    read_logs,
)
from app.main import main
from app.probes.app_control import replayed_block
from app.probes.base import ProbeContext
from app.probes.runner import run_diagnosis
from app.repair.restore_files import RestoreTorchFiles
from app.system.base import RunResult
from app.system.offline import OfflineImage
from app.system.process import run_process
from tests.helpers.diagnosis import diagnose, finding
from tests.helpers.pe_machine import LIB, SITE, VENV

NOW = datetime.now(timezone.utc)
LONG_AGO = NOW - timedelta(days=3650)
C10 = LIB + r"\c10.dll"
THREAT = "Trojan:Win32/Wacatac.B!ml"
LOG_XML = r"C:\Windows\System32\winevt\Logs\Microsoft-Windows-Windows Defender%4Operational.xml"


def defender(event_id: int, path: str, *, action_id: str = "", days: int = 3, detection: str = "{D1}") -> str:
    """One event of Defender's Operational log as Windows renders it (Microsoft's Event schema)."""
    when = (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.1234567Z")
    action = {"2": "Quarantine", "3": "Remove", "6": "Allow", "": "Not Applicable"}[action_id]
    return f"""<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System>
<Provider Name='Microsoft-Windows-Windows Defender' Guid='{{11cd958a-c507-4ef3-b3f2-5fd9dfbd2c78}}'/>
<EventID>{event_id}</EventID><Version>0</Version><Level>3</Level><TimeCreated SystemTime='{when}'/>
<EventRecordID>{event_id * 7}</EventRecordID><Channel>Microsoft-Windows-Windows Defender/Operational</Channel>
<Computer>DESKTOP-1</Computer><Security UserID='S-1-5-18'/></System><EventData>
<Data Name='Product Name'>Microsoft Defender Antivirus</Data><Data Name='Detection ID'>{detection}</Data>
<Data Name='Detection Time'>{when}</Data><Data Name='Threat Name'>{THREAT}</Data>
<Data Name='Severity Name'>Severe</Data><Data Name='Path'>{path}</Data>
<Data Name='Detection User'>DESKTOP-1\\alice</Data><Data Name='Action ID'>{action_id}</Data>
<Data Name='Action Name'>{action}</Data></EventData></Event>"""


def code_integrity(event_id: int, file_name: str) -> str:
    when = (NOW - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.1234567Z")
    return f"""<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System>
<Provider Name="Microsoft-Windows-CodeIntegrity"/><EventID>{event_id}</EventID>
<TimeCreated SystemTime="{when}"/><Correlation ActivityID="{{A1}}"/></System><EventData>
<Data Name="File Name">{file_name}</Data>
<Data Name="Process Name">\\Device\\HarddiskVolume3\\Python312\\python.exe</Data>
<Data Name="Requested Signing Level">8</Data><Data Name="Validated Signing Level">1</Data>
<Data Name="Status">0xc0e90002</Data><Data Name="PolicyName">VerifiedAndReputableDesktop</Data>
<Data Name="PolicyID">{{0283ac0f-fff1-49ae-ada1-8a933130cad6}}</Data></EventData></Event>"""


def file_path(windows_path: str) -> str:
    return "file:_" + windows_path


# -- the event XML ---------------------------------------------------------------------------------------------
def test_a_detection_of_a_torch_dll_names_the_threat_and_the_file():
    (event,), note = parse_rendered(defender(1116, file_path(C10)), DEFENDER, LONG_AGO)
    assert note is None and (event.event_id, event.action, event.name) == (1116, "detected", THREAT)
    assert event.paths == (C10,) and not event.takes and event.detection == "{D1}"


@pytest.mark.parametrize("action_id, action, takes", [("2", "quarantined", True), ("3", "removed", True),
                                                       ("6", "allowed", False)])
def test_the_action_taken_is_read_from_its_id_not_its_translated_name(action_id, action, takes):
    (event,), _ = parse_rendered(defender(1117, file_path(C10), action_id=action_id), DEFENDER, LONG_AGO)
    assert (event.action, event.takes) == (action, takes)


def test_every_file_a_detection_names_is_kept_and_processes_are_not():
    other = r"C:\Users\alice\Downloads\ComfyUI.zip"
    value = f"{file_path(C10)}; containerfile:_{other}; file:_{other}->inner.dll; process:_pid:42,ProcessStart:1"
    (event,), _ = parse_rendered(defender(1117, value, action_id="2"), DEFENDER, LONG_AGO)
    assert event.paths == (C10, other)


def test_a_code_integrity_block_names_the_file_by_its_volume_and_the_policy():
    device = r"\Device\HarddiskVolume3" + C10[2:]
    (event,), _ = parse_rendered(code_integrity(3077, device), CODE_INTEGRITY, LONG_AGO)
    assert (event.kind, event.action, event.name, event.takes) == (CODE_INTEGRITY, "blocked",
                                                                   "VerifiedAndReputableDesktop", True)
    assert path_key(event.paths[0]) == path_key(C10)
    (audit,), _ = parse_rendered(code_integrity(3076, device), CODE_INTEGRITY, LONG_AGO)
    assert audit.action == "audited" and not audit.takes


def test_many_events_as_wevtutil_writes_them_and_only_the_recent_ones():
    text = defender(1116, file_path(C10), days=400) + defender(1117, file_path(C10), action_id="2", days=2)
    events, note = parse_rendered(text, DEFENDER, NOW - timedelta(days=183))
    assert note is None and [e.event_id for e in events] == [1117]


def test_a_damaged_record_keeps_the_ones_before_it():
    text = defender(1117, file_path(C10), action_id="2") + defender(1116, file_path(C10))[:300]
    events, note = parse_rendered(text, DEFENDER, LONG_AGO)
    assert note == DAMAGED and [e.event_id for e in events] == [1117]


@pytest.mark.parametrize("hostile", [
    '<!DOCTYPE e [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>',
    '<!DOCTYPE e [<!ENTITY x SYSTEM "file:///etc/passwd">]>'])
def test_an_entity_or_a_document_type_is_refused_at_once(hostile):
    started = time.perf_counter()
    events, note = parse_rendered(hostile + defender(1117, file_path("&d;&x;"), action_id="2"), DEFENDER, LONG_AGO)
    assert (events, note) == ([], HOSTILE) and time.perf_counter() - started < 0.05


def test_a_huge_record_is_passed_over_and_a_long_one_is_cut():
    huge = defender(1117, file_path(C10) + ";" + "file:_C:\\x" * 400_000, action_id="2")  # 4 MB
    started = time.perf_counter()
    events, note = parse_rendered(huge + defender(1116, file_path(C10)), DEFENDER, LONG_AGO)
    assert note == TOO_LARGE and [e.event_id for e in events] == [1116] and time.perf_counter() - started < 0.1
    long = defender(1117, file_path(C10) + ";" + "file:_C:\\x" * 5000, action_id="2")
    (event,), _ = parse_rendered(long, DEFENDER, LONG_AGO)
    assert sum(map(len, event.paths)) < security_events.MAX_VALUE and event.paths[0] == C10


def test_a_huge_export_is_read_from_its_start_within_its_bounds(tmp_path):
    export = tmp_path / "log.xml"
    one = defender(1117, file_path(C10), action_id="2")
    export.write_text(one * (2 * security_events.READ_BYTES // len(one)), encoding="utf-8")
    started = time.perf_counter()
    events, note = read_export(export, DEFENDER, LONG_AGO)
    assert note == TOO_LARGE and len(events) == security_events.MAX_EVENTS
    assert time.perf_counter() - started < 0.5


# -- live: Windows' wevtutil with the user's rights ----------------------------------------------------------------
class LiveStandIn(OfflineImage):
    """A copied drive whose event log answers as wevtutil does: a real process prints `answer` and exits `code`."""

    def __init__(self, root, code: int, answer: str) -> None:
        super().__init__(root)
        self.code, self.answer, self.asked = code, answer, []

    def query_event_log(self, channel, xpath, count, timeout):
        self.asked.append((channel, xpath, count))
        script = "import sys; sys.stdout.write(sys.argv[1]); sys.exit(int(sys.argv[2]))"
        code, out, err = run_process([sys.executable, "-c", script, self.answer, str(self.code)], timeout)
        return RunResult(code, out.decode(), "Failed to query the events. Access is denied." if code == 5 else "")


def test_live_the_query_asks_only_these_ids_and_months(machine):
    system = LiveStandIn(machine.root, 0, defender(1117, file_path(C10), action_id="2"))
    log = read_logs(system, NOW - timedelta(days=183))
    assert [e.action for e in log.naming(C10)] == ["quarantined"] and log.notes == []
    channel, xpath, _ = system.asked[0]
    assert channel == DEFENDER_LOG.channel and "EventID=1117" in xpath and "EventID=5007" not in xpath
    assert "timediff(@SystemTime) <= 158" in xpath  # 183 days in milliseconds: 15 811 200 000


def test_live_a_log_that_needs_an_administrator_is_said_beside_the_missing_files(machine):
    quarantined_drive(machine, log=False)
    system = LiveStandIn(machine.root, 5, "")
    result = run_diagnosis(system, list(discover(system)))
    files, unread = finding(result, "torch-files-missing"), finding(result, "security-log-unread")
    assert files.variant is None and unread.variant == NEEDS_ADMIN and unread.severity == "info"
    assert "needs an administrator" in unread.text("en").explanation
    assert "需要管理员权限" in unread.text("zh_CN").explanation


# -- a copied drive: c10.dll gone, and Defender's log naming it ----------------------------------------------------
def record(machine, size: int, digest: str = "x") -> None:
    machine.write(SITE + r"\torch-2.4.1.dist-info\RECORD", f"torch/lib/c10.dll,sha256={digest},{size}\n"
                  "torch-2.4.1.dist-info/RECORD,,\n")


def quarantined_drive(machine, *, log: bool = True):
    c10 = machine.host(C10).read_bytes()
    record(machine, len(c10), base64.urlsafe_b64encode(hashlib.sha256(c10).digest()).rstrip(b"=").decode())
    machine.host(C10).unlink()
    if log:
        other = r"C:\Users\alice\ComfyUI\custom_nodes\fast\fast_kernels.dll"
        both = f"{file_path(C10)}; {file_path(other)}"
        machine.write(LOG_XML, defender(1116, both, days=5) + defender(1117, both, action_id="2", days=5)
                      + defender(1117, file_path(r"C:\Users\alice\other.exe"), action_id="3", days=1,
                                 detection="{D2}"))
    return machine


def test_a_quarantine_in_defenders_log_is_said_as_fact_with_its_date_and_threat(machine):
    files = finding(diagnose(quarantined_drive(machine)), "torch-files-missing")
    date = (NOW - timedelta(days=5)).strftime("%Y-%m-%d")
    assert files.variant == "security" and files.repairs == ["restore-torch-files"]
    text, chinese = files.text("en"), files.text("zh_CN")
    assert text.title == f"Windows Security quarantined c10.dll on {date} ({THREAT})"
    assert "fast_kernels.dll" in text.explanation and "Most likely" not in text.explanation
    assert "隔离了 c10.dll" in chinese.title and date in chinese.title
    assert [e["action"] for e in files.evidence["security_events"]] == ["quarantined", "detected"]


def test_the_plan_says_how_to_keep_the_files_from_being_taken_again(machine):
    plan = plan_for(quarantined_drive(machine))
    note = next(n for n in plan.notes if "Exclusions" in n["en"])
    assert "Add an exclusion" in note["en"] and "https://www.microsoft.com/wdsi/filesubmission" in note["en"]
    assert "never adds an exclusion itself" in note["en"] and THREAT in note["en"] and "quarantined" in note["en"]
    assert "排除项" in note["zh_CN"] and "隔离了它" in note["zh_CN"]
    assert [c.kind for c in plan.changes] == ["restore-file"]  # the restore is offered as it always was


def plan_for(machine):
    """restore-torch-files' plan after the diagnosis of the drive, as the command line makes it."""
    result = diagnose(machine)
    (env,) = [e for e in result.environments if e.torch is not None]
    return RestoreTorchFiles().plan(OfflineImage(machine.root), env, result.machine, result.findings, "index")


def test_without_the_log_the_words_stay_as_they_were_and_state_no_cause(machine):
    files = finding(diagnose(quarantined_drive(machine, log=False)), "torch-files-missing")
    assert files.variant is None and "security_file" not in files.evidence
    assert "Most likely" in files.text("en").explanation
    assert not [n for n in plan_for(machine).notes if "wdsi" in n["en"]]


def test_a_record_that_names_the_file_but_allowed_it_is_not_the_cause(machine):
    quarantined_drive(machine, log=False)
    machine.write(LOG_XML, defender(1117, file_path(C10), action_id="6"))
    assert finding(diagnose(machine), "torch-files-missing").variant is None


def test_the_report_shows_the_evidence_with_the_users_name_redacted(machine, capsys):
    quarantined_drive(machine)
    assert main(["diagnose", "--root", str(machine.root), "--env", VENV + r"\Scripts\python.exe",
                 "--json", "-"]) == 1
    document = json.loads(capsys.readouterr().out)
    (files,) = [f for f in document["findings"] if f["code"] == "torch-files-missing"]
    assert "quarantined c10.dll" in files["title"] and THREAT in files["title"]
    shown = json.dumps(files["evidence"])
    assert "alice" not in shown and "fast_kernels.dll" in shown


# -- Code Integrity: a block of torch's DLL on record ----------------------------------------------------------------
CI_XML = r"C:\Windows\System32\winevt\Logs\Microsoft-Windows-CodeIntegrity%4Operational.xml"


def smart_app_control_on(machine, *, log: bool):
    machine.set_value(CI_POLICY_KEY, "VerifiedAndReputablePolicyState", "REG_DWORD", 1)
    if log:
        machine.write(CI_XML, code_integrity(3077, r"\Device\HarddiskVolume3" + C10[2:]))
    else:
        machine.host(CI_XML).unlink(missing_ok=True)
    machine.save()
    return machine


def test_a_block_on_record_is_a_blocker_with_its_date_and_policy_without_a_replay(machine):
    blocked = finding(diagnose(smart_app_control_on(machine, log=True)), "app-control-blocks")
    assert (blocked.severity, blocked.variant, blocked.repairs) == ("blocker", None, ["app-control-settings"])
    assert blocked.evidence["dll"] == "c10.dll" and blocked.evidence["policy"] == "VerifiedAndReputableDesktop"
    assert blocked.evidence["block_date"] == (NOW - timedelta(days=1)).strftime("%Y-%m-%d")
    assert finding(diagnose(smart_app_control_on(machine, log=False)), "app-control-blocks").variant == "risk"


def test_a_replayed_4551_carries_code_integritys_record_of_that_dll(machine):
    smart_app_control_on(machine, log=True)
    system = OfflineImage(machine.root)
    env = inspect_environment(system, machine.host(VENV))
    ctx = ProbeContext(system, read_machine_facts(system), env)
    blocked = replayed_block(ctx, 4551, C10, "[WinError 4551] An Application Control policy has blocked this file")
    assert blocked.evidence["policy"] == "VerifiedAndReputableDesktop" and blocked.evidence["winerror"] == 4551


def test_the_chinese_report_shows_the_quarantine_in_the_findings_card(machine, tmp_path, capsys):
    quarantined_drive(machine)
    report = tmp_path / "report.html"
    main(["diagnose", "--root", str(machine.root), "--env", VENV + r"\Scripts\python.exe", "--report", str(report),
          "--lang", "zh_CN", "--quiet"])
    capsys.readouterr()
    page = report.read_text(encoding="utf-8")
    assert "隔离了 c10.dll" in page and THREAT in page and "Windows 安全中心处理的日期" in page
    assert "alice" not in page


def test_a_detection_that_took_only_this_file_says_so(machine):
    quarantined_drive(machine, log=False)
    machine.write(LOG_XML, defender(1117, file_path(C10), action_id="3"))
    files = finding(diagnose(machine), "torch-files-missing")
    assert files.text("en").title.startswith("Windows Security removed c10.dll")
    assert "also took: no other file." in files.text("en").explanation
    assert "还处理了：没有其他文件" in files.text("zh_CN").explanation
