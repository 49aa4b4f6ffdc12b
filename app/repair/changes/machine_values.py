"""A machine-wide registry value (HKLM), written by the one elevated helper (directly inside a copied drive); undo
puts the value before back, while the value still holds what the step wrote. Through the helper, the value before
is the helper's own record (kept in an administrators-only folder under the id the intent names), never the one
in this user-writable journal."""

from __future__ import annotations

import secrets
from typing import Optional

from app.repair.changes import MACHINE_VALUE, RollbackStopped
from app.repair.elevated import restore_machine_value, value_json, value_of, write_machine_value
from app.system.base import RegistryValue, System


def prepare(system: System, key: str, name: str, value: Optional[RegistryValue]) -> dict:
    return {"op": MACHINE_VALUE, "key": key, "name": name, "shown": f"{key}\\{name}",
            "before": value_json(system.registry_value(key, name)), "after": value_json(value),
            "record": secrets.token_hex(16)}


def apply(system: System, transaction, key: str, name: str, value: Optional[RegistryValue],
          record: Optional[str] = None) -> None:
    write_machine_value(system, transaction.folder / "elevated", key, name, value, record)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    now = value_json(system.registry_value(intent["key"], intent["name"]))
    if now == intent["before"]:
        return
    if now != intent["after"]:
        raise RollbackStopped("setting-changed-since", target=intent["shown"])
    if not system.elevates_machine_changes:  # a copied drive: no elevation, no boundary to cross
        write_machine_value(system, transaction.folder / "elevated", intent["key"], intent["name"],
                            value_of(intent["before"]))
        return
    if not intent.get("record"):  # never a value from this user-writable journal through the elevated helper
        raise RollbackStopped("setting-no-record", target=intent["shown"])
    restore_machine_value(system, transaction.folder / "elevated", intent["record"], intent["shown"])


def targets(intent: dict) -> list:
    return []
