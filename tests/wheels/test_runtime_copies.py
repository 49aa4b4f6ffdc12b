"""Old VC++ runtime copies inside other packages, on copied drives with the real files: torch 2.9.1's torch\\lib
(which needs msvcp140.dll 14.40 or newer), PyQt5-Qt5 5.15.2's PyQt5\\Qt5\\bin (Microsoft's runtime 14.26.28720.3)
with its real RECORD, PyQt5 5.15.11's own package files, and Microsoft's runtime 14.51 in System32."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from app.inventory.environment import inspect_environment
from app.inventory.runtime_copies import SITE_PACKAGES, list_runtime_copies
from app.main import main
from app.probes.causes import group_by_cause
from app.probes.finding import BLOCKER, Finding
from app.report.document import render_report
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import SITE, VENV, build_torch_image, real
from tests.helpers.runtime_copies import PYQT5_QT5, TORCH_291, add_pyqt5

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

OLD = "14.26.28720.3"  # the file version of every runtime DLL in PyQt5-Qt5 5.15.2's Qt5\bin
QT_BIN = SITE + r"\PyQt5\Qt5\bin"
QT_RUNTIME = {"concrt140.dll", "msvcp140.dll", "msvcp140_1.dll", "msvcp140_2.dll", "vcruntime140.dll",
              "vcruntime140_1.dll"}


def diagnose(image, *extra: str) -> tuple[int, dict]:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["diagnose", "--root", str(image.root), "--json", "-", "--quiet", "--no-redact", *extra])
    text = out.getvalue()
    return code, json.loads(text[text.index("{"):])


def copies_found(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f["code"] == "runtime-copy-too-old"]


def test_pyqt5_qt5_copy_is_named_with_its_version_owner_and_what_importing_pyqt5_first_does(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    code, document = diagnose(image, "--env", VENV)
    (found,) = copies_found(document)
    evidence = found["evidence"]
    assert found["severity"] == "warning"  # a clean import torch works: only the import order breaks it
    assert evidence["path"] == QT_BIN + r"\msvcp140.dll" and evidence["version"] == OLD
    assert evidence["needed"] == "14.40" and evidence["torch"].startswith("2.9.1")
    assert evidence["owner"] == {"package": "PyQt5-Qt5", "version": "5.15.2", "manager": "pip"}
    assert evidence["import_name"] == "PyQt5"
    assert evidence["instead"]["en"] == "PyQt6 6.11 or newer, or PySide6 6.9.2 or newer"
    assert {c["dll"].lower() for c in evidence["copies"]} == QT_RUNTIME
    assert {c["version"] for c in evidence["copies"]} == {OLD}
    assert found["repairs"] == ["load-torch-first"]
    assert found["variant"] == "no-newer-build" and "PyQt5-Qt5" in found["title"]
    (problem,) = [p for p in document["problems"] if p["code"] == "runtime-copy-too-old"]
    assert problem["severity"] == "warning" and problem["repairs"] == ["load-torch-first"]
    # both languages: the copy, its version, its owner, the import order, the error and what to do
    for lang, words in (("en", ("before torch", "WinError 1114", "c10.dll", "PyQt6", "PySide6", "import torch")),
                        ("zh_CN", ("之前导入", "WinError 1114", "c10.dll", "PyQt6", "PySide6", "import torch"))):
        text = Finding("runtime-copy-too-old", "warning", evidence, variant="no-newer-build").text(lang)
        said = " ".join((text.title, text.explanation, text.action))
        assert QT_BIN + r"\msvcp140.dll" in said and OLD in said and "PyQt5-Qt5 5.15.2" in said, said
        assert all(w in said for w in words), (lang, said)
        assert "{" not in said


def test_shiboken2s_copy_has_no_newer_windows_build_and_points_to_pyside6(tmp_path):
    """PySide2's last release (5.15.2.1, for Python 3.10 at most) ships Microsoft's runtime 14.24 in shiboken2's
    folder."""
    image = build_torch_image(tmp_path / "image", TORCH_291)
    wheel = real(lambda: realfiles.extract("shiboken2==5.15.2.1", "shiboken2*", python="3.10"))
    for path in sorted(p for p in wheel.rglob("*") if p.is_file()):
        image.copy(path, SITE + "\\" + str(path.relative_to(wheel)).replace("/", "\\"), link=True)
    image.save()
    _, document = diagnose(image, "--env", VENV)
    (found,) = copies_found(document)
    evidence = found["evidence"]
    assert evidence["path"] == SITE + r"\shiboken2\msvcp140.dll" and evidence["version"] == "14.24.28127.4"
    assert evidence["owner"] == {"package": "shiboken2", "version": "5.15.2.1", "manager": "pip"}
    assert found["variant"] == "no-newer-build" and evidence["instead"]["en"] == "PySide6 6.9.2 or newer"
    text = Finding("runtime-copy-too-old", "warning", evidence, variant="no-newer-build").text("zh_CN")
    assert "PySide6 6.9.2 或更新版本" in text.action and "{" not in text.action


def test_the_same_copy_beside_torch_2_4_1_is_no_problem(tmp_path):
    image = build_torch_image(tmp_path / "image", realfiles.TORCH_241)
    add_pyqt5(image, package=False)
    image.save()
    _, document = diagnose(image, "--env", VENV)
    assert copies_found(document) == []


def test_a_current_copy_and_the_pythons_own_vcruntime_are_listed_but_not_a_problem(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    msvcp = next(p for p in real(realfiles.msvc_runtime_dlls) if p.name.lower() == "msvcp140.dll")
    vcruntime = real(realfiles.windows_python) / "vcruntime140.dll"
    image.copy(msvcp, SITE + r"\fresh_pkg\msvcp140.dll", link=True)
    image.copy(vcruntime, SITE + r"\old_pkg\vcruntime140.dll", link=True)  # python.exe's own stays loaded
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, system.host_path(VENV))
    listing = list_runtime_copies(env)
    by_name = {(c.path.parent.name, c.name): c for c in listing.copies}
    assert by_name[("fresh_pkg", "msvcp140.dll")].version.startswith("14.51")
    assert by_name[("fresh_pkg", "msvcp140.dll")].owner is None  # no RECORD lists it
    assert by_name[("old_pkg", "vcruntime140.dll")].module == "old_pkg"
    assert all(c.place == SITE_PACKAGES for c in listing.copies) and listing.complete
    _, document = diagnose(image, "--env", VENV)
    assert copies_found(document) == []


def test_an_old_copy_in_the_apps_own_folder_has_no_owner_and_says_so(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    old = real(realfiles.extract, PYQT5_QT5, "PyQt5/Qt5/bin/msvcp140.dll") / "PyQt5" / "Qt5" / "bin"
    node = r"C:\Users\alice\ComfyUI\custom_nodes\some-node\bin"
    image.copy(old / "msvcp140.dll", node + r"\msvcp140.dll", link=True)
    image.save()
    code, document = diagnose(image)  # found by discovery: the ComfyUI app's venv, and its folder walked
    (found,) = copies_found(document)
    assert found["evidence"]["path"] == node + r"\msvcp140.dll" and found["evidence"]["place"] == "app"
    assert found["evidence"]["owner"] is None and found["evidence"]["app"] == "ComfyUI"
    text = Finding("runtime-copy-too-old", "warning", found["evidence"], variant="no-owner").text("en")
    assert node in text.title and "no package" in text.explanation and OLD in text.explanation


def test_the_walk_stops_at_its_limits_and_says_how_far_it_got(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, system.host_path(VENV))
    full = list_runtime_copies(env)
    assert full.complete and len(full.copies) == len(QT_RUNTIME) and full.entries > 50
    few = list_runtime_copies(env, max_entries=20)
    assert few.stopped == "entries" and not few.complete and few.entries < full.entries
    shallow = list_runtime_copies(env, max_depth=1)  # PyQt5\Qt5\bin is three folders down
    assert shallow.copies == [] and shallow.deep_folders and not shallow.complete
    late = list_runtime_copies(env, budget_s=0)
    assert late.stopped == "time"


@pytest.mark.parametrize("place", ["version unreadable", "too deep"])
def test_where_the_walk_could_not_see_or_judge_a_copy_is_said_never_all_clear(tmp_path, place):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    if place == "version unreadable":  # a copy cut short: its version resource is gone
        copy = image.host(QT_BIN + r"\msvcp140.dll")
        data = copy.read_bytes()[:4096]
        copy.unlink()  # a link into the shared extracted wheel: replaced, never written through
        copy.write_bytes(data)
    else:
        image.mkdir(SITE + "\\deep" + "\\d" * 16)
    image.save()
    code, document = diagnose(image)
    (unseen,) = [f for f in document["findings"] if f["code"] == "check-failed"]
    assert code == 1 and document["complete"] is False and unseen["variant"] == "copies-unseen"
    said = "its version cannot be read" if place == "version unreadable" else "deeper than 14 folders"
    assert said in unseen["explanation"] and "2.9.1" in unseen["explanation"]


def test_winerror_1114_with_the_old_copy_loaded_is_one_problem_with_the_copy(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    _, document = diagnose(image, "--env", VENV)
    (copy,) = copies_found(document)
    old_copy = copy["evidence"]["path"]
    env_name = copy["environment"]
    static = Finding("runtime-copy-too-old", "warning", copy["evidence"], copy["repairs"], env_name)
    # the replay's finding as app/probes/replay.py writes it when c10.dll failed with the old copy loaded
    replayed = Finding("import-failed", BLOCKER, {
        "dll": "c10.dll", "winerror": 1114, "message": "[WinError 1114] A dynamic link library (DLL) "
        "initialization routine failed. Error loading \"...\\torch\\lib\\c10.dll\" or one of its dependencies.",
        "runtime_copies": [{"dll": "msvcp140.dll", "path": old_copy, "version": OLD}],
        "imported_first": [{"module": "PyQt5", "ok": True}]}, [], env_name)
    other = Finding("import-failed", BLOCKER, {"dll": "c10.dll", "winerror": 1114, "runtime_copies": [
        {"dll": "msvcp140.dll", "path": r"C:\Windows\System32\msvcp140.dll"}]}, [], env_name)
    problems = group_by_cause([static, replayed])
    (problem,) = problems
    assert problem.lead is static and problem.evidence == [replayed] and problem.severity == BLOCKER
    assert problem.repairs == ["load-torch-first"]
    assert len(group_by_cause([static, other])) == 2  # System32's copy loaded: not this copy's doing


def test_the_guided_steps_name_the_move_to_pyqt6_or_pyside6_and_the_import_order(tmp_path, capsys):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    code = main(["repair", "--root", str(image.root), "--env", VENV, "--action", "load-torch-first", "--lang", "en"])
    out = capsys.readouterr().out
    assert code == 1  # nothing was changed: the user does it
    assert "PyQt6 6.11 or newer, or PySide6 6.9.2 or newer" in out, out
    assert "import torch" in out and "--import-first PyQt5" in out, out
    assert "github.com/pytorch/pytorch/issues/169429" in out
    qt_bin = OfflineImage(image.root).host_path(QT_BIN)
    assert {p.name.lower() for p in qt_bin.iterdir() if p.suffix.lower() == ".dll"} >= QT_RUNTIME


def test_a_program_said_to_import_pyqt5_first_makes_the_old_copy_the_blocker_in_its_own_words(tmp_path, capsys):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    code, document = diagnose(image, "--env", VENV, "--import-first", "pyqt5")  # as typed: case is the user's
    (found,) = copies_found(document)
    assert found["severity"] == "blocker" and found["variant"] == "named-first" and code == 1
    assert found["title"].startswith("Your program imports PyQt5 before PyTorch")
    (problem,) = [p for p in document["problems"] if p["code"] == "runtime-copy-too-old"]
    assert problem["severity"] == "blocker" and problem["repairs"] == ["load-torch-first"]
    for lang in ("en", "zh_CN"):
        text = Finding("runtime-copy-too-old", "blocker", found["evidence"], variant="named-first").text(lang)
        said = " ".join((text.title, text.explanation, text.action))
        assert "PyQt5" in said and OLD in said and "WinError 1114" in said and "import torch" in said, said
        assert "{" not in said
    # another module first changes nothing about PyQt5's copy
    _, other = diagnose(image, "--env", VENV, "--import-first", "numpy")
    assert [f["severity"] for f in copies_found(other)] == ["warning"]


def test_every_app_said_to_import_something_first_cites_its_own_code_at_a_commit():
    import re
    from pathlib import PureWindowsPath

    from app.inventory.discovery import app_name
    from app.inventory.runtime_copies import apps_importing_first, known_apps

    cited = [app for app in known_apps() if app.get("imports_first")]
    assert {app["name"] for app in cited} >= {"X-AnyLabeling", "StoManager1"}
    for app in cited:
        sources = app["imports_first_source"]
        assert any(re.match(r"https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/\S+#L\d+", s) for s in sources), app
    assert apps_importing_first("pyqt5") == ["X-AnyLabeling", "StoManager1"]
    assert apps_importing_first("PyQt6") == ["X-AnyLabeling"] and apps_importing_first("numpy") == []
    assert app_name(PureWindowsPath(r"C:\AI\X-AnyLabeling\venv-cu12")) == "X-AnyLabeling"  # its guide's venv


def test_a_known_app_that_imports_pyqt5_first_makes_the_copy_its_blocker(tmp_path):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image)
    image.save()
    code, document = diagnose(image, "--env", VENV, "--app", "stomanager1")  # a name as typed: case is the user's
    (found,) = copies_found(document)
    assert found["severity"] == "blocker" and found["variant"] == "app-imports-first" and code == 1
    assert found["evidence"]["app"] == "StoManager1"
    assert found["title"] == "StoManager1 imports PyQt5 before PyTorch, and PyQt5 brings an old VC++ runtime"
    assert document["program"] == {"app": "StoManager1", "imports_first": ["PyQt5"]}  # what the checks assumed
    for lang, said in (("en", "Checked as StoManager1 starts, with PyQt5 imported before PyTorch."),
                       ("zh_CN", "按 StoManager1 的启动方式检查，在 PyTorch 之前导入 PyQt5。")):
        for fmt in ("text", "html"):
            assert said in render_report(document, {}, lang, fmt), (lang, fmt)
    _, plain = diagnose(image, "--env", VENV)
    assert plain["program"] is None
    assert "Checked as" not in render_report(plain, {}, "en", "text")


def test_an_app_named_on_the_command_line_must_be_a_known_one(tmp_path, capsys):
    image = build_torch_image(tmp_path / "image", TORCH_291)
    image.save()
    code = main(["diagnose", "--root", str(image.root), "--env", VENV, "--app", "Not An App", "--lang", "en"])
    err = capsys.readouterr().err
    assert code == 2 and '"Not An App"' in err and "StoManager1" in err and "X-AnyLabeling" in err, err
    # an app that imports nothing first would change nothing: refused the same way
    code = main(["diagnose", "--root", str(image.root), "--env", VENV, "--app", "ComfyUI", "--lang", "en"])
    err = capsys.readouterr().err
    assert code == 2 and '"ComfyUI"' in err and "Known: X-AnyLabeling, StoManager1." in err, err


@pytest.mark.slow
def test_walk_time_over_a_large_site_packages(tmp_path):
    """Measured, bounded: the real torch 2.9.1 wheel unpacked twenty times over (~240k entries)."""
    root = real(realfiles.extract, TORCH_291, "torch/*")
    image = build_torch_image(tmp_path / "image", TORCH_291)
    add_pyqt5(image, package=False)
    image.save()
    system = OfflineImage(image.root)
    site = system.host_path(SITE)
    for n in range(20):
        shutil.copytree(root / "torch", site / f"copy{n}" / "torch", copy_function=_link)
    env = inspect_environment(system, system.host_path(VENV))
    started = time.monotonic()
    listing = list_runtime_copies(env)
    seconds = time.monotonic() - started
    print(f"walked {listing.entries} entries in {seconds:.2f} s; {len(listing.copies)} copies")
    assert listing.complete and listing.entries > 200_000
    assert {c.name.lower() for c in listing.copies} == QT_RUNTIME


def _link(source: str, target: str) -> None:
    Path(target).hardlink_to(source)
