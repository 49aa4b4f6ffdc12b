"""The one elevated helper: `python -m app elevated-step JOBFILE SHA256` (hidden; in the frozen app, its own .exe).

The unelevated app writes a job into the transaction folder and starts the helper through System.run_elevated
(ShellExecuteExW "runas"); the helper performs only that job, step by step, and after each step (and each try of
an installer) writes JOBFILE.result.json atomically, so a crash or a kill still leaves what was done:

    job:    {"steps": [{"op": "restore-point", "description": "...", "kind": 0},
                       {"op": "run-installer", "installer": "C:\\...\\vc_redist.x64.exe", "sha256": "<hex>",
                        "arguments": ["/install", "/quiet", "/norestart", "/log", "C:\\...\\vc_redist.x64.log"],
                        "retry": {"tries": 5, "wait_s": 60}},
                       {"op": "set-value", "key": "HKLM\\...", "name": "...", "value": {"type", "data"} | null}]}
    result: {"results": [{"op", "ok", "code", "detail", ...}, ...]}

What the helper trusts. The job and the installer lie in the user's own folders, which any program of that user
can change while Windows' consent prompt is up. So:
- the job is pinned: the unelevated side puts its SHA-256 on the helper's command line, which is fixed once the
  prompt appears; the helper reads the job's bytes once and refuses them when their hash differs;
- every step is checked before any runs (`check_job`): only the three kinds above; set-value only for the values
  this app writes (ALLOWED_VALUES), with their types; run-installer only with vc_redist's own switches;
- the installer is copied into a folder only administrators can write (app/system/elevation.py
  admin_only_folder), and there its SHA-256 must be the one the job recorded when the download was verified, its
  Authenticode signature must be the catalog's signer (Microsoft Corporation) and its version new enough; it runs
  from there, with its log written there too (an elevated installer writing a log into a user's folder would
  follow whatever link the user put there) and copied back atomically afterwards; the folder is removed after;
- the installer cannot outlive the helper (elevation.contain_children): cancel from the unelevated side
  (TerminateProcess of the helper) also ends the installer.

"Another installation is running" (1618) is waited for here, inside the one elevated step: run-installer carries
its retry policy, and the helper waits `wait_s` and tries again, up to `tries` times, writing the result after
each try (state "waiting" while it waits), so the user sees one permission prompt however long the wait.

A restore point that Windows does not allow is reported (ok false, the reason) and the next steps still run; a
failed set-value or run-installer stops the job. The helper's exit code is the last installer's exit code, else 0
when every step was ok, else 1. The Windows calls themselves are the System's (set_machine_value,
create_restore_point, verify_signature) and app/system/elevation.py's.

Not elevated when it need not be: an offline image has no elevation, so its machine values are written directly.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import ntpath
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.system.base import RegistryValue, System
from app.system.files import sha256_of, write_bytes

HELPER_TIMEOUT_S = 1800.0
BOOTSTRAP = ("import sys; sys.path[:0] = sys.argv[1].split('|'); from app.main import main; "
             "raise SystemExit(main(sys.argv[2:]))")
# the helper's Python runs isolated: -I (no PYTHON* variables, no user site, not the working folder) and -S (no
# `site`, so no .pth file of any site-packages runs before the job's hash is checked); the folders it needs are
# put on sys.path by the bootstrap, and no .pth line in them is ever read
ISOLATED = ("-I", "-S")
RESTORE_POINT, RUN_INSTALLER, SET_VALUE = "restore-point", "run-installer", "set-value"
RESTORE_VALUE = "restore-value"  # undo of a set-value: to the value the helper itself recorded, never one it is sent
RECORD_ID = re.compile(r"^[0-9a-f]{32}$")
BUSY = 1618  # ERROR_INSTALL_ALREADY_RUNNING: another installation is running
MAX_STEPS, MAX_TRIES, MAX_WAIT_S = 8, 10, 600
RESTORE_POINT_KINDS = (0, 1, 12)  # APPLICATION_INSTALL, APPLICATION_UNINSTALL, MODIFY_SETTINGS
INSTALLER_ACTIONS = ("/install", "/repair", "/uninstall")
INSTALLER_UI = ("/quiet", "/passive")
POLL_S = 0.25
LEFTOVER_AGE_S = 86400
# (key, value name) -> (the types it may have, whether it may be deleted): only what this app's repairs write
FILE_SYSTEM_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
MACHINE_ENVIRONMENT_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
MEMORY_MANAGEMENT_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
ALLOWED_VALUES = {
    (FILE_SYSTEM_KEY.lower(), "longpathsenabled"): (("REG_DWORD",), True),  # undo deletes it when it was absent
    (MACHINE_ENVIRONMENT_KEY.lower(), "path"): (("REG_SZ", "REG_EXPAND_SZ"), False),
    (MEMORY_MANAGEMENT_KEY.lower(), "pagingfiles"): (("REG_MULTI_SZ",), False),  # the paging-file repair
}


class JobRefused(ValueError):
    """The job is not one the helper performs: changed since it was written, or a step it does not know."""


def app_argv(*arguments: str) -> list[str]:
    """This app's own command line with `arguments`. Frozen: the app's .exe (PyInstaller runs no `site`). Else this
    Python, isolated (-I -S), with a bootstrap that puts the folder holding the `app` package and this Python's
    site-packages on sys.path (`-m app` would depend on the working folder, which ShellExecuteEx sets to the
    program's own, and an embeddable Python's ._pth ignores PYTHONPATH)."""
    exe = os.path.abspath(sys.executable)
    if getattr(sys, "frozen", False):
        return [exe, *arguments]
    root = str(Path(__file__).resolve().parent.parent.parent)
    import site

    folders = [root, *(p for p in sys.path if p and Path(p).name.lower() == "site-packages" and p != root)]
    folders += [p for p in getattr(site, "getsitepackages", lambda: [])() if p not in folders]
    return [exe, *ISOLATED, "-c", BOOTSTRAP, "|".join(dict.fromkeys(folders)), *arguments]


def helper_argv(job: str, sha256: str) -> list[str]:
    """The elevated helper's command line: the job, and the SHA-256 the job must have."""
    return app_argv("elevated-step", job, sha256)


def value_json(value: Optional[RegistryValue]) -> Optional[dict]:
    if value is None:
        return None
    if isinstance(value.data, bytes):
        raise ValueError("binary registry values are not written by the elevated helper")
    return {"type": value.type, "data": value.data}


def value_of(data: Optional[dict]) -> Optional[RegistryValue]:
    return None if data is None else RegistryValue(data["type"], data["data"])


def run_job(system: System, folder: Path, steps: list[dict], timeout: float = HELPER_TIMEOUT_S,
            cancel: Optional[CancelToken] = None,
            on_result: Optional[Callable[[list[dict]], None]] = None) -> tuple[int, list[dict]]:
    """Write the job into `folder`, run the helper elevated (one permission prompt), and return (its exit code,
    the step results). `on_result` sees the results each time the helper rewrites them (an installer waiting for
    another installation, for instance), from a watcher thread. ElevationDeclined and the other run_elevated
    errors come out as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    number = len([p for p in folder.glob("elevated-*.json") if not p.name.endswith(".result.json")]) + 1
    while (folder / f"elevated-{number}.json").exists() or (folder / f"elevated-{number}.json.result.json").exists():
        number += 1
    job = folder / f"elevated-{number}.json"
    data = json.dumps({"steps": steps}, ensure_ascii=False, indent=1).encode("utf-8")
    check_job(data)  # what the helper would refuse is refused here, before a permission prompt
    write_bytes(job, data)
    watcher = _ResultWatcher(job, on_result) if on_result is not None else None
    try:
        code = system.run_elevated(helper_argv(system.windows_path(job), _sha256(data)), timeout, cancel)
    finally:
        if watcher is not None:
            watcher.stop()
    results = read_results(job)
    _copy_out(system, job, steps, results)
    return code, results


def result_folder(job: Path, sha256: str) -> Path:
    """Where the helper writes the results of this job (and the installer's log): on Windows a folder only
    administrators can write (app/system/elevation.py results_folder_path); elsewhere, where no elevation exists,
    beside the job."""
    if os.name == "nt":
        from app.system import elevation

        return Path(elevation.results_folder_path(sha256))
    return job.parent / f"{job.name}.results"


def read_results(job: Path) -> list[dict]:
    """The newest results the helper wrote for this job: `result-<n>.json` in its result folder, each a new file
    (never one replaced while this side may have it open)."""
    try:
        folder = result_folder(job, _sha256(job.read_bytes()))
        numbered = [(int(m.group(1)), p) for p in folder.iterdir()
                    if (m := re.fullmatch(r"result-(\d+)\.json", p.name))]
        newest = max(numbered)[1] if numbered else None
        return list(json.loads(newest.read_text(encoding="utf-8"))["results"]) if newest else []
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _copy_out(system: System, job: Path, steps: list[dict], results: list[dict]) -> None:
    """What the user's side keeps of the helper's work, copied out by this (unelevated) side into its own folder:
    the results (`<job>.result.json`, for the journal and the report) and each installer's log, where the job
    asked for it."""
    with contextlib.suppress(OSError):
        write_bytes(Path(str(job) + ".result.json"), json.dumps({"results": results}).encode("utf-8"))
    folder = result_folder(job, _sha256(job.read_bytes()))
    for step in steps:
        if step.get("op") != RUN_INSTALLER:
            continue
        wanted = system.host_path(step["arguments"][4])
        log = folder / ntpath.basename(step["arguments"][4])
        if wanted is not None and log.is_file():
            with contextlib.suppress(OSError):  # no log is not a failed install: the exit code says how it went
                write_bytes(wanted, log.read_bytes())


class _ResultWatcher:
    """Reads the helper's result file while it runs, and hands on each new content."""

    def __init__(self, job: Path, on_result: Callable[[list[dict]], None]) -> None:
        self.job, self.on_result = job, on_result
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="elevated-results", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seen = None
        while not self._stop.wait(POLL_S):
            results = read_results(self.job)
            if results and results != seen:
                seen = results
                self.on_result(results)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def write_machine_value(system: System, folder: Path, key: str, name: str, value: Optional[RegistryValue],
                        record: Optional[str] = None) -> None:
    """One machine-wide value: directly where there is no elevation (an image), else through the helper, which
    keeps its own record `record` of the value it replaces."""
    if not system.elevates_machine_changes:
        system.set_machine_value(key, name, value)
        return
    step = {"op": SET_VALUE, "key": key, "name": name, "value": value_json(value),
            **({"record": record} if record else {})}
    _run_step(system, folder, step, f"{key}\\{name}")


def restore_machine_value(system: System, folder: Path, record: str, shown: str) -> None:
    """Undo of write_machine_value through the helper: it writes back what it recorded itself, never a value
    the user's journal holds."""
    _run_step(system, folder, {"op": RESTORE_VALUE, "record": record}, shown)


def _run_step(system: System, folder: Path, step: dict, shown: str) -> None:
    code, results = run_job(system, folder, [step])
    if not results or not results[-1].get("ok"):
        detail = results[-1].get("detail") if results else f"the helper ended with code {code} and no result"
        raise OSError(f"could not change {shown}: {detail}")


# -- what the helper accepts -----------------------------------------------------------------------------------
def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def check_job(data: bytes, expected_sha256: Optional[str] = None) -> list[dict]:
    """The job's steps, when the helper performs them: its bytes have `expected_sha256` (when given) and every
    step is one it knows, with arguments it accepts. Else JobRefused, saying why."""
    if expected_sha256 is not None:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", expected_sha256 or ""):
            raise JobRefused("no SHA-256 of the job was given on the command line")
        if not hmac.compare_digest(_sha256(data), expected_sha256.lower()):
            raise JobRefused("the job file changed after it was written (its SHA-256 is not the one it was "
                             "started with)")
    try:
        steps = json.loads(data.decode("utf-8"))["steps"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise JobRefused(f"not a job: {exc}") from None
    if not isinstance(steps, list) or not 0 < len(steps) <= MAX_STEPS:
        raise JobRefused(f"a job has 1 to {MAX_STEPS} steps")
    for step in steps:
        if not isinstance(step, dict):
            raise JobRefused(f"not a step: {step!r:.100}")
        check = {RESTORE_POINT: _check_restore_point, RUN_INSTALLER: _check_installer,
                 SET_VALUE: _check_set_value, RESTORE_VALUE: _check_restore_value}.get(step.get("op"))
        if check is None:
            raise JobRefused(f"unknown step {step.get('op')!r:.60}")
        check(step)
    return steps


def _check_restore_point(step: dict) -> None:
    if not isinstance(step.get("description", ""), str) or len(step.get("description", "")) > 200:
        raise JobRefused("a restore point's description is a text of at most 200 characters")
    if step.get("kind", 0) not in RESTORE_POINT_KINDS:
        raise JobRefused(f"not a restore point kind: {step.get('kind')!r:.30}")


def _check_restore_value(step: dict) -> None:
    if not isinstance(step.get("record"), str) or not RECORD_ID.match(step["record"]):
        raise JobRefused("restore-value names one of the helper's own records")


def _check_set_value(step: dict, record: bool = True) -> None:
    _check_value(step)
    if record and not (isinstance(step.get("record"), str) and RECORD_ID.match(step["record"])):
        raise JobRefused("a set-value names the record (32 hex digits) the helper keeps of the value it replaces")


def _check_value(step: dict) -> None:
    key, name, value = step.get("key"), step.get("name"), step.get("value")
    if not isinstance(key, str) or not isinstance(name, str):
        raise JobRefused("set-value needs a key and a value name")
    spelled = re.sub(r"^HKEY_LOCAL_MACHINE\\", "HKLM\\\\", key.strip(), flags=re.IGNORECASE).rstrip("\\").lower()
    allowed = ALLOWED_VALUES.get((spelled, name.lower()))
    if allowed is None:
        raise JobRefused(f"{key}\\{name} is not a value this app changes")
    types, deletable = allowed
    if value is None:
        if not deletable:
            raise JobRefused(f"{key}\\{name} is never deleted")
        return
    kind = value.get("type") if isinstance(value, dict) else None
    data = value.get("data") if isinstance(value, dict) else None
    if kind not in types:
        raise JobRefused(f"{key}\\{name} is written as {' or '.join(types)}, not {kind!r:.30}")
    if kind == "REG_DWORD" and data not in (0, 1):
        raise JobRefused(f"{key}\\{name} is 0 or 1")
    if kind in ("REG_SZ", "REG_EXPAND_SZ") and (not isinstance(data, str) or "\0" in data):
        raise JobRefused(f"{key}\\{name} is a text")
    if kind == "REG_MULTI_SZ" and (not isinstance(data, list) or not all(isinstance(d, str) for d in data)):
        raise JobRefused(f"{key}\\{name} is a list of texts")


def _check_installer(step: dict) -> None:
    installer, digest = step.get("installer"), step.get("sha256")
    if (not isinstance(installer, str) or not ntpath.isabs(installer) or installer.startswith("\\\\")
            or not installer.lower().endswith(".exe") or "\0" in installer):
        raise JobRefused(f"an installer is given by its absolute path on this computer: {installer!r:.200}")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", digest):
        raise JobRefused("the installer's SHA-256 from its check is missing")
    arguments = step.get("arguments")
    if not (isinstance(arguments, list) and len(arguments) == 5 and all(isinstance(a, str) for a in arguments)
            and arguments[0].lower() in INSTALLER_ACTIONS and arguments[1].lower() in INSTALLER_UI
            and arguments[2].lower() == "/norestart" and arguments[3].lower() == "/log"
            and ntpath.isabs(arguments[4]) and "\0" not in arguments[4]):
        raise JobRefused(f"not vc_redist's switches (/install /quiet /norestart /log FILE): {arguments!r:.300}")
    retry = step.get("retry", {"tries": 1, "wait_s": 0})
    if not (isinstance(retry, dict) and isinstance(retry.get("tries"), int) and isinstance(retry.get("wait_s"),
                                                                                          (int, float))
            and 1 <= retry["tries"] <= MAX_TRIES and 0 <= retry["wait_s"] <= MAX_WAIT_S):
        raise JobRefused(f"a retry policy is 1 to {MAX_TRIES} tries, 0 to {MAX_WAIT_S} s apart: {retry!r:.100}")


# -- the elevated side ---------------------------------------------------------------------------------------
def _own_result_folder(job: Path, sha256: str, given: Optional[Path]) -> Path:
    """The helper's result folder, made by the helper: admin-only with user read on Windows (created new; one that
    is there is used only when it is a plain folder); elsewhere (tests, no elevation) beside the job."""
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        return given
    if os.name == "nt":
        from app.system import elevation

        return Path(elevation.admin_results_folder(sha256))
    folder = result_folder(job, sha256)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def perform(system: System, job: Path, expected_sha256: Optional[str], records: Optional[Path] = None,
            results_at: Optional[Path] = None) -> int:
    """Check the job (its hash, its steps), then run its steps in order, writing the results after each one;
    returns the helper's exit code. A refused job runs nothing: its one result says why. `records`: the
    administrators-only folder of the helper's own before-values (on Windows: elevation.admin_records_folder)."""
    results: list[dict] = []
    try:
        data = job.read_bytes()  # read once: what was hashed is what runs
    except OSError as exc:
        data, failed = b"", exc
    else:
        failed = None
    folder = _own_result_folder(job, _sha256(data), results_at)
    saved = [0]

    def save() -> None:
        """A new numbered file each time, made under a temporary name and renamed to a name nobody has: the
        watcher may hold the last one open (Windows would refuse to replace it), and nothing is followed."""
        saved[0] += 1
        temporary = folder / f".result-{saved[0]}.tmp"
        with open(temporary, "x", encoding="utf-8") as out:
            out.write(json.dumps({"results": results}, ensure_ascii=False))
            out.flush()
            os.fsync(out.fileno())
        os.rename(temporary, folder / f"result-{saved[0]}.json")

    try:
        if failed is not None:
            raise failed
        steps = check_job(data, expected_sha256 or "")
    except (OSError, JobRefused) as exc:
        results.append({"op": "job", "ok": False, "code": None, "detail": f"refused: {exc}"})
        save()
        return 1
    exit_code: Optional[int] = None
    for step in steps:
        op = step["op"]
        result = {"op": op, "ok": False, "code": None, "detail": ""}
        results.append(result)
        try:
            if op == RESTORE_POINT:
                result["ok"], result["detail"] = system.create_restore_point(
                    str(step.get("description") or "Torch DLL Doctor"), int(step.get("kind", 0)))
            elif op == RUN_INSTALLER:
                exit_code = _run_installer(system, step, result, save, folder)
            elif op == SET_VALUE:
                _set_value(system, step, records)
                result["ok"] = True
            else:
                result["detail"] = _restore_value(system, step, records)
                result["ok"] = not result["detail"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            result.update(ok=False, detail=f"{exc.__class__.__name__}: {exc}")
        save()
        if op != RESTORE_POINT and not result["ok"]:
            break
    if exit_code is not None:
        return exit_code
    return 0 if all(r["ok"] or r["op"] == RESTORE_POINT for r in results) else 1


def _records(records: Optional[Path]) -> Path:
    if records is not None:
        return records
    if os.name != "nt":
        raise OSError("the helper keeps its records only on Windows")
    from app.system import elevation

    return Path(elevation.admin_records_folder())


def _set_value(system: System, step: dict, records: Optional[Path]) -> None:
    """Write the value; first keep what is there now in the helper's own folder, under the step's record
    (a new file: a record is never replaced, so a later job cannot change what an undo will write)."""
    folder = _records(records)  # check_job made sure the step names its record
    folder.mkdir(parents=True, exist_ok=True)
    before = value_json(system.registry_value(step["key"], step["name"]))
    data = json.dumps({"key": step["key"], "name": step["name"], "before": before, "after": step.get("value")})
    with open(folder / f"{step['record']}.json", "x", encoding="utf-8") as out:  # "x": never over one there
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    system.set_machine_value(step["key"], step["name"], value_of(step.get("value")))


def _restore_value(system: System, step: dict, records: Optional[Path]) -> str:
    """Undo of a set-value, to the value the helper recorded when it wrote it; "" when done, else why not."""
    try:
        record = json.loads((_records(records) / f"{step['record']}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"refused: the helper has no record of that change ({exc.__class__.__name__})"
    if record.get("before") is not None:  # even its own record holds only values this app writes
        _check_set_value({"key": record.get("key"), "name": record.get("name"), "value": record["before"]},
                         record=False)
    now = value_json(system.registry_value(record["key"], record["name"]))
    if now == record["before"]:
        return ""
    if now != record["after"]:
        return f"refused: {record['key']}\\{record['name']} was changed after the helper wrote it"
    system.set_machine_value(record["key"], record["name"], value_of(record["before"]))
    return ""


def _run_installer(system: System, step: dict, result: dict, save: Callable[[], None],
                   results: Path) -> Optional[int]:
    """Copy the installer into an admin-only folder, check it there, run it from there (waiting and trying again
    while another installation runs). Fills `result`; returns the last exit code, or None when it never ran."""
    from app.repair.installer_check import installer_refusal
    from app.system import elevation

    if not system.can_run_programs or os.name != "nt":
        raise OSError("installers run only on a live Windows")
    source = system.host_path(step["installer"])
    if source is None or not source.is_file():
        raise OSError(f"the installer is not there: {step['installer']}")
    elevation.contain_children()
    folder = elevation.admin_only_folder()
    _remove_leftovers(folder)
    try:
        installer = ntpath.join(folder, ntpath.basename(step["installer"]))
        shutil.copyfile(source, installer)
        digest = sha256_of(Path(installer))
        if not hmac.compare_digest(digest, step["sha256"].lower()):
            result["detail"] = (f"refused: the installer changed after it was checked (SHA-256 {digest}, "
                                f"checked: {step['sha256'].lower()})")
            return None
        refusal = installer_refusal(system, Path(installer))
        if refusal is not None:
            result["detail"] = f"refused: the installer {refusal}"
            return None
        action, ui, norestart, log_switch, wanted_log = step["arguments"]
        log = ntpath.join(folder, ntpath.basename(wanted_log) or "installer.log")
        retry = step.get("retry", {"tries": 1, "wait_s": 0})
        result.update(installer=installer, tries=[])
        for attempt in range(1, retry["tries"] + 1):
            started = time.time()
            completed = subprocess.run([installer, action, ui, norestart, log_switch, log], cwd=folder,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            code = completed.returncode & 0xFFFFFFFF
            result["tries"].append({"code": code, "started": started, "ended": time.time()})
            _keep_log(log, results / (ntpath.basename(wanted_log) or "installer.log"))
            waiting = code == BUSY and attempt < retry["tries"]
            result.update(ok=True, code=code, state="waiting" if waiting else "done",
                          wait_s=retry["wait_s"] if waiting else None)
            save()
            if not waiting:
                return code
            time.sleep(retry["wait_s"])
        return result["code"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _remove_leftovers(folder: str) -> None:
    """Folders of earlier helpers that were ended before they could clean up (a cancel ends the helper with
    TerminateProcess): only ours, by their names, and only a day old, so a helper running now keeps its own."""
    parent, now = ntpath.dirname(folder), time.time()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if (re.fullmatch(r"(TorchDllDoctor-)?[0-9a-f]{16}", entry.name) and entry.path != folder
                and entry.is_dir(follow_symlinks=False) and now - entry.stat().st_mtime > LEFTOVER_AGE_S):
            shutil.rmtree(entry.path, ignore_errors=True)


def _keep_log(log: str, kept: Path) -> None:
    """The installer's log, into the helper's own result folder (never into the user's folders): the unelevated
    side copies it out (_copy_out)."""
    with contextlib.suppress(OSError):  # no log is not a failed install: the exit code says how it went
        write_bytes(kept, Path(log).read_bytes())
