"""The paging file: how Windows is told to size it (PagingFiles), what it can commit now, and the room on the disk.

`HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Memory Management` `PagingFiles` (REG_MULTI_SZ) is read by
the Session Manager when Windows starts; a change takes effect only at the next start. Its entries:

- `?:\\pagefile.sys`: "Automatically manage paging file size for all drives" (what Win32_ComputerSystem's
  AutomaticManagedPagefile reports as True; Windows' default);
- `C:\\pagefile.sys 0 0` (or without sizes): a system-managed size on that drive;
- `C:\\pagefile.sys 1024 4096`: a custom size, initial and maximum in MB (1 MB = 1,048,576 bytes);
- no entry: no paging file at all.

A system-managed paging file grows when the commit charge passes 90 % of the commit limit, up to 3 x RAM or 4 GB,
whichever is larger, limited to an eighth of the volume and to its free space (Microsoft Learn, "How to determine
the appropriate page file size for 64-bit versions of Windows"). A custom one grows only up to its maximum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from app.system.base import DiskSpace, MemoryStatus, System

MEMORY_MANAGEMENT_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
PAGING_FILES = "PagingFiles"
SYSTEM_MANAGED_ALL_DRIVES = "?:\\pagefile.sys"
MB = 1 << 20  # the Virtual memory dialog's MB
# Windows itself writes this key while it starts (ExistingPageFiles); a write later than this is a change since.
WRITTEN_AT_START_S = 600
NONE, SYSTEM_MANAGED, CUSTOM = "none", "system-managed", "custom"
# the form Windows writes (System Properties, wmic): `X:\pagefile.sys`, `?:\pagefile.sys` (system managed on every
# drive), with the initial and maximum sizes in MB, 0 0 for system managed; the repair's undo writes only this form
PAGING_FILE_ENTRY = re.compile(r"^(?P<path>[A-Za-z?]:\\pagefile\.sys)(?: (?P<min>\d{1,9}) (?P<max>\d{1,9}))?$",
                               re.IGNORECASE)


@dataclass(frozen=True)
class PagingFile:
    path: str  # "C:\\pagefile.sys"; "?:\\pagefile.sys" for every drive
    initial_mb: Optional[int] = None  # None (or 0 and 0): the size is managed by Windows
    maximum_mb: Optional[int] = None

    @property
    def system_managed(self) -> bool:
        return self.maximum_mb is None or (self.initial_mb == 0 and self.maximum_mb == 0)

    @property
    def drive(self) -> str:
        return self.path[:2].upper()


@dataclass(frozen=True)
class PagingFacts:
    setting: Optional[tuple[str, ...]]  # PagingFiles as written; None: no readable value (nothing known)
    files: Optional[tuple[PagingFile, ...]]  # parsed; None when an entry cannot be read
    pending_restart: Optional[bool]  # the setting was changed since Windows started; None: cannot tell
    memory: Optional[MemoryStatus]
    system_drive: str
    system_drive_space: Optional[DiskSpace]

    @property
    def kind(self) -> Optional[str]:
        """NONE, SYSTEM_MANAGED (at least one paging file Windows sizes), CUSTOM; None when unknown."""
        if self.files is None:
            return None
        if not self.files:
            return NONE
        return SYSTEM_MANAGED if any(f.system_managed for f in self.files) else CUSTOM


def parse_paging_files(entries: list[str]) -> Optional[tuple[PagingFile, ...]]:
    """PagingFiles' entries as paging files; None when one of them is not in a form Windows writes."""
    files = []
    for entry in entries:
        if not entry.strip():
            continue  # an empty REG_MULTI_SZ can read back as [""]: no paging file
        match = PAGING_FILE_ENTRY.match(entry.strip())
        if match is None:
            return None
        low, high = match.group("min"), match.group("max")
        files.append(PagingFile(match.group("path"), int(low) if low else None, int(high) if high else None))
    return tuple(files)


def same_setting(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    def spelled(entries: tuple[str, ...]) -> list[str]:
        return [" ".join(e.split()).lower() for e in entries if e.strip()]

    return spelled(a) == spelled(b)


def read_paging_facts(system: System) -> PagingFacts:
    value = system.registry_value(MEMORY_MANAGEMENT_KEY, PAGING_FILES)
    setting = tuple(value.data) if value is not None and value.type == "REG_MULTI_SZ" else None
    memory = system.memory_status()
    drive = (system.variable("SystemDrive") or system.system_root[:2] or "C:").upper()
    return PagingFacts(setting, parse_paging_files(list(setting)) if setting is not None else None,
                       _pending(system, setting, memory), memory, drive, system.disk_space(drive))


def _pending(system: System, setting: Optional[tuple[str, ...]], memory: Optional[MemoryStatus]) -> Optional[bool]:
    """Whether the setting differs from the one Windows started with: by the setting the figures were measured
    with (an image records it), else by the key's last write against the time Windows started."""
    if setting is not None and memory is not None and memory.paging_files is not None:
        return not same_setting(setting, memory.paging_files)
    written, started = system.registry_key_written(MEMORY_MANAGEMENT_KEY), system.started_at()
    if written is None or started is None:
        return None
    return written > started + WRITTEN_AT_START_S
