"""A set of packages changed through pip, and undone (app/repair/changes/packages.py), with a real pip in a real
virtual environment and real wheels from a local folder: the states a pip stopped halfway leaves (the old version
uninstalled, or its files half removed) are rolled back by installing the recorded versions again; a step that
never reached pip changes nothing; a later upgrade by somebody else is not overwritten."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional

import pytest

from app.inventory.packages import installed_versions
from app.repair.changes import RollbackStopped
from app.repair.changes import packages as packages_change
from app.repair.journal import Journal
from app.system.base import RunResult
from app.system.offline import OfflineImage
from app.system.process import run_process

NAME = "tddpkg"
COMPANION = "tddvision"  # torch and torchvision: a step that changes two packages


class ThisComputer(OfflineImage):
    """An image whose programs run on this computer: pip here is the venv's real pip."""

    can_run_programs = True

    def run(self, argv, timeout, env=None, cwd=None, cancel=None, on_output=None) -> RunResult:
        code, out, err = run_process(argv, timeout, cancel=cancel)
        return RunResult(code, out.decode(errors="replace"), err.decode(errors="replace"))


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(folder: Path, version: str, name: str = NAME) -> Path:
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
             f"{name}/data.bin": version.encode() * 1000}
    info = f"{name}-{version}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    lines = [record_line(p, d) for p, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("pip")
    wheels = root / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0", "3.0"):
        build_wheel(wheels, version)
    for version in ("1.0", "2.0"):
        build_wheel(wheels, version, COMPANION)
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=300)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    return python, site, wheels


@pytest.fixture
def installed(venv, tmp_path, monkeypatch):
    python, site, wheels = venv
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))
    pip(python, wheels, "--force-reinstall", f"{NAME}==1.0")
    return python, site, wheels


def pip(python: Path, wheels: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                    "--find-links", str(wheels), *args], check=True, timeout=300, capture_output=True)


def version_in(site: Path) -> Optional[str]:
    from app.inventory.packages import installed_versions

    return installed_versions(site, [NAME]).get(NAME)


def begin(tmp_path: Path, python: Path, site: Path, wheels: Path, applied: bool):
    """A transaction whose pip step has its intent written, as a kill (or a Stop) right after it leaves it."""
    (tmp_path / "image").mkdir(exist_ok=True)
    system = ThisComputer(tmp_path / "image")
    packages = packages_change.PackageSet(str(python), str(site), {NAME: "1.0"}, {NAME: "2.0"},
                                          ("--no-index", "--find-links", str(wheels)))
    transaction = Journal().begin({"kind": "image", "root": str(tmp_path / "image")}, "upgrade-torch", None, None, {})
    if applied:
        transaction.step(system, packages_change.ChangePackages(packages))
    else:
        intent = packages_change.ChangePackages(packages).prepare(system, transaction, 1)
        transaction._write({"kind": "intent", "step": 1, **intent})
    transaction.release()  # the lock dies with the process
    return system, Journal().get(transaction.id)


def test_pip_stopped_after_its_uninstall_is_rolled_back_by_installing_the_version_before(installed, tmp_path):
    python, site, wheels = installed
    system, transaction = begin(tmp_path, python, site, wheels, applied=False)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", NAME], check=True, timeout=300)
    assert version_in(site) is None  # what a pip ended between its uninstall and its install leaves
    transaction.rollback(system)
    assert version_in(site) == "1.0" and (site / NAME / "data.bin").read_bytes() == b"1.0" * 1000
    assert transaction.state == "rolled-back"


def test_pip_stopped_while_removing_files_is_rolled_back_by_force(installed, tmp_path):
    python, site, wheels = installed
    system, transaction = begin(tmp_path, python, site, wheels, applied=False)
    (site / NAME / "data.bin").unlink()  # the old version half removed: its metadata still says 1.0
    assert version_in(site) == "1.0" and not packages_change.complete(site, [NAME])
    transaction.rollback(system)
    assert (site / NAME / "data.bin").read_bytes() == b"1.0" * 1000 and packages_change.complete(site, [NAME])


def test_a_step_that_never_reached_pip_changes_nothing(installed, tmp_path):
    python, site, wheels = installed
    system, transaction = begin(tmp_path, python, site, wheels, applied=False)
    stamp = (site / NAME / "data.bin").stat().st_mtime_ns
    transaction.rollback(system)
    assert version_in(site) == "1.0" and (site / NAME / "data.bin").stat().st_mtime_ns == stamp


def test_a_finished_upgrade_is_undone_and_a_later_one_by_somebody_else_is_kept(installed, tmp_path):
    python, site, wheels = installed
    system, transaction = begin(tmp_path, python, site, wheels, applied=True)
    assert version_in(site) == "2.0"
    transaction.rollback(system)
    assert version_in(site) == "1.0"
    system, transaction = begin(tmp_path, python, site, wheels, applied=True)
    pip(python, wheels, f"{NAME}==3.0")  # the user upgraded it again since
    with pytest.raises(RollbackStopped) as stopped:
        transaction.rollback(system)
    assert stopped.value.code == "packages-changed-since" and version_in(site) == "3.0"
    assert transaction.state == "rollback-stopped"


def test_a_cuda_torch_and_a_cpu_torchvision_are_recorded_and_asked_for_in_their_own_builds(tmp_path):
    """torch 2.4.0+cu121 with a CPU torchvision 0.19.0: the versions recorded are the exact ones pip installs
    (local labels included), so an undo finds the packages as the step left them and restores exactly these."""
    from app.demo.image_builder import ImageBuilder
    from app.inventory.environment import inspect_environment
    from app.repair.upgrade import package_set
    from app.system.offline import OfflineImage

    image = ImageBuilder(tmp_path / "image")
    base = r"C:\Python312"
    image.write(base + r"\python.exe", b"MZ")
    venv = r"C:\app\venv"
    image.venv(venv, base, "3.12.4", python_exe=b"MZ")
    site = venv + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.0+cu121", cuda="12.1")
    for name, version in (("torch", "2.4.0+cu121"), ("torchvision", "0.19.0")):
        image.write(rf"{site}\{name}-{version}.dist-info\METADATA", f"Name: {name}\nVersion: {version}\n\n")
    env = inspect_environment(OfflineImage(image.root), image.host(venv))
    change = package_set(env, {"torch": "2.4.1", "torchvision": "0.19.1"}).to_dict()
    assert change["before"] == {"torch": "2.4.0+cu121", "torchvision": "0.19.0"}
    assert change["after"] == {"torch": "2.4.1+cu121", "torchvision": "0.19.1"}  # CPU torchvision stays CPU
    assert change["install"] == ["torch==2.4.1+cu121", "torchvision==0.19.1"]
    assert change["restore"] == ["torch==2.4.0+cu121", "torchvision==0.19.0"]
    assert change["index"] == ["--extra-index-url", "https://download.pytorch.org/whl/cu121"]


@pytest.mark.parametrize("left", ["as-before", "gone"])
def test_an_undo_pip_did_not_finish_goes_on_from_there_next_time_never_blames_the_user(installed, tmp_path, left,
                                                                                        monkeypatch):
    """The first undo's pip put torch back, then failed (or was stopped) at torchvision: the second undo finishes."""
    python, site, wheels = installed
    pip(python, wheels, "--force-reinstall", f"{COMPANION}==1.0")
    (tmp_path / "image").mkdir(exist_ok=True)
    system = ThisComputer(tmp_path / "image")
    both = packages_change.PackageSet(str(python), str(site), {NAME: "1.0", COMPANION: "1.0"},
                                      {NAME: "2.0", COMPANION: "2.0"}, ("--no-index", "--find-links", str(wheels)))
    transaction = Journal().begin({"kind": "image", "root": str(tmp_path / "image")}, "upgrade-torch", None, None, {})
    transaction.step(system, packages_change.ChangePackages(both))
    transaction.release()
    real_install = packages_change.pip_install

    def failing_at_the_companion(system, python, pins, index, *args, **kwargs):  # a file of it locked, say
        real_install(system, python, pins[:1], index)
        if left == "gone":
            subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", COMPANION], check=True, timeout=300)
        raise OSError(f"pip install {' '.join(pins)} failed: ERROR: Could not install packages due to an OSError")

    monkeypatch.setattr(packages_change, "pip_install", failing_at_the_companion)
    with pytest.raises(RollbackStopped) as stopped:
        Journal().get(transaction.id).rollback(system)
    monkeypatch.setattr(packages_change, "pip_install", real_install)
    assert stopped.value.code == "refused"  # said, recorded, offered again
    from app.inventory.packages import installed_versions

    assert installed_versions(site, [NAME]) == {NAME: "1.0"}
    transaction = Journal().get(transaction.id)
    assert not transaction.stop_is_final
    transaction.rollback(system)  # the next undo
    assert installed_versions(site, [NAME, COMPANION]) == {NAME: "1.0", COMPANION: "1.0"}
    assert transaction.state == "rolled-back"


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_a_package_added_by_its_hash_is_installed_and_undone_byte_for_byte_and_other_bytes_are_refused(venv, tmp_path,
                                                                                                       monkeypatch):
    """install-dll-package's step: a package that was not installed, pinned with its wheel's SHA-256 (pip
    --require-hashes); undo uninstalls it and leaves site-packages as it was. A wheel whose bytes are not the
    ones the index named is refused by pip, and nothing is installed."""
    python, site, wheels = venv
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", COMPANION], timeout=300, capture_output=True)
    before = tree(site)
    digest = hashlib.sha256((wheels / f"{COMPANION}-2.0-py3-none-any.whl").read_bytes()).hexdigest()
    (tmp_path / "image").mkdir()
    system = ThisComputer(tmp_path / "image")
    for wrong in (True, False):
        added = packages_change.PackageSet(str(python), str(site), {}, {COMPANION: "2.0"},
                                           ("--no-deps", "--no-index", "--find-links", str(wheels)),
                                           {COMPANION: "0" * 64 if wrong else digest})
        transaction = Journal().begin({"kind": "image", "root": str(tmp_path / "image")}, "install-dll-package",
                                      None, None, {})
        if wrong:
            with pytest.raises(OSError, match="pip install --require-hashes"):
                transaction.step(system, packages_change.ChangePackages(added))
            transaction.release()
            assert tree(site) == before
            continue
        transaction.step(system, packages_change.ChangePackages(added))
        transaction.release()
        assert installed_versions(site, [COMPANION]) == {COMPANION: "2.0"}
        Journal().get(transaction.id).rollback(system)
        assert tree(site) == before
