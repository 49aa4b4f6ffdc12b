"""A set of packages, changed through the environment's own `python -m pip`, so the user's pip settings (a mirror,
a proxy) apply. The exact versions before are recorded (and `pip freeze` beside them).

Undo installs the versions before again, and uninstalls a package the step added. When the step finished, only while
the packages are as the step left them (somebody else's later upgrade is not overwritten), or as an earlier undo
that pip did not finish left them. When it was cut short (Stop ends pip's whole process tree, a kill ends ours), pip
may have uninstalled without installing: whatever it left is ours, so the versions before are installed again, by
force when their files are incomplete, and checked afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.inventory.integrity import read_record
from app.inventory.packages import canonical, installed_versions
from app.repair.changes import PACKAGES, RollbackStopped
from app.system.base import System
from app.system.confine import inside
from app.system.folders import child, children

PIP_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class PackageSet:
    """What a packages change records and asks pip for, in exact versions (local labels included) on both sides:
    undo compares what is installed with exactly these, and restores exactly `before`."""

    python: str
    site_packages: str
    before: dict[str, str]
    after: dict[str, str]
    index: tuple[str, ...]
    hashes: dict[str, str] = field(default_factory=dict)  # {name: the wheel's SHA-256}: pip --require-hashes

    @property
    def install(self) -> list[str]:
        return [f"{n}=={v}" for n, v in self.after.items()]

    @property
    def restore(self) -> list[str]:
        return [f"{n}=={v}" for n, v in self.before.items()]

    def to_dict(self) -> dict:
        """The plan's JSON and the journal's intent (which replays from these, never from the object)."""
        return {"python": self.python, "site_packages": self.site_packages, "before": self.before,
                "after": self.after, "index": list(self.index), "install": self.install, "restore": self.restore,
                "hashes": self.hashes}


def requirement_lines(packages: PackageSet) -> str:
    """pip's requirements file for hash-checked pins: `name==version --hash=sha256:...`, one a line."""
    return "".join(f"{n}=={v} --hash=sha256:{packages.hashes[n]}\n" for n, v in packages.after.items())


def pip_install(system: System, python: str, pins: list[str], index: list[str],
                on_output: Callable[[str], None] = lambda line: None, token: Optional[CancelToken] = None,
                force: bool = False) -> None:
    again = ["--force-reinstall", "--no-deps"] if force else []
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *again, *index, *pins]
    result = system.run(argv, timeout=PIP_TIMEOUT_S, on_output=on_output, cancel=token)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        raise OSError(f"pip install {' '.join(pins)} failed: {' | '.join(lines[-3:])}")


def pip_uninstall(system: System, python: str, names: list[str]) -> None:
    """Take out the packages the step added (there was no version before to install again)."""
    argv = [python, "-m", "pip", "uninstall", "--disable-pip-version-check", "--no-input", "-y", *names]
    result = system.run(argv, timeout=PIP_TIMEOUT_S)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        raise OSError(f"pip uninstall {' '.join(names)} failed: {' | '.join(lines[-3:])}")


def _put_back(system: System, intent: dict, force: bool) -> None:
    """The versions before installed again, and the packages that had none uninstalled."""
    if intent["restore"]:
        pip_install(system, intent["python"], intent["restore"], intent["index"], force=force)
    added = [n for n in intent["after"] if n not in intent["before"]]
    if added and installed_versions(Path(intent["site_packages"]), added):
        pip_uninstall(system, intent["python"], added)


def _names(intent: dict) -> list[str]:
    return [*intent["before"], *(n for n in intent["after"] if n not in intent["before"])]


def complete(site_packages: Path, names: list[str]) -> bool:
    """Every file each package's RECORD lists is there (one stat each): pip was not stopped halfway through it."""
    wanted = {canonical(n) for n in names}
    for folder in children(site_packages):
        if not folder.name.lower().endswith(".dist-info"):
            continue
        if canonical(folder.name[: -len(".dist-info")].rsplit("-", 1)[0]) not in wanted:
            continue
        record = child(folder, "RECORD")
        if record is None:
            return False
        for entry in read_record(record, prefix=""):
            path = inside(site_packages, entry.path)
            if path is None or entry.path.endswith(".pyc"):
                continue
            if not path.exists():
                return False
    return True


def _left_by_us(now: dict[str, str], intent: dict, undone_before: bool) -> bool:
    """The packages are as the step left them. After an earlier undo that pip failed or was stopped in halfway (it
    installs one package after another, and uninstalls each before installing it), each one may also be as before
    or gone: all of that is ours, not a change made since."""
    left = {**intent["before"], **intent["after"]}
    if now == left:
        return True
    return undone_before and all(now.get(n) in (intent["before"].get(n), left.get(n), None) for n in {*now, *left})


def undo(system: System, transaction, intent: dict, applied: bool) -> None:
    site = Path(intent["site_packages"])
    names = _names(intent)
    now = installed_versions(site, names)
    if applied:
        if now == intent["before"]:
            return
        if not _left_by_us(now, intent, transaction.undone_before):
            raise RollbackStopped("packages-changed-since", target=", ".join(f"{n} {v}" for n, v in now.items()))
        again = transaction.undone_before and not complete(site, names)  # an earlier undo's pip stopped mid-file
        _put_back(system, intent, force=again)
    elif now == intent["before"] and complete(site, names):
        return  # pip never got as far as changing them
    else:
        _put_back(system, intent, force=True)
    after = installed_versions(site, names)
    if after != intent["before"]:
        raise RollbackStopped("packages-not-restored", target=", ".join(f"{n} {v}" for n, v in after.items()) or "-",
                              wanted=", ".join(f"{n} {v}" for n, v in intent["before"].items()))


def targets(intent: dict) -> list[Path]:
    """The torch folder: a program that has any DLL or extension file below it loaded holds what pip must replace
    (app/repair/in_use.py)."""
    return [Path(intent["site_packages"]) / "torch"]


@dataclass(frozen=True)
class ChangePackages:
    """pip install the `install` pins; `pip freeze` and the exact versions before are recorded first. Cancelling
    `token` ends pip's whole process tree; the rollback then installs the versions before again."""

    packages: PackageSet
    on_output: Callable[[str], None] = lambda line: None
    token: Optional[CancelToken] = None
    op = PACKAGES

    def prepare(self, system: System, transaction, number: int) -> dict:
        freeze = system.run([self.packages.python, "-m", "pip", "freeze", "--disable-pip-version-check"],
                            timeout=300)
        return {"op": PACKAGES, **self.packages.to_dict(), "shown": ", ".join(self.packages.install),
                "freeze": freeze.stdout}

    def apply(self, system: System, transaction, intent: dict) -> None:
        pins = self.packages.install
        if self.packages.hashes:  # only the very wheels the plan named: pip refuses any other file
            requirements = transaction.folder / "requirements.txt"
            requirements.write_text(requirement_lines(self.packages), encoding="utf-8")
            pins = ["--require-hashes", "-r", str(requirements)]  # pip runs here: its own path
        pip_install(system, self.packages.python, pins, list(self.packages.index), self.on_output, self.token)

    undo = staticmethod(undo)
    targets = staticmethod(targets)
