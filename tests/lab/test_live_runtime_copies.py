"""PyQt5's old VC++ runtime, live, in the Windows lab: Windows CPython 3.12, the real torch 2.9.1 wheel, and the real
PyQt5 5.15.11 + PyQt5-sip 12.17.0 + PyQt5-Qt5 5.15.2 wheels under Wine 8.

What Wine 8 shows (measured): PyQt5 imports (QtCore too); its __init__.py puts PyQt5\\Qt5\\bin first on PATH and
adds it with os.add_dll_directory; with `diagnose --import-first PyQt5` the replay's process then really loads
Qt5\\bin's msvcp140.dll (14.26.28720.3) for torch, where without it loads System32's. Wine's loader does not fail
c10.dll's initialisation with that copy: `import torch` still works, so WinError 1114 itself is not reproduced here.
What this proves instead: the replay imports the module first with its side effects kept, and reports the old copy
as the one the process really loaded ("what torch really loaded", evidence runtime_copies), beside the static
finding that names the same copy, its version and its owner.

torch 2.9.1's own libiomp5md.dll aborts under Wine 8 with OMP Error #179 (GetNumaNodeProcessorMaskEx is not
implemented) unless KMP_AFFINITY=disabled, which the lab sets for these runs."""

from __future__ import annotations

import json
import ntpath

import pytest

from tests import realfiles
from tests.helpers.lab import lab_env
from tests.winelab import REPO_ROOT, _extract_wheel, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
PYQT5_WHEELS = ("PyQt5-Qt5==5.15.2", "PyQt5-sip==12.17.0", "PyQt5==5.15.11")
OLD = "14.26.28720.3"
WINE_OPENMP = {"KMP_AFFINITY": "disabled"}  # OMP Error #179 under Wine 8 otherwise (see the module's doc)


def by_code(document: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in document["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found


def msvcp(copies: list[dict]) -> dict:
    (copy,) = [c for c in copies if c["dll"].lower() == "msvcp140.dll"]
    return copy


def test_import_first_pyqt5_makes_the_replay_load_qt5_bins_old_msvcp140_and_the_report_names_it(lab, tmp_path):
    env = lab_env(lab, "runtime-copies-291", torch_version="2.9.1")
    site = env / "Lib" / "site-packages"
    try:
        wheels = [realfiles.download(req) for req in PYQT5_WHEELS]
    except realfiles.RealFileUnavailable as exc:
        pytest.skip(f"real wheels unavailable: {exc}")
    for wheel in wheels:
        _extract_wheel(wheel, site)
    qt_bin = to_windows_path(site / "PyQt5" / "Qt5" / "bin")
    settings = {**WINE_OPENMP, "TDD_DATA_DIR": to_windows_path(tmp_path / "data")}

    qt = lab.run_python(["-c", "from PyQt5 import QtCore; print(QtCore.QT_VERSION_STR)"], env=settings,
                        torch_env=env, timeout=300)
    assert qt.returncode == 0 and qt.stdout.strip() == "5.15.2", qt.stderr[-2000:]

    def diagnose(*extra: str) -> tuple[int, dict]:
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT),
                              argv=["diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet", *extra])
        result = lab.run_python(["-c", code], env=settings, timeout=900, torch_env=env)
        assert result.returncode in (0, 1) and result.stdout.strip(), (result.returncode, result.stderr[-3000:])
        return result.returncode, json.loads(result.stdout[result.stdout.index("{"):])

    _, first = diagnose("--import-first", "PyQt5")
    found = by_code(first)
    (static,) = found["runtime-copy-too-old"]
    assert static["evidence"]["version"] == OLD and static["variant"] == "named-first"
    # said to come first, the copy is a blocker, and the live import that worked anyway (Wine) makes it a warning
    assert static["severity"] == "warning" and static["evidence"]["contradicted_by_replay"] is True
    assert static["evidence"]["owner"]["package"] == "PyQt5-Qt5" and static["evidence"]["import_name"] == "PyQt5"
    assert ntpath.normcase(static["evidence"]["folder"]) == ntpath.normcase(qt_bin)
    assert static["evidence"]["walk"]["complete"] is True
    (ok,) = found["import-ok"]  # Wine 8 does not fail c10.dll's initialisation with the old copy
    (imported,) = ok["evidence"]["imported_first"]
    assert imported["module"] == "PyQt5" and imported["ok"] is True
    assert [ntpath.normcase(p) for p in imported["path_added"]] == [ntpath.normcase(qt_bin)]
    loaded = msvcp(ok["evidence"]["runtime_copies"])
    assert ntpath.normcase(ntpath.dirname(loaded["path"])) == ntpath.normcase(qt_bin), loaded
    assert loaded["version"] == OLD and loaded["agrees"] is False  # the model, without PyQt5, predicts System32's
    assert ok["evidence"]["replay"]["imported_first"][0]["module"] == "PyQt5"

    _, app = diagnose("--app", "StoManager1")  # a known app: its first imports come from ai_apps.json
    found = by_code(app)
    (static,) = found["runtime-copy-too-old"]
    assert static["variant"] == "app-imports-first" and static["evidence"]["app"] == "StoManager1"
    (ok,) = found["import-ok"]
    assert [m["module"] for m in ok["evidence"]["imported_first"]] == ["PyQt5"]
    assert ntpath.normcase(ntpath.dirname(msvcp(ok["evidence"]["runtime_copies"])["path"])) == \
        ntpath.normcase(qt_bin)

    _, plain = diagnose()
    found = by_code(plain)
    assert [f["evidence"]["version"] for f in found["runtime-copy-too-old"]] == [OLD]
    (ok,) = found["import-ok"]
    assert "imported_first" not in ok["evidence"]
    loaded = msvcp(ok["evidence"]["runtime_copies"])
    assert ntpath.normcase(ntpath.dirname(loaded["path"])) != ntpath.normcase(qt_bin), loaded


def test_an_old_runtime_copy_beside_python_exe_is_what_the_process_loads_until_it_is_set_aside(lab, tmp_path):
    """Microsoft's runtime 14.26 copied beside the lab's python.exe (as forums tell ComfyUI users to do): the
    application folder comes before System32, so the replay's process really loads that copy; set aside (renamed in
    place, as `set-aside-runtime-copy` does), the process loads System32's. Wine's own System32\\msvcp140.dll has no
    version, so here the check cannot call it new enough: it offers the runtime first, and the set-aside itself is
    proven on copied drives and in the wizard (tests/wheels/test_runtime_copy_first.py, test_ui_new_repairs.py);
    the lab's System32 is never changed. (Wine 8 still starts c10.dll with the old copy, so the blocker is marked as
    contradicted by the live import here; on Windows it fails.)"""
    env = lab_env(lab, "runtime-copy-beside-python", torch_version="2.9.1")
    try:
        qt = realfiles.extract("PyQt5-Qt5==5.15.2", "PyQt5/Qt5/bin/*.dll") / "PyQt5" / "Qt5" / "bin"
    except realfiles.RealFileUnavailable as exc:
        pytest.skip(f"real wheels unavailable: {exc}")
    names = ("msvcp140.dll", "msvcp140_1.dll", "msvcp140_2.dll", "concrt140.dll")
    for name in names:
        (env / name).write_bytes((qt / name).read_bytes())
    settings = {**WINE_OPENMP, "TDD_DATA_DIR": to_windows_path(tmp_path / "data")}
    beside = ntpath.normcase(to_windows_path(env))

    def diagnose() -> dict:
        code = RUN_APP.format(repo=to_windows_path(REPO_ROOT),
                              argv=["diagnose", "--env", to_windows_path(env), "--json", "-", "--quiet"])
        result = lab.run_python(["-c", code], env=settings, timeout=900, torch_env=env)
        out = result.stdout
        assert result.returncode in (0, 1) and "{" in out, (result.returncode, result.stderr[-3000:])
        return json.loads(out[out.index("{"):out.rindex("}") + 1])

    found = by_code(diagnose())
    (static,) = found["vc-runtime-too-old"]
    assert static["variant"] == "copy-no-owner" and static["evidence"]["found"] == OLD
    assert static["evidence"]["set_aside"] == ["msvcp140.dll", "concrt140.dll", "msvcp140_1.dll", "msvcp140_2.dll"]
    assert static["repairs"] == ["install-vc-runtime", "set-aside-runtime-copy"]  # Wine's System32 copy: no version
    (ok,) = found["import-ok"]
    assert ntpath.normcase(ntpath.dirname(msvcp(ok["evidence"]["runtime_copies"])["path"])) == beside
    assert "runtime-copy-too-old" not in found  # python.exe's own folder is the vc-runtime check's, not twice

    for name in names:  # what set-aside-runtime-copy does: renamed in place
        (env / name).rename(env / f"{name}.set-aside-by-torch-dll-doctor")
    found = by_code(diagnose())
    assert "vc-runtime-too-old" not in found
    loaded = msvcp(found["import-ok"][0]["evidence"]["runtime_copies"])
    assert ntpath.normcase(ntpath.dirname(loaded["path"])) != beside and loaded["version"] != OLD, loaded
