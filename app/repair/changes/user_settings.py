"""One of the user's own environment variables (HKCU\\Environment): set or removed; undo writes the value before
back, with the registry type it had (a REG_SZ holding a % stays REG_SZ), while the variable still holds what the
step wrote."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from app.repair.changes import VARIABLE, RollbackStopped
from app.system.base import USER_ENVIRONMENT_KEY, System


def current(system: System, name: str) -> Optional[str]:
    return next((v for k, v in system.environment("user").items() if k.lower() == name.lower()), None)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    now = current(system, intent["name"])
    if now == intent["before"]:
        return
    if now != intent["after"]:
        raise RollbackStopped("setting-changed-since", target=intent["name"])
    system.set_user_variable(intent["name"], intent["before"], intent.get("before_type"))


def targets(intent: dict) -> list:
    return []


@dataclass(frozen=True)
class SetUserVariable:
    """Set (or, with None, remove) one of the user's own environment variables."""

    name: str
    value: Optional[str]
    op = VARIABLE

    def prepare(self, system: System, transaction, number: int) -> dict:
        stored = system.registry_value(USER_ENVIRONMENT_KEY, self.name)  # None in an image without the registry
        return {"op": VARIABLE, "name": self.name, "shown": self.name, "before": current(system, self.name),
                "after": self.value, "before_type": stored.type if stored is not None else None}

    def apply(self, system: System, transaction, intent: dict) -> None:
        system.set_user_variable(self.name, self.value)

    undo = staticmethod(undo)
    targets = staticmethod(targets)
