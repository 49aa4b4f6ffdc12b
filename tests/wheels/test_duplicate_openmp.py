"""`remove-duplicate-openmp` on copied drives with the real files: torch 2.4.1's own DLLs, and Intel's OpenMP runtime
from two real intel-openmp wheels (2023.2.0: another build; 2024.2.1: the very bytes torch 2.4.1 ships) in a conda
`Library\\bin`, owned by a conda package (conda-meta) or a pip one (RECORD). The second copy is a blocker, set aside
by a rename that is journalled, and undo names it back byte for byte, or stops rather than overwrite."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from app.demo.image_builder import ImageBuilder
from app.main import main
from app.repair.journal import Journal, RollbackStopped
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.duplicate_openmp import CONDA, CONDA_SITE, OTHER_BUILD, SET_ASIDE, conda_image, intel_runtime
from tests.helpers.images import SITE, VENV

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.wheels]

SAME_BUILD = realfiles.INTEL_OPENMP  # 2024.2.1: byte for byte the libiomp5md.dll torch 2.4.1 ships


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def diagnosis(capsys, image: ImageBuilder, env: str) -> tuple[int, dict]:
    code = main(["diagnose", "--root", str(image.root), "--env", env, "--json", "-"])
    out = capsys.readouterr().out
    return code, json.loads(out[out.index("{"):])


def conflicts(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f["code"] == "openmp-conflict"]


def test_another_intel_build_in_conda_library_bin_is_a_blocker_set_aside_by_rename_and_undone(tmp_path, capsys):
    other = intel_runtime(OTHER_BUILD)
    image = conda_image(tmp_path / "img", other)
    library_copy = image.host(CONDA + r"\Library\bin\libiomp5md.dll")
    torch_copy = image.host(CONDA_SITE + r"\torch\lib\libiomp5md.dll")
    assert hashlib.sha256(other.read_bytes()).digest() != hashlib.sha256(torch_copy.read_bytes()).digest()

    code, document = diagnosis(capsys, image, CONDA)
    (conflict,) = conflicts(document)
    assert code == 1 and conflict["severity"] == "blocker" and conflict["repairs"] == ["remove-duplicate-openmp"]
    evidence = conflict["evidence"]
    assert evidence["other"].endswith(r"\miniconda3\Library\bin\libiomp5md.dll")  # the user name is redacted
    assert evidence["torch_copy"]["version"] == "5.0.2024.320" and evidence["other_copy"]["version"] != "5.0.2024.320"
    assert evidence["owner"]["manager"] == "conda" and evidence["owner"]["package"] == "intel-openmp"
    assert evidence["used_by"] == ["mkl"] and evidence["same_build"] is False
    assert "KMP_DUPLICATE_LIB_OK" not in " ".join(r for f in document["findings"] for r in f["repairs"])

    repair = ["repair", "--root", str(image.root), "--env", CONDA, "--action", "remove-duplicate-openmp"]
    code, plan = cli(capsys, *repair, "--plan")
    assert code == 0 and SET_ASIDE in plan and "intel-openmp 2023.2.0" in plan and "mkl" in plan
    assert "conda install pytorch -c pytorch" in plan and "Do not set KMP_DUPLICATE_LIB_OK" in plan
    assert library_copy.exists()  # a plan changes nothing
    code, zh = cli(capsys, *repair, "--plan", "--lang", "zh_CN")
    assert code == 0 and "放到一边" in zh and "conda 包 intel-openmp 2023.2.0" in zh

    code = main([*repair, "--yes", "--json", "-"])
    out = capsys.readouterr().out
    outcome = json.loads(out[out.index("{"):])
    assert code == 0 and outcome["state"] == "fixed", out
    set_aside = library_copy.with_name(SET_ASIDE)
    assert not library_copy.exists() and set_aside.read_bytes() == other.read_bytes()  # renamed, not deleted
    (step,) = next(Journal().transactions()).steps()
    assert step.intent["op"] == "rename" and step.applied
    assert step.intent["sha256"] == hashlib.sha256(other.read_bytes()).hexdigest()
    assert step.intent["shown"] == CONDA + r"\Library\bin\libiomp5md.dll"

    code, document = diagnosis(capsys, image, CONDA)
    assert code == 0 and conflicts(document) == [], document["findings"]

    code, out = cli(capsys, "undo", "--last")
    assert code == 0 and "Undone" in out, out
    assert library_copy.read_bytes() == other.read_bytes() and not set_aside.exists()
    assert diagnosis(capsys, image, CONDA)[0] == 1


def test_a_copy_that_pip_installed_names_its_package_and_the_packages_that_need_it(torch_image, capsys):
    other = intel_runtime(OTHER_BUILD)
    image = torch_image(torch=realfiles.TORCH_241)
    image.copy(other, VENV + r"\Library\bin\libiomp5md.dll")
    digest = base64.urlsafe_b64encode(hashlib.sha256(other.read_bytes()).digest()).rstrip(b"=").decode()
    info = SITE + r"\intel_openmp-2023.2.0.dist-info"
    image.write(info + r"\RECORD", f"../../Library/bin/libiomp5md.dll,sha256={digest},{other.stat().st_size}\n"
                                   f"intel_openmp-2023.2.0.dist-info/RECORD,,\n")
    image.write(SITE + r"\mkl-2023.2.0.dist-info\METADATA",
                "Metadata-Version: 2.1\nName: mkl\nVersion: 2023.2.0\nRequires-Dist: intel-openmp (==2023.*)\n"
                "Requires-Dist: tbb (==2021.*)\n")
    image.write(SITE + r"\tbb-2021.10.0.dist-info\METADATA", "Metadata-Version: 2.1\nName: tbb\n")
    python = VENV + r"\Scripts\python.exe"
    code, document = diagnosis(capsys, image, python)
    (conflict,) = conflicts(document)
    assert code == 1 and conflict["severity"] == "blocker"
    assert conflict["evidence"]["owner"]["manager"] == "pip" and conflict["evidence"]["used_by"] == ["mkl"]
    code, plan = cli(capsys, "repair", "--root", str(image.root), "--env", python, "--action",
                     "remove-duplicate-openmp", "--plan")
    assert code == 0 and "the pip package intel-openmp 2023.2.0" in plan
    assert "pip install --force-reinstall intel-openmp" in plan


def test_the_same_build_twice_is_a_warning_and_no_second_copy_nothing_to_set_aside(tmp_path, capsys):
    image = conda_image(tmp_path / "img", intel_runtime(SAME_BUILD))
    code, document = diagnosis(capsys, image, CONDA)
    (conflict,) = conflicts(document)
    assert conflict["severity"] == "warning" and conflict["evidence"]["same_build"] is True

    image.host(CONDA + r"\Library\bin\libiomp5md.dll").unlink()
    code, document = diagnosis(capsys, image, CONDA)
    assert code == 0 and conflicts(document) == []
    code, out = cli(capsys, "repair", "--root", str(image.root), "--env", CONDA, "--action",
                    "remove-duplicate-openmp", "--yes")
    assert code == 1 and "nothing that this repair would fix" in out


@pytest.mark.parametrize("meddle, code", [("changed", "rename-changed-since"), ("name-taken", "rename-name-taken"),
                                          ("gone", "rename-missing")])
def test_undo_names_the_copy_back_only_while_it_is_as_the_repair_left_it(tmp_path, capsys, meddle, code):
    other = intel_runtime(OTHER_BUILD)
    image = conda_image(tmp_path / "img", other)
    library_copy = image.host(CONDA + r"\Library\bin\libiomp5md.dll")
    assert main(["repair", "--root", str(image.root), "--env", CONDA, "--action", "remove-duplicate-openmp",
                 "--yes"]) == 0
    set_aside = library_copy.with_name(SET_ASIDE)
    if meddle == "changed":
        set_aside.write_bytes(other.read_bytes() + b"\0")
    elif meddle == "name-taken":
        library_copy.write_bytes(b"somebody else's file")
    else:
        set_aside.unlink()
    before = {p.name: p.read_bytes() for p in library_copy.parent.iterdir()}
    transaction = next(Journal().transactions())
    with pytest.raises(RollbackStopped) as stopped:
        transaction.rollback(OfflineImage(image.root))
    assert stopped.value.code == code
    assert {p.name: p.read_bytes() for p in library_copy.parent.iterdir()} == before  # nothing overwritten
    capsys.readouterr()
    assert main(["undo", "--last"]) == 1
    assert "Undo stopped" in capsys.readouterr().err


def test_omp_error_15_with_the_other_copy_out_of_sight_offers_the_fresh_start_never_a_dead_end(tmp_path):
    """The replay caught OMP Error #15, but the second runtime lies where the static check does not look (loaded by
    the program from elsewhere): setting it aside cannot be planned, so it is not named, and the fresh
    environment's steps are offered; with the copy in sight, the finding alone plans setting it aside."""
    from app.inventory.environment import inspect_environment
    from app.inventory.machine import read_machine_facts
    from app.probes.base import ProbeContext
    from app.probes.replay import _died_in_parallel
    from app.probes.runner import Diagnosis
    from app.repair.actions import action_for
    from app.ui.session import recommended, repair_options

    image = conda_image(tmp_path / "image", intel_runtime(SAME_BUILD))
    image.host(CONDA + r"\Library\bin\libiomp5md.dll").unlink()  # out of sight of the static check
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(CONDA + r"\python.exe"))
    machine = read_machine_facts(system)
    stderr = ("OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.\n"
              "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program.\n")
    replayed = _died_in_parallel(ProbeContext(system, machine, env), CONDA + r"\python.exe", {}, 3, stderr)
    assert (replayed.code, replayed.variant, replayed.repairs) == ("openmp-conflict", "replayed", ["start-fresh"])
    diagnosis = Diagnosis(machine, [env], [replayed])
    options = repair_options(system, env, diagnosis)
    assert [(o.action, o.possible) for o in options] == [("start-fresh", True)]
    assert [o.action for o in recommended(options)] == ["start-fresh"]

    in_sight = conda_image(tmp_path / "in-sight", intel_runtime(SAME_BUILD))
    system = OfflineImage(in_sight.root)
    env = inspect_environment(system, in_sight.host(CONDA + r"\python.exe"))
    replayed = _died_in_parallel(ProbeContext(system, machine, env), CONDA + r"\python.exe", {}, 3, stderr)
    assert replayed.repairs == ["remove-duplicate-openmp", "start-fresh"]
    plan = action_for("remove-duplicate-openmp").plan(system, env, machine, [replayed], None)  # this finding alone
    assert [c.host_target for c in plan.changes] == [in_sight.host(CONDA + r"\Library\bin\libiomp5md.dll")]
