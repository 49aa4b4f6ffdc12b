"""A machine-wide registry value (HKLM), written by the one elevated helper (directly inside a copied drive); undo
writes the value before back through it again, while the value still holds what the step wrote."""

from __future__ import annotations

from typing import Optional

from app.repair.changes import MACHINE_VALUE, RollbackStopped
from app.repair.elevated import value_json, value_of, write_machine_value
from app.system.base import RegistryValue, System


def prepare(system: System, key: str, name: str, value: Optional[RegistryValue]) -> dict:
    return {"op": MACHINE_VALUE, "key": key, "name": name, "shown": f"{key}\\{name}",
            "before": value_json(system.registry_value(key, name)), "after": value_json(value)}


def apply(system: System, transaction, key: str, name: str, value: Optional[RegistryValue]) -> None:
    write_machine_value(system, transaction.folder / "elevated", key, name, value)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    now = value_json(system.registry_value(intent["key"], intent["name"]))
    if now == intent["before"]:
        return
    if now != intent["after"]:
        raise RollbackStopped("setting-changed-since", target=intent["shown"])
    write_machine_value(system, transaction.folder / "elevated", intent["key"], intent["name"],
                        value_of(intent["before"]))


def targets(intent: dict) -> list:
    return []
