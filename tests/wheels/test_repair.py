"""Repair part 1 on offline images: the plan, placing the OpenMP runtime, undo byte for byte, crashes at every
journal point (SIGKILL, then rollback), a damaged backup, a file the user changed afterwards, a full disk, files in
use, and the user's own settings."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from app.demo.pe_writer import Export, build_pe
from app.main import main
from app.repair.in_use import processes_using
from app.repair.journal import DONE, INTERRUPTED, ROLLED_BACK, Journal, RollbackStopped
from app.system import restart_manager
from tests.helpers.images import PYTHON_HOME, SITE, TORCH_LIB, VENV, tree_hashes
from tests.winelab import REPO_ROOT

REPO = Path(__file__).resolve().parents[2]
LIBOMP = TORCH_LIB + r"\libomp140.x86_64.dll"
PYTHON = VENV + r"\Scripts\python.exe"


pytestmark = pytest.mark.usefixtures("data_dir")  # tests/conftest.py




def cli(*argv: str) -> int:
    return main(list(argv))


def repair_argv(image, *extra: str) -> list[str]:
    return ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime",
            "--source", "torch-bundled", *extra]


# -- the whole round trip ----------------------------------------------------------------------------------------
def test_placing_the_runtime_fixes_torch_240_and_undo_puts_every_byte_back(torch_image, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    assert cli("diagnose", "--root", str(image.root), "--quiet") == 1
    capsys.readouterr()

    assert cli(*repair_argv(image, "--plan")) == 0
    plan = capsys.readouterr().out
    assert "libomp140.x86_64.dll" in plan and "libiomp5md.dll" in plan and not (lib / "libomp140.x86_64.dll").exists()

    assert cli(*repair_argv(image, "--yes", "--json", "-")) == 0
    out = capsys.readouterr().out
    outcome = json.loads(out[out.index("{"):])
    assert outcome["state"] == "fixed" and outcome["problems_left"] == []
    assert (lib / "libomp140.x86_64.dll").read_bytes() == (lib / "libiomp5md.dll").read_bytes()
    assert cli("diagnose", "--root", str(image.root), "--quiet") == 0
    capsys.readouterr()

    assert cli("history", "--json", "-") == 0
    (item,) = json.loads(capsys.readouterr().out)["transactions"]
    assert item["state"] == DONE and item["action"] == "place-libomp140" and item["source"] == "torch-bundled"

    assert cli("undo", "--last") == 0  # undone: torch is broken again, as before the repair, and it says so
    out = capsys.readouterr().out
    assert "Undone" in out and "As before the repair, PyTorch does not load: libomp140.x86_64.dll" in out
    assert tree_hashes(lib) == before
    assert next(Journal().transactions()).state == ROLLED_BACK
    assert cli("undo", "--last") == 1 and "no repair to undo" in capsys.readouterr().err


def test_a_repair_speaks_chinese(torch_image, capsys):
    image = torch_image()
    assert cli(*repair_argv(image, "--plan", "--lang", "zh_CN")) == 0
    out = capsys.readouterr().out
    assert "修复计划" in out and "创建" in out and "撤销" in out


def test_a_stub_runtime_as_the_only_source_is_refused_with_its_reason(torch_image, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    (lib / "libiomp5md.dll").unlink()
    os.link(lib / "libiompstubs5md.dll", lib / "libiomp5md.dll")  # the single-threaded stub, renamed
    assert cli(*repair_argv(image, "--yes")) == 1
    assert "libiomp5md.dll" in capsys.readouterr().err
    assert not (lib / "libomp140.x86_64.dll").exists()


# -- crashes -------------------------------------------------------------------------------------------------------
def run_killed(image, data_dir: Path, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_CRASH_AT": point}
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *repair_argv(image, "--yes")], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("replacing", [False, True], ids=["create", "replace"])
def test_a_repair_killed_at_any_journal_point_is_found_and_rolled_back_byte_for_byte(torch_image, data_dir,
                                                                                     replacing, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    if replacing:  # a wrong copy is already there: the repair replaces it, so it needs a backup
        image.write(LIBOMP, build_pe(dll_name="libomp140.x86_64.dll", machine="x86", exports=[Export(703, "x")]))
    before = tree_hashes(lib)
    points = ["begin", "intent:1", "change:1", "applied:1", "finish"] + (["backup:1"] if replacing else [])
    for point in points:
        killed = run_killed(image, data_dir, point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        journal = Journal()
        if point == "finish":  # everything was recorded before the kill: a finished repair, undone on request
            assert journal.unfinished() == [] and journal.last().state == DONE
            assert cli("undo", "--last") == 0
            capsys.readouterr()
            assert tree_hashes(lib) == before
            continue
        (unfinished,) = journal.unfinished()
        assert unfinished.state == INTERRUPTED
        assert cli("diagnose", "--root", str(image.root), "--quiet", "--json", os.devnull) in (0, 1)
        assert f"undo --transaction {unfinished.id}" in capsys.readouterr().err  # offered at the next start
        assert cli("undo", "--transaction", unfinished.id) == 0
        capsys.readouterr()
        assert tree_hashes(lib) == before, point
        assert journal.unfinished() == []


def test_a_rollback_killed_halfway_finishes_at_the_next_undo(torch_image, data_dir, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    assert cli(*repair_argv(image, "--yes")) == 0
    env = {**os.environ, "TDD_DATA_DIR": str(data_dir), "TDD_CRASH_AT": "restore:1"}
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; sys.exit(main(sys.argv[1:]))"
    killed = subprocess.run([sys.executable, "-c", code, "undo", "--last"], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -9
    (unfinished,) = Journal().unfinished()
    assert cli("undo", "--transaction", unfinished.id) == 0
    assert tree_hashes(lib) == before
    capsys.readouterr()


# -- undo never overwrites what it should not --------------------------------------------------------------------
def test_a_file_changed_after_the_repair_stops_undo_and_both_copies_are_kept(torch_image, capsys):
    image = torch_image()
    image.write(LIBOMP, build_pe(dll_name="libomp140.x86_64.dll", machine="x86", exports=[Export(703, "x")]))
    original = image.host(LIBOMP).read_bytes()
    assert cli(*repair_argv(image, "--yes")) == 0
    users_own = b"MZ the user's own newer copy"
    image.host(LIBOMP).write_bytes(users_own)
    assert cli("undo", "--last") == 1
    err = capsys.readouterr().err
    assert "changed after the repair" in err
    assert image.host(LIBOMP).read_bytes() == users_own  # not overwritten
    (transaction,) = Journal().unfinished()
    backup = transaction.folder / "backups" / "1"
    assert backup.read_bytes() == original and str(backup) in err


def test_a_damaged_backup_is_never_restored(torch_image, capsys):
    image = torch_image()
    image.write(LIBOMP, build_pe(dll_name="libomp140.x86_64.dll", machine="x86", exports=[Export(703, "x")]))
    assert cli(*repair_argv(image, "--yes")) == 0
    placed = image.host(LIBOMP).read_bytes()
    transaction = next(Journal().transactions())
    (transaction.folder / "backups" / "1").write_bytes(b"damaged")
    with pytest.raises(RollbackStopped) as stopped:
        transaction.rollback(__import__("app.system.identity", fromlist=["system_for"]).system_for(transaction.machine))
    assert stopped.value.code == "backup-damaged"
    assert image.host(LIBOMP).read_bytes() == placed
    capsys.readouterr()


def mount_small_disk(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


def test_a_full_disk_fails_cleanly_and_leaves_nothing_behind(torch_image, tmp_path, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    original = tmp_path / "lib-original"
    os.rename(lib, original)
    if not mount_small_disk(lib, "1M"):  # torch\\lib itself becomes a 1 MB disk
        pytest.skip("cannot mount a small disk here (needs root)")
    try:
        (lib / "asmjit.dll").write_bytes((original / "asmjit.dll").read_bytes())
        (lib / "libiomp5md.dll").symlink_to(original / "libiomp5md.dll")  # the 1.9 MB runtime does not fit
        before = tree_hashes(lib)
        assert cli(*repair_argv(image, "--yes")) == 1
        assert "the disk is full" in capsys.readouterr().err
        assert tree_hashes(lib) == before and not list(lib.glob(".*"))
        assert next(Journal().transactions()).state == ROLLED_BACK
    finally:
        subprocess.run(["umount", str(lib)], capture_output=True)


# -- files in use --------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def mapped_elsewhere(dll: Path) -> Iterator[subprocess.Popen]:
    """Another process with `dll` mapped (as a running program has its DLLs), until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import mmap, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); "
        "print('ready', flush=True); sys.stdin.read()"), str(dll)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()


def test_a_program_with_a_dll_of_torch_lib_mapped_is_named(torch_image):
    image = torch_image()
    dll = image.host(TORCH_LIB) / "asmjit.dll"
    target = image.host(TORCH_LIB) / "libomp140.x86_64.dll"
    with mapped_elsewhere(dll) as holder:
        (found,) = [h for h in processes_using([target]) if h["pid"] == holder.pid]
        if not restart_manager.available():  # Windows' Restart Manager names the program, not its files
            assert str(dll.resolve()) in [str(Path(f).resolve()) for f in found["files"]]
    assert not [h for h in processes_using([target]) if h["pid"] == holder.pid]


def test_a_program_with_any_dll_below_a_folder_that_is_set_aside_or_replaced_is_named(torch_image):
    """A torch folder set aside (a user-site torch shadowing the real one) or replaced by pip (an upgrade) is held by
    a program that has any DLL below it loaded: ComfyUI left running with torch\\lib's DLLs mapped is named before
    anything changes, never met as "access denied" halfway and a rollback."""
    from app.repair.changes.packages import targets

    image = torch_image()
    torch = image.host(TORCH_LIB).parent
    dll = image.host(TORCH_LIB) / "asmjit.dll"
    site_packages = torch.parent
    with mapped_elsewhere(dll) as holder:
        (found,) = [h for h in processes_using([torch]) if h["pid"] == holder.pid]
        if not restart_manager.available():  # Windows' Restart Manager names the program, not its files
            assert str(dll.resolve()) in [str(Path(f).resolve()) for f in found["files"]]
        (found,) = [h for h in processes_using(targets({"site_packages": str(site_packages)})) if h["pid"] ==
                    holder.pid]  # the undo of a package change
    assert not [h for h in processes_using([torch]) if h["pid"] == holder.pid]
    # below means below: torch's folder is not held by a program that has a sibling folder's file loaded
    sibling = site_packages / "torchvision" / "image.pyd"
    sibling.parent.mkdir()
    sibling.write_bytes(dll.read_bytes())
    with mapped_elsewhere(sibling) as holder:
        assert not [h for h in processes_using([torch]) if h["pid"] == holder.pid]
        assert [h for h in processes_using([sibling.parent]) if h["pid"] == holder.pid]


def test_a_folder_that_cannot_be_listed_is_never_a_list_that_says_nobody(tmp_path):
    """The Restart Manager is asked about the files listed below a folder target: a folder that could not be listed
    (denied, gone meanwhile) gives no list at all, so the check that needs none (psutil) answers, never "nobody"
    from a list with holes."""
    from app.repair.in_use import _loaded_below

    (tmp_path / "torch" / "lib").mkdir(parents=True)
    (tmp_path / "torch" / "lib" / "c10.dll").write_bytes(b"MZ")
    assert _loaded_below({str(tmp_path / "torch")}) == {os.path.normcase(str(tmp_path / "torch" / "lib" / "c10.dll"))}
    assert _loaded_below({str(tmp_path / "torch"), str(tmp_path / "gone")}) is None


def test_the_torch_upgrade_names_the_torch_folder_a_running_program_would_hold(torch_image):
    """The upgrade's plan names torch's folder as what it changes, so a program holding torch is named first."""
    from app.inventory.environment import inspect_environment
    from app.repair.actions import action_for
    from app.system.offline import OfflineImage

    class RunsPrograms(OfflineImage):  # the upgrade runs pip: planned as on a computer whose programs can run
        can_run_programs = True

    image = torch_image()
    image.write(SITE + r"\torch-2.4.0.dist-info\METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0+cpu\n")
    system = RunsPrograms(image.root)
    env = inspect_environment(system, image.host(PYTHON))
    plan = action_for("upgrade-torch").plan(system, env, None, [], None)
    (torch,) = [c for c in plan.changes if c.target == "torch"]
    assert torch.host_target == env.torch.folder == image.host(TORCH_LIB).parent


def test_a_program_we_may_not_look_into_counts_only_when_it_is_a_python_or_the_environments_own():
    """The environment a target belongs to, never a drive's root or a user's own folder (where every program of
    the user runs from): Windows' services must not be named as maybe holding torch's files."""
    from app.repair.in_use import _environment_folders, _may_hold

    sep = os.sep
    portable = sep.join(["", "c", "ComfyUI", "python_embeded"])
    venv = sep.join(["", "home", "me", "venv"])
    assert _environment_folders({portable + sep + sep.join(["Lib", "site-packages", "torch", "lib"])}) == {portable}
    assert _environment_folders({venv + sep + sep.join(["lib", "python3.12", "site-packages", "torch", "lib"])}) \
        == {venv}
    assert _environment_folders({portable}) == {portable}  # a runtime copy beside python.exe
    assert _environment_folders({sep + "c", sep.join(["", "home", "me"])}) == set()
    roots = {portable}
    assert _may_hold({"name": "python.exe", "exe": None}, set()) and _may_hold({"name": "pythonw.exe"}, set())
    assert _may_hold({"name": "ComfyUI.exe", "exe": portable + sep + "ComfyUI.exe"}, roots)
    assert not _may_hold({"name": "svchost.exe", "exe": sep.join(["", "c", "Windows", "svchost.exe"])}, roots)
    assert not _may_hold({"name": "pythonservice.exe", "exe": None}, roots)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root: a process of another "
                    "user, whose memory maps we may not read, is made by dropping to 'nobody'")
def test_a_python_we_may_not_look_into_is_named_as_maybe_holding_never_taken_for_nobody(torch_image):
    """ComfyUI started as administrator: psutil may not read its memory maps (AccessDenied). Here the holder is
    root's python with a DLL of torch\\lib mapped and the check runs as 'nobody': the holder is named, marked
    unreadable, and the refusal says it may hold the files, in both languages."""
    image = torch_image()
    dll = image.host(TORCH_LIB) / "asmjit.dll"
    import psutil

    python = Path("/usr/bin/python3")  # an interpreter 'nobody' may run (ours may sit in root's own home)
    if not python.exists():
        pytest.skip("needs /usr/bin/python3 for the unprivileged check")
    check = ("import json, sys; from pathlib import Path; from app.repair.in_use import processes_using; "
             "from app.repair.run import FilesInUse; held = [h for h in processes_using([Path(sys.argv[1])]) "
             "if h['pid'] == int(sys.argv[2])]; print(json.dumps({'held': held, "
             "'en': FilesInUse(held).text('en'), 'zh': FilesInUse(held).text('zh_CN')}))")
    target = image.host(TORCH_LIB) / "libomp140.x86_64.dll"
    site = Path(psutil.__file__).parent.parent  # psutil's wheel is abi3: any Python 3 imports it
    with mapped_elsewhere(dll) as holder:
        result = subprocess.run([str(python), "-c", check, str(target), str(holder.pid)], capture_output=True,
                                text=True, cwd=REPO_ROOT, timeout=120, user=65534, group=65534,
                                env={"PATH": os.environ.get("PATH", ""),
                                     "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(site)])})
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout)
    (found,) = seen["held"]
    assert found["unreadable"] is True and found["files"] == []
    assert f"({holder.pid})" in seen["en"] and "may have PyTorch's files open" in seen["en"]
    assert "have PyTorch's files open: " not in seen["en"]  # not said as a fact
    assert "可能正在使用" in seen["zh"] and "无权查看" in seen["zh"]


# -- the user's own settings -----------------------------------------------------------------------------------
def user_variable(image, name: str):
    from app.system.offline import OfflineImage

    found = {k.lower(): v for k, v in OfflineImage(image.root).environment("user").items()}
    return found.get(name.lower())

def test_unsafe_variable_is_removed_from_the_users_settings_and_undo_brings_it_back(torch_image, capsys):
    image = torch_image(libomp=True)
    image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    assert cli("repair", "--root", str(image.root), "--env", PYTHON, "--action", "unset-env-var", "--yes") == 0
    from app.system.offline import OfflineImage

    assert "KMP_DUPLICATE_LIB_OK" not in OfflineImage(image.root).environment("user")
    assert cli("undo", "--last") == 0
    assert OfflineImage(image.root).environment("user")["KMP_DUPLICATE_LIB_OK"] == "TRUE"
    capsys.readouterr()


def test_undo_brings_a_removed_variable_back_with_the_registry_type_it_had(torch_image, capsys):
    """A REG_SZ whose text holds a % (not to be expanded) comes back REG_SZ, not as the REG_EXPAND_SZ a new value
    with a % would get; a REG_EXPAND_SZ comes back expandable."""
    from app.system.base import RegistryValue
    from app.system.offline import OfflineImage

    image = torch_image(libomp=True)
    for name, kind, value in (("PYTORCH_CUDA_ALLOC_CONF", "REG_SZ", "max_split_size_mb:%SIZE%"),
                              ("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "REG_EXPAND_SZ", "%RATIO%")):
        image.set_value(r"HKCU\Environment", name, kind, value)
        image.set_variable("user", name, value)
    assert cli("repair", "--root", str(image.root), "--env", PYTHON, "--action", "unset-env-var", "--yes") == 0
    removed = OfflineImage(image.root)
    assert removed.registry_value(r"HKCU\Environment", "PYTORCH_CUDA_ALLOC_CONF") is None
    assert removed.registry_value(r"HKCU\Environment", "PYTORCH_MPS_HIGH_WATERMARK_RATIO") is None
    assert cli("undo", "--last") == 0
    back = OfflineImage(image.root)
    assert back.registry_value(r"HKCU\Environment", "PYTORCH_CUDA_ALLOC_CONF") == RegistryValue(
        "REG_SZ", "max_split_size_mb:%SIZE%")
    assert back.registry_value(r"HKCU\Environment", "PYTORCH_MPS_HIGH_WATERMARK_RATIO") == RegistryValue(
        "REG_EXPAND_SZ", "%RATIO%")
    assert back.environment("user")["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:%SIZE%"
    capsys.readouterr()


@pytest.mark.parametrize("name, value, code", [("KMP_DUPLICATE_LIB_OK", "TRUE", "unsafe-env-var"),
                                               ("PYTORCH_ENABLE_MPS_FALLBACK", "1", "irrelevant-env-var")])
def test_a_variable_set_for_the_whole_computer_names_the_guided_repair_that_plans(torch_image, name, value, code):
    """unset-env-var edits the user's own settings only (it refused a machine variable): the finding of a variable
    of the computer's settings names the guided unset-machine-variable, and its steps name the variable."""
    from app.inventory.environment import inspect_environment
    from app.probes.runner import run_diagnosis
    from app.repair.run import plan_repair
    from app.system.offline import OfflineImage

    image = torch_image(libomp=True)
    image.set_variable("system", name, value)
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    diagnosis = run_diagnosis(system, [env])
    (finding,) = [f for f in diagnosis.findings if f.code == code]
    assert finding.repairs == ["unset-machine-variable"]
    plan, _ = plan_repair(system, env, "unset-machine-variable", None, diagnosis)
    steps = " ".join(step["en"] for step in plan.guide.steps)
    assert name in steps and "points into" not in steps  # no program to name for such a variable


def test_an_entry_of_the_computers_path_names_no_repair_of_the_users_path(torch_image):
    """remove-path-entry edits the user's own PATH: a dead entry of the computer's PATH is advice only (it named a
    repair that always refused); the same entry in the user's PATH is removed by it."""
    from app.inventory.environment import inspect_environment
    from app.probes.runner import run_diagnosis
    from app.repair.run import plan_repair
    from app.system.offline import OfflineImage

    image = torch_image(libomp=True)
    image.set_variable("system", "PATH", image.env["system"]["PATH"] + r";C:\Gone\bin")
    image.set_variable("user", "PATH", r"C:\Old\bin")
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    diagnosis = run_diagnosis(system, [env])
    dead = {f.evidence["entry"]: f.repairs for f in diagnosis.findings if f.code == "path-dead-entry"}
    assert dead == {r"C:\Gone\bin": [], r"C:\Old\bin": ["remove-path-entry"]}
    plan, _ = plan_repair(system, env, "remove-path-entry", None, diagnosis)
    assert [(c.target, c.value) for c in plan.changes] == [("PATH", "")]
    assert any("in the computer-wide PATH, not in yours" in note["en"] for note in plan.notes)  # asked by name


def test_a_dead_entry_of_the_users_path_is_removed_and_undo_restores_the_path(torch_image, capsys):
    image = torch_image(libomp=True)
    image.set_variable("user", "PATH", r"C:\Gone\bin;" + PYTHON_HOME)
    assert cli("repair", "--root", str(image.root), "--env", PYTHON, "--action", "remove-path-entry", "--yes") == 0

    assert user_variable(image, "path") == PYTHON_HOME
    assert cli("undo", "--last") == 0
    assert user_variable(image, "path") == r"C:\Gone\bin;" + PYTHON_HOME
    capsys.readouterr()


def test_the_journal_lives_where_platformdirs_says(monkeypatch):
    import platformdirs

    from app.data_folder import data_folder

    monkeypatch.delenv("TDD_DATA_DIR")
    assert data_folder() == Path(platformdirs.user_data_dir("TorchDllDoctor", appauthor=False))


def test_the_users_own_visual_studio_copy_is_the_first_source(torch_image, capsys):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    vs = (r"C:\Program Files\Microsoft Visual Studio\2022\BuildTools\VC\Redist\MSVC\14.40.33807\debug_nonredist"
          r"\x64\Microsoft.VC143.OpenMP.LLVM\libomp140.x86_64.dll")
    image.copy(lib / "libiomp5md.dll", vs, link=True)  # stands in for Microsoft's build: same functions, same numbers
    image.write(r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\abc\state.json", json.dumps(
        {"installationPath": r"C:\Program Files\Microsoft Visual Studio\2022\BuildTools"}))
    assert cli("repair", "--root", str(image.root), "--env", PYTHON, "--action", "place-libomp140", "--yes",
               "--json", "-") == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["plan"]["source"] == "vs"
    assert "Visual Studio" in out
