"""Which Python this is, beyond its version: an x64 Python emulated on an ARM64 computer, and the free-threaded build
(python3.13t.exe) whose extension modules have their own ABI ("cp313t"), so a torch built for the normal ABI cannot
load in it (and the reverse).

torch's ABI is read from its files: `torch\\_C.<abi>-<platform>.pyd` (the import machinery of a free-threaded Python
looks only for `.cp313t-win_amd64.pyd` and plain `.pyd`), else the `Tag:` lines of its dist-info `WHEEL`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Optional

from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, Finding
from app.resources import known_issues
from app.system.folders import child, children

X64, ARM64 = 0x8664, 0xAA64
MATCHING_TORCH = "install-matching-torch"
_C_MODULE = re.compile(r"^_C\.(?P<abi>cp\d+t?)-(?P<platform>win_amd64|win_arm64|win32)\.pyd$", re.I)
_WHEEL_TAG = re.compile(r"^Tag:\s*cp\d+-(?P<abi>cp\d+t?)-(?P<platform>\S+)\s*$", re.I | re.M)
_TORCH_DIST_INFO = re.compile(r"^torch-[^-]+\.dist-info$", re.I)


def emulation(ctx: ProbeContext) -> Iterator[Finding]:
    """An x64 python.exe on an ARM64 Windows runs under emulation: it works, more slowly."""
    env = ctx.env
    if env is None or env.python_cpu_type != X64 or (ctx.machine.architecture or "").upper() != "ARM64":
        return
    native = known_issues()["win_arm64"]
    evidence = {"python": ctx.python, "python_version": env.python_version, "machine": "ARM64",
                "python_machine": "AMD64", "checked": native["read"], "first_release": native["pypi_first_release"],
                "pythons": native["pypi_pythons"], "index": native["pytorch_index"]}
    yield ctx.finding("python-emulated", INFO, evidence,
                      variant=None if native["pypi_first_release"] else "not-on-pypi")


def torch_abi(env_torch: Path, site_packages: Optional[Path]) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(abi, platform, where it was read) of a torch install: "cp313", "win_amd64", "_C.cp313-win_amd64.pyd"."""
    for module in children(env_torch):
        match = _C_MODULE.match(module.name)
        if match:
            return match.group("abi").lower(), match.group("platform").lower(), module.name
    for info in children(site_packages):
        if not _TORCH_DIST_INFO.match(info.name):
            continue
        wheel = child(info, "WHEEL")
        try:
            text = wheel.read_text(encoding="utf-8", errors="replace") if wheel is not None else ""
        except OSError:
            continue
        match = _WHEEL_TAG.search(text)
        if match:
            return match.group("abi").lower(), match.group("platform").lower(), f"{info.name}\\WHEEL"
    return None, None, None


def abi_match(ctx: ProbeContext) -> Iterator[Finding]:
    """A torch built for the normal ABI in a free-threaded Python (or the reverse) cannot be imported."""
    env = ctx.env
    if env is None or env.torch is None or env.abi_tag is None:
        return
    found, platform, source = torch_abi(env.torch.folder, env.site_packages)
    if found is None or found == env.abi_tag:
        return
    minor = ".".join((env.python_version or "").split(".")[:2])
    if found.rstrip("t") != env.abi_tag.rstrip("t"):
        yield from _other_python(ctx, found, platform, source, minor)
        return
    window = known_issues()["free_threaded_wheels"].get(minor)
    others = [p for p in children(env.python.parent) if p.suffix.lower() == ".exe" and p != env.python
              and p.name.lower() in ({"python.exe"} if env.free_threaded else {f"python{minor}t.exe"})]
    yield ctx.finding("torch-wrong-abi", BLOCKER, {
        "python": ctx.python, "python_version": env.python_version, "abi": env.abi_tag, "torch_abi": found,
        "platform": platform, "file": source, "torch": env.torch.version, "minor": minor,
        "free_threaded_builds": window, "checked": known_issues()["free_threaded_wheels"]["read"],
        "other_python": ctx.display(others[0]) if others else None},
        [MATCHING_TORCH], variant=None if env.free_threaded else "free-threaded-build")


def _other_python(ctx: ProbeContext, found: str, platform: Optional[str], source: Optional[str],
                  minor: str) -> Iterator[Finding]:
    """torch built for another Python version (a cp311 wheel under 3.12). Where a venv's base Python changed
    minor version since the venv was made for the one torch fits, that is the cause (venv-base-changed) and
    this is its evidence, said once."""
    env = ctx.env
    digits = found.rstrip("t")[2:]
    torch_minor = f"{digits[0]}.{digits[1:]}" if len(digits) >= 2 else found
    interpreter = env.loading.interpreter if env.loading is not None else None
    if interpreter is not None and interpreter.changed_minor and (interpreter.made_with or "").startswith(
            torch_minor + "."):
        return
    yield ctx.finding("torch-wrong-python", BLOCKER, {
        "python": ctx.python, "python_version": env.python_version, "minor": minor, "abi": env.abi_tag,
        "torch_abi": found, "torch_minor": torch_minor, "platform": platform, "file": source,
        "torch": env.torch.version}, [MATCHING_TORCH])


EMULATION_PROBE = Probe("python-emulated", ENVIRONMENT, emulation)
ABI_PROBE = Probe("torch-abi", ENVIRONMENT, abi_match)
