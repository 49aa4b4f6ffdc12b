"""`install-vc-runtime`: download Microsoft's Visual C++ Redistributable (resources/catalog.json), check it is signed
by Microsoft and new enough, and run it as the one elevated step: `vc_redist.<arch>.exe /install /quiet /norestart
/log <file>`. Afterwards the registry (both views) and the runtime DLLs are read again, then diagnosis runs again.

A system-wide runtime is shared by every program, so undo does not remove it (the plan says so).

Another installation running (1618) is waited for inside the one elevated step (app/repair/elevated.py): one
permission prompt, however many tries. A restart needed (3010, 1641) with the old runtime DLLs still in System32 is
no failure: Windows replaces DLLs in use at the reboot, so the transaction gets a `restart_needed` note instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.engine.versions import version_tuple
from app.i18n import words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import CORE_VC_DLLS, MachineFacts, read_machine_facts
from app.probes.finding import Finding
from app.repair.elevated import run_job
from app.repair.installer_check import installer_refusal
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.resources import download_catalog
from app.system.base import ElevationDeclined, System
from app.system.files import sha256_of

TIMEOUT_S = 1800.0
BUSY_WAIT_S = 60  # 1618: another installation is running; the elevated helper waits this long between tries
BUSY_TRIES = 5
# exit code -> outcome (KNOWLEDGE.md)
OK_CODES = {0: "installed", 1638: "newer-present", 5100: "newer-present", 3010: "restart-needed",
            1641: "restart-started"}
RESTART_OUTCOMES = ("restart-needed", "restart-started")
BUSY, USER_CANCELLED = 1618, 1602
APPLICATION_INSTALL = 0  # the restore point's kind (SRSetRestorePointW, app/system/restore_point.py)


class InstallerFailed(Exception):
    """The installer did not install: `code` names the words (repair.vc.<code>), `values` fill them."""

    def __init__(self, code: str, /, **values: object) -> None:  # `/`: values may have their own `code`
        super().__init__(code)
        self.code, self.values = code, values

    def text(self, lang: str) -> str:
        return words(f"repair.vc.{self.code}", lang, **self.values)


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
    sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        catalog = download_catalog()["vc_redist"]
        if not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live.installer", action=self.id)])
        needed = any(self.id in f.repairs for f in findings)
        archs = [a for a in architectures(machine, env) if needed or not runtime_ok(machine, a, catalog["min_version"])]
        if not archs:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        changes = [Change("install-runtime", f"Microsoft Visual C++ Redistributable ({arch})", catalog[arch]["url"])
                   for arch in archs]
        return Plan(self.id, None, system.windows_path(env.python) if env else "", changes, needs_admin=True,
                    download_bytes=sum(catalog[a]["approx_bytes"] for a in archs),
                    download={"archs": archs, "restore_point": True},
                    notes=[said("repair.note.vc.admin"), said("repair.note.vc.restore_point")])

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        restore = [bool(plan.download.get("restore_point"))]  # once, before the first installer
        outcomes: list[str] = []
        for arch in plan.download["archs"]:
            installer, verified = fetch_installer(system, arch, transaction.folder / "downloads", on_progress, token)

            def runner(argv: list[str], verified: str = verified) -> tuple[int, str]:
                code, outcome = run_installer(system, argv, on_output, token, transaction.folder / "elevated",
                                              verified, restore[0], transaction.note)
                restore[0] = False
                outcomes.append(outcome)
                return code, outcome

            transaction.run_installer(system, arch, installer, runner)
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


def fetch_installer(system: System, arch: str, folder: Path, progress,
                    token: Optional[CancelToken]) -> tuple[Path, str]:
    """vc_redist.<arch>.exe from Microsoft's permanent link, refused unless signed by Microsoft and new enough;
    (its path, the SHA-256 of the file that passed the checks: the elevated helper runs only a file with it)."""
    from app.repair.download import DownloadError, download  # requests: only when something is downloaded

    catalog = download_catalog()["vc_redist"]
    verified: list[str] = []

    def verify(path: Path) -> None:
        refusal = installer_refusal(system, path)
        if refusal is not None:
            raise DownloadError("verification-failed", host="aka.ms", detail=f"the installer {refusal}")
        verified.append(sha256_of(path))

    target = folder / f"vc_redist.{arch}.exe"
    download(catalog[arch]["url"], target, max_bytes=catalog["max_bytes"], progress=progress, token=token,
             verify_file=verify)
    return target, verified[-1]


def without_restore_point(plan: Plan) -> Plan:
    """The user opted out (`--no-restore-point`): no restore point, and the plan says so."""
    plan.download["restore_point"] = False
    plan.notes = [said("repair.note.vc.no_undo") if n == said("repair.note.vc.restore_point") else n
                  for n in plan.notes]
    return plan


def run_installer(system: System, argv: list[str], on_output: Callable[[str], None],
                  token: Optional[CancelToken], folder: Path, sha256: str, restore_point: bool = False,
                  note: Callable[[dict], None] = lambda record: None) -> tuple[int, str]:
    """Run the installer through the elevated helper, in ONE elevated step (one permission prompt): first a
    restore point, when asked; then the installer, which the helper copies into an admin-only folder and runs
    only when it still has `sha256` and Microsoft's signature there. While another installation runs (1618) the
    helper waits BUSY_WAIT_S and tries again, up to BUSY_TRIES times, and says so in its result file, which is
    watched here to tell the user. (exit code, outcome); `note` keeps the restore point's and the tries' facts."""
    steps = [{"op": "run-installer", "installer": argv[0], "arguments": argv[1:], "sha256": sha256,
              "retry": {"tries": BUSY_TRIES, "wait_s": BUSY_WAIT_S}}]
    if restore_point:
        steps.insert(0, {"op": "restore-point", "kind": APPLICATION_INSTALL,
                         "description": "Torch DLL Doctor: Microsoft Visual C++ Redistributable"})
    told: set[int] = set()

    def on_result(results: list[dict]) -> None:
        ran = next((r for r in results if r.get("op") == "run-installer"), None)
        if ran is not None and ran.get("state") == "waiting" and len(ran.get("tries") or []) not in told:
            told.add(len(ran["tries"]))
            on_output(said("repair.vc.busy_wait", seconds=ran.get("wait_s")))  # words in both languages

    try:
        helper_code, results = run_job(system, folder, steps, TIMEOUT_S + BUSY_TRIES * BUSY_WAIT_S, token,
                                       on_result)
    except ElevationDeclined:
        raise InstallerFailed("declined") from None
    for result in results:
        if result["op"] == "restore-point":
            note({"restore_point": {"ok": result["ok"], "detail": result["detail"]}})
    refused = next((r for r in results if r["op"] == "job"), None)
    if refused is not None:
        raise InstallerFailed("refused", detail=refused["detail"])
    ran = next((r for r in results if r["op"] == "run-installer"), None)
    if ran is not None and ran.get("tries"):
        tries = ran["tries"]
        note({"installer_run": {"from": ran.get("installer"), "tries": [t["code"] for t in tries],
                                "waited_s": round(tries[-1]["started"] - tries[0]["ended"], 3) if len(tries) > 1
                                else 0}})
    if ran is not None and not ran["ok"]:
        if str(ran["detail"]).startswith("refused:"):
            raise InstallerFailed("refused", detail=ran["detail"])
        raise InstallerFailed("failed", code=helper_code, log=ran["detail"])
    code = ran["code"] if ran is not None else helper_code  # no result file: the helper's own exit code
    if code in OK_CODES:
        return code, OK_CODES[code]
    if code == USER_CANCELLED:
        raise InstallerFailed("cancelled")
    if code == BUSY:
        raise InstallerFailed("busy")
    raise InstallerFailed("failed", code=code, log=_log_tail(Path(argv[-1])))


def _log_tail(log: Path, lines: int = 12) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
