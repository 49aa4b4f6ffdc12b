"""An old VC++ runtime that Windows finds before System32's: beside python.exe, where the application folder comes
first in the DLL search. Reinstalling the redistributable cannot help while it is there, so the diagnosis names the
copy and its owner, and the repair fits the owner:

- a conda environment whose vc14_runtime is old: `update-runtime-copy`, conda's own command, conda's files untouched;
- ComfyUI's portable Python with an old msvcp140.dll that no record lists (the forums' "copy this DLL into
  python_embeded"): `set-aside-runtime-copy` renames it and its siblings in place, then Windows loads System32's;
  undo names them back;
- the same with System32's own copy too old: the runtime must be installed first, and the plan says so.

Real files: torch 2.9.1's torch\\lib (needs msvcp140.dll 14.40), python.org's embeddable CPython 3.12, Microsoft's
runtime 14.51 and 14.29 (the msvc-runtime wheels) in System32, and Microsoft's runtime 14.26.28720.3 as the old copy
(PyQt5-Qt5 5.15.2's files, the same bytes Microsoft shipped)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from app.main import main
from app.probes.finding import Finding
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import real
from tests.helpers.runtime_copies import OLD_FILES, PORTABLE, add_torch, old_runtime, portable_image, windows

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

OLD = "14.26.28720.3"
CONDA = r"C:\Users\alice\miniconda3"


def conda_image(root: Path) -> ImageBuilder:
    """Miniconda's base environment: python.exe at the prefix, and vc14_runtime's files beside it, old."""
    image = ImageBuilder(root)
    windows(image)
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll"):
        image.copy(python / name, CONDA + "\\" + name, link=True)
    for name in OLD_FILES:
        image.copy(old_runtime() / name, CONDA + "\\" + name, link=True)
    records = {"vc14_runtime-14.26.28720-h5fd5c5e_0.json": {
                   "name": "vc14_runtime", "version": "14.26.28720", "channel": "https://repo.anaconda.com/pkgs/main",
                   "depends": [], "files": list(OLD_FILES)},
               "vs2015_runtime-14.26.28720-h7a5d1de_0.json": {
                   "name": "vs2015_runtime", "version": "14.26.28720", "depends": ["vc14_runtime >=14.26.28720"],
                   "files": []},
               "python-3.12.0-h1d929f7_0.json": {"name": "python", "version": "3.12.0", "depends": ["vc14_runtime"],
                                                 "files": ["python.exe", "python312.dll"]}}
    for name, record in records.items():
        image.write(CONDA + r"\conda-meta" + "\\" + name, json.dumps(record))
    add_torch(image, CONDA + r"\Lib\site-packages")
    image.save()
    return image


def diagnose(image: ImageBuilder, env: str) -> tuple[int, dict]:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["diagnose", "--root", str(image.root), "--env", env, "--json", "-", "--quiet", "--no-redact"])
    text = out.getvalue()
    return code, json.loads(text[text.index("{"):])


def blockers(document: dict) -> list[dict]:
    return [p for p in document["problems"] if p["severity"] == "blocker"]


def files_of(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_condas_old_vc14_runtime_is_named_and_its_repair_is_condas_own_command(tmp_path, capsys):
    image = conda_image(tmp_path / "image")
    code, document = diagnose(image, CONDA)
    (problem,) = blockers(document)
    assert code == 1 and problem["code"] == "vc-runtime-too-old" and problem["repairs"] == ["update-runtime-copy"]
    lead = document["findings"][problem["findings"][0]]
    evidence = lead["evidence"]
    assert lead["variant"] == "copy-conda" and evidence["path"] == CONDA + r"\msvcp140.dll"
    assert evidence["found"] == OLD and evidence["system_version"].startswith("14.51") and evidence["system_ok"]
    assert evidence["owner"]["package"] == "vc14_runtime" and evidence["owner"]["manager"] == "conda"
    for lang, words in (("en", ("conda package vc14_runtime 14.26.28720", "System32", "does not change")),
                        ("zh_CN", ("conda 包 vc14_runtime 14.26.28720", "System32", "改变不了"))):
        text = Finding("vc-runtime-too-old", "blocker", evidence, variant="copy-conda").text(lang)
        said = " ".join((text.title, text.explanation, text.action))
        assert all(w in said for w in words) and f'conda install -p "{CONDA}"' in said and "{" not in said, said
    lib = image.host(CONDA)
    before = files_of(lib)
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", CONDA, "--action", "update-runtime-copy", "--lang",
                 "en"])
    out = capsys.readouterr().out
    assert code == 1  # guided: nothing changed, the user runs conda
    assert f'conda install -p "{CONDA}" "vc14_runtime>=14.40"' in out and "Anaconda Prompt" in out, out
    assert files_of(lib) == before


def test_an_old_copy_nobody_owns_beside_portable_python_is_set_aside_and_undone_byte_for_byte(tmp_path, capsys):
    image = portable_image(tmp_path / "image")
    code, document = diagnose(image, PORTABLE)
    (problem,) = blockers(document)  # one problem: the runtime-copies walk leaves python.exe's own folder to this
    assert problem["code"] == "vc-runtime-too-old" and problem["repairs"] == ["set-aside-runtime-copy"]
    assert not [f for f in document["findings"] if f["code"] == "runtime-copy-too-old"]
    lead = document["findings"][problem["findings"][0]]
    assert lead["variant"] == "copy-no-owner" and lead["evidence"]["owner"] is None
    assert lead["evidence"]["set_aside"] == ["msvcp140.dll", "concrt140.dll", "msvcp140_1.dll", "msvcp140_2.dll"]
    assert lead["evidence"]["system_state"]["en"].endswith("new enough.")
    folder = image.host(PORTABLE)
    before = files_of(folder)
    argv = ["repair", "--root", str(image.root), "--env", PORTABLE, "--action", "set-aside-runtime-copy",
            "--lang", "en"]
    capsys.readouterr()
    assert main([*argv, "--plan"]) == 0
    plan = capsys.readouterr().out
    assert "renamed in place" in plan and "14.51" in plan and "vcruntime140" not in plan, plan
    assert main([*argv, "--yes"]) == 0, capsys.readouterr()
    after = {p.name for p in folder.iterdir()}
    assert not after & set(OLD_FILES)
    assert {f"{name}.set-aside-by-torch-dll-doctor" for name in OLD_FILES} <= after
    assert {"vcruntime140.dll", "vcruntime140_1.dll", "python.exe"} <= after  # Python's own: never touched
    code, again = diagnose(image, PORTABLE)
    assert not [p for p in again["problems"] if p["code"] == "vc-runtime-too-old"]
    assert main(["undo", "--last"]) == 0
    assert files_of(folder) == before


def test_with_system32s_copy_too_old_the_runtime_comes_first_and_the_plan_says_so(tmp_path, capsys):
    image = portable_image(tmp_path / "image", realfiles.MSVC_RUNTIME_1429, "14.29.30133")
    _, document = diagnose(image, PORTABLE)
    (problem,) = blockers(document)
    assert problem["repairs"] == ["install-vc-runtime", "set-aside-runtime-copy"]  # Windows' own copy first
    lead = document["findings"][problem["findings"][0]]
    assert lead["evidence"]["system_ok"] is False and lead["evidence"]["system_version"].startswith("14.29")
    for lang, said in (("en", "too old as well."), ("zh_CN", "也太旧了。")):
        text = Finding("vc-runtime-too-old", "blocker", lead["evidence"], variant="copy-no-owner").text(lang)
        assert said in text.explanation and "{" not in text.explanation + text.action, text
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", PORTABLE, "--action", "set-aside-runtime-copy",
                 "--yes", "--lang", "en"])
    err = capsys.readouterr()
    assert code == 1 and "Install the current Visual C++ runtime first" in err.out + err.err
    assert (image.host(PORTABLE) / "msvcp140.dll").is_file()  # refused: nothing changed
    assert OfflineImage(image.root).host_path(PORTABLE + r"\msvcp140.dll").is_file()


def test_a_copy_a_pip_package_put_beside_python_names_that_package_and_its_own_upgrade(tmp_path, capsys):
    """A pip package whose wheel puts msvcp140.dll into the prefix (its `.data/data/` scheme) of a Python that is not
    a venv: its RECORD lists it as ../../msvcp140.dll. The guide upgrades that package with this Python's pip."""
    image = portable_image(tmp_path / "image")
    info = PORTABLE + r"\Lib\site-packages\old_runtime_pkg-1.0.dist-info"
    rows = [f"../../{name},sha256=,1" for name in OLD_FILES] + ["old_runtime_pkg-1.0.dist-info/RECORD,,"]
    image.write(info + r"\RECORD", "\n".join(rows) + "\n")
    image.write(info + r"\METADATA", "Metadata-Version: 2.1\nName: old-runtime-pkg\nVersion: 1.0\n")
    image.save()
    _, document = diagnose(image, PORTABLE)
    (problem,) = blockers(document)
    lead = document["findings"][problem["findings"][0]]
    assert lead["variant"] == "copy-pip" and problem["repairs"] == ["update-runtime-copy"]
    assert lead["evidence"]["owner"]["package"].lower().replace("_", "-") == "old-runtime-pkg"
    capsys.readouterr()
    code = main(["repair", "--root", str(image.root), "--env", PORTABLE, "--action", "update-runtime-copy",
                 "--lang", "zh_CN"])
    out = capsys.readouterr().out
    assert code == 1 and "-m pip install --upgrade" in out and "python.exe" in out and "pip 会把" in out, out


def test_the_set_aside_leaves_files_a_package_owns_or_whose_version_cannot_be_read(tmp_path):
    """Beside the unowned msvcp140.dll: concrt140.dll listed in a package's RECORD, and a msvcp140_2.dll that is
    not a readable DLL. Neither is renamed; the plan lists exactly what the check recorded."""
    from app.inventory.environment import inspect_environment
    from app.probes.runner import run_diagnosis
    from app.repair.runtime_copy import SetAsideRuntimeCopy

    image = portable_image(tmp_path / "image")
    info = PORTABLE + r"\Lib\site-packages\some_pkg-1.0.dist-info"
    image.write(info + r"\RECORD", "../../concrt140.dll,sha256=,1\nsome_pkg-1.0.dist-info/RECORD,,\n")
    image.write(PORTABLE + r"\msvcp140_2.dll", b"MZ not really a DLL")
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, system.host_path(PORTABLE))
    diagnosis = run_diagnosis(system, [env])
    (finding,) = [f for f in diagnosis.findings if f.code == "vc-runtime-too-old"]
    assert finding.evidence["set_aside"] == ["msvcp140.dll", "msvcp140_1.dll"]
    plan = SetAsideRuntimeCopy().plan(system, env, diagnosis.machine, diagnosis.findings, None)
    assert [c.host_target.name for c in plan.changes] == ["msvcp140.dll", "msvcp140_1.dll"]


def test_the_set_aside_refuses_a_copy_outside_the_folder_of_python_exe(tmp_path):
    """Only python.exe's own folder: an old copy found elsewhere (a folder torch adds, PATH) may belong to another
    program, whatever its record says."""
    from app.inventory.environment import inspect_environment
    from app.inventory.machine import read_machine_facts
    from app.repair.plan import PlanRefused
    from app.repair.runtime_copy import SetAsideRuntimeCopy

    image = portable_image(tmp_path / "image")
    elsewhere = r"C:\Program Files\Some Tool\bin"
    image.copy(old_runtime() / "msvcp140.dll", elsewhere + r"\msvcp140.dll", link=True)
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, system.host_path(PORTABLE))
    forged = Finding("vc-runtime-too-old", "blocker", {
        "path": elsewhere + r"\msvcp140.dll", "found": OLD, "needed": "14.40", "system_ok": True,
        "folder": elsewhere, "set_aside": ["msvcp140.dll"]}, ["set-aside-runtime-copy"], PORTABLE + r"\python.exe",
        "copy-no-owner")
    with pytest.raises(PlanRefused) as refused:
        SetAsideRuntimeCopy().plan(system, env, read_machine_facts(system), [forged], None)
    assert "not in the folder of python.exe" in refused.value.reasons[0]["en"]
    assert (image.host(elsewhere) / "msvcp140.dll").is_file()


def test_writing_over_a_linked_file_never_changes_the_shared_original(tmp_path):
    """The image builder hard-links the real files; a test that writes over one must not write into the cache."""
    shared = tmp_path / "shared.dll"
    shared.write_bytes(b"MZ the real file")
    image = ImageBuilder(tmp_path / "image")
    linked = image.copy(shared, r"C:\x\a.dll", link=True)
    image.write(r"C:\x\a.dll", b"MZ another")
    assert shared.read_bytes() == b"MZ the real file" and linked.read_bytes() == b"MZ another"


@pytest.mark.slow
def test_set_aside_killed_at_every_journal_point_is_put_back_by_one_undo_and_never_undone_while_held(
        tmp_path, data_dir, capsys):
    """SIGKILL at each of the four renames' journal points: the journal says interrupted (finished at `finish`),
    and one undo leaves python.exe's folder byte for byte as before. Held at the second rename, a second
    process's `undo --last` is refused and changes nothing."""
    import os
    import subprocess
    import sys
    import time

    from app.repair.journal import Journal
    from tests.helpers.repair_process import BOOT

    image = portable_image(tmp_path / "image")
    folder = image.host(PORTABLE)
    before = files_of(folder)
    argv = ["repair", "--root", str(image.root), "--env", PORTABLE, "--action", "set-aside-runtime-copy", "--yes"]
    points = ["begin", *[f"{kind}:{n}" for n in range(1, 5) for kind in ("intent", "change", "applied")], "finish"]
    for point in points:
        env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_CRASH_AT": point}
        killed = subprocess.run([sys.executable, "-c", BOOT, *argv], env=env, capture_output=True, text=True,
                                timeout=120)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        journal = Journal()
        newest = next(journal.transactions())
        if point == "finish":
            assert newest.state == "done" and journal.unfinished() == []
            assert main(["undo", "--last"]) == 0
        else:
            assert newest.state == "interrupted", point
            (unfinished,) = journal.unfinished()
            assert main(["undo", "--transaction", unfinished.id]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert files_of(folder) == before, point

    go = tmp_path / "go"
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_PAUSE_AT": "change:2", "TDD_PAUSE_FILE": str(go)}
    repair = subprocess.Popen([sys.executable, "-c", BOOT, *argv], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    reached, deadline = Path(str(go) + ".reached"), time.monotonic() + 60
    while not reached.exists():
        assert repair.poll() is None and time.monotonic() < deadline, repair.communicate()
        time.sleep(0.02)
    held = files_of(folder)
    assert main(["undo", "--last"]) == 1 and "Another repair or undo is running right now" in capsys.readouterr().err
    assert files_of(folder) == held
    go.write_text("go")
    repair.communicate(timeout=120)
    assert repair.returncode == 0 and next(Journal().transactions()).state == "done"
    assert main(["undo", "--last"]) == 0
    assert files_of(folder) == before
