"""The user's own pip settings, read the way pip reads them, so that our downloads from the package index go
where the user's pip goes (a mirror is common in China) and trust what it trusts (a company certificate).

Files, lowest precedence first (pip's `Configuration`): the file named by PIP_CONFIG_FILE, the global files, the
user's files (skipped when PIP_CONFIG_FILE names an existing file), the environment's own file; in each, the
`[global]` section and then `[download]` / `[install]`. `PIP_*` variables win over every file.
"""

from __future__ import annotations

import configparser
import ntpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.system.base import System

DEFAULT_INDEX = "https://pypi.org/simple"
SECTIONS = ("global", "download", "install")


@dataclass
class PipSettings:
    index_url: str = DEFAULT_INDEX
    extra_index_urls: list[str] = field(default_factory=list)
    cert: Optional[str] = None  # a CA bundle (Windows path) pip trusts
    sources: list[str] = field(default_factory=list)  # the files read, for the plan's details

    @property
    def indexes(self) -> list[str]:
        """The HTTPS indexes to ask, the user's own first (file:// and http:// ones are never used)."""
        return [url for url in [self.index_url, *self.extra_index_urls] if url.lower().startswith("https://")]

    @property
    def skipped_indexes(self) -> list[str]:
        """The indexes the user set that are not HTTPS (http://, file://): never used, and the plan says so."""
        return [url for url in [self.index_url, *self.extra_index_urls] if not url.lower().startswith("https://")]


def _files(system: System, prefix: Optional[Path]) -> list[str]:
    """Windows paths of pip's configuration files, lowest precedence first."""
    found = []
    env_file = system.variable("PIP_CONFIG_FILE")
    if env_file:
        found.append(env_file)
    program_data = system.variable("ProgramData") or r"C:\ProgramData"
    found.append(ntpath.join(program_data, "pip", "pip.ini"))
    env_host = system.host_path(env_file) if env_file else None
    if not (env_host and env_host.is_file()):
        home = system.variable("USERPROFILE")
        appdata = system.variable("APPDATA") or (ntpath.join(home, "AppData", "Roaming") if home else None)
        if home:
            found.append(ntpath.join(home, "pip", "pip.ini"))  # the legacy place
        if appdata:
            found.append(ntpath.join(appdata, "pip", "pip.ini"))
    if prefix is not None:
        found.append(ntpath.join(system.windows_path(prefix), "pip.ini"))
    return found


def read_pip_settings(system: System, prefix: Optional[Path] = None) -> PipSettings:
    """The settings pip of the environment at `prefix` (its sys.prefix) would use on this computer."""
    values: dict[str, str] = {}
    settings = PipSettings()
    for windows_path in _files(system, prefix):
        host = system.host_path(windows_path)
        if host is None or not host.is_file():
            continue
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(host.read_text(encoding="utf-8-sig", errors="replace"))
        except (OSError, configparser.Error):
            continue  # a damaged file: pip would complain; we use what the others say
        settings.sources.append(windows_path)
        for section in SECTIONS:
            if parser.has_section(section):
                values.update({key.lower().replace("_", "-"): value for key, value in parser.items(section)})
    for key in ("index-url", "extra-index-url", "cert"):
        variable = system.variable("PIP_" + key.upper().replace("-", "_"))
        if variable:
            values[key] = variable
    if values.get("index-url"):
        settings.index_url = values["index-url"].strip().rstrip("/")
    settings.extra_index_urls = [url.rstrip("/") for url in values.get("extra-index-url", "").split()]
    settings.cert = values.get("cert") or None
    return settings
