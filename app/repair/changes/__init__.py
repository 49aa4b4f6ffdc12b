"""The kinds of change a repair makes. Each module applies, and undoes, one kind; the journal records the intent
before and the outcome after, and calls them. A new repair is a plan made of these kinds, or one new kind.

Every kind has `undo(system, transaction, intent, applied)`: put back what the intent says was there before, or
raise RollbackStopped rather than overwrite something somebody else changed since. `applied` is False when the
step was cut short (a kill, a Stop, a failure) after its intent was written.
"""

from __future__ import annotations

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




def kind_of(op: str):
    """The module that undoes changes of kind `op`."""
    from app.repair.changes import files, installers, machine_values, packages, renames, user_settings

    return {FILE: files, VARIABLE: user_settings, PACKAGES: packages, INSTALLER: installers,
            MACHINE_VALUE: machine_values, RENAME: renames}[op]
