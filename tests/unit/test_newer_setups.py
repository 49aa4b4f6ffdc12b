"""Newer setups, on copied drives: Smart App Control (its registry state, unsigned torch DLLs, a replayed WinError 4551
and a pasted one), Windows on ARM with an x64 Python under emulation (the runtime it needs, what PyPI offers), and the
free-threaded Python (python3.13t.exe found beside python.exe; a torch for the other ABI is a blocker with a guide)."""

from __future__ import annotations

import dataclasses

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import Import, build_pe
from app.i18n import LANGUAGES
from app.inventory.discovery import discover
from app.inventory.environment import inspect_environment
from app.inventory.machine import CI_POLICY_KEY, read_machine_facts
from app.probes.app_control import replayed_block
from app.probes.base import ProbeContext
from app.probes.causes import group_by_cause
from app.probes.error_text import classify_error
from app.probes.finding import Finding
from app.repair.guides import GUIDES
from app.repair.vc_runtime import architectures
from app.resources import known_issues
from app.system.offline import OfflineImage
from tests.helpers.diagnosis import diagnose
from tests.helpers.pe_machine import HOME, PY, VENV, torch

PY313 = HOME + r"\AppData\Local\Programs\Python\Python313"


def smart_app_control(image, value):
    image.set_value(CI_POLICY_KEY, "VerifiedAndReputablePolicyState", "REG_DWORD", value)


def found(diagnosis, code):
    return [f for f in diagnosis.findings if f.code == code]


# -- Smart App Control ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "state"), [(0, "off"), (1, "on"), (2, "evaluation")])
def test_smart_app_control_state_is_read_from_the_image_registry(machine, value, state):
    smart_app_control(machine, value)
    assert read_machine_facts(OfflineImage(machine.root)).smart_app_control == state


def test_an_unknown_smart_app_control_value_is_a_problem_not_a_state(machine):
    smart_app_control(machine, 7)
    facts = read_machine_facts(OfflineImage(machine.root))
    assert facts.smart_app_control is None
    assert any("VerifiedAndReputablePolicyState" in p for p in facts.problems)


def test_smart_app_control_on_with_unsigned_torch_dlls_is_a_warning_with_the_guide(machine):
    pytest.importorskip("lief")  # the signature check off Windows
    smart_app_control(machine, 1)
    (risk,) = found(diagnose(machine), "app-control-blocks")
    assert (risk.severity, risk.variant, risk.repairs) == ("warning", "risk", ["app-control-settings"])
    assert risk.evidence["dll"] == "c10.dll" and risk.evidence["signature"] == "not-signed"
    assert "Smart App Control" in risk.text("en").title and "智能应用控制" in risk.text("zh_CN").title


def test_smart_app_control_in_evaluation_is_only_told_and_off_says_nothing(machine):
    pytest.importorskip("lief")
    smart_app_control(machine, 2)
    (told,) = found(diagnose(machine), "app-control-blocks")
    assert (told.severity, told.variant, told.repairs) == ("info", "evaluation", [])
    smart_app_control(machine, 0)
    assert found(diagnose(machine), "app-control-blocks") == []


def test_a_replayed_winerror_4551_is_a_blocker_that_leads_the_replays_failure(machine):
    smart_app_control(machine, 1)
    system = OfflineImage(machine.root)
    env = inspect_environment(system, machine.host(VENV))
    ctx = ProbeContext(system, read_machine_facts(system), env)
    message = "[WinError 4551] An Application Control policy has blocked this file. Error loading \"c10.dll\""
    assert replayed_block(ctx, 126, "c10.dll", message) is None
    blocked = replayed_block(ctx, 4551, "c10.dll", message)
    assert (blocked.code, blocked.severity, blocked.variant) == ("app-control-blocks", "blocker", None)
    failed = Finding("import-failed", "blocker", {"dll": "c10.dll", "winerror": 4551}, [], blocked.environment)
    (problem,) = group_by_cause([failed, blocked])
    assert problem.lead is blocked and problem.repairs == ["app-control-settings"]
    ctx.machine.smart_app_control = "off"  # then an organisation's policy is the likely source
    assert replayed_block(ctx, 4551, "c10.dll", message).text("en").title.startswith("An App Control policy")


def test_the_app_control_guide_warns_that_off_cannot_be_undone_and_names_the_admin(machine):
    smart_app_control(machine, 1)
    system = OfflineImage(machine.root)
    env = inspect_environment(system, machine.host(VENV))
    guide = GUIDES["app-control-settings"].guide(system, env, read_machine_facts(system), [])
    text = " ".join(step["en"] for step in guide.steps)
    assert "App & browser control" in text and "cannot be turned back on without reinstalling Windows" in text
    assert "administrator" in text and VENV + r"\Lib\site-packages\torch\lib" in text
    assert all(step["zh_CN"] for step in guide.steps) and "support.microsoft.com" in guide.url["en"]


@pytest.mark.parametrize("pasted", [
    "OSError: [WinError 4551] An Application Control policy has blocked this file. Error loading "
    "\"C:\\venv\\Lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies.",
    "ImportError: DLL load failed while importing _C: 应用程序控制策略已阻止此文件。",
    "0x800711C7",
])
def test_explaining_a_pasted_4551_names_smart_app_control(pasted):
    cause = classify_error(pasted)
    assert cause.advice == "app-control"
    assert "Smart App Control" in cause.text("en")["action"] and "智能应用控制" in cause.text("zh_CN")["action"]


def test_a_plain_access_denied_still_points_at_security_software():
    cause = classify_error("PermissionError: [WinError 5] Access is denied. Error loading \"x\\torch\\lib\\c10.dll\"")
    assert cause.advice == "allow-blocked-file" and "Smart App Control" not in cause.text("en")["action"]


# -- Windows on ARM ------------------------------------------------------------------------------------------------
@pytest.fixture
def arm_machine(tmp_path):
    """An ARM64 Windows 11 whose user installed the x64 python.org Python and a venv with torch in it."""
    image = ImageBuilder(tmp_path / "arm", arch="ARM64")
    image.set_variable("system", "PROCESSOR_ARCHITECTURE", "ARM64")
    image.write(PY + r"\python.exe", build_pe(dll=False, machine="x64"))
    image.venv(VENV, PY, "3.12.4", python_exe=build_pe(dll=False, machine="x64"))
    torch(image, "2.5.1+cpu")
    return image


def test_an_x64_python_on_arm64_is_emulated_and_told_what_pypi_offers(arm_machine):
    (emulated,) = found(diagnose(arm_machine), "python-emulated")
    native = known_issues()["win_arm64"]
    assert emulated.severity == "info" and emulated.evidence["python_machine"] == "AMD64"
    assert emulated.variant == (None if native["pypi_first_release"] else "not-on-pypi")
    text = emulated.text("en").explanation
    assert "emulation" in text and "it works, more slowly" in text and native["read"] in text
    assert "模拟" in emulated.text("zh_CN").explanation


def test_an_image_captured_by_an_emulated_program_is_still_arm64(arm_machine):
    arm_machine.env["arch"] = "AMD64"  # what GetNativeSystemInfo tells an x64 program on ARM64
    arm_machine.save()
    assert OfflineImage(arm_machine.root).architecture == "ARM64"


def test_the_vc_runtime_for_an_emulated_x64_python_is_the_x64_package(arm_machine):
    system = OfflineImage(arm_machine.root)
    facts = read_machine_facts(system)
    env = inspect_environment(system, arm_machine.host(VENV))
    assert architectures(facts, env) == ["x64"]
    native = dataclasses.replace(env, python_cpu_type=0xAA64)
    assert architectures(facts, native) == ["arm64"]
    assert architectures(facts, None) == ["arm64"]
    assert architectures(dataclasses.replace(facts, architecture="AMD64"), env) == ["x64"]


def test_a_native_arm64_python_is_not_called_emulated(arm_machine):
    arm_machine.write(PY + r"\python.exe", build_pe(dll=False, machine="arm64"))
    arm_machine.venv(VENV, PY, "3.12.4", python_exe=build_pe(dll=False, machine="arm64"))
    assert found(diagnose(arm_machine), "python-emulated") == []


# -- free-threaded Python ------------------------------------------------------------------------------------------
def python313(image, torch_abi=None, wheel_abi=None):
    """python.org's 3.13 with the free-threaded binaries: python.exe (python313.dll) and python3.13t.exe
    (python313t.dll) in one folder, one Lib\\site-packages; a torch whose _C is built for `torch_abi`."""
    image.write(PY313 + r"\python.exe", build_pe(dll=False, imports=[Import("python313.dll", ("Py_Main",))]))
    image.write(PY313 + r"\python3.13t.exe", build_pe(dll=False, imports=[Import("python313t.dll", ("Py_Main",))]))
    for name in ("python313.dll", "python313t.dll"):
        image.write(PY313 + "\\" + name, build_pe(dll_name=name, file_version=(3, 13, 1150, 1013)))
    site = PY313 + r"\Lib\site-packages"
    image.set_value(r"HKCU\Software\Python\PythonCore\3.13t\InstallPath", "ExecutablePath", "REG_SZ",
                    PY313 + r"\python3.13t.exe")
    if torch_abi:
        image.torch_version_file(site, "2.7.0+cpu")
        image.write(site + rf"\torch\_C.{torch_abi}-win_amd64.pyd", build_pe(dll_name="_C.pyd"))
    if wheel_abi:
        image.write(site + r"\torch-2.7.0.dist-info\WHEEL",
                    f"Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: false\nTag: cp313-{wheel_abi}"
                    "-win_amd64\n")


@pytest.fixture
def image(tmp_path):
    return ImageBuilder(tmp_path / "ft")


def test_python313t_beside_python_exe_is_a_second_environment(image):
    python313(image)
    envs = {env.python.name: env for env in discover(OfflineImage(image.root)) if env.exec_prefix.name == "Python313"}
    assert set(envs) == {"python.exe", "python3.13t.exe"}
    assert (envs["python3.13t.exe"].free_threaded, envs["python3.13t.exe"].abi_tag) == (True, "cp313t")
    assert (envs["python.exe"].free_threaded, envs["python.exe"].abi_tag) == (False, "cp313")
    assert envs["python3.13t.exe"].python_version == "3.13.1"


def test_a_venv_of_the_free_threaded_python_is_free_threaded(image):
    python313(image)
    folder = HOME + r"\ft-venv"
    image.write(folder + r"\pyvenv.cfg", f"home = {PY313}\ninclude-system-site-packages = false\nversion = 3.13.1\n"
                                         f"executable = {PY313}\\python3.13t.exe\n")
    image.write(folder + r"\Scripts\python.exe", build_pe(dll=False))
    env = inspect_environment(OfflineImage(image.root), image.host(folder))
    assert env.free_threaded and env.abi_tag == "cp313t"


def test_a_normal_torch_in_the_free_threaded_python_is_a_blocker_with_a_guide(image):
    python313(image, torch_abi="cp313")
    system = OfflineImage(image.root)
    ft = inspect_environment(system, image.host(PY313 + r"\python3.13t.exe"))
    diagnosis = diagnose(image, folders=[PY313])
    (wrong,) = [f for f in found(diagnosis, "torch-wrong-abi") if f.environment == system.windows_path(ft.python)]
    assert (wrong.severity, wrong.variant, wrong.repairs) == ("blocker", None, ["install-matching-torch"])
    assert wrong.evidence["torch_abi"] == "cp313" and wrong.evidence["file"] == "_C.cp313-win_amd64.pyd"
    assert wrong.text("en").title == ("This PyTorch was built for normal Python 3.13; this is the free-threaded "
                                      "Python 3.13t")
    assert found(diagnosis, "torch-wrong-abi") == [wrong]  # python.exe, for which it was built, is fine
    guide = GUIDES["install-matching-torch"].guide(system, ft, diagnosis.machine, [wrong])
    text = " ".join(step["en"] for step in guide.steps)
    assert PY313 + r"\python.exe" in text and "share one site-packages" in text
    assert ">=2.7.0 <=2.12.0" in text  # PyPI's free-threaded builds for 3.13t (known_issues.json)
    assert all(step[lang] for step in guide.steps for lang in LANGUAGES)


def test_a_free_threaded_torch_in_normal_python_is_the_reverse_variant(image):
    python313(image, torch_abi="cp313t")
    diagnosis = diagnose(image, folders=[PY313])
    (wrong,) = found(diagnosis, "torch-wrong-abi")
    assert wrong.environment.endswith(r"Python313\python.exe") and wrong.variant == "free-threaded-build"


def test_the_wheel_tag_tells_the_abi_when_no_c_module_is_there(image):
    python313(image, wheel_abi="cp313")
    image.torch_version_file(PY313 + r"\Lib\site-packages", "2.7.0+cpu")
    (wrong,) = found(diagnose(image, folders=[PY313]), "torch-wrong-abi")
    assert wrong.evidence["file"] == r"torch-2.7.0.dist-info\WHEEL" and wrong.evidence["abi"] == "cp313t"


def test_a_matching_abi_says_nothing(image):
    python313(image, torch_abi="cp313")
    image.host(PY313 + r"\python3.13t.exe").unlink()
    assert found(diagnose(image, folders=[PY313]), "torch-wrong-abi") == []
