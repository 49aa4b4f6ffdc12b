"""The journal: every change a repair makes is written down, with a backup, before it is made, so that it can
always be undone, byte for byte, even after a crash, a kill or a power cut.

One transaction per repair run, in its own folder under the per-user data folder:

    transactions/<id>/journal.jsonl   one JSON record per line, each flushed and fsynced before going on
    transactions/<id>/backups/<n>     a copy of every file a step replaces or removes

A step is recorded as an `intent` (what it will change, the backup and its SHA-256, the content it will
leave) before the change, and as `applied` after it. Rollback walks the steps backwards. For each target it
compares what is there now with what was there before and what the step left:
- as before: nothing to undo (the crash came before the change);
- as the step left it: restore the backup (checked against its hash) or remove the file the step created;
- anything else: somebody changed it after the repair. Rollback stops there and keeps both: the user's file
  stays where it is, the former content stays in the backup, and the journal says where each one is.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from app.cancel import CancelToken
from app.inventory.packages import installed_versions
from app.system.base import RegistryValue, System
from app.system.files import copy_file, sha256_of

RUNNING, DONE, ROLLED_BACK, ROLLBACK_STOPPED = "running", "done", "rolled-back", "rollback-stopped"
FILE, VARIABLE, PACKAGES, INSTALLER = "file", "variable", "packages", "installer"
MACHINE_VALUE = "machine-value"  # a machine-wide (HKLM) value, written and restored by the elevated helper
PIP_TIMEOUT_S = 3600.0
APP_FOLDER = "TorchDllDoctor"
CRASH_AT = "TDD_CRASH_AT"  # tests: the journal point at which to kill this process (SIGKILL), e.g. "intent:1"


def data_folder() -> Path:
    """Where transactions are kept: TDD_DATA_DIR, else the per-user data folder, where platformdirs'
    `user_data_dir("TorchDllDoctor", appauthor=False)` puts it (a test checks they agree). Written with the
    standard library because `diagnose`, which looks for interrupted repairs, runs in the user's own Python."""
    override = os.environ.get("TDD_DATA_DIR")
    if override:
        return Path(override)
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / APP_FOLDER
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_FOLDER
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    return Path(xdg if xdg else Path.home() / ".local" / "share") / APP_FOLDER


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def crash_point(label: str) -> None:
    """Fault injection for the crash tests: die here, as a power cut would, when CRASH_AT names this point."""
    if os.environ.get(CRASH_AT) == label:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


class RollbackStopped(Exception):
    """Rollback could not go on without overwriting something: the journal says what and where."""

    def __init__(self, code: str, **values: Any) -> None:
        super().__init__(code)
        self.code, self.values = code, values


@dataclass
class Step:
    number: int
    intent: dict
    applied: bool = False
    restored: bool = False


class Transaction:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.id = folder.name
        self.records: list[dict] = []
        path = folder / "journal.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    self.records.append(json.loads(line))
                except ValueError:
                    break  # a line cut short by a crash: nothing after it was written either

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def begin(self) -> dict:
        return self.records[0] if self.records else {}

    @property
    def machine(self) -> dict:
        return self.begin.get("machine") or {}

    @property
    def state(self) -> str:
        kinds = [r["kind"] for r in self.records]
        if "rolled-back" in kinds:
            return ROLLED_BACK
        if kinds and kinds[-1] == "rollback-stopped":
            return ROLLBACK_STOPPED
        if "finish" in kinds and "rollback-begin" not in kinds:
            return DONE
        return RUNNING  # begun and never finished: a crash, a kill, a power cut, or a rollback cut short

    @property
    def finished(self) -> bool:
        return self.state in (DONE, ROLLED_BACK)

    def steps(self) -> list[Step]:
        steps: dict[int, Step] = {}
        for record in self.records:
            if record["kind"] == "intent":
                steps[record["step"]] = Step(record["step"], record)
            elif record["kind"] == "applied" and record["step"] in steps:
                steps[record["step"]].applied = True
            elif record["kind"] == "restored" and record["step"] in steps:
                steps[record["step"]].restored = True
        return [steps[n] for n in sorted(steps)]

    def summary(self) -> dict:
        finish = next((r for r in self.records if r["kind"] == "finish"), {})
        stopped = next((r for r in reversed(self.records) if r["kind"] == "rollback-stopped"), None)
        return {"id": self.id, "created": self.begin.get("created"), "action": self.begin.get("action"),
                "source": self.begin.get("source"), "environment": self.begin.get("environment"),
                "machine": self.machine, "state": self.state, "changes": [s.intent for s in self.steps()],
                "results": [r for r in self.records if r["kind"] == "applied"],
                "outcome": finish.get("outcome"), "stopped": stopped}

    # -- writing ---------------------------------------------------------------------------------------
    def _write(self, record: dict) -> None:
        record = {"at": _now(), **record}
        with open(self.folder / "journal.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.records.append(record)

    def _next_step(self) -> int:
        return len(self.steps()) + 1

    def put_file(self, system: System, target: Path, source: Path) -> None:
        """Place `source` at `target` (creating or replacing it), backing up what is there first."""
        number = self._next_step()
        before = None
        if target.exists():
            backup = self.folder / "backups" / str(number)
            copy_file(target, backup)
            before = {"sha256": sha256_of(target), "backup": f"backups/{number}", "size": target.stat().st_size}
            if sha256_of(backup) != before["sha256"]:
                raise OSError(f"the backup of {target} does not match the original")
            crash_point(f"backup:{number}")
        self._write({"kind": "intent", "step": number, "op": FILE, "target": str(target),
                     "shown": system.windows_path(target), "before": before, "after": sha256_of(source)})
        crash_point(f"intent:{number}")
        system.copy_file(source, target)
        crash_point(f"change:{number}")
        self._write({"kind": "applied", "step": number})
        crash_point(f"applied:{number}")

    def set_user_variable(self, system: System, name: str, value: Optional[str]) -> None:
        number = self._next_step()
        before = next((v for k, v in system.environment("user").items() if k.lower() == name.lower()), None)
        self._write({"kind": "intent", "step": number, "op": VARIABLE, "name": name, "before": before,
                     "after": value})
        crash_point(f"intent:{number}")
        system.set_user_variable(name, value)
        crash_point(f"change:{number}")
        self._write({"kind": "applied", "step": number})

    def set_machine_value(self, system: System, key: str, name: str, value: Optional[RegistryValue]) -> None:
        """A machine-wide value (HKLM): the value before is recorded, then the elevated helper writes it."""
        from app.repair.elevated import value_json, write_machine_value

        number = self._next_step()
        before = system.registry_value(key, name)
        self._write({"kind": "intent", "step": number, "op": MACHINE_VALUE, "key": key, "name": name,
                     "shown": f"{key}\\{name}", "before": value_json(before), "after": value_json(value)})
        crash_point(f"intent:{number}")
        write_machine_value(system, self.folder / "elevated", key, name, value)
        crash_point(f"change:{number}")
        self._write({"kind": "applied", "step": number})

    def change_packages(self, system: System, packages: dict,
                        on_output: Callable[[str], None] = lambda line: None,
                        token: Optional[CancelToken] = None) -> None:
        """pip install the `install` pins; `pip freeze` and the exact versions before are recorded first.
        Cancelling `token` ends pip's whole process tree; the rollback then reinstalls the versions before."""
        number = self._next_step()
        python = packages["python"]
        freeze = system.run([python, "-m", "pip", "freeze", "--disable-pip-version-check"], timeout=300)
        self._write({"kind": "intent", "step": number, "op": PACKAGES, **packages, "freeze": freeze.stdout})
        crash_point(f"intent:{number}")
        _pip_install(system, python, packages["install"], packages["index"], on_output, token)
        crash_point(f"change:{number}")
        self._write({"kind": "applied", "step": number})

    def run_installer(self, system: System, arch: str, installer: Path,
                      runner: Callable[[list[str]], tuple[int, str]]) -> None:
        """Run a system-wide installer (the one elevated step). Recorded, but never undone: other programs share
        what it installs, so rollback leaves it (the plan says so)."""
        number = self._next_step()
        log = installer.with_suffix(".log")
        argv = [system.windows_path(installer), "/install", "/quiet", "/norestart", "/log", system.windows_path(log)]
        self._write({"kind": "intent", "step": number, "op": INSTALLER, "arch": arch, "argv": argv,
                     "sha256": sha256_of(installer), "shown": argv[0]})
        crash_point(f"intent:{number}")
        code, outcome = runner(argv)
        self._write({"kind": "applied", "step": number, "exit_code": code, "outcome": outcome})

    def note(self, record: dict) -> None:
        """Facts worth keeping with the transaction (where a download came from, its checks)."""
        self._write({**record, "kind": "note"})

    def finish(self, outcome: dict) -> None:
        self._write({"kind": "finish", "outcome": outcome})
        crash_point("finish")

    # -- undoing ---------------------------------------------------------------------------------------
    def rollback(self, system: System) -> None:
        """Undo every step, newest first. Raises RollbackStopped (and records it) rather than overwrite a change
        somebody else made after the repair."""
        if self.state == ROLLED_BACK:
            return
        self._write({"kind": "rollback-begin"})
        for step in reversed(self.steps()):
            if step.restored:
                continue
            try:
                self._undo(system, step)
            except RollbackStopped as stop:
                self._write({"kind": "rollback-stopped", "step": step.number, "code": stop.code, **stop.values})
                raise
            self._write({"kind": "restored", "step": step.number})
            crash_point(f"restore:{step.number}")
        self._write({"kind": "rolled-back"})

    def _undo(self, system: System, step: Step) -> None:
        intent = step.intent
        if intent["op"] == FILE:
            self._undo_file(system, intent)
        elif intent["op"] == INSTALLER:
            return  # a shared, system-wide runtime stays (its own uninstaller removes it, if ever)
        elif intent["op"] == PACKAGES:
            self._undo_packages(system, intent)
        elif intent["op"] == MACHINE_VALUE:
            self._undo_machine_value(system, intent)
        elif intent["op"] == VARIABLE:
            now = next((v for k, v in system.environment("user").items() if k.lower() == intent["name"].lower()),
                       None)
            if now == intent["before"]:
                return
            if now != intent["after"]:
                raise RollbackStopped("changed-since", target=intent["name"])
            system.set_user_variable(intent["name"], intent["before"])

    def _undo_machine_value(self, system: System, intent: dict) -> None:
        """Written back by another elevated step (rollback of a machine-wide change needs elevation too)."""
        from app.repair.elevated import value_json, value_of, write_machine_value

        now = value_json(system.registry_value(intent["key"], intent["name"]))
        if now == intent["before"]:
            return
        if now != intent["after"]:
            raise RollbackStopped("changed-since", target=intent["shown"])
        write_machine_value(system, self.folder / "elevated", intent["key"], intent["name"],
                            value_of(intent["before"]))

    def _undo_packages(self, system: System, intent: dict) -> None:
        now = installed_versions(Path(intent["site_packages"]), intent["before"])
        if now == intent["before"]:
            return
        if now != {**intent["before"], **intent["after"]}:
            raise RollbackStopped("changed-since", target=", ".join(f"{n} {v}" for n, v in now.items()))
        _pip_install(system, intent["python"], intent["restore"], intent["index"], lambda line: None)

    def _undo_file(self, system: System, intent: dict) -> None:
        target = Path(intent["target"])
        before = intent["before"]
        for leftover in target.parent.glob(f".{target.name}.*.tmp"):  # a copy cut short by the crash
            system.delete_file(leftover)
        now = sha256_of(target) if target.exists() else None
        if now == (before["sha256"] if before else None):
            return  # as it was: the crash came before the change
        if now != intent["after"]:
            raise RollbackStopped("changed-since", target=intent["shown"],
                                  backup=str(self.folder / before["backup"]) if before else None)
        if before is None:
            system.delete_file(target)
            return
        backup = self.folder / before["backup"]
        if not backup.exists() or sha256_of(backup) != before["sha256"]:
            raise RollbackStopped("backup-damaged", target=intent["shown"], backup=str(backup))
        system.copy_file(backup, target)


def _pip_install(system: System, python: str, pins: list[str], index: list[str],
                 on_output: Callable[[str], None], token: Optional[CancelToken] = None) -> None:
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *index, *pins]
    result = system.run(argv, timeout=PIP_TIMEOUT_S, on_output=on_output, cancel=token)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        raise OSError(f"pip install {' '.join(pins)} failed: {' | '.join(lines[-3:])}")


class Journal:
    """All transactions of this user, newest first."""

    def __init__(self, folder: Optional[Path] = None) -> None:
        self.folder = (folder or data_folder()) / "transactions"

    def begin(self, machine: dict, action: str, source: Optional[str], environment: Optional[str],
              plan: dict) -> Transaction:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        folder = self.folder / f"{stamp}-{secrets.token_hex(3)}"
        (folder / "backups").mkdir(parents=True)
        transaction = Transaction(folder)
        transaction._write({"kind": "begin", "id": transaction.id, "created": _now(), "machine": machine,
                            "action": action, "source": source, "environment": environment, "plan": plan})
        crash_point("begin")
        return transaction

    def transactions(self) -> Iterator[Transaction]:
        if not self.folder.is_dir():
            return iter(())
        folders = sorted((p for p in self.folder.iterdir() if (p / "journal.jsonl").is_file()), reverse=True)
        return (Transaction(f) for f in folders)

    def get(self, transaction_id: str) -> Optional[Transaction]:
        folder = self.folder / transaction_id
        return Transaction(folder) if (folder / "journal.jsonl").is_file() and folder.parent == self.folder else None

    def last(self, machine: Optional[dict] = None) -> Optional[Transaction]:
        """The newest transaction (for that machine) that can still be undone."""
        return next((t for t in self.transactions() if t.state != ROLLED_BACK
                     and (machine is None or t.machine == machine)), None)

    def unfinished(self, machine: Optional[dict] = None) -> list[Transaction]:
        """Repairs cut short by a crash (or a rollback that stopped): offered for rollback at the next start."""
        return [t for t in self.transactions() if t.state in (RUNNING, ROLLBACK_STOPPED)
                and (machine is None or t.machine == machine)]
