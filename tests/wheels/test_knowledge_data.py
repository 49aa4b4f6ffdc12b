"""The knowledge in resources/known_issues.json, from torch 2.0 to the newest release, against PyPI and itself.

What PyPI says is read from its JSON API (https://pypi.org/pypi/<project>/json: every release with its files; the
per-version page is not served by every mirror): which cpXY win_amd64 wheels each torch release has, the newest
release, and that the known-bad builds and their fixes exist. These tests are `wheels` tests: they skip offline,
unless TDD_REQUIRE_WHEELS=1 (CI) turns the skip into a failure. The rest checks the data against itself: the runtime
minimums against the runtime DLLs each release was measured to import (tools/measure_runtime_imports.py)."""

from __future__ import annotations

from functools import cache
from urllib.parse import urljoin

import pytest
import requests

from app.engine.versions import matches, version_tuple
from app.resources import known_issues
from app.sources.download import DownloadError
from app.sources.wheel_member import RemoteWheel
from tests import realfiles
from tests.helpers.images import real

FIRST = (2, 0)  # the knowledge covers torch 2.0 and later
JSON_API = "https://pypi.org/pypi/{project}/json"


@cache
def _releases(project: str) -> dict[str, list[dict]]:
    try:
        response = requests.get(JSON_API.format(project=project), timeout=60)
        response.raise_for_status()
        return response.json()["releases"]
    except (requests.RequestException, ValueError, KeyError) as exc:
        raise realfiles.RealFileUnavailable(f"PyPI's JSON API for {project}: {exc}") from exc


def pypi_releases(project: str) -> dict[str, list[dict]]:
    """Final releases (no pre-releases) that have files, from PyPI; a skip (or a failure in CI) when offline."""
    releases = real(_releases, project)
    return {v: files for v, files in releases.items() if files and all(p.isdigit() for p in v.split("."))}


def windows_pythons(files: list[dict]) -> set[str]:
    """The Python versions ("3.12") a release has a regular (not free-threaded) win_amd64 wheel for."""
    found = set()
    for entry in files:
        name = entry["filename"]
        if entry.get("yanked") or not name.endswith("-win_amd64.whl"):
            continue
        python, abi = name[: -len(".whl")].split("-")[-3:-1]
        if python == abi and python.startswith("cp"):
            found.add(f"{python[2]}.{python[3:]}")
    return found


def covered() -> list[str]:
    return sorted((v for v in pypi_releases("torch") if version_tuple(v)[:2] >= FIRST), key=version_tuple)


@pytest.mark.wheels
def test_the_newest_torch_on_pypi_is_the_newest_the_data_knows():
    newest = max(pypi_releases("torch"), key=version_tuple)
    assert known_issues()["python_wheels_latest_torch"] == newest


@pytest.mark.wheels
def test_python_support_of_every_release_from_20_is_pypis_list_of_windows_wheels():
    windows = known_issues()["python_wheels"]
    releases = pypi_releases("torch")
    wrong = {}
    for version in covered():
        said = {python for python, window in windows.items() if matches(version, ",".join(window))}
        real_wheels = windows_pythons(releases[version])
        if said != real_wheels:
            wrong[version] = {"data": sorted(said, key=version_tuple), "pypi": sorted(real_wheels, key=version_tuple)}
    assert len(covered()) >= 28 and not wrong, wrong


@pytest.mark.wheels
def test_known_bad_builds_their_fixes_and_companions_are_real_windows_releases():
    torch = pypi_releases("torch")
    for build in known_issues()["builds"]:
        bad = [v for v in torch if matches(v, build["torch"]) and windows_pythons(torch[v])]
        assert bad, build["id"]
        assert windows_pythons(torch.get(build["fixed_in"], [])), build["id"]
        for project, version in build.get("companions", {}).items():
            assert windows_pythons(pypi_releases(project).get(version, [])), (build["id"], project, version)


@pytest.mark.wheels
def test_the_runtime_imports_were_measured_for_every_minor_release_from_20():
    minors = {".".join(v.split(".")[:2]) for v in covered()}
    measured = known_issues()["vc_runtime_imports"]
    assert {".".join(v.split(".")[:2]) for v in measured} == minors
    torch = pypi_releases("torch")
    for version in measured:  # each measured release is the newest patch of its minor
        patches = [v for v in torch if v.split(".")[:2] == version.split(".")[:2]]
        assert version == max(patches, key=version_tuple), version


def test_every_runtime_dll_torch_imports_is_in_the_runtime_and_torch_loads_the_core_three():
    runtime = set(known_issues()["vc_runtime_dlls"])
    for version, imports in known_issues()["vc_runtime_imports"].items():
        assert set(imports) <= runtime, version
        assert {"msvcp140.dll", "vcruntime140.dll", "vcruntime140_1.dll"} <= set(imports), version
        assert all(importers and importers == sorted(importers, key=str.lower) for importers in imports.values())


def test_the_first_release_to_import_each_runtime_dll_is_what_was_measured():
    measured = known_issues()["vc_runtime_imports"]
    first: dict[str, str] = {}
    for version in sorted(measured, key=version_tuple):
        for dll in measured[version]:
            first.setdefault(dll, ".".join(version.split(".")[:2]))
    assert known_issues()["vc_runtime_dlls_first_imported"] == first
    assert first["vcruntime140_threads.dll"] == "2.14" and measured["2.14.1"]["vcruntime140_threads.dll"] == [
        "torch_cpu.dll"]


def test_a_release_that_imports_a_newer_runtime_dll_requires_a_runtime_that_ships_it():
    """torch 2.12 imports msvcp140_atomic_wait.dll (14.28 and later), 2.14 vcruntime140_threads.dll (14.40 in the
    msvc-runtime wheels): the runtime minimum for those releases is at least that, or an old runtime would pass."""
    shipped = known_issues()["vc_runtime_dlls_first_shipped"]
    rules = known_issues()["msvcp140_minimum"]
    for version, imports in known_issues()["vc_runtime_imports"].items():
        needed = max((version_tuple(shipped[d]) for d in imports if d in shipped), default=())
        if not needed:
            continue
        minimum = max((version_tuple(r["version"]) for r in rules if matches(version, r["torch"])), default=())
        assert minimum >= needed, (version, minimum, needed)


def _wheel_dlls(url: str) -> set[str]:
    """The DLL names in a remote wheel, from its central directory alone (ranged reads: about 64 KB)."""
    try:
        with RemoteWheel(url, budget=1 << 20) as wheel:
            return {name.rsplit("/", 1)[-1].lower() for name in wheel.names() if name.lower().endswith(".dll")}
    except DownloadError as exc:
        raise realfiles.RealFileUnavailable(f"{url}: {exc}") from exc


@pytest.mark.wheels
def test_the_first_shipped_versions_are_the_oldest_msvc_runtime_wheels_that_have_them():
    releases = pypi_releases("msvc-runtime")
    contents = {}
    for version in sorted(releases, key=version_tuple):
        wheels = sorted(f["filename"] for f in releases[version] if f["filename"].endswith("-win_amd64.whl"))
        if wheels:
            entry = next(f for f in releases[version] if f["filename"] == wheels[0])
            contents[version] = real(_wheel_dlls, urljoin(JSON_API.format(project="msvc-runtime"), entry["url"]))
    first = {}
    for version, dlls in contents.items():  # oldest first
        for dll in dlls:
            first.setdefault(dll, ".".join(version.split(".")[:2]))
    shipped = known_issues()["vc_runtime_dlls_first_shipped"]
    oldest = ".".join(min(contents, key=version_tuple).split(".")[:2])
    assert shipped == {dll: v for dll, v in first.items() if v != oldest}
    assert set(contents[max(contents, key=version_tuple)]) == set(known_issues()["vc_runtime_dlls"])
