"""Guided repairs (app/repair/guides.py) and the words that used to contradict themselves: every repair a finding
names exists and plans or refuses with words; the guides say exactly what to download and what to do after; the
CLI prints them and changes nothing; path-fragile, path-shadowing, non-ascii-path and the refusals on a copied
drive say what is true."""

from __future__ import annotations

import ast
import dataclasses
import io
from pathlib import Path

import pytest

from app.cli.base import ExitCode
from app.cli.commands import run_command
from app.cli.output import Output
from app.cli.parser import build_parser
from app.demo.computer import build_demo_image
from app.demo.pe_writer import Export, build_pe
from app.i18n import LANGUAGES, words
from app.inventory.discovery import discover
from app.inventory.environment import inspect_environment
from app.probes.finding import catalogue
from app.probes.runner import run_diagnosis
from app.repair.actions import ALIASES, action_for
from app.repair.guides import GuidedPlan, guide_of, guided_steps
from app.repair.names import repair_name
from app.repair.plan import Plan, PlanRefused
from app.repair.run import plan_repair
from app.report.document import diagnosis_report, render_report
from app.system.offline import OfflineImage
from tests.helpers.diagnosis import diagnose, finding
from tests.helpers.pe_machine import HOME, LIB, PY, VENV, torch, vc_runtime

REPO = Path(__file__).resolve().parents[2]
PY32 = HOME + r"\AppData\Local\Programs\Python\Python312-32"
NVIDIA_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}\0000"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("TDD_DATA_DIR", str(folder))
    return folder


def python_32bit(image) -> None:
    """The venv's Python is 32-bit (a PE32 python.exe of machine type x86), as its base Python."""
    image.write(PY32 + r"\python.exe", build_pe(dll=False, machine="x86"))
    image.venv(VENV, PY32, "3.12.4", python_exe=build_pe(dll=False, machine="x86"))


def old_nvidia_driver(image) -> None:
    torch(image, "2.4.1+cu124", cuda="12.4")
    image.set_value(NVIDIA_KEY, "ProviderName", "REG_SZ", "NVIDIA")
    image.set_value(NVIDIA_KEY, "DriverVersion", "REG_SZ", "31.0.15.1215")  # NVIDIA 512.15


def env_and_diagnosis(image):
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    return system, env, run_diagnosis(system, [env])


# -- every repair a finding names ----------------------------------------------------------------------------------
def named_repair_ids() -> set[str]:
    """Every repair id the probes can put into a finding: the items of the lists in the `repairs` argument of each
    ctx.finding(...) call (a module constant is followed to its value), and of the lists returned by the functions
    that argument calls (repairs_for, ...), read from the source."""
    found: set[str] = set()
    for source in sorted((REPO / "app" / "probes").glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                     for target in node.targets if isinstance(target, ast.Name)
                     and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}

        def items(expression: ast.AST, functions=functions, constants=constants) -> set[str]:
            ids = set()
            for node in ast.walk(expression):
                if isinstance(node, ast.List):
                    for item in node.elts:
                        if isinstance(item, ast.Constant) and isinstance(item.value, str):
                            ids.add(item.value)
                        elif isinstance(item, ast.Name) and item.id in constants:
                            ids.add(constants[item.id])
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                    for returned in ast.walk(functions[node.func.id]):
                        if isinstance(returned, ast.Return) and returned.value is not None:
                            ids |= items(returned.value)
            return ids

        def built(name: str, function: ast.AST) -> set[str]:
            """A list the function builds in a local name: its `name = [...]`, `name += [...]` and
            `name.append(...)`."""
            ids = set()
            for node in ast.walk(function):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None and any(
                        isinstance(target, ast.Name) and target.id == name
                        for target in getattr(node, "targets", [getattr(node, "target", None)])):
                    ids |= items(node.value)
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == name):
                    ids |= items(ast.List(elts=node.args))
            return ids

        for function in [tree, *functions.values()]:
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "finding"):
                    continue
                argument = call.args[3] if len(call.args) > 3 else next(
                    (k.value for k in call.keywords if k.arg == "repairs"), None)
                if isinstance(argument, ast.Name) and function is not tree:
                    found |= built(argument.id, function)
                elif argument is not None:
                    found |= items(argument)
    return found


def test_the_repair_ids_are_read_from_every_probe():
    ids = named_repair_ids()
    assert {"install-64bit-python", "update-gpu-driver", "install-vc-runtime", "place-libomp140",
            "enable-long-paths", "unset-env-var", "remove-path-entry", "remove-duplicate-openmp",
            "take-out-path-entry", "install-numpy-1", "upgrade-bitsandbytes", "install-torch-for-gpu"} <= ids
    assert "disk" not in ids and "blocker" not in ids  # words of conditions and evidence are not repairs


@pytest.fixture
def images(tmp_path):
    """Copied drives on which the findings name their repairs: the demo (torch 2.4.0 without libomp140), a
    32-bit Python, a CUDA build with an old NVIDIA driver."""
    from app.demo.image_builder import ImageBuilder

    def healthy(name):
        image = ImageBuilder(tmp_path / name)
        vc_runtime(image)
        image.vc_runtime("x64", "14.44.35211")
        image.write(PY + r"\python.exe", build_pe(dll=False))
        image.venv(VENV, PY, "3.12.4", python_exe=build_pe(dll=False))
        torch(image, "2.4.1+cpu")
        return image

    demo = OfflineImage(build_demo_image(tmp_path / "demo"))
    made = [demo]
    for name, spoil in (("py32", python_32bit), ("gpu", old_nvidia_driver)):
        image = healthy(name)
        spoil(image)
        made.append(OfflineImage(image.root))
    return made


def test_every_repair_a_finding_names_exists_and_plans_or_refuses_with_words(images):
    diagnosed = []
    for system in images:
        envs = list(discover(system))
        diagnosed += [(system, env, run_diagnosis(system, [env])) for env in envs if env.torch is not None]
    for action in sorted(named_repair_ids()):
        action_for(action)  # raises PlanRefused ("unknown repair") when no such action exists
        fitting = [(s, e, d) for s, e, d in diagnosed if any(action in f.repairs for f in d.findings)]
        for system, env, diagnosis in fitting or diagnosed[:1]:
            try:
                plan, _ = plan_repair(system, env, action, None, diagnosis)
            except PlanRefused as refused:
                assert refused.reasons and all(r[lang].strip() for r in refused.reasons for lang in LANGUAGES)
                assert all("{" not in r[lang] for r in refused.reasons for lang in LANGUAGES)
            else:
                assert isinstance(plan, Plan) and plan.action == ALIASES.get(action, action)


# -- the guides ----------------------------------------------------------------------------------------------------
def test_install_64bit_python_guide_names_python_org_and_the_same_minor_version(machine):
    python_32bit(machine)
    system, env, diagnosis = env_and_diagnosis(machine)
    assert "install-64bit-python" in finding(diagnosis, "python-32bit").repairs
    plan, _ = plan_repair(system, env, "install-64bit-python", None, diagnosis)
    guide = guide_of(plan)
    assert isinstance(plan, GuidedPlan) and plan.changes == [] and not plan.needs_admin
    assert guide.url["en"] == "https://www.python.org/downloads/windows/"
    text = " ".join(step["en"] for step in guide.steps)
    assert "Python 3.12" in text and "Windows installer (64-bit)" in text and "py -3.12-64 -m venv" in text
    assert VENV + "-new" in text  # the environment made again, beside the old one
    assert all(step["zh_CN"] != step["en"] for step in guide.steps)
    assert plan.to_dict()["guide"]["steps"] == guide.steps
    with pytest.raises(PlanRefused):
        action_for("install-64bit-python").apply(system, plan, transaction=None)


def test_guide_of_a_known_app_uses_its_own_steps(machine):
    python_32bit(machine)
    system, env, diagnosis = env_and_diagnosis(machine)
    portable = dataclasses.replace(env, app="ComfyUI (portable)")
    guide = guide_of(plan_repair(system, portable, "install-64bit-python", None, diagnosis)[0])
    assert guide.url["en"] == "https://github.com/comfyanonymous/ComfyUI/releases"  # it brings its own Python
    assert "portable package" in guide.steps[0]["en"] and "python.org" not in " ".join(s["en"] for s in guide.steps)
    venv_app = dataclasses.replace(env, app="ComfyUI")
    guide = guide_of(plan_repair(system, venv_app, "install-64bit-python", None, diagnosis)[0])
    text = " ".join(step["en"] for step in guide.steps)
    assert "python.org" in text and "py -3.12-64 -m venv venv" in text and "main.py" in text
    assert HOME + r"\ComfyUI" in text  # the folder to work in, by name


def test_update_gpu_driver_guide_gives_the_driver_this_cuda_build_needs(machine):
    old_nvidia_driver(machine)
    system, env, diagnosis = env_and_diagnosis(machine)
    too_old = finding(diagnosis, "gpu-driver-too-old")
    guide = guide_of(plan_repair(system, env, "update-gpu-driver", None, diagnosis)[0])
    first = guide.steps[0]
    assert too_old.evidence["needed"] in first["en"] and too_old.evidence["driver"] in first["en"]
    assert "CUDA 12.4" in first["en"]
    assert "551.61" in " ".join(step["en"] for step in guide.steps)  # CUDA 12.4's own driver, from the release notes
    assert guide.url["en"].startswith("https://www.nvidia.com/") and guide.url["zh_CN"].startswith("https://www.nvidia.cn/")


def test_a_blocker_no_repair_fits_gets_the_fresh_start(machine):
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "helper_from_elsewhere.dll"))
    system, env, diagnosis = env_and_diagnosis(machine)
    missing = finding(diagnosis, "missing-dll")
    assert missing.evidence["dll"] == "helper_from_elsewhere.dll" and missing.repairs == []
    steps = guided_steps(system, [env], diagnosis)
    assert [guide.action for _, guide in steps] == ["start-fresh"]
    text = " ".join(step["en"] for step in steps[0][1].steps)
    assert "py -3.12 -m venv" in text and "wsl --install" in text


# -- the CLI -------------------------------------------------------------------------------------------------------
def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_command(build_parser().parse_args(argv), Output(out, err, io.StringIO()))
    return code, out.getvalue(), err.getvalue()


def test_repair_prints_the_guide_and_exits_1_with_nothing_changed(machine, data_dir):
    python_32bit(machine)
    code, out, _ = cli(["repair", "--root", str(machine.root), "--env", VENV, "--action", "install-64bit-python",
                        "--yes"])
    assert code == ExitCode.PROBLEM
    assert "Steps for you to follow: Install 64-bit Python" in out
    assert "https://www.python.org/downloads/windows/" in out
    assert "Nothing was changed" in out
    assert not (data_dir / "transactions").exists() or not any((data_dir / "transactions").iterdir())


def test_diagnose_prints_the_guided_steps_after_the_problems_user_names_hidden(machine):
    python_32bit(machine)
    code, out, _ = cli(["diagnose", "--root", str(machine.root), "--lang", "zh_CN", "--quiet"])
    assert code == ExitCode.PROBLEM
    heading = out.index(words("cli.guide.heading", "zh_CN", name=repair_name("install-64bit-python", "zh_CN")))
    assert "python.org" in out[heading:] and r"C:\Users\<user>\ComfyUI" in out[heading:]  # the app's own steps
    assert "alice" not in out[heading:]


# -- words that contradicted themselves ----------------------------------------------------------------------------
def test_a_broken_copy_found_only_through_path_is_not_called_working(machine):
    machine.write(r"C:\Tools\bin\helper.dll", build_pe(dll_name="helper.dll", exports=[Export(1, "other")]))
    machine.write(r"C:\Tools\bin\arch.dll", build_pe(dll_name="arch.dll", machine="x86",
                                                     exports=[Export(1, "c10_function")]))
    machine.add_to_path(r"C:\Tools\bin")
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "helper.dll", "arch.dll"))
    result = diagnose(machine)
    codes = {(f.code, f.evidence.get("dll")) for f in result.findings}
    assert ("missing-export", "helper.dll") in codes and ("wrong-architecture", "arch.dll") in codes
    assert not [f for f in result.findings if f.code == "path-fragile"]


def test_runtimes_of_different_makers_are_not_called_older(machine):
    machine.write(LIB + r"\libomp140.x86_64.dll", build_pe(
        dll_name="libomp140.x86_64.dll", company="Intel Corporation", file_version=(5, 0, 2024, 320)))
    machine.write(r"C:\Tools\omp\libomp140.x86_64.dll", build_pe(
        dll_name="libomp140.x86_64.dll", company="Microsoft Corporation", file_version=(14, 51, 36014, 0)))
    machine.add_to_path(r"C:\Tools\omp")
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "libomp140.x86_64.dll"))
    shadow = finding(diagnose(machine), "path-shadowing")
    assert shadow.variant == "other-maker" and shadow.severity == "info"
    assert shadow.evidence["company"] == "Intel Corporation"
    assert shadow.evidence["other_company"] == "Microsoft Corporation"
    text = shadow.text("en")
    assert "older" not in f"{text.title} {text.explanation}".lower() and "Keep the copy" in text.action
    assert "Intel Corporation" in text.explanation and "14.51.36014.0" in text.explanation


def test_an_older_copy_of_the_same_maker_is_still_called_older(machine):
    machine.write(LIB + r"\libomp140.x86_64.dll", build_pe(dll_name="libomp140.x86_64.dll", company="Microsoft",
                                                            file_version=(14, 38, 1, 0)))
    machine.write(r"C:\Tools\omp\libomp140.x86_64.dll", build_pe(
        dll_name="libomp140.x86_64.dll", company="Microsoft", file_version=(14, 51, 36014, 0)))
    machine.add_to_path(r"C:\Tools\omp")
    torch(machine, "2.4.1+cpu", imports=("c10.dll", "libomp140.x86_64.dll"))
    shadow = finding(diagnose(machine), "path-shadowing")
    assert shadow.variant is None and "older" in shadow.text("en").title.lower()


def test_non_ascii_user_name_is_located_without_showing_it(machine):
    other = r"C:\Users\张伟\AI\venv"
    machine.venv(other, PY, python_exe=build_pe(dll=False))
    machine.torch_version_file(other + r"\Lib\site-packages", "2.4.1")
    system = OfflineImage(machine.root)
    result = run_diagnosis(system, [inspect_environment(system, machine.host(other))])
    found = finding(result, "non-ascii-path")
    assert found.variant == "user-name" and found.evidence["count"] == 2 and found.evidence["position"] == 2
    document, trees = diagnosis_report(result, system, lang="en", source="image", source_root=str(machine.root))
    report = render_report(document, trees, "en", "text")
    assert "张伟" not in report and "your user name, the folder right under C:\\Users" in report
    assert "2 character(s) outside plain English letters" in report


def test_non_ascii_folder_is_told_by_its_position(machine):
    other = r"C:\AI\模型\venv"
    machine.venv(other, PY, python_exe=build_pe(dll=False))
    machine.torch_version_file(other + r"\Lib\site-packages", "2.4.1")
    system = OfflineImage(machine.root)
    found = finding(run_diagnosis(system, [inspect_environment(system, machine.host(other))]), "non-ascii-path")
    assert found.variant is None and found.evidence["position"] == 2 and found.evidence["under"] == r"C:\AI"
    assert "folder name number 2" in found.text("en").explanation and "C:\\AI" in found.text("en").explanation


def test_each_refusal_on_a_copied_drive_says_its_own_true_reason(machine):
    system, env, diagnosis = env_and_diagnosis(machine)
    with pytest.raises(PlanRefused) as vc:
        action_for("install-vc-runtime").plan(system, env, diagnosis.machine, diagnosis.findings, None)
    said = vc.value.reasons[0]
    assert "installer" in said["en"] and "Python" not in said["en"] and "安装程序" in said["zh_CN"]
    texts = {key: words(key, "en", action="x") for key in ("repair.refused.needs_live",
                                                          "repair.refused.needs_live.installer",
                                                          "repair.refused.needs_live.elevated")}
    assert len(set(texts.values())) == 3 and "own Python" in texts["repair.refused.needs_live"]
    assert "administrator" in texts["repair.refused.needs_live.elevated"]


def test_every_new_catalogue_entry_has_both_languages():
    entries = catalogue()
    for code in ("path-shadowing@other-maker", "non-ascii-path@user-name"):
        assert set(entries[code]) == set(LANGUAGES)
        assert all(entries[code][lang][part] for lang in LANGUAGES for part in ("title", "explanation", "action"))
