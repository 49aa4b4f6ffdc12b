"""One of the user's own environment variables (HKCU\\Environment): set or removed; undo writes the value before
back, with the registry type it had (a REG_SZ holding a % stays REG_SZ), while the variable still holds what the
step wrote."""

from __future__ import annotations

from typing import Optional

from app.repair.changes import VARIABLE, RollbackStopped
from app.system.base import USER_ENVIRONMENT_KEY, System


def current(system: System, name: str) -> Optional[str]:
    return next((v for k, v in system.environment("user").items() if k.lower() == name.lower()), None)


def prepare(system: System, name: str, value: Optional[str]) -> dict:
    stored = system.registry_value(USER_ENVIRONMENT_KEY, name)  # None in an image without the user's registry
    return {"op": VARIABLE, "name": name, "shown": name, "before": current(system, name), "after": value,
            "before_type": stored.type if stored is not None else None}


def apply(system: System, name: str, value: Optional[str]) -> None:
    system.set_user_variable(name, value)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    now = current(system, intent["name"])
    if now == intent["before"]:
        return
    if now != intent["after"]:
        raise RollbackStopped("setting-changed-since", target=intent["name"])
    system.set_user_variable(intent["name"], intent["before"], intent.get("before_type"))


def targets(intent: dict) -> list:
    return []
