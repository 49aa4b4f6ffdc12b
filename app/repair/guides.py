"""Guided repairs: what only the user can do (install a 64-bit Python, update the NVIDIA driver, start again with
a new environment), told step by step with the official page to open.

A guided repair is an action like the others (app/repair/actions.py): its plan changes nothing and carries its
guide. The CLI prints the guide and exits 1 (nothing was changed); the wizard shows it on the plan page and on
Finish, with a button that opens the page. Applying one is refused: there is nothing for this program to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Callable, Optional

from app.cancel import CancelToken
from app.engine.versions import version_tuple
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.launchers import fresh_steps, launcher_of
from app.inventory.machine import MachineFacts
from app.probes.causes import Problem
from app.probes.evidence import (
    CompanionMismatch,
    FolderBrackets,
    GpuDriver,
    GpuTooNew,
    MissingDll,
    Numpy2,
    RegistryPythonPath,
    RuntimeCopyInPackage,
    SettingVariable,
    TorchShadowed,
    VcRuntimeCopy,
    WrongTorchBuild,
    ZludaStandIns,
    named_variable,
)
from app.probes.finding import BLOCKER, WARNING, Finding
from app.probes.runner import Diagnosis
from app.repair.journal import Transaction
from app.repair.plan import Plan, PlanRefused, said
from app.resources import ai_apps, known_issues
from app.system.base import HIVES, System

PYTHON_DOWNLOADS = "https://www.python.org/downloads/windows/"
NVIDIA_DRIVERS = {"en": "https://www.nvidia.com/Download/index.aspx",
                  "zh_CN": "https://www.nvidia.cn/Download/index.aspx?lang=cn"}
PYTORCH_GET_STARTED = "https://pytorch.org/get-started/locally/"
BITSANDBYTES_INSTALL = "https://huggingface.co/docs/bitsandbytes/main/en/installation"
AMD_DRIVERS = "https://www.amd.com/en/support/download/drivers.html"
AMD_HIP_SDK = "https://www.amd.com/en/developer/resources/rocm-hub/hip-sdk.html"
WSL_INSTALL = "https://learn.microsoft.com/windows/wsl/install"
SMART_APP_CONTROL_FAQ = {lang: f"https://support.microsoft.com/{locale}/windows/smart-app-control-frequently-asked-"
                         "questions-285ea03d-fa88-4d56-882e-6698afdb7003" for lang, locale in
                         (("en", "en-us"), ("zh_CN", "zh-cn"))}
CONDA_RUNTIME = "https://anaconda.org/conda-forge/vc14_runtime"
PYTHON_ENVIRONMENT_VARIABLES = "https://docs.python.org/3/using/windows.html#excursus-setting-environment-variables"
PYTHON_FINDING_MODULES = "https://docs.python.org/3/using/windows.html#finding-modules"
GLOB_CHARACTERS = re.compile(r"[\[\]]")
START_FRESH = "start-fresh"  # offered where no repair fits a problem that stops PyTorch


@dataclass
class Guide:
    """Steps for the user, in order, each in en and zh_CN; the official page to open, and the button's words."""

    action: str
    url: dict[str, str]
    link: dict[str, str]
    steps: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"action": self.action, "url": self.url, "link": self.link, "steps": self.steps}


@dataclass
class GuidedPlan(Plan):
    """A plan with no changes: its guide says what the user does."""

    guide: Optional[Guide] = None

    def to_dict(self) -> dict:
        return {**super().to_dict(), "guide": self.guide.to_dict() if self.guide else None}


def guide_of(plan: Optional[Plan]) -> Optional[Guide]:
    """The guide of a guided repair's plan; None for a plan that changes something."""
    return plan.guide if isinstance(plan, GuidedPlan) else None


def guide_lines(guide: Guide, lang: str) -> list[str]:
    """The guide as numbered lines of text, then the page to open (for the CLI and the text of a report)."""
    lines = [f"  {number}. {step[lang]}" for number, step in enumerate(guide.steps, 1)]
    return [*lines, "  " + words("guide.open", lang, link=guide.link[lang], url=guide.url[lang])]


def same_url(url: str) -> dict[str, str]:
    return {lang: url for lang in LANGUAGES}


class GuidedRepair:
    """What every guided repair shares: a plan with its guide and no changes; apply() refuses."""

    id = ""
    sources = ()

    def guide(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts,
              findings: list[Finding]) -> Guide:
        raise NotImplementedError

    def plan(self, system: System, env: Optional[PythonEnvironment], machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> GuidedPlan:
        if source is not None:
            raise PlanRefused([said("repair.refused.unknown_source", source=source, sources="-")])
        return GuidedPlan(self.id, None, system.windows_path(env.python) if env else "",
                          notes=[said("guide.nothing_changes")], guide=self.guide(system, env, machine, findings))

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        raise PlanRefused([said("guide.by_hand", action=self.id)])


class Install64BitPython(GuidedRepair):
    """`install-64bit-python`: python.org's 64-bit installer of the environment's own Python version, then the
    environment made again with it (the app's own way for a known app)."""

    id = "install-64bit-python"

    def guide(self, system, env, machine, findings) -> Guide:
        minor = python_minor(env)
        app = app_recreate(env)
        if app is not None and app["brings_python"]:  # the app's package carries its own 64-bit Python
            steps = app_steps(system, app, env, launcher(minor, True))
            return Guide(self.id, same_url(app["url"]), said("guide.link.app", app=env.app), steps)
        download = (said("guide.python.download", minor=minor, url=PYTHON_DOWNLOADS) if minor
                    else said("guide.python.download_any", url=PYTHON_DOWNLOADS))
        py = launcher(minor, True)
        again = app_steps(system, app, env, py) if app is not None else recreate_steps(system, env, py)
        steps = [download, said("guide.python.install"), *again, said("guide.check_again")]
        return Guide(self.id, same_url(PYTHON_DOWNLOADS), said("guide.link.python"), steps)


class UpdateGpuDriver(GuidedRepair):
    """`update-gpu-driver`: NVIDIA's driver, at least the version this CUDA build needs
    (resources/known_issues.json), from NVIDIA's own page; then a restart."""

    id = "update-gpu-driver"

    def guide(self, system, env, machine, findings) -> Guide:
        cuda = env.torch.cuda if env is not None and env.torch is not None else None
        named = next((f for f in findings if self.id in f.repairs), None)
        gpu = GpuDriver.of(named) if named is not None else GpuDriver(driver=machine.nvidia_driver)
        cuda = gpu.cuda or cuda or "-"
        needed = gpu.needed or minimum_driver(cuda)
        driver = gpu.driver
        if driver:
            steps = [{lang: words("guide.gpu.download", lang, url=NVIDIA_DRIVERS[lang], needed=needed or "-",
                                  cuda=cuda, driver=driver) for lang in LANGUAGES}]
        else:
            steps = [{lang: words("guide.gpu.missing", lang, url=NVIDIA_DRIVERS[lang], needed=needed or "-",
                                  cuda=cuda) for lang in LANGUAGES}]
        full = known_issues()["cuda_toolkit_driver_windows"].get(".".join(cuda.split(".")[:2]))
        if full and needed and version_tuple(full) > version_tuple(needed):
            steps.append(said("guide.gpu.full", cuda=cuda, full=full))
        steps += [said("guide.gpu.install"), said("guide.check_again")]
        return Guide(self.id, NVIDIA_DRIVERS, said("guide.link.nvidia"), steps)


class UpdateAmdDriver(GuidedRepair):
    """`update-amd-driver`: the ROCm build of PyTorch, or ZLUDA's stand-ins for CUDA's libraries, need AMD's HIP
    runtime (AMD's graphics driver puts amdhip64 in System32) and the ROCm libraries (AMD's HIP SDK). AMD's own
    pages; ZLUDA's own setup where its stand-ins are in torch\\lib."""

    id = "update-amd-driver"

    def guide(self, system, env, machine, findings) -> Guide:
        named = [f for f in findings if self.id in f.repairs]
        missing = sorted({d for d in (MissingDll.of(f).dll for f in named if f.code in MissingDll.CODES) if d})
        sdk = any(f.variant == "hip-sdk" for f in named)
        zluda = next((f for f in named if f.code == "zluda-stand-ins"), None)
        steps = [said("guide.amd.driver", url=AMD_DRIVERS)]
        if sdk or zluda is not None:
            steps.append(said("guide.amd.hip_sdk", url=AMD_HIP_SDK))
        if missing:
            steps.append(said("guide.amd.missing", dlls=", ".join(missing)))
        if zluda is not None:
            steps.append(said("guide.amd.zluda", dlls=ZludaStandIns.of(zluda).dll_list or "-"))
        steps += [said("guide.amd.install"), said("guide.check_again")]
        return Guide(self.id, same_url(AMD_DRIVERS), said("guide.link.amd"), steps)


class StartFresh(GuidedRepair):
    """`start-fresh`: where no repair fits, a new environment with the app's requirements (the app's own way for
    a known app), or WSL."""

    id = START_FRESH

    def guide(self, system, env, machine, findings) -> Guide:
        minor = python_minor(env)
        where = launcher_of(env)
        if where is not None:  # the launcher's own way: its repair button, its own uv
            steps = [*fresh_steps(where, minor), said("guide.check_again")]
            return Guide(self.id, same_url(where.launcher.url), said("guide.link.app", app=where.launcher.name),
                         steps)
        app = app_recreate(env)
        if app is not None:
            steps = [*app_steps(system, app, env, launcher(minor, False)), said("guide.fresh.wsl", url=WSL_INSTALL)]
            return Guide(self.id, same_url(app["url"]), said("guide.link.app", app=env.app), steps)
        steps = [*recreate_steps(system, env, launcher(minor, False)), said("guide.fresh.wsl", url=WSL_INSTALL)]
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class LoadTorchFirst(GuidedRepair):
    """`load-torch-first`: an old VC++ runtime inside another package (runtime-copy-too-old). That package's files
    are never touched: upgrade it, move to a package whose copy is current, or import torch first."""

    id = "load-torch-first"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        copy = RuntimeCopyInPackage.of(named) if named is not None else RuntimeCopyInPackage()
        package, import_name = copy.package or "-", copy.import_name or "-"
        python = system.windows_path(env.python) if env else "python"
        instead = copy.instead  # {"en": "PyQt6 6.11 or newer, ...", ...}: no newer build of the package
        steps = [{lang: words("guide.copy.move", lang, package=package, instead=instead[lang]) for lang in LANGUAGES}
                 if isinstance(instead, dict) else said("guide.copy.upgrade", package=package, python=python),
                 said("guide.copy.order", import_name=import_name),
                 said("guide.copy.check", import_name=import_name)]
        links = copy.links or [PYTORCH_GET_STARTED]
        return Guide(self.id, same_url(links[0]), said("guide.link.copy"), steps)


class UpdateRuntimeCopy(GuidedRepair):
    """`update-runtime-copy`: an old msvcp140.dll that conda's or pip's package put beside python.exe, found before
    System32's (vc-runtime-too-old@copy-conda / @copy-pip). Its own package manager updates it; its files are
    never touched here."""

    id = "update-runtime-copy"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        copy = VcRuntimeCopy.of(named) if named is not None else VcRuntimeCopy()
        owner = copy.owner
        values = {"package": owner.get("package") or "-", "version": owner.get("version") or "-",
                  "prefix": copy.prefix or "-", "python": copy.python or "python", "needed": copy.needed,
                  "path": copy.path or "-"}
        if owner.get("manager") == "conda":
            steps = [said("guide.rtcopy.conda.open"), said("guide.rtcopy.conda.update", **values)]
            url = CONDA_RUNTIME
        else:
            steps = [said("guide.rtcopy.pip.update", **values)]
            url = f"https://pypi.org/project/{values['package']}/"
        if copy.system_ok is False:
            steps.append(said("guide.rtcopy.system_too", version=copy.system_version or "-",
                              needed=values["needed"]))
        steps += [said("guide.rtcopy.check", **values)]
        return Guide(self.id, same_url(url), said("guide.link.rtcopy"), steps)


class AppControlSettings(GuidedRepair):
    """`app-control-settings`: Smart App Control's own switch (Windows Security), which cannot be turned back on
    without reinstalling Windows, or an App Control exception from the administrator of a managed computer."""

    id = "app-control-settings"

    def guide(self, system, env, machine, findings) -> Guide:
        torch = system.windows_path(env.torch.folder) if env is not None and env.torch is not None else "torch"
        folder = torch + "\\lib"
        steps = [] if machine.smart_app_control not in ("on", "evaluation") else [
            said("guide.appcontrol.open"), said("guide.appcontrol.off")]
        steps += [said("guide.appcontrol.admin", folder=folder), said("guide.appcontrol.again")]
        return Guide(self.id, SMART_APP_CONTROL_FAQ, said("guide.link.app_control"), steps)


class InstallMatchingTorch(GuidedRepair):
    """`install-matching-torch`: a torch built for the other ABI (normal vs free-threaded Python): start the program
    with the Python it was built for, or give this Python an environment of its own with its own build."""

    id = "install-matching-torch"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        build = WrongTorchBuild.of(named) if named is not None else WrongTorchBuild()
        minor = build.minor or python_minor(env) or "3"
        if named is not None and named.code == "torch-wrong-python":  # another Python version: reinstall for this one
            python = system.windows_path(env.python) if env is not None else "python"
            steps = [said("guide.wrongpy.reinstall", python=python, version=build.torch or "-", minor=minor),
                     said("guide.wrongpy.cuda", python=python, version=build.torch or "-"),
                     said("guide.check_again")]
            return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)
        other = build.other_python
        python = system.windows_path(env.python) if env is not None else "python"
        free = env is not None and env.free_threaded
        folder = rf"%USERPROFILE%\torch-{build.abi or 'venv'}"
        if free:
            steps = [said("guide.abi.use_normal", other=other) if other else said("guide.abi.use_normal_any",
                                                                                  minor=minor)]
            window = build.free_threaded_builds
            steps.append(said("guide.abi.ft_venv", python=python, folder=folder, minor=minor,
                              window=" ".join(window)) if window else
                         said("guide.abi.no_ft_build", minor=minor, checked=build.checked or "-"))
        else:
            steps = [said("guide.abi.use_free_threaded", other=other) if other else
                     said("guide.abi.use_free_threaded_any", minor=minor),
                     said("guide.abi.normal_venv", python=python, folder=folder)]
        if other:  # both interpreters of one install read the same site-packages
            steps.append(said("guide.abi.shared"))
        steps.append(said("guide.check_again"))
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class UnsetMachineVariable(GuidedRepair):
    """`unset-machine-variable`: a variable set for the whole computer: PYTHONHOME or PYTHONPATH
    (python-home-set@system, python-path-set@system), usually left by another program's installer, or one of
    unsafe-env-var, irrelevant-env-var, env-var-malformed. Removed by the user in Windows' own
    settings, where they see what else is there; the program that set it is named."""

    id = "unset-machine-variable"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        if named is not None and named.code in SettingVariable.CODES:
            setting = SettingVariable.of(named)
        else:  # torch-shadowed@pythonpath of the computer's PYTHONPATH names only the variable
            setting = SettingVariable(variable=(named_variable(named) if named is not None else None) or "PYTHONHOME")
        variable = setting.variable
        program = setting.program or ", ".join(setting.programs) or "-"
        steps = [said("guide.machinevar.open"), said("guide.machinevar.delete", variable=variable)]
        if program != "-":  # PYTHONHOME / PYTHONPATH point into a program; KMP_DUPLICATE_LIB_OK and the like do not
            steps.append(said("guide.machinevar.program", program=program, variable=variable))
        steps.append(said("guide.machinevar.again"))
        return Guide(self.id, same_url(PYTHON_ENVIRONMENT_VARIABLES), said("guide.link.python_windows"), steps)


class RemoveRegistryPythonPath(GuidedRepair):
    """`remove-registry-python-path`: a subkey of ...\\Python\\PythonCore\\<version>\\PythonPath that another program's
    installer left (python-registry-path, torch-shadowed@registry). The user deletes it in the Registry Editor, where
    they see what it is; a key of all users (HKLM) needs an administrator, which is Windows' own prompt."""

    id = "remove-registry-python-path"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if f.code == "python-registry-path"), None) or next(
            (f for f in findings if self.id in f.repairs), None)
        if named is not None and named.code in RegistryPythonPath.CODES:
            key, program = RegistryPythonPath.of(named).key or "-", RegistryPythonPath.of(named).program_list or "-"
        else:  # torch-shadowed@registry: the key is what added the folder
            shadow = TorchShadowed.of(named) if named is not None else TorchShadowed()
            key, program = shadow.added_by or "-", shadow.program_list or "-"
        parent, _, name = key.rpartition("\\")
        hive, _, rest = parent.partition("\\")
        where = f"{HIVES.get(hive.upper(), hive)}\\{rest}" if rest else parent  # as regedit's address bar shows it
        steps = [said("guide.regpath.open"), said("guide.regpath.go", where=where or "-"),
                 said("guide.regpath.delete", name=name or "-", program=program),
                 said("guide.machinevar.again")]
        return Guide(self.id, same_url(PYTHON_FINDING_MODULES), said("guide.link.python_windows"), steps)


class RenameAppFolder(GuidedRepair):
    """`rename-app-folder`: `[` or `]` in torch's folder (torch-folder-brackets): the folder is renamed by the user
    (a program of theirs may be running from it); a venv, which records its own path, is made again after."""

    id = "rename-app-folder"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        names = (FolderBrackets.of(named).names if named is not None else None) or ["[...]"]
        plain = [GLOB_CHARACTERS.sub("", name).strip() or "new" for name in names]
        steps = [said("guide.brackets.close"),
                 said("guide.brackets.rename", old=names[0], new=plain[0])]
        if env is not None and env.kind == "venv":
            steps += [said("guide.brackets.venv", venv=system.windows_path(env.exec_prefix))]
        steps.append(said("guide.brackets.again"))
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class InstallCudaTorch(GuidedRepair):
    """`install-cuda-torch`: a companion built for PyTorch's CUDA build (xformers' Windows wheels) beside the CPU
    build (companion-mismatch@needs-cuda). No other version of the companion helps: PyTorch's CUDA build from
    PyTorch's own index, the one the companion names, or the companion removed."""

    id = "install-cuda-torch"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        companion = CompanionMismatch.of(named) if named is not None else CompanionMismatch()
        python = system.windows_path(env.python) if env is not None else "python"
        values = {"python": python, "package": companion.package, "version": companion.version or "-",
                  "built_for": companion.built_for or "-", "release": companion.release or "-",
                  "variant": companion.variant or "-"}
        steps = [said("guide.cudatorch.install", **values) if companion.variant and companion.release
                 else said("guide.cudatorch.install_any", **values),
                 said("guide.cudatorch.companions", **values),
                 said("guide.cudatorch.remove", **values), said("guide.cudatorch.again", **values)]
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class InstallTorchForGpu(GuidedRepair):
    """`install-torch-for-gpu`: a graphics card newer than the CUDA build (gpu-too-new): the build for its CUDA
    version from PyTorch's own index, or the launcher's own update."""

    id = "install-torch-for-gpu"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        gpu = GpuTooNew.of(named) if named is not None else GpuTooNew()
        values = {"python": system.windows_path(env.python) if env is not None else "python",
                  "needed": gpu.needed or "12.8", "variant": gpu.variant or "cu128"}
        steps = [said("guide.gpu.install", **values), said("guide.gpu.app"), said("guide.check_same")]
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class InstallNumpy1(GuidedRepair):
    """`install-numpy-1`: NumPy 2 beside a torch (or packages) made for NumPy 1 (numpy-2-too-new)."""

    id = "install-numpy-1"

    def guide(self, system, env, machine, findings) -> Guide:
        named = next((f for f in findings if self.id in f.repairs), None)
        numpy = Numpy2.of(named) if named is not None else Numpy2()
        what = ", ".join([*(["PyTorch"] if numpy.torch_made_for_numpy_1 else []), *numpy.packages]) or "-"
        python = system.windows_path(env.python) if env is not None else "python"
        steps = [said("guide.numpy.back", python=python), said("guide.numpy.upgrade", what=what),
                 said("guide.check_same")]
        return Guide(self.id, same_url(PYTORCH_GET_STARTED), said("guide.link.pytorch"), steps)


class UpgradeBitsandbytes(GuidedRepair):
    """`upgrade-bitsandbytes`: bitsandbytes without the GPU library for torch's CUDA (bitsandbytes-no-gpu-library)."""

    id = "upgrade-bitsandbytes"

    def guide(self, system, env, machine, findings) -> Guide:
        python = system.windows_path(env.python) if env is not None else "python"
        steps = [said("guide.bitsandbytes.unofficial", python=python),
                 said("guide.bitsandbytes.upgrade", python=python), said("guide.check_same")]
        return Guide(self.id, same_url(BITSANDBYTES_INSTALL), said("guide.link.app", app="bitsandbytes"), steps)


GUIDED_REPAIRS = (Install64BitPython(), UpdateGpuDriver(), UpdateAmdDriver(), StartFresh(), LoadTorchFirst(),
                  AppControlSettings(), InstallMatchingTorch(), UpdateRuntimeCopy(), UnsetMachineVariable(),
                  RemoveRegistryPythonPath(), RenameAppFolder(), InstallCudaTorch(), InstallTorchForGpu(),
                  InstallNumpy1(), UpgradeBitsandbytes())


def python_minor(env: Optional[PythonEnvironment]) -> Optional[str]:
    version = env.python_version if env is not None else None
    return ".".join(version.split(".")[:2]) if version and version.count(".") >= 1 else None


def launcher(minor: Optional[str], bits64: bool) -> str:
    """The py launcher's command for that Python: `py -3.12-64` (64-bit only), `py -3.12`."""
    return f"py -{minor or '3'}" + ("-64" if bits64 else "")


def minimum_driver(cuda: str) -> Optional[str]:
    """The lowest Windows driver that runs a CUDA version at all (minor version compatibility)."""
    return known_issues()["cuda_driver_minimum_windows"].get(cuda.split(".")[0])


@cache
def _apps() -> dict[str, dict]:
    return {app["name"]: app["recreate"] for app in ai_apps()["apps"] if "recreate" in app}


def app_recreate(env: Optional[PythonEnvironment]) -> Optional[dict]:
    """How the environment's AI app makes its environment again (resources/ai_apps.json), if it is a known app."""
    return _apps().get(env.app) if env is not None and env.app else None


def app_steps(system: System, app: dict, env: PythonEnvironment, py: str) -> list[dict[str, str]]:
    values = {"py": py, "venv": env.exec_prefix.name, "folder": system.windows_path(env.exec_prefix.parent)}
    return [{lang: text.format(**values) for lang, text in zip(LANGUAGES, pair)}
            for pair in zip(*(app["steps"][lang] for lang in LANGUAGES))]


def recreate_steps(system: System, env: Optional[PythonEnvironment], py: str) -> list[dict[str, str]]:
    """A new environment beside the old one, PyTorch and the program's packages in it, then the switch."""
    if env is not None and env.kind == "conda":
        return [said("guide.recreate.conda"), said("guide.recreate.packages.conda"),
                said("guide.recreate.switch.conda", old=system.windows_path(env.exec_prefix))]
    old = system.windows_path(env.exec_prefix) if env is not None else ""
    folder = old + "-new" if env is not None and env.kind == "venv" else r"%USERPROFILE%\torch-venv"
    steps = [said("guide.recreate.venv", py=py, folder=folder), said("guide.recreate.packages", folder=folder)]
    if env is not None and env.kind == "venv":
        steps.append(said("guide.recreate.switch.venv", folder=folder, old=old))
    else:
        steps.append(said("guide.recreate.switch", folder=folder))
    return steps



GUIDES = {repair.id: repair for repair in GUIDED_REPAIRS}


def is_guided(action: str) -> bool:
    return action in GUIDES


def fresh_start_fits(problem: Problem) -> bool:
    """A problem that stops PyTorch and that no repair, automatic or guided, is named for."""
    return problem.severity == BLOCKER and not problem.contradicted and not problem.repairs


def guided_steps(system: System, envs: list[PythonEnvironment], diagnosis: Diagnosis) -> list[tuple[Problem, Guide]]:
    """Every problem worth acting on with the guides that fit it: its guided repairs, or the fresh start where no
    repair is named at all. Nothing is changed, and nothing is run."""
    by_python = {system.windows_path(env.python): env for env in envs}
    found = []
    for problem in sorted(diagnosis.problems, key=lambda p: p.sort_key):
        if problem.severity not in (BLOCKER, WARNING) or problem.contradicted:
            continue
        actions = [a for a in problem.repairs if is_guided(a)] + ([START_FRESH] if fresh_start_fits(problem) else [])
        env = by_python.get(problem.environment or "")
        for action in actions:
            plan = GUIDES[action].plan(system, env, diagnosis.machine, problem.findings, None)
            found.append((problem, plan.guide))
    return found
