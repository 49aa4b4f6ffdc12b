"""A machine-wide registry value (HKLM): written through System.set_machine_value (on a live Windows, Windows' own
reg.exe started elevated; inside a copied drive, directly); undo puts the value before back, while the value still
holds what the step wrote.

The journal lies in the user's folder, where any program of that user can change it, and an undo writes its
"before" with administrator rights. So only the values this app writes can be written (ALLOWED_VALUES), and only
in the form Windows itself gives them (`allowed`): LongPathsEnabled is 0, 1 or absent, and PagingFiles lists
`X:\\pagefile.sys` entries with their sizes. Whatever the journal says, the worst an undo can do is put one of those
back: no folder, no program, no text of anyone's choosing reaches the machine's settings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from app.inventory.machine import LONG_PATHS_KEY
from app.inventory.paging import MEMORY_MANAGEMENT_KEY, PAGING_FILE_ENTRY
from app.repair.changes import MACHINE_VALUE, RollbackStopped
from app.system.base import RegistryValue, System, without_empty_entries

# (key, value name) -> its type, and whether it may be absent (deleted)
ALLOWED_VALUES = {
    (LONG_PATHS_KEY.lower(), "longpathsenabled"): ("REG_DWORD", True),
    (MEMORY_MANAGEMENT_KEY.lower(), "pagingfiles"): ("REG_MULTI_SZ", False),
}


def value_json(value: Optional[RegistryValue]) -> Optional[dict]:
    """As the journal keeps it. A REG_MULTI_SZ's empty entries are none: Windows ends the list at an empty string,
    and an empty list (no paging file) can read back as [""]."""
    if value is None:
        return None
    if isinstance(value.data, bytes):
        raise ValueError("binary registry values are not written by this app")
    return {"type": value.type, "data": without_empty_entries(value.data)}


def value_of(data: Optional[dict]) -> Optional[RegistryValue]:
    """A journalled value to write (one journalled before empty entries were dropped, without them)."""
    return None if data is None else RegistryValue(data["type"], without_empty_entries(data["data"]))


def allowed(key: str, name: str, value: Optional[dict]) -> bool:
    """Whether `value` (value_json's form; None: absent) is one this app may write as key\\name."""
    spelled = re.sub(r"^HKEY_LOCAL_MACHINE\\", "HKLM\\\\", str(key).strip(), flags=re.IGNORECASE).rstrip("\\")
    rule = ALLOWED_VALUES.get((spelled.lower(), str(name).lower()))
    if rule is None:
        return False
    kind, may_be_absent = rule
    if value is None:
        return may_be_absent
    if not isinstance(value, dict) or value.get("type") != kind:
        return False
    data = value.get("data")
    if kind == "REG_DWORD":
        return data in (0, 1) and not isinstance(data, bool)
    return isinstance(data, list) and all(isinstance(d, str) and (d == "" or PAGING_FILE_ENTRY.match(d)) for d in data)


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    now = value_json(system.registry_value(intent["key"], intent["name"]))
    if now == value_json(value_of(intent["before"])):
        return
    if now != intent["after"]:
        raise RollbackStopped("setting-changed-since", target=intent["shown"])
    if not allowed(intent["key"], intent["name"], intent["before"]):  # never a text of the journal's choosing
        raise RollbackStopped("setting-not-allowed", target=intent["shown"])
    system.set_machine_value(intent["key"], intent["name"], value_of(intent["before"]))


def targets(intent: dict) -> list:
    return []


@dataclass(frozen=True)
class SetMachineValue:
    """A machine-wide value (HKLM): the value before is recorded, then Windows' reg.exe writes it elevated."""

    key: str
    name: str
    value: Optional[RegistryValue]
    op = MACHINE_VALUE

    def prepare(self, system: System, transaction, number: int) -> dict:
        after = value_json(self.value)
        if not allowed(self.key, self.name, after):
            raise ValueError(f"{self.key}\\{self.name} = {after!r:.100} is not a value this app writes")
        return {"op": MACHINE_VALUE, "key": self.key, "name": self.name, "shown": f"{self.key}\\{self.name}",
                "before": value_json(system.registry_value(self.key, self.name)), "after": after}

    def apply(self, system: System, transaction, intent: dict) -> None:
        system.set_machine_value(self.key, self.name, self.value)

    undo = staticmethod(undo)
    targets = staticmethod(targets)
