"""`install-dll-package`: a DLL the environment lacks, which a pip package brings into a folder Windows searches
for it (a `missing-dll@package` finding: the DLL index names the package, and the environment's CUDA and cuDNN
agree with its family), installed at the release the finding pins (`intel-sycl-rt==2025.*`) with the environment's
own `python -m pip`.

The release is the newest on the user's own package index (their pip settings) with a wheel for this Python and
this Windows; the plan names the package, the release and the wheel's size. pip is given one requirement line with
that wheel's SHA-256 from the index (`--require-hashes`), so a file other than the one planned is refused, and
`--no-deps`, so nothing else changes. Undo uninstalls it again (app/repair/changes/packages.py).
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from app.cancel import CancelToken
from app.engine.versions import version_tuple
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import MachineFacts
from app.inventory.packages import canonical, installed_versions
from app.probes.dll_owner import INSTALL_DLL_PACKAGE
from app.probes.evidence import MissingDll
from app.probes.finding import Finding
from app.repair.changes.packages import ChangePackages, PackageSet
from app.repair.journal import Transaction
from app.repair.plan import Change, Plan, PlanRefused, cannot_here, said
from app.sources.download import DownloadError, fetch_page, new_session
from app.sources.pip_settings import read_pip_settings
from app.sources.wheel_member import JSON_ACCEPT, IndexFile, parse_index_page, project_url
from app.system.base import System

PAGE_BYTES = 32 << 20
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)"
                    r"-(?P<platform>[^-]+)\.whl$")


def wanted(system: System, env: PythonEnvironment, findings: list[Finding]) -> dict[str, str]:
    """{package: major} of the missing-dll findings of this environment that name this repair."""
    found = {}
    for finding in findings:
        if finding.code == "missing-dll" and INSTALL_DLL_PACKAGE in finding.repairs and \
                finding.environment == system.windows_path(env.python):
            evidence = MissingDll.of(finding)
            package, pin = evidence.owner, evidence.pin or ""
            if package and pin.startswith(f"{package}=="):
                found[package] = pin.split("==", 1)[1].removesuffix(".*")
    return found


def fits(file: IndexFile, package: str, major: str, env: PythonEnvironment) -> Optional[str]:
    """The release of a wheel this environment can install, of `major`; None for any other file."""
    parts = _WHEEL.match(file.filename)
    if parts is None or canonical(parts["name"]) != canonical(package) or not file.sha256:
        return None
    platform = "win_arm64" if env.python_cpu_type == 0xAA64 else "win_amd64"
    tags = set(parts["python"].split("."))
    python_ok = "py3" in tags or env.abi_tag in tags or parts["abi"] == "abi3"
    if platform not in parts["platform"].split(".") or not python_ok:
        return None
    version = parts["version"]
    return version if version.split(".")[0] == major and re.fullmatch(r"[\d.]+", version) else None


def newest(files: list[IndexFile], package: str, major: str, env: PythonEnvironment) -> Optional[tuple[str,
                                                                                                       IndexFile]]:
    releases = [(version, f) for f in files if (version := fits(f, package, major, env))]
    return max(releases, key=lambda item: version_tuple(item[0])) if releases else None


def size_text(size: Optional[int]) -> str:
    return f"{size / (1 << 20):.1f} MB" if size else "-"


class InstallDllPackage:
    id = INSTALL_DLL_PACKAGE
    sources = ()

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        asked = wanted(system, env, findings)
        now = installed_versions(env.site_packages, asked)
        asked = {name: major for name, major in asked.items() if name not in now}
        if not asked:
            raise PlanRefused([said("repair.refused.nothing_to_do", action=self.id)])
        if not system.can_run_programs:
            raise PlanRefused([cannot_here(system, "repair.refused.needs_live", action=self.id)])
        settings = read_pip_settings(system, env.exec_prefix)
        if not settings.indexes:
            raise PlanRefused([said("download.error.index-not-https", url=", ".join(settings.skipped_indexes))])
        cert = system.host_path(settings.cert) if settings.cert else None
        session = new_session(cert if cert is not None and cert.is_file() else None)
        after, hashes, changes = {}, {}, []
        for package, major in asked.items():
            release, wheel = self._release(package, major, env, settings.indexes[0], session)
            after[package], hashes[package] = release, wheel.sha256
            changes.append(Change("install-package", package, value=f"{release} ({size_text(wheel.size)})",
                                  size=wheel.size))
        packages = PackageSet(str(env.python), str(env.site_packages), {}, after, ("--no-deps",), hashes)
        return Plan(self.id, None, system.windows_path(env.python), changes, packages=packages, downloads=True,
                    notes=[said("repair.note.dll_package", index=settings.indexes[0])])

    @staticmethod
    def _release(package: str, major: str, env: PythonEnvironment, index: str, session) -> tuple[str, IndexFile]:
        try:
            url, kind, body = fetch_page(project_url(index, canonical(package)), accept=JSON_ACCEPT,
                                         max_bytes=PAGE_BYTES, session=session)
            found = newest(parse_index_page(url, kind, body), package, major, env)
        except DownloadError as exc:
            raise PlanRefused([{lang: exc.text(lang) for lang in ("en", "zh_CN")}]) from exc
        if found is None:
            raise PlanRefused([said("repair.refused.no_dll_package", package=package, release=f"{major}.*",
                                    index=index)])
        return found

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        transaction.step(system, ChangePackages(plan.packages, on_output, token))
