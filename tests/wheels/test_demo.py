"""The demo machine: built offline from resources/demo, and the engine's answer on it is the real wheel's."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from app.demo.computer import (
    DEMO_PYTHON_HOME,
    DEMO_RESOURCE,
    DEMO_SITE,
    DEMO_TORCH_LIB,
    DEMO_VENV,
    build_demo_image,
    load_demo_data,
)
from app.engine.pe import read_pe
from app.inventory.environment import inspect_environment
from app.inventory.integrity import check_torch_files
from app.main import main
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import PYTHON_HOME, SITE, TORCH_LIB, VENV, real

LIBOMP140 = "libomp140.x86_64.dll"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One demo image for the read-only tests of this module."""
    return build_demo_image(tmp_path_factory.mktemp("demo") / "image")


@pytest.fixture
def fresh_demo(tmp_path):
    """A demo image a test may change."""
    return build_demo_image(tmp_path / "demo")


def deps(root, capsys):
    """`python -m app deps <torch\\lib> --root <root> --json -`: exit code, nodes, edges (ids replaced)."""
    code = main(["deps", TORCH_LIB, "--root", str(root), "--json", "-"])
    document = json.loads(capsys.readouterr().out)
    label = {n["id"]: (n["name"], n["path"]) for n in document["nodes"]}
    nodes = {json.dumps({k: v for k, v in n.items() if k != "id"}, sort_keys=True) for n in document["nodes"]}
    edges = {(label[e["from"]], label[e["to"]], e["kind"], e["name"], tuple(e["functions"]))
             for e in document["edges"]}
    return code, nodes, edges


def relative(windows_path):
    """A Windows path on C: as a path relative to the image root, with forward slashes."""
    return windows_path[3:].replace("\\", "/")


def image_files(root):
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def test_demo_paths_are_the_real_wheel_image_layout():
    assert (DEMO_PYTHON_HOME, DEMO_VENV, DEMO_SITE, DEMO_TORCH_LIB) == (PYTHON_HOME, VENV, SITE, TORCH_LIB)


def test_demo_builds_offline_from_the_resource_alone_and_is_small(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise AssertionError("the demo must not download or read the real-file cache")

    monkeypatch.setattr(realfiles, "download", offline)
    monkeypatch.setattr(realfiles, "extract", offline)
    monkeypatch.setattr(socket.socket, "connect", offline)
    root = tmp_path / "demo"
    assert build_demo_image(root) == root
    files = image_files(root)
    assert sum(p.stat().st_size for p in files.values()) < 10 << 20
    system = OfflineImage(root)
    lib = system.host_path(DEMO_TORCH_LIB)
    names = {p.name for p in lib.iterdir()}
    assert {"c10.dll", "fbgemm.dll", "torch_cpu.dll", "torch_python.dll", "libiomp5md.dll"} <= names
    assert LIBOMP140 not in {n.lower() for n in names}
    for path in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        assert system.host_path(DEMO_PYTHON_HOME + "\\" + path).is_file()
    assert system.host_path(DEMO_VENV + r"\Scripts\python.exe").is_file()
    for path in ("msvcp140.dll", "vcomp140.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        assert system.host_path(r"C:\Windows\System32" + "\\" + path).is_file()
    runtime = system.registry_values(r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\x64")
    assert runtime["Installed"].data == 1 and runtime["Version"].data == "v14.51.36231.00"


def test_demo_files_read_back_as_recorded(demo):
    system = OfflineImage(demo)
    for entry in load_demo_data()["files"]:
        info = read_pe(system.host_path(entry["path"]))
        assert (info.cpu_name, list(info.linker_version), info.is_dll) == (
            entry["machine"], entry["linker_version"], entry["dll"]), entry["path"]
        assert (info.file_version, info.product_version, info.dependent_load_flags) == (
            entry["file_version"], entry["product_version"], entry["dependent_load_flags"]), entry["path"]
        imports = [{"dll": i.name, "delay": i.delay,
                    "functions": [f.name if f.name is not None else f.ordinal for f in i.functions]}
                   for i in info.imports]
        assert imports == entry["imports"], entry["path"]
        exports = info.exports
        pairs = sorted([o, exports.name_of(o)] for o in exports.ordinals) if exports else []
        assert pairs == entry["exports"], entry["path"]


def test_demo_keeps_the_openmp_ordinals_and_versions(demo):
    system = OfflineImage(demo)
    libiomp = read_pe(system.host_path(DEMO_TORCH_LIB + r"\libiomp5md.dll"))
    assert libiomp.file_version == libiomp.product_version == "5.0.2024.320"
    assert {o: libiomp.exports.name_of(o) for o in (703, 706, 707, 710, 717)} == {
        703: "omp_get_max_threads", 706: "omp_get_num_threads", 707: "omp_get_thread_num",
        710: "omp_in_parallel", 717: "omp_set_num_threads"}
    torch_python = read_pe(system.host_path(DEMO_TORCH_LIB + r"\torch_python.dll"))
    from_cpu = next(i for i in torch_python.imports if i.name.lower() == "torch_cpu.dll")
    torch_cpu = read_pe(system.host_path(DEMO_TORCH_LIB + r"\torch_cpu.dll"))
    assert len(from_cpu.functions) > 4000
    assert all(torch_cpu.exports.ordinal_of(f) is not None for f in from_cpu.functions)
    msvcp = read_pe(system.host_path(r"C:\Windows\System32\msvcp140.dll"))
    assert msvcp.file_version == "14.51.36247.0"


def test_demo_deps_reports_libomp140_missing_for_fbgemm_and_torch_cpu(demo, capsys):
    code = main(["deps", DEMO_TORCH_LIB, "--root", str(demo), "--json", "-"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    nodes = {n["id"]: n for n in document["nodes"]}
    missing = [n for n in document["nodes"] if n["status"] == "missing"]
    assert [n["name"] for n in missing] == [LIBOMP140]
    importers = {nodes[e["from"]]["name"]: sorted(int(f[1:]) for f in e["functions"])
                 for e in document["edges"] if e["to"] == missing[0]["id"]}
    assert importers == {"fbgemm.dll": [703, 706, 707], "torch_cpu.dll": [703, 706, 707, 710, 717]}
    statuses = {n["name"]: n["status"] for n in document["nodes"] if n["root"]}
    assert statuses["fbgemm.dll"] == statuses["torch_cpu.dll"] == "children-error"
    assert statuses["c10.dll"] == "ok"
    assert not any(n["missing_exports"] for n in document["nodes"])


def test_demo_with_the_openmp_runtime_placed_loads_clean(fresh_demo, capsys):
    lib = OfflineImage(fresh_demo).host_path(DEMO_TORCH_LIB)
    shutil.copyfile(lib / "libiomp5md.dll", lib / LIBOMP140)
    code, nodes, _ = deps(fresh_demo, capsys)
    assert code == 0
    assert {json.loads(n)["status"] for n in nodes} == {"ok"}


def test_demo_environment_is_python_3129_venv_with_torch_240_cpu(demo):
    system = OfflineImage(demo)
    env = inspect_environment(system, system.host_path(DEMO_VENV))
    assert env.kind == "venv" and env.is_venv and env.is_64bit
    assert env.python_version == "3.12.9"
    assert env.torch.version == "2.4.0+cpu" and env.torch.build == "CPU"
    assert env.base_exec_prefix == system.host_path(DEMO_PYTHON_HOME)
    base = inspect_environment(system, system.host_path(DEMO_PYTHON_HOME))
    assert base.kind == "python.org" and base.python_version == "3.12.9"  # from python312.dll's FileVersion


def test_demo_torch_lib_matches_its_record(demo):
    system = OfflineImage(demo)
    report = check_torch_files(inspect_environment(system, system.host_path(DEMO_VENV)), hashes=True)
    assert report.ok and report.hashed
    assert len(list(system.host_path(DEMO_TORCH_LIB).glob("*.dll"))) == 11
    torch_files = [p for p in system.host_path(DEMO_TORCH_LIB).parent.rglob("*") if p.is_file()]
    assert report.checked == len(torch_files) == 13  # the DLLs, __init__.py and version.py


@pytest.mark.wheels
@pytest.mark.parametrize("libomp", [False, True], ids=["as-installed", "openmp-placed"])
def test_demo_gives_the_same_deps_answer_as_the_real_wheel(torch_image, fresh_demo, capsys, libomp):
    real_image = torch_image(libomp=libomp)
    if libomp:
        lib = OfflineImage(fresh_demo).host_path(DEMO_TORCH_LIB)
        shutil.copyfile(lib / "libiomp5md.dll", lib / LIBOMP140)
    real_code, real_nodes, real_edges = deps(real_image.root, capsys)
    demo_code, demo_nodes, demo_edges = deps(fresh_demo, capsys)
    assert demo_code == real_code == (0 if libomp else 1)
    assert demo_nodes == real_nodes
    assert demo_edges == real_edges


@pytest.mark.wheels
def test_demo_layout_and_settings_are_the_real_wheel_images(torch_image, demo):
    real_files, demo_files = image_files(torch_image().root), image_files(demo)
    assert set(demo_files) == set(real_files) | {relative(SITE + r"\torch-2.4.0.dist-info\RECORD")}
    for name in ("registry.json", relative(VENV + r"\pyvenv.cfg"), relative(SITE + r"\torch\version.py")):
        assert demo_files[name].read_text(encoding="utf-8") == real_files[name].read_text(encoding="utf-8"), name
    settings = json.loads(demo_files["environment.json"].read_text(encoding="utf-8"))
    assert settings.pop("demo") is True  # the one difference: it says it is the demo computer (its words)
    assert settings == json.loads(real_files["environment.json"].read_text(encoding="utf-8"))


@pytest.mark.wheels
def test_recorded_demo_data_is_up_to_date_with_the_real_wheel(tmp_path):
    from tools.record_demo import record

    real(realfiles.torch_lib, realfiles.TORCH_240)
    fresh = record(tmp_path / "demo.json.gz")
    assert load_demo_data(fresh) == load_demo_data(DEMO_RESOURCE), (
        "resources/demo is stale: run `python -m tools.record_demo`")
