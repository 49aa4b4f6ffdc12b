"""`install-vc-runtime`: download Microsoft's Visual C++ Redistributable (resources/catalog.json), check it is signed
by Microsoft and new enough, and start that installer itself with administrator rights:
`vc_redist.<arch>.exe /install /quiet /norestart`. Nothing of ours runs elevated (app/system/elevation.py): the file
is held (System.pinned) from its last check until Windows has started it, so what was checked is what runs, and
the permission prompt names Microsoft Corporation. Afterwards the registry (both views) and the runtime DLLs are
read again, then diagnosis runs again.

A system-wide runtime is shared by every program, so undo does not remove it (the plan says so). Windows
Installer, which does the installer's work, makes a System Restore point itself when System Restore is on
(docs/facts.md, "What runs with administrator rights").

Another installation running: Windows Installer's busy flag is waited for before the prompt (so the installer
rarely answers 1618); when it still answers 1618, the app waits BUSY_WAIT_S and asks again, up to BUSY_TRIES
times, saying so. A restart needed (3010, 1641) with the old runtime DLLs still in System32 is no failure: Windows
replaces DLLs in use at the reboot, so the transaction gets a `restart_needed` note instead.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.engine.versions import version_tuple
from app.i18n import words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import CORE_VC_DLLS, MachineFacts, read_machine_facts
from app.probes.finding import Finding
from app.repair.changes.installers import RunInstaller
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.resources import download_catalog
from app.sources.vc_redist import (
    copy_installer,
    downloaded_installers,
    fetch_installer,
    installer_refusal,
    local_installers,
)
from app.system.base import ElevationDeclined, StillRunning, StoppedAfterEnd, System
from app.system.files import write_bytes

TIMEOUT_S = 1800.0
BUSY_WAIT_S = 60  # 1618: another installation is running; waited this long before asking again
BUSY_TRIES = 3  # each try is a permission prompt of its own
BUSY_POLL_S = 2.0  # how often Windows Installer's busy flag is looked at while it is set
# exit code -> outcome (docs/knowledge.md)
OK_CODES = {0: "installed", 1638: "newer-present", 5100: "newer-present", 3010: "restart-needed",
            1641: "restart-started"}
RESTART_OUTCOMES = ("restart-needed", "restart-started")
BUSY, USER_CANCELLED = 1618, 1602


class InstallerFailed(Exception):
    """The installer did not install: `code` names the words (repair.vc.<code>), `values` fill them."""

    def __init__(self, code: str, /, **values: object) -> None:  # `/`: values may have their own `code`
        super().__init__(code)
        self.code, self.values = code, values

    def text(self, lang: str) -> str:
        return words(f"repair.vc.{self.code}", lang, **self.values)

    @property
    def installer_running(self) -> bool:
        """The app stopped waiting while Microsoft's installer still ran: it may yet install, so nothing may say
        "put back as it was", and no second installer may be started while it runs."""
        return self.code == "still-running"


PYTHON_RUNTIMES = {0x8664: "x64", 0xAA64: "arm64", 0x14C: "x86"}  # python.exe's machine -> the runtime it loads


def architectures(machine: MachineFacts, env: Optional[PythonEnvironment]) -> list[str]:
    """The runtime the environment's python.exe loads: x64 for an x64 Python, also one emulated on an ARM64 computer
    (Microsoft's x64 package carries the ARM64 files too, so it serves both there); arm64 for a native ARM64
    Python; x86 too where a 32-bit Python needs it. Without a known Python: the machine's own."""
    arch = (machine.architecture or "AMD64").upper()
    native = "arm64" if arch == "ARM64" else "x64" if arch in ("AMD64", "X64") else "x86"
    python = PYTHON_RUNTIMES.get(env.python_cpu_type) if env is not None and env.python_cpu_type else None
    if python is None:
        wanted = [native]
    elif python == "x86" and native != "x86":
        wanted = [native, "x86"]
    else:
        wanted = [python]
    return wanted


def runtime_ok(machine: MachineFacts, arch: str, minimum: str) -> bool:
    entry = machine.vc_runtime(arch)
    return entry is not None and entry.version is not None and version_tuple(entry.version) >= version_tuple(minimum)


class InstallVCRuntime:
    id = "install-vc-runtime"
    sources = ("local", "microsoft")  # or a path: a vc_redist file, or a folder of them

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        catalog = download_catalog()["vc_redist"]
        if not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live.installer", action=self.id)])
        needed = any(self.id in f.repairs for f in findings)
        archs = [a for a in architectures(machine, env) if needed or not runtime_ok(machine, a, catalog["min_version"])]
        if not archs:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        notes: list[dict[str, str]] = []
        if source is None or source == "local":  # a checked copy already in Downloads, else Microsoft's link
            files = self._downloaded(system, archs, notes, required=source == "local")
        elif source == "microsoft":
            files = {}
        else:
            files = self._given_installers(system, source, archs)
        changes = [Change("install-runtime-file", f"Microsoft Visual C++ Redistributable ({arch})", files[arch])
                   if arch in files else
                   Change("install-runtime", f"Microsoft Visual C++ Redistributable ({arch})", catalog[arch]["url"])
                   for arch in archs]
        return Plan(self.id, source, system.windows_path(env.python) if env else "", changes, needs_admin=True,
                    download_bytes=sum(catalog[a]["approx_bytes"] for a in archs if a not in files),
                    downloads=any(a not in files for a in archs),
                    download={"archs": archs, "files": files},
                    notes=[*notes, said("repair.note.vc.admin"), said("repair.note.vc.restore_point")])

    @staticmethod
    def _downloaded(system: System, archs: list[str], notes: list[dict[str, str]], required: bool) -> dict[str, str]:
        """The runtimes needed that a vc_redist in the user's Downloads installs and that passes the checks (signed
        by Microsoft, new enough): those are not downloaded again. One that fails is named in a note and passed
        over; with `required` (`--source local`) a runtime without a good file refuses the plan."""
        found, files = downloaded_installers(system), {}
        for arch in archs:
            path = found.get(arch)
            refusal = installer_refusal(system, path) if path is not None else None
            if path is not None and refusal is None:
                files[arch] = system.windows_path(path)
            elif path is not None:
                notes.append(said("repair.note.vc.not_used", file=system.windows_path(path),
                                  detail=f"The file {refusal}."))
            if required and arch not in files:
                raise PlanRefused([said("repair.refused.vc.no_local", arch=arch,
                                        url=download_catalog()["vc_redist"][arch]["url"])])
        return files

    @staticmethod
    def _given_installers(system: System, source: str, archs: list[str]) -> dict[str, str]:
        """`--source`: a vc_redist file the user downloaded from Microsoft, or a folder of them; each runtime needed
        is taken from there (as a Windows path), checked now as a download is; PlanRefused, in words, otherwise."""
        given = system.host_path(source)
        if given is None or not given.exists():
            raise PlanRefused([said("repair.refused.vc.source_missing", source=source)])
        found = local_installers(given)
        for arch in archs:
            if arch not in found:
                raise PlanRefused([said("repair.refused.vc.source_lacks", source=source, arch=arch,
                                        url=download_catalog()["vc_redist"][arch]["url"])])
            refusal = installer_refusal(system, found[arch])
            if refusal is not None:
                raise PlanRefused([said("repair.refused.vc.source_refused", file=system.windows_path(found[arch]),
                                        detail=f"The file {refusal}.")])
        return {arch: system.windows_path(found[arch]) for arch in archs}

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        outcomes: list[str] = []
        files = plan.download.get("files") or {}
        for arch in plan.download["archs"]:
            if arch in files:  # the user's own copy of Microsoft's file: copied, and the copy checked again
                installer, refusal, verified = copy_installer(system, arch, system.host_path(files[arch]),
                                                              transaction.folder / "downloads")
                if refusal is not None:
                    raise InstallerFailed("refused", detail=f"the installer {refusal}")
                transaction.note({"installer_copied": {"arch": arch, "from": files[arch], "sha256": verified}})
            else:
                installer, verified = fetch_installer(system, arch, transaction.folder / "downloads", on_progress,
                                                      token)

            def runner(argv: list[str], verified: str = verified, installer: Path = installer) -> tuple[int, str]:
                code, outcome = run_installer(system, argv, on_output, token, verified, transaction.note,
                                              installer.with_suffix(".log"))
                outcomes.append(outcome)
                return code, outcome

            transaction.step(system, RunInstaller(arch, installer, runner))
        after = read_machine_facts(system)
        minimum = download_catalog()["vc_redist"]["min_version"]
        missing = [a for a in plan.download["archs"] if not runtime_ok(after, a, minimum)]
        if missing:
            raise InstallerFailed("not-registered", archs=", ".join(missing))
        folders = {"x64": "System32", "arm64": "System32", "x86": "SysWOW64"}
        wanted = {folders[a] for a in plan.download["archs"]}
        old = [d for d in after.runtime_dlls if d.folder in wanted and d.name.lower() in CORE_VC_DLLS
               and d.version is not None and version_tuple(d.version) < version_tuple(minimum)]
        if old and any(outcome in RESTART_OUTCOMES for outcome in outcomes):
            # the installer said a restart is needed: the DLLs were in use, and Windows replaces them at the reboot
            transaction.note({"restart_needed": True, "dll": system.windows_path(old[0].path),
                              "version": old[0].version})
        elif old:  # registered, and no restart pending, but the files Windows loads are still the old ones
            raise InstallerFailed("old-files", dll=system.windows_path(old[0].path), version=old[0].version)


def run_installer(system: System, argv: list[str], on_output: Callable[[str], None],
                  token: Optional[CancelToken], sha256: str, note: Callable[[dict], None] = lambda record: None,
                  kept_log: Optional[Path] = None) -> tuple[int, str]:
    """Start Microsoft's installer `argv` elevated: held from its check until it runs (System.pinned), checked
    again from the bytes held (the SHA-256 `sha256` of the download's check, Microsoft's signature), after waiting
    while Windows Installer is busy. A 1618 all the same: wait BUSY_WAIT_S and ask again, up to BUSY_TRIES times.
    (exit code, outcome); `note` keeps the tries' facts; the installer's own log (Burn writes it into %TEMP%) is
    copied to `kept_log` for the report."""
    tries: list[int] = []
    started = time.time()
    for attempt in range(1, BUSY_TRIES + 1):
        _wait_while_busy(system, on_output, token)
        try:
            with system.pinned(argv[0]) as (final, data):
                digest = hashlib.sha256(data).hexdigest()
                if not hmac.compare_digest(digest, sha256.lower()):
                    raise InstallerFailed("refused", detail=f"SHA-256 {digest}, checked: {sha256.lower()}")
                held = system.host_path(final)
                refusal = installer_refusal(system, held) if held is not None else "is not on this computer"
                if refusal is not None:
                    raise InstallerFailed("refused", detail=f"the installer {refusal}")
                on_output(said("repair.vc.running"))
                code = system.run_elevated([final, *argv[1:]], TIMEOUT_S, token,
                                           on_stop_asked=lambda: on_output(said("repair.vc.cannot_stop")))
        except StoppedAfterEnd as stopped:  # Stop while it ran: it was let finish, and what it said is kept
            note({"installer_run": {"from": argv[0], "tries": [*tries, stopped.exit_code], "stopped": True}})
            _installer_log(system, argv[0], started, kept_log)
            if OK_CODES.get(stopped.exit_code) in RESTART_OUTCOMES:
                note({"restart_needed": True, "reason": "installer", "code": stopped.exit_code})
            raise
        except ElevationDeclined:
            raise InstallerFailed("declined") from None
        except StillRunning:
            raise InstallerFailed("still-running", minutes=round(TIMEOUT_S / 60)) from None
        except OSError as exc:  # not started (held by another program, reached through a link, no permission)
            raise InstallerFailed("failed", code="-", log=f"{exc.__class__.__name__}: {exc}") from None
        tries.append(code)
        if code != BUSY or attempt == BUSY_TRIES:
            break
        on_output(said("repair.vc.busy_wait", seconds=BUSY_WAIT_S))  # words in both languages
        if token is not None and token.wait(BUSY_WAIT_S):
            token.check()
        elif token is None:
            time.sleep(BUSY_WAIT_S)
    note({"installer_run": {"from": argv[0], "tries": tries}})
    log = _installer_log(system, argv[0], started, kept_log)
    if code in OK_CODES:
        return code, OK_CODES[code]
    if code == USER_CANCELLED:
        raise InstallerFailed("cancelled")
    if code == BUSY:
        raise InstallerFailed("busy")
    raise InstallerFailed("failed", code=code, log=_log_tail(log) if log is not None else "")


def _wait_while_busy(system: System, on_output: Callable[[str], None], token: Optional[CancelToken]) -> None:
    """Before a permission prompt: while Windows Installer is busy with another installation, wait (said once),
    at most BUSY_WAIT_S * BUSY_TRIES; Stop is honoured while waiting."""
    deadline, told = time.monotonic() + BUSY_WAIT_S * BUSY_TRIES, False
    while system.installer_busy() and time.monotonic() < deadline:
        if not told:
            told = True
            on_output(said("repair.vc.busy_before"))
        if token is not None:
            if token.wait(BUSY_POLL_S):
                token.check()
        else:
            time.sleep(BUSY_POLL_S)


BURN_LOG_PREFIX = {"x64": "dd_vcredist_amd64_", "x86": "dd_vcredist_x86_", "arm64": "dd_vcredist_arm64_"}


def _installer_log(system: System, installer: str, started: float, kept: Optional[Path]) -> Optional[Path]:
    """The log Microsoft's installer wrote itself (Burn: %TEMP%\\dd_vcredist_<arch>_<time>.log, the newest one begun
    after `started`; not its packages' `_000_…` logs), copied to `kept`; None when there is none (no log is not a
    failed install: the exit code says how it went)."""
    name = installer.replace("/", "\\").rsplit("\\", 1)[-1].lower()
    arch = "x86" if "x86" in name else "arm64" if "arm64" in name else "x64"
    folder = system.temp_folder()
    try:
        logs = [p for p in folder.iterdir() if p.name.lower().startswith(BURN_LOG_PREFIX[arch])
                and p.suffix.lower() == ".log" and "_0" not in p.stem[len(BURN_LOG_PREFIX[arch]):]
                and p.stat().st_mtime >= started - 2]
    except OSError:
        return None
    if not logs:
        return None
    newest = max(logs, key=lambda p: p.stat().st_mtime)
    if kept is None:
        return newest
    try:
        write_bytes(kept, newest.read_bytes())
        return kept
    except OSError:
        return newest


def _log_tail(log: Path, lines: int = 12) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
