"""Companions built for another torch (`companion-mismatch`, `match-companions`), on copied drives that hold the
real torch 2.4.0 / 2.4.1 / 2.5.1 and torchvision / torchaudio wheels from PyPI: found by their .pyd files' import
tables against torch's exports, named in C++, one problem per companion, and the versions made for the torch."""

from __future__ import annotations

import json
import shutil

import pytest

from app.inventory.environment import inspect_environment
from app.main import main
from app.probes import companions
from app.probes.causes import group_by_cause
from app.probes.finding import BLOCKER, WARNING, finding_text
from app.probes.runner import run_diagnosis
from app.repair.actions import action_for
from app.repair.companions import proposal
from app.repair.plan import PlanRefused
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import SITE, VENV, build_torch_image
from tests.helpers.site_packages import add_wheel

pytestmark = pytest.mark.wheels

SET_TRACING = "?set_tracing@SavedTensorDefaultHooks@at@@SA_N_N@Z"
GET_INSTANCE = "?getInstance@UndefinedTensorImpl@c10@@CAAEAU12@XZ"


def diagnose(tmp_path, torch: str, *wheels: str):
    image = build_torch_image(tmp_path / "image", torch)
    for wheel in wheels:
        add_wheel(image, wheel)
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    return system, env, run_diagnosis(system, [env], probes=(companions.PROBE,)).findings


def by_package(findings):
    return {f.evidence["package"]: f for f in findings if f.code == companions.CODE}


def test_torchvision_0201_and_torchaudio_251_beside_torch_241_are_found_by_their_imports(tmp_path):
    _, _, findings = diagnose(tmp_path, "torch==2.4.1", "torchvision==0.20.1", "torchaudio==2.5.1")
    found = by_package(findings)
    assert set(found) == {"torchvision", "torchaudio"}
    vision, audio = found["torchvision"], found["torchaudio"]
    assert vision.severity == audio.severity == BLOCKER and vision.variant is None
    assert vision.evidence["missing"] == [{"function": "at::SavedTensorDefaultHooks::set_tracing(bool)",
                                           "raw": SET_TRACING, "dll": "torch_cpu.dll",
                                           "needed_by": ["torchvision\\_C.pyd"]}]
    assert {(m["raw"], m["dll"]) for m in audio.evidence["missing"]} == {(SET_TRACING, "torch_cpu.dll"),
                                                                         (GET_INSTANCE, "c10.dll")}
    instance = next(m for m in audio.evidence["missing"] if m["raw"] == GET_INSTANCE)
    assert instance["function"] == "c10::UndefinedTensorImpl::getInstance()"
    assert instance["needed_by"] == ["torchaudio\\lib\\libtorchaudio.pyd", "torio\\lib\\libtorio_ffmpeg6.pyd",
                                     "torio\\lib\\libtorio_ffmpeg5.pyd", "torio\\lib\\libtorio_ffmpeg4.pyd"]
    assert (vision.evidence["made_for"], vision.evidence["requires"]) == ("2.5.1", "torch==2.5.1")
    assert (vision.evidence["install"], audio.evidence["install"]) == ("torchvision==0.19.1", "torchaudio==2.4.1")
    assert vision.repairs == audio.repairs == ["match-companions"]
    assert any(p.endswith("torchvision\\_C.pyd") for p in vision.evidence["extensions"])
    assert not any(p.endswith("image.pyd") for p in (m for f in vision.evidence["missing"] for m in f["needed_by"]))


def test_one_problem_per_companion_in_plain_words_in_both_languages(tmp_path):
    _, _, findings = diagnose(tmp_path, "torch==2.4.1", "torchvision==0.20.1", "torchaudio==2.5.1")
    problems = group_by_cause(findings)
    assert sorted(p.lead.evidence["package"] for p in problems) == ["torchaudio", "torchvision"]
    vision = by_package(findings)["torchvision"]
    en, zh = vision.text("en"), vision.text("zh_CN")
    assert en.title == "torchvision 0.20.1 was made for PyTorch 2.5.1; you have 2.4.1+cpu"
    assert "at::SavedTensorDefaultHooks::set_tracing(bool)" in en.explanation
    assert "torchvision==0.19.1" in en.action and "torchvision==0.19.1" in zh.action
    assert "为 PyTorch 2.5.1 制作" in zh.title
    for text in (en, zh):
        assert "{" not in text.title + text.explanation + text.action


@pytest.mark.parametrize("variant", [None, "other-torch", "no-fit", "pin-only", "pin-only-no-fit"])
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_every_variant_has_its_words_filled(variant, lang):
    evidence = {"package": "xformers", "version": "0.0.28", "torch": "2.4.1", "made_for": "2.5.1",
                "requires": "torch==2.5.1", "install": "xformers==0.0.27.post2", "count": 3,
                "functions": ["at::a()", "at::b()"]}
    text = finding_text(companions.CODE, variant, evidence, lang)
    assert "{" not in text.title + text.explanation + text.action and "xformers" in text.title
    assert (lang == "zh_CN") == any("\u4e00" <= ch <= "\u9fff" for ch in text.title + text.action)


def test_the_plan_proposes_the_versions_made_for_241_and_needs_the_computer_itself(tmp_path):
    system, env, findings = diagnose(tmp_path, "torch==2.4.1", "torchvision==0.20.1", "torchaudio==2.5.1")
    before, after, _ = proposal(system, env, findings)
    assert before == {"torchvision": "0.20.1", "torchaudio": "2.5.1"}
    assert after == {"torchvision": "0.19.1", "torchaudio": "2.4.1"}
    with pytest.raises(PlanRefused) as refused:
        action_for("match-companions").plan(system, env, None, findings, None)
    assert "copied Windows drive" in refused.value.reasons[0]["en"]


def test_companions_made_for_241_beside_241_report_nothing(tmp_path):
    system, env, findings = diagnose(tmp_path, "torch==2.4.1", "torchvision==0.19.1", "torchaudio==2.4.1")
    assert by_package(findings) == {}
    with pytest.raises(PlanRefused) as refused:  # nothing to do is said, not planned
        action_for("match-companions").plan(system, env, None, findings, None)
    assert "PyTorch 2.4.1+cpu" in refused.value.reasons[0]["en"]


@pytest.mark.slow
def test_companions_made_for_251_beside_251_report_nothing(tmp_path):
    _, _, findings = diagnose(tmp_path, "torch==2.5.1", "torchvision==0.20.1", "torchaudio==2.5.1")
    assert by_package(findings) == {}


def test_a_pin_alone_without_missing_functions_is_a_warning(tmp_path):
    """torchvision 0.19.1 pins torch==2.4.1; torch 2.4.0 has every function it calls."""
    _, _, findings = diagnose(tmp_path, "torch==2.4.0", "torchvision==0.19.1")
    vision = by_package(findings)["torchvision"]
    assert (vision.severity, vision.variant, vision.evidence["count"]) == (WARNING, "pin-only", 0)
    assert vision.evidence["install"] == "torchvision==0.19.0" and vision.repairs == ["match-companions"]


def test_a_companion_is_known_by_its_imports_not_by_its_name(tmp_path):
    """torchvision's files under another name and without a torch pin are still found; numpy's .pyd files, which
    import nothing of torch, are not a companion."""
    image = build_torch_image(tmp_path / "image", "torch==2.4.1")
    add_wheel(image, "torchvision==0.20.1", rename={"torchvision-0.20.1.dist-info": "visionops-1.0.dist-info"})
    add_wheel(image, "numpy==1.26.4")
    metadata = image.host(SITE + r"\visionops-1.0.dist-info\METADATA")
    text = metadata.read_text(encoding="utf-8").replace("Name: torchvision", "Name: visionops")
    metadata.write_text(text.replace("Version: 0.20.1", "Version: 1.0").replace("Requires-Dist: torch (==2.5.1)\n",
                                                                               ""), encoding="utf-8")
    image.save()
    system = OfflineImage(image.root)
    found = by_package(run_diagnosis(system, [inspect_environment(system, image.host(VENV))],
                                     probes=(companions.PROBE,)).findings)
    assert set(found) == {"visionops"}
    ops = found["visionops"]
    assert (ops.severity, ops.variant, ops.repairs) == (BLOCKER, "no-fit", [])
    assert ops.evidence["requires"] is None and ops.evidence["made_for"] is None
    assert [m["raw"] for m in ops.evidence["missing"]] == [SET_TRACING]


def test_requirements_with_markers_or_without_a_pin_are_read_as_pip_writes_them(tmp_path):
    folder = tmp_path / "x-1.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: x\nVersion: 1\nRequires-Dist: torchvision\n"
        "Requires-Dist: torch>=2.99 ; extra == 'cuda'\nRequires-Dist: torch>=2.11\n\nRequires-Dist: torch==9\n")
    assert companions._metadata(folder) == ("x", "1", ">=2.11")
    companion = companions.Companion("x", "1", ">=2.11")
    assert companion.pin_fits("2.12.0") is True and companion.pin_fits("2.4.1") is False
    assert companions.Companion("x", "1", "==2.5.*").pin_fits("2.5.1") is None


def test_diagnose_on_the_drive_exits_1_and_lists_both_companions(tmp_path, capsys):
    image = build_torch_image(tmp_path / "image", "torch==2.4.1")
    add_wheel(image, "torchvision==0.20.1")
    add_wheel(image, "torchaudio==2.5.1")
    image.save()
    code = main(["diagnose", "--root", str(image.root), "--json", "-", "--quiet"])
    document = json.loads(capsys.readouterr().out)
    found = [f for f in document["findings"] if f["code"] == companions.CODE]
    assert code == 1 and sorted(f["evidence"]["package"] for f in found) == ["torchaudio", "torchvision"]
    assert all(f["severity"] == BLOCKER and f["repairs"] == ["match-companions"] for f in found)


def test_a_companion_whose_extensions_are_gone_is_said_unchecked_never_all_clear(tmp_path):
    image = build_torch_image(tmp_path / "image", "torch==2.4.1")
    add_wheel(image, "torchvision==0.20.1")
    for name in ("_C.pyd", "image.pyd"):  # quarantined by security software
        image.host(SITE + "\\torchvision\\" + name).unlink()
    image.save()
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    diagnosis = run_diagnosis(system, [env], probes=(companions.PROBE,))
    assert by_package(diagnosis.findings) == {} and not diagnosis.complete
    (unseen,) = [f for f in diagnosis.findings if f.code == "check-failed"]
    assert unseen.variant == "companions-unreadable" and "torchvision 0.20.1 (_C.pyd, image.pyd)" in unseen.text(
        "en").explanation
    assert "torchvision" in unseen.text("zh_CN").explanation
    shutil.rmtree(image.root)


@pytest.mark.parametrize("torch", ["torch==2.4.0", "torch==2.4.1"])
def test_torch_directml_is_read_as_a_companion_by_its_imports_and_its_pin(tmp_path, torch):
    """torch-directml's torch_directml_native.pyd imports 270 functions of torch_cpu.dll and 154 of c10.dll, and its
    metadata pins torch==2.4.1: beside 2.4.0 it is named as made for 2.4.1 (the way out: that torch), beside 2.4.1
    nothing is said. DirectML.dll ships in its package; d3d12.dll and dxcore.dll are Windows' own."""
    _, env, findings = diagnose(tmp_path, torch, realfiles.TORCH_DIRECTML)
    found = by_package(findings)
    if torch == "torch==2.4.1":
        assert "torch-directml" not in found
        return
    directml = found["torch-directml"]
    assert directml.evidence["made_for"] == "2.4.1" and directml.evidence["torch"].startswith("2.4.0")
    text = directml.text("en")
    assert directml.severity == WARNING  # every function it calls is there: its pin alone speaks
    assert "torch-directml" in text.title and "torch==2.4.1" in text.explanation + text.action
