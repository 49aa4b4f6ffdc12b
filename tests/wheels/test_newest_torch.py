"""Today's PyTorch on real wheels from PyPI: torch 2.10.0, 2.12.1 and the newest release, as
`python -m app diagnose --root IMG --json -` sees them on a copied Windows drive.

The newest is the one `resources/known_issues.json` names (`python_wheels_latest_torch`, 2.15.0 on 2026-12-01):
tests/wheels/test_knowledge_data.py fails when PyPI has a newer one, and once the data is updated this file proves that
release too. Only torch\\lib's DLLs are extracted from each torch wheel (tests/realfiles.py, cached under .cache/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app.engine.pe import read_pe
from app.engine.versions import version_tuple
from app.resources import known_issues
from tests import realfiles
from tests.helpers.images import SITE, TORCH_LIB, build_torch_image, real

pytestmark = [pytest.mark.wheels, pytest.mark.slow]

NEWEST = known_issues()["python_wheels_latest_torch"]
TORCHES = ["2.10.0", "2.12.1", NEWEST]
SYS32 = "C:\\Windows\\System32\\"
THREADS = "vcruntime140_threads.dll"


def diagnose(image) -> tuple[int, dict]:
    """The command line itself, in its own process: its exit code and its JSON document."""
    image.save()
    ran = subprocess.run([sys.executable, "-m", "app", "diagnose", "--root", str(image.root), "--json", "-",
                          "--quiet"], cwd=realfiles.REPO, capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert ran.returncode in (0, 1), ran.stderr[-3000:]
    return ran.returncode, json.loads(ran.stdout)


def problems(document: dict, *severities: str) -> list[dict]:
    return [p for p in document["problems"] if p["severity"] in severities]


def shown(document: dict, *severities: str) -> list[tuple]:
    """Blockers / warnings as a failure message shows them: code, variant, title."""
    return [(f["code"], f["variant"], f["title"]) for p in problems(document, *severities)
            for f in (document["findings"][i] for i in p["findings"])]


def runtime_imports(lib) -> dict[str, list[str]]:
    """VC++ runtime DLL -> the torch\\lib DLLs that import it (load-time and delay imports), read from the files."""
    runtime = set(known_issues()["vc_runtime_dlls"])
    found: dict[str, set[str]] = {}
    for dll in sorted(lib.glob("*.dll")):
        for imported in read_pe(dll).imports:
            if imported.name.lower() in runtime:
                found.setdefault(imported.name.lower(), set()).add(dll.name)
    return {name: sorted(importers) for name, importers in found.items()}


def test_the_newest_release_is_at_least_215():
    assert version_tuple(NEWEST) >= (2, 15, 0)


@pytest.mark.parametrize("version", TORCHES)
def test_on_the_current_runtime_diagnose_exits_0_without_a_warning(tmp_path, version):
    image = build_torch_image(tmp_path / "image", f"torch=={version}")  # msvc-runtime 14.51: System32 + registry
    code, document = diagnose(image)
    assert (code, shown(document, "blocker", "warning")) == (0, [])
    assert document["summary"]["blockers"] == document["summary"]["warnings"] == 0 and document["complete"]
    (env,) = [e for e in document["environments"] if e["torch"] is not None]
    assert env["torch"]["version"] == f"{version}+cpu"
    # the runtime DLLs this cp312 wheel imports are the ones the data measured (cp311), and each one was found
    imports = runtime_imports(image.host(TORCH_LIB))
    assert imports == known_issues()["vc_runtime_imports"][version]
    (graph,) = document["dependencies"]
    nodes = {n["name"].lower(): n for n in graph["nodes"]}
    assert {n["status"] for n in graph["nodes"]} == {"ok"} and {"c10.dll", "torch_cpu.dll"} <= set(nodes)
    assert all(nodes[name]["status"] == "ok" and nodes[name]["path"] for name in imports)
    for name in set(imports) - {"vcruntime140.dll", "vcruntime140_1.dll"}:  # those two: python.exe's own copies
        assert nodes[name]["path"].lower() == (SYS32 + name).lower(), nodes[name]


def test_the_newest_on_a_1429_runtime_is_one_problem_the_runtime(tmp_path):
    old = real(realfiles.msvc_runtime_dlls, realfiles.MSVC_RUNTIME_1429)
    assert THREADS not in {p.name.lower() for p in old} and "msvcp140.dll" in {p.name.lower() for p in old}
    image = build_torch_image(tmp_path / "image", f"torch=={NEWEST}", vc_runtime=False)
    image.copy_files(old, r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.29.30133")
    assert "torch_cpu.dll" in runtime_imports(image.host(TORCH_LIB))[THREADS]  # the real wheel needs it
    code, document = diagnose(image)
    assert code == 1
    found = problems(document, "blocker", "warning")
    assert len(found) == 1, shown(document, "blocker", "warning")
    (problem,) = found
    assert problem["severity"] == "blocker" and problem["code"] in ("vc-runtime-too-old", "vc-runtime-missing")
    assert problem["repairs"] == ["install-vc-runtime"]
    findings = [document["findings"][i] for i in problem["findings"]]
    lead = findings[0]
    assert lead["code"] == problem["code"] == "vc-runtime-too-old" and lead["evidence"]["found"].startswith("14.29")
    missing = [f["evidence"]["dll"].lower() for f in findings if f["code"] == "missing-dll"]
    assert missing == [THREADS]
    assert all(f["repairs"] == ["install-vc-runtime"] for f in findings), [(f["code"], f["repairs"]) for f in findings]
    assert document["summary"]["blockers"] == 1 and document["summary"]["warnings"] == 0


def add_wheel(image, requirement: str) -> None:
    """Every file of a real wheel into the image's site-packages, as pip unpacks it (RECORD, METADATA, .pyd)."""
    folder = real(realfiles.extract, requirement, "*")
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".done-")):
        image.copy(path, SITE + "\\" + str(path.relative_to(folder)).replace("/", "\\"), link=True)


def companion_image(tmp_path, torch: str):
    image = build_torch_image(tmp_path / "image", torch)
    add_wheel(image, "torchvision==0.29.1")
    return image


def test_torchvision_0291_beside_torch_2141_is_no_companion_mismatch(tmp_path):
    image = companion_image(tmp_path, "torch==2.14.1")
    # what the probe checks, read here on its own: every torch_cpu.dll function torchvision's extensions import
    exported = set(read_pe(image.host(TORCH_LIB + r"\torch_cpu.dll")).exports.names)
    extensions = sorted(image.host(SITE + r"\torchvision").glob("*.pyd"))
    wanted = {f.name for pyd in extensions for d in read_pe(pyd).imports if d.name.lower() == "torch_cpu.dll"
              for f in d.functions}
    assert len(extensions) >= 2 and len(wanted) > 50 and wanted <= exported
    code, document = diagnose(image)
    assert [f for f in document["findings"] if f["code"] == "companion-mismatch"] == []
    assert (code, shown(document, "blocker", "warning")) == (0, [])


def test_the_same_torchvision_beside_torch_2121_is_a_companion_mismatch(tmp_path):
    """The control: the probe does read torchvision 0.29.1's _C_stable.pyd (it needs torch>=2.14.0)."""
    code, document = diagnose(companion_image(tmp_path, "torch==2.12.1"))
    (vision,) = [f for f in document["findings"] if f["code"] == "companion-mismatch"]
    assert (code, vision["evidence"]["package"], vision["severity"]) == (1, "torchvision", "blocker")
    assert vision["evidence"]["count"] >= 1 and vision["repairs"] == ["match-companions"]
