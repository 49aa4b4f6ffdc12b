"""The engine on the real torch 2.4.0 / 2.4.1 wheels, python.org's CPython and Microsoft's runtime DLLs."""

from __future__ import annotations

import json

import pefile
import pytest

from app.engine.graph import MISSING, OK, DependencyGraph
from app.engine.pe import read_pe
from app.inventory.environment import inspect_environment
from app.inventory.search_context import loader_for
from app.main import main
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import TORCH_LIB, VENV, real

pytestmark = pytest.mark.wheels


def torch_graph(image):
    system = OfflineImage(image.root)
    env = inspect_environment(system, image.host(VENV))
    graph = DependencyGraph(loader_for(system, env))
    for dll in sorted(image.host(TORCH_LIB).glob("*.dll")):
        graph.add_root(dll)
    graph.expand_all()
    return graph


def missing(graph):
    return {n.name.lower(): n for n, status in graph.statuses().items() if status == MISSING}


def test_torch_240_reports_libomp140_missing_with_both_importers(torch_image):
    graph = torch_graph(torch_image())
    gone = missing(graph)
    assert set(gone) == {"libomp140.x86_64.dll"}
    libomp = gone["libomp140.x86_64.dll"]
    importers = {e.source.name.lower(): sorted(f.ordinal for f in e.functions) for e in libomp.incoming}
    assert importers == {"fbgemm.dll": [703, 706, 707], "torch_cpu.dll": [703, 706, 707, 710, 717]}
    assert {e.kind for e in libomp.incoming} == {"import"}
    searched = [folder for _, folder in libomp.resolution.tried]
    assert any(f.endswith("torch/lib") for f in searched) and any(f.endswith("System32") for f in searched)
    statuses = {n.name.lower(): s for n, s in graph.statuses().items()}
    assert statuses["fbgemm.dll"] == statuses["torch_cpu.dll"] == "children-error"
    assert statuses["c10.dll"] == OK  # c10 does not need OpenMP


def test_torch_240_crt_contracts_and_vcomp140_are_not_missing(torch_image):
    graph = torch_graph(torch_image())
    by_name = {}
    for node in graph.nodes.values():
        for edge in node.incoming:
            by_name[edge.name.lower()] = (edge.target, graph.status(edge.target))
    crt = [name for name in by_name if name.startswith("api-ms-win-crt-")]
    assert len(crt) >= 6
    assert all(by_name[name][1] == OK and by_name[name][0].resolution.rule == "api-set" for name in crt)
    vcomp, status = by_name["vcomp140.dll"]
    assert status == OK and vcomp.resolution.rule == "system32" and vcomp.path.parent.name == "System32"
    python_dll, status = by_name["python312.dll"]
    assert status == OK and python_dll.resolution.rule == "application-folder"  # the venv's base Python


def test_torch_241_has_no_libomp140_dependency_and_nothing_missing(torch_image):
    graph = torch_graph(torch_image(torch=realfiles.TORCH_241))
    assert "libomp140.x86_64.dll" not in {n.name.lower() for n in graph.nodes.values()}
    assert missing(graph) == {}
    assert all(graph.status(root) == OK for root in graph.roots), [
        (n.name, s, n.reason, n.missing_exports[:3]) for n, s in graph.statuses().items() if s != OK]


def test_torch_240_with_libomp140_placed_loads_clean(torch_image):
    graph = torch_graph(torch_image(libomp=True))
    assert missing(graph) == {}
    assert all(graph.status(root) == OK for root in graph.roots)


def test_without_vc_runtime_msvcp140_is_missing_for_c10(torch_image):
    graph = torch_graph(torch_image(torch=realfiles.TORCH_241, vc_runtime=False))
    gone = missing(graph)
    assert "msvcp140.dll" in gone
    assert "c10.dll" in {e.source.name.lower() for e in gone["msvcp140.dll"].incoming}
    # python.org's Python ships vcruntime140(_1).dll, so those are found in python.exe's folder
    assert "vcruntime140.dll" not in gone and "vcruntime140_1.dll" not in gone


def test_deps_cli_json_names_the_missing_dll_and_exits_1(torch_image, capsys):
    image = torch_image()
    code = main(["deps", TORCH_LIB, "--root", str(image.root), "--json", "-"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    nodes = {n["id"]: n for n in document["nodes"]}
    libomp = next(n for n in document["nodes"] if n["name"].lower() == "libomp140.x86_64.dll")
    assert libomp["status"] == "missing" and libomp["path"] is None
    assert any(folder.endswith(r"\torch\lib") for folder in libomp["searched"])
    importers = {nodes[e["from"]]["name"] for e in document["edges"] if e["to"] == libomp["id"]}
    assert importers == {"fbgemm.dll", "torch_cpu.dll"}
    fbgemm = next(n for n in document["nodes"] if n["name"] == "fbgemm.dll")
    assert fbgemm["path"] == VENV + r"\Lib\site-packages\torch\lib\fbgemm.dll"
    assert fbgemm["machine"] == "x64" and fbgemm["status"] == "children-error"


def test_deps_cli_text_tree_for_torch_241_exits_0(torch_image, capsys):
    image = torch_image(torch=realfiles.TORCH_241)
    code = main(["deps", TORCH_LIB + r"\fbgemm.dll", "--root", str(image.root)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].endswith("fbgemm.dll  ok")
    assert "libiomp5md.dll  ok  (folder of the DLL being loaded)" in out
    assert "MISSING" not in out


@pytest.fixture(scope="module")
def pefile_limits():
    old = pefile.MAX_IMPORT_SYMBOLS, pefile.MAX_IMPORT_NAME_LENGTH, pefile.MAX_SYMBOL_NAME_LENGTH
    pefile.MAX_IMPORT_SYMBOLS = pefile.MAX_IMPORT_NAME_LENGTH = pefile.MAX_SYMBOL_NAME_LENGTH = 1 << 24
    yield
    pefile.MAX_IMPORT_SYMBOLS, pefile.MAX_IMPORT_NAME_LENGTH, pefile.MAX_SYMBOL_NAME_LENGTH = old


@pytest.mark.parametrize("requirement", [realfiles.TORCH_240, realfiles.MSVC_RUNTIME])
def test_reader_matches_pefile_with_its_limits_lifted(requirement, pefile_limits):
    """Every import (by name and by ordinal) and every export, against pefile told not to truncate."""
    dlls = (sorted(real(realfiles.torch_lib, requirement).glob("*.dll")) if requirement.startswith("torch")
            else real(realfiles.msvc_runtime_dlls))
    for dll in dlls:
        pe = pefile.PE(str(dll), fast_load=True, max_symbol_exports=1 << 20)
        try:
            pe.parse_data_directories(directories=[0, 1, 13])
            info = read_pe(dll)

            def theirs(entries):
                return [(e.dll.decode(), [(None, i.ordinal) if i.import_by_ordinal else (i.name.decode("latin-1"), None)
                                          for i in e.imports]) for e in entries]

            ours = [(d.name, [(f.name, f.ordinal) for f in d.functions]) for d in info.imports]
            assert ours == theirs(getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])) + theirs(
                getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])), dll.name
            export = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
            their_names = {s.name.decode("latin-1"): s.ordinal for s in export.symbols if s.name} if export else {}
            assert (info.exports.names if info.exports else {}) == their_names, dll.name
            assert not pe.get_warnings(), (dll.name, pe.get_warnings()[:2])
            assert info.cpu_type == pe.FILE_HEADER.Machine == 0x8664
        finally:
            pe.close()


def test_torch_cpu_exports_beyond_pefiles_default_limit_are_all_read():
    info = read_pe(real(realfiles.torch_lib, realfiles.TORCH_240) / "torch_cpu.dll")
    assert len(info.exports.names) > 50_000  # pefile's default stops at 8,192 ("Assuming corrupt")
    fbgemm = read_pe(real(realfiles.torch_lib, realfiles.TORCH_240) / "fbgemm.dll")
    libomp = next(d for d in fbgemm.imports if d.name.lower() == "libomp140.x86_64.dll")
    assert sorted(f.ordinal for f in libomp.functions) == [703, 706, 707]
    assert all(f.name is None for f in libomp.functions)


def diagnose_json(image, capsys):
    code = main(["diagnose", "--root", str(image.root), "--json", "-", "--quiet"])
    return code, json.loads(capsys.readouterr().out)


def test_diagnose_real_torch_240_top_blocker_is_libomp140_with_repairs(torch_image, capsys):
    code, document = diagnose_json(torch_image(), capsys)
    blockers = [f for f in document["findings"] if f["severity"] == "blocker"]
    assert code == 1
    assert [f["code"] for f in blockers] == ["openmp-runtime-missing", "missing-dll", "torch-known-bad-build"]
    assert blockers[0]["evidence"]["needed_by"] == ["fbgemm.dll", "torch_cpu.dll"]
    assert blockers[0]["repairs"] == ["place-libomp140", "upgrade-torch"]
    assert blockers[1]["evidence"]["dll"] == "libomp140.x86_64.dll"
    assert blockers[2]["evidence"]["fixed_in"] == "2.4.1" and "upgrade-torch" in blockers[2]["repairs"]
    # the three findings are one cause: one problem, its repairs once
    problem, skipped = document["problems"]  # the other: the live replay was skipped (offline image)
    assert problem["findings"] == [0, 1, 2] and problem["repairs"] == ["place-libomp140", "upgrade-torch"]
    assert skipped["code"] == "check-skipped"
    assert document["summary"] == {"blockers": 1, "warnings": 0, "infos": 1, "findings": 4}


@pytest.mark.parametrize("variant", [{"libomp": True}, {"torch": realfiles.TORCH_241}])
def test_diagnose_real_torch_with_libomp140_or_241_has_no_blocker(torch_image, capsys, variant):
    code, document = diagnose_json(torch_image(**variant), capsys)
    assert code == 0 and document["summary"]["blockers"] == 0, [f["code"] for f in document["findings"]]
    assert document["summary"]["warnings"] == (1 if "libomp" in variant else 0)  # 2.4.0: known-bad, worked around
