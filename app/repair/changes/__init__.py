"""The kinds of change a repair makes. Each module holds one kind, a class that follows `Change`; the journal only
records its intent before and its outcome after (`Transaction.step`), and replays `undo` from the record. A new
repair is a plan made of these kinds; a new kind is one module and one line in `kind_of`.

Every kind has `undo(system, transaction, intent, applied)`: put back what the intent says was there before, or
raise RollbackStopped rather than overwrite something somebody else changed since. `applied` is False when the
step was cut short (a kill, a Stop, a failure) after its intent was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from app.system.base import System

FILE, VARIABLE, PACKAGES, INSTALLER = "file", "variable", "packages", "installer"
MACHINE_VALUE = "machine-value"  # a machine-wide (HKLM) value, written and restored by Windows' reg.exe, elevated
RENAME = "rename"  # a file renamed in place (set aside), renamed back on undo


class RollbackStopped(Exception):
    """Rollback could not go on without overwriting something (or Windows refused a step): the journal says what
    and where. `code` names the words (cli.undo.stopped.<code>)."""

    def __init__(self, code: str, **values: object) -> None:
        super().__init__(code)
        self.code, self.values = code, values

    def text(self, lang: str) -> str:
        from app.i18n import words

        values = dict(self.values)
        if self.code == "refused":
            kind = values.get("reason", "other")
            values["reason"] = values.get("detail", "") if kind == "other" else words(
                f"repair.os.{kind}", lang, path=values.get("target", "-"))
        return words(f"cli.undo.stopped.{self.code}", lang, **values)




class Change(Protocol):
    """One change a repair asks for, with what it needs to make it; its class is its kind."""

    op: str  # the kind's name in the journal's records

    def prepare(self, system: System, transaction, number: int) -> dict:
        """The intent, written before the change: what will change, and what is there now (a backup is taken
        here, into the transaction's folder)."""

    def apply(self, system: System, transaction, intent: dict) -> Optional[dict]:
        """Make the change; what it returns is written with the record that it was made."""

    @staticmethod
    def undo(system: System, transaction, intent: dict, applied: bool) -> None:
        """Put back what `intent` says was there, or raise RollbackStopped."""

    @staticmethod
    def targets(intent: dict) -> list[Path]:
        """The files the change touches (a program that holds one blocks an undo)."""


def kind_of(op: str) -> type[Change]:
    """The kind that records and undoes changes named `op` in the journal."""
    from app.repair.changes import files, installers, machine_values, packages, renames, user_settings

    kinds: list[type[Change]] = [files.PutFile, renames.RenameFile, user_settings.SetUserVariable,
                                 machine_values.SetMachineValue, packages.ChangePackages, installers.RunInstaller]
    return {kind.op: kind for kind in kinds}[op]
