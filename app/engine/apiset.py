"""API sets: `api-ms-win-*` and `ext-ms-*` names are contracts, not files.

Windows maps them to host DLLs through the schema in apisetschema.dll (section `.apiset`). When a real
schema is at hand it is parsed (format version 6, Windows 10 and later); otherwise the documented rules
apply: `api-ms-win-crt-*` is the Universal CRT (`ucrtbase.dll`), and every other contract belongs to
Windows itself and is never "missing" on Windows 10+.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

UCRT_HOST = "ucrtbase.dll"


def is_api_set(name: str) -> bool:
    lower = name.lower()
    return lower.startswith("api-") or lower.startswith("ext-")


def _contract_key(name: str) -> str:
    """The part Windows compares: lowercase, no `.dll`, no trailing `-<minor version>`."""
    lower = name.lower()
    if lower.endswith(".dll"):
        lower = lower[:-4]
    return lower.rsplit("-", 1)[0]


@dataclass(frozen=True)
class ApiSetTarget:
    contract: str
    host: Optional[str]  # the DLL that implements it, or None for "part of Windows, host unknown"
    source: str  # "schema" or "rule"


class ApiSetSchema:
    """A parsed schema: contract key -> (default host, {importing DLL: host})."""

    def __init__(self, entries: dict[str, tuple[Optional[str], dict[str, str]]]) -> None:
        self.entries = entries

    @classmethod
    def parse(cls, data: bytes) -> ApiSetSchema:
        """Parse the `.apiset` section (schema version 6). Raises ValueError on anything else."""
        if len(data) < 28:
            raise ValueError("API set schema is truncated")
        version, size, _flags, count, entry_offset, _hash_offset, _factor = struct.unpack_from("<7I", data, 0)
        if version != 6:
            raise ValueError(f"API set schema version {version} is not supported (only 6)")
        if count > 100_000 or entry_offset + 24 * count > len(data):
            raise ValueError("API set schema has an absurd entry count")

        def text(offset: int, length: int) -> str:
            if offset + length > len(data) or length % 2:
                raise ValueError("API set schema string is outside the section")
            return data[offset:offset + length].decode("utf-16-le").lower()

        entries: dict[str, tuple[Optional[str], dict[str, str]]] = {}
        for i in range(count):
            _f, name_at, name_len, hashed_len, value_at, value_count = struct.unpack_from(
                "<6I", data, entry_offset + 24 * i)
            if value_count > 64 or value_at + 20 * value_count > len(data):
                raise ValueError("API set schema has an absurd value count")
            name = text(name_at, name_len)
            default: Optional[str] = None
            exceptions: dict[str, str] = {}
            for j in range(value_count):
                _vf, importer_at, importer_len, host_at, host_len = struct.unpack_from("<5I", data, value_at + 20 * j)
                host = text(host_at, host_len) or None
                importer = text(importer_at, importer_len)
                if importer and host:
                    exceptions[importer] = host
                elif default is None:
                    default = host
            entries[name[:hashed_len // 2]] = (default, exceptions)
        return cls(entries)

    def lookup(self, name: str, importer: Optional[str] = None) -> Optional[ApiSetTarget]:
        entry = self.entries.get(_contract_key(name))
        if entry is None:
            return None
        default, exceptions = entry
        host = exceptions.get(importer.lower(), default) if importer else default
        return ApiSetTarget(name, host, "schema")


class ApiSetResolver:
    """Resolve a contract name with the schema when there is one, else with the documented rules."""

    def __init__(self, schema: Optional[ApiSetSchema] = None, windows_major: Optional[int] = None) -> None:
        self.schema = schema
        self.windows_major = windows_major

    @property
    def contracts_are_builtin(self) -> bool:
        """Windows 10+ (or unknown) resolves every contract itself; 7 / 8.1 need real files."""
        return self.windows_major is None or self.windows_major >= 10

    def resolve(self, name: str, importer: Optional[str] = None) -> Optional[ApiSetTarget]:
        """The target for a contract name, or None when `name` is not an API set name (or unknown to the schema
        on an old Windows, where `api-ms-win-*` DLLs are real files)."""
        if not is_api_set(name):
            return None
        if self.schema is not None:
            found = self.schema.lookup(name, importer)
            if found is not None or self.contracts_are_builtin:
                return found or ApiSetTarget(name, None, "rule")
        if name.lower().startswith("api-ms-win-crt-"):
            return ApiSetTarget(name, UCRT_HOST, "rule")
        if self.contracts_are_builtin:
            return ApiSetTarget(name, None, "rule")
        return None
