"""`take-out-path-entry`: the one entry that puts another copy of torch first on `sys.path` (torch-shadowed), changed
exactly there and nowhere else:

- a line of a `._pth` file, or of a site folder's `.pth` file: that line becomes a comment (`#` in front, which both
  getpath.py and site.addpackage skip); every other byte of the file stays, and undo puts the file back byte for
  byte (a file change: backup first);
- an entry of the user's own PYTHONPATH: that entry is taken out of the value, the others kept in their order (the
  variable is removed when none is left); undo writes the value before back.

The machine's PYTHONPATH and the registry's PythonPath keys are the computer's, not the user's: their guided repairs
say how (unset-machine-variable, remove-registry-python-path)."""

from __future__ import annotations

import ntpath
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.inventory.python_path import PTH_FILE, PTH_LINE, PYTHONPATH, PthReading, entry_folder, pth_lines
from app.probes.evidence import TorchShadowed
from app.probes.finding import Finding
from app.probes.python_loading import TAKE_OUT_ENTRY
from app.repair.changes.files import PutFile
from app.repair.changes.user_settings import SetUserVariable
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, said
from app.system.base import System
from app.system.files import sha256_of

MAX_FILE_BYTES = 1 << 20  # a ._pth or .pth file is a few lines


def commented(data: bytes, reading: Optional[PthReading],
              matches: Callable[[str], bool]) -> tuple[bytes, list[tuple[int, str]]]:
    """`data` with each line that `matches` turned into a comment (`#` in front), its lines split as the Python
    reading it splits them (pth_lines: `reading` for a .pth file, None for a ._pth file) and every other byte
    kept; and the lines changed (number from 1, text)."""
    out, changed, kept = [], [], 0
    for number, line in enumerate(pth_lines(data, reading) or (), start=1):
        if line.start is None or not line.text.strip() or line.text.startswith("#") or not matches(line.text):
            continue
        changed.append((number, line.text))
        out += [data[kept:line.start], b"#"]
        kept = line.start
    return b"".join(out) + data[kept:], changed


class TakeOutPathEntry:
    id = TAKE_OUT_ENTRY
    sources = ()

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if source is not None:
            raise PlanRefused([said("repair.refused.unknown_source", source=source, sources="-")])
        named = next((f for f in findings if f.code == "torch-shadowed" and self.id in f.repairs), None)
        if named is None or env is None:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        shadow = TorchShadowed.of(named)
        origin = shadow.origin
        entry = system.host_path(shadow.entry or "")
        if entry is None:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        shown_entry = system.windows_path(entry)
        if origin in (PTH_FILE, PTH_LINE):
            return self._file_plan(system, env, origin, named, entry, shown_entry)
        if origin == PYTHONPATH:
            return self._variable_plan(system, env, entry, shown_entry)
        raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])

    def _file_plan(self, system: System, env: PythonEnvironment, origin: str, named: Finding, entry: Path,
                   shown_entry: str) -> Plan:
        file = system.host_path(TorchShadowed.of(named).added_by or "")
        try:
            with open(file, "rb") as f:  # type: ignore[arg-type]
                data = f.read(MAX_FILE_BYTES + 1)
        except (OSError, TypeError):
            data = b""
        if not data or len(data) > MAX_FILE_BYTES or file is None:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        same = _same(entry)
        version = env.python_version
        _, changed = commented(data, _reading(system, origin, version),
                               lambda line: same(entry_folder(system, file, line, origin)))
        if not changed:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        shown = system.windows_path(file)
        changes = [Change("comment-line", shown, value=f"{number}: {text}", host_target=file)
                   for number, text in changed]
        notes = [said("repair.note.path_entry.line", file=shown, folder=shown_entry,
                      lines=", ".join(str(n) for n, _ in changed))]
        return Plan(self.id, None, system.windows_path(env.python), changes, notes=notes,
                    download={"file": str(file), "sha256": sha256_of(file), "origin": origin, "entry": str(entry),
                              "python_version": version})

    def _variable_plan(self, system: System, env: PythonEnvironment, entry: Path, shown_entry: str) -> Plan:
        user = {k.upper(): (k, v) for k, v in system.environment("user").items()}
        if "PYTHONPATH" not in user:  # the machine's: the computer's setting, guided (unset-machine-variable)
            raise PlanRefused([said("repair.note.machine_setting", name="PYTHONPATH")])
        name, value = user["PYTHONPATH"]
        same = _same(entry)
        parts = value.split(";")
        kept = [p for p in parts if not (p.strip() and same(_folder(system, p)))]
        if len(kept) == len(parts):
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        left = ";".join(p for p in kept if p.strip())
        change = Change("set-variable", name, value=left) if left else Change("delete-variable", name)
        notes = [said("repair.note.path_entry.variable", folder=shown_entry, name=name, kept=left or "-")]
        return Plan(self.id, None, system.windows_path(env.python), [change], notes=notes)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        if not plan.download:
            for change in plan.changes:
                transaction.step(system, SetUserVariable(change.target, change.value))
            return
        file = Path(plan.download["file"])
        if sha256_of(file) != plan.download["sha256"]:  # written since the plan: check again first
            raise PlanRefused([said("repair.refused.path_entry.changed", file=plan.changes[0].target)])
        with open(file, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        entry, origin = Path(plan.download["entry"]), plan.download["origin"]
        same = _same(entry)
        reading = _reading(system, origin, plan.download.get("python_version"))
        new, _ = commented(data, reading, lambda line: same(entry_folder(system, file, line, origin)))
        edited = transaction.folder / "edits" / file.name
        edited.parent.mkdir(parents=True, exist_ok=True)
        edited.write_bytes(new)
        transaction.step(system, PutFile(file, edited))


def _reading(system: System, origin: str, version: Optional[str]) -> Optional[PthReading]:
    """How the environment's Python splits the file: getpath's way for a ._pth file (None), site's for a .pth."""
    return None if origin == PTH_FILE else PthReading.of(system, version)


def _same(entry: Path) -> Callable[[Optional[Path]], bool]:
    key = ntpath.normcase(str(entry)).rstrip("\\/")
    return lambda folder: folder is not None and ntpath.normcase(str(folder)).rstrip("\\/") == key


def _folder(system: System, value: str) -> Optional[Path]:
    value = system.expand(value.strip())  # as the environment block holds it
    return system.host_path(value) if value else None
