"""The shipped DLL index (resources/dll_index.json) against the real wheels on PyPI: for one wheel of each family,
its central directory, read by ranged reads, holds every DLL the index says it ships, where the index says, and the
index knows every DLL in it. Directories read are kept in .cache/central_directories (git-ignored)."""

from __future__ import annotations

import json
import re

import pytest

from app.inventory.dll_index import owners
from app.resources import resources_folder
from app.sources.download import DownloadError, fetch_page, new_session
from app.sources.wheel_member import JSON_ACCEPT, RemoteWheel, parse_index_page, project_url
from tests import realfiles
from tests.helpers.images import real
from tools.make_dll_index import INDEX, WHEEL_BUDGET, one_per_platform, windows_wheels

pytestmark = pytest.mark.wheels
DIRECTORIES = realfiles.CACHE / "central_directories"

SAMPLE = [  # (package, a DLL it ships, that DLL's family)
    ("nvidia-cudnn-cu12", "cudnn64_9.dll", "cudnn-9"),
    ("nvidia-cublas-cu12", "cublas64_12.dll", "cuda-12"),
    ("ctranslate2", "cudnn64_9.dll", "cudnn-9"),
    ("av", "avcodec-", "ffmpeg-"),  # delvewheel names av's copies avcodec-<major>-<md5>.dll
    ("intel-openmp", "libiomp5md.dll", "openmp"),
    ("onnxruntime-directml", "directml.dll", "directml"),
]


def _directory(package: str, version: str) -> list[str]:
    """The names in the central directory of the release's win_amd64 wheel (the one the index was made from)."""
    try:
        session = new_session()
        url, kind, body = fetch_page(project_url(INDEX, package), accept=JSON_ACCEPT, max_bytes=64 << 20,
                                     session=session)
        wheels = [w for w in one_per_platform(windows_wheels(parse_index_page(url, kind, body))[version])
                  if w.filename.endswith("win_amd64.whl")]
        cached = DIRECTORIES / f"{wheels[0].filename}.json"
        if not cached.is_file():
            with RemoteWheel(wheels[0].url, budget=WHEEL_BUDGET, session=session) as remote:
                DIRECTORIES.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps(remote.names()), encoding="utf-8")
        return json.loads(cached.read_text(encoding="utf-8"))
    except DownloadError as exc:
        raise realfiles.RealFileUnavailable(f"{package} {version}: {exc}") from exc


def _dll_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].lower()


@pytest.mark.parametrize(("package", "dll", "family"), SAMPLE, ids=[p for p, _, _ in SAMPLE])
def test_the_index_says_what_the_wheel_holds(package, dll, family):
    named = next(name for name in sorted(_index_names(package)) if name.startswith(dll))
    found = owners(named)
    assert found.known and found.family and found.family.startswith(family)
    owner = next(o for o in found.owners if o.package == package)
    last = owner.versions[-1][1]
    names = real(_directory, package, last)
    paths = [re.sub(r"^[^/]+\.data/", "*.data/", n) for n in names if _dll_name(n) == named]
    assert paths and set(paths) <= set(owner.paths)
    for name in names:  # and the index knows every DLL of this wheel
        if name.lower().endswith(".dll"):
            assert any(o.package == package for o in owners(_dll_name(name)).owners), name


def _index_names(package: str) -> list[str]:
    data = json.loads((resources_folder() / "dll_index.json").read_bytes())
    return [name for name, entry in data["dlls"].items() if any(o["package"] == package for o in entry["owners"])]
