"""Reading what a machine says about itself, from offline images; and torch\\lib against RECORD."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace

import pytest

from app.demo.image_builder import ImageBuilder
from app.demo.pe_writer import build_pe
from app.i18n import language_for
from app.inventory.discovery import discover
from app.inventory.integrity import check_torch_files
from app.inventory.machine import nvidia_version, read_machine_facts
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import SITE, real

VS = r"C:\Program Files\Microsoft Visual Studio\2022\BuildTools"
LIBOMP_IN_VS = VS + r"\VC\Redist\MSVC\14.40.33807\debug_nonredist\x64\Microsoft.VC143.OpenMP.LLVM\libomp140.x86_64.dll"
DISPLAY = r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"


@pytest.fixture
def image(tmp_path):
    return ImageBuilder(tmp_path / "img")


def test_vc_runtime_registry_values_are_read_in_both_views(image):
    image.vc_runtime("x64", "14.44.35211")
    image.vc_runtime("x86", "14.40.33810")
    facts = read_machine_facts(OfflineImage(image.root))
    assert {(e.arch, e.view, e.installed, e.version) for e in facts.vc_runtimes} == {
        ("x64", "64-bit", True, "14.44.35211.0"), ("x64", "32-bit", True, "14.44.35211.0"),
        ("x86", "64-bit", True, "14.40.33810.0"), ("x86", "32-bit", True, "14.40.33810.0")}
    assert facts.vc_runtime("x64").version == "14.44.35211.0"
    assert facts.vc_runtime("arm64") is None


def test_machine_without_vc_runtime_has_none(image):
    facts = read_machine_facts(OfflineImage(image.root))
    assert facts.vc_runtimes == [] and facts.vc_runtime("x64") is None and facts.runtime_dlls == []


def test_version_string_with_garbage_is_reported_not_fatal(image):
    key = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\x64"
    image.set_value(key, "Installed", "REG_DWORD", 1)
    image.set_value(key, "Version", "REG_SZ", "v14.4x.garbage")
    image.set_value(key + "2", "Installed", "REG_SZ", "yes")  # a wrong type in another key
    facts = read_machine_facts(OfflineImage(image.root))
    (entry,) = facts.vc_runtimes
    assert entry.installed and entry.version is None
    assert any("unreadable Version" in p for p in facts.problems)


def test_runtime_dll_file_versions_come_from_system32_and_syswow64(image):
    image.write(r"C:\Windows\System32\msvcp140.dll", build_pe(file_version=(14, 44, 35211, 0)))
    image.write(r"C:\Windows\SysWOW64\MSVCP140.dll", build_pe(machine="x86", file_version=(14, 38, 33130, 0)))
    facts = read_machine_facts(OfflineImage(image.root))
    assert {(d.folder, d.name, d.version) for d in facts.runtime_dlls} == {
        ("System32", "msvcp140.dll", "14.44.35211.0"), ("SysWOW64", "msvcp140.dll", "14.38.33130.0")}


def test_real_msvc_runtime_dll_versions(image):
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    facts = read_machine_facts(OfflineImage(image.root))
    versions = {d.name: d.version for d in facts.runtime_dlls}
    assert set(versions) == {"vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll", "vcomp140.dll"}
    assert all(v.startswith("14.51.") for v in versions.values())


def test_visual_studio_libomp140_is_found_as_a_local_source(image):
    image.write(LIBOMP_IN_VS, build_pe())
    other = r"D:\VS"  # an instance-store entry pointing off the image is ignored
    image.write(r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\abc\state.json",
                json.dumps({"installationPath": VS}))
    image.write(r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\def\state.json",
                json.dumps({"installationPath": other}))
    facts = read_machine_facts(OfflineImage(image.root))
    (vs,) = facts.visual_studio
    assert vs.name == "2022 BuildTools" and [p.name for p in vs.libomp140] == ["libomp140.x86_64.dll"]


def test_nvidia_driver_from_registry_then_from_nvcuda(image):
    assert nvidia_version("31.0.15.5222") == "552.22" and nvidia_version("32.0.15.6094") == "560.94"
    image.write(r"C:\Windows\System32\nvcuda.dll", build_pe(file_version=(32, 0, 15, 6094)))
    facts = read_machine_facts(OfflineImage(image.root))
    assert (facts.nvidia_driver, facts.nvidia_driver_source) == ("560.94", "nvcuda.dll")
    image.set_value(DISPLAY + r"\0000", "ProviderName", "REG_SZ", "Intel Corporation")
    image.set_value(DISPLAY + r"\0000", "DriverVersion", "REG_SZ", "31.0.101.5333")
    image.set_value(DISPLAY + r"\0001", "ProviderName", "REG_SZ", "NVIDIA")
    image.set_value(DISPLAY + r"\0001", "DriverVersion", "REG_SZ", "31.0.15.5222")
    facts = read_machine_facts(OfflineImage(image.root))
    assert (facts.nvidia_driver, facts.nvidia_driver_source) == ("552.22", "registry")


def test_windows_facts_paths_and_variables(image):
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem", "LongPathsEnabled", "REG_DWORD", 0)
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\Nls\CodePage", "ACP", "REG_SZ", "936")
    image.set_value(r"HKCU\Control Panel\International", "LocaleName", "REG_SZ", "zh-CN")
    image.set_value(r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs", "kernel32", "REG_SZ",
                    "kernel32.dll")
    image.set_variable("user", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    image.set_variable("system", "KMP_DUPLICATE_LIB_OK", "TRUE")
    image.set_variable("user", "UNRELATED", "x")
    image.add_to_path(r"%USERPROFILE%\bin")
    facts = read_machine_facts(OfflineImage(image.root))
    assert facts.windows_version == "10.0.22631" and facts.windows_build == 22631 and facts.architecture == "AMD64"
    assert facts.long_paths_enabled is False
    assert facts.code_page == 936 and facts.ui_language == "zh-CN"
    assert language_for(None, facts.ui_language, facts.code_page) == "zh_CN"
    assert facts.known_dlls == frozenset({"kernel32.dll"})
    assert facts.system32.name == "System32" and facts.syswow64 is None
    assert facts.variables == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "KMP_DUPLICATE_LIB_OK": "TRUE"}
    assert facts.path_user == [r"C:\Users\alice\bin"]
    assert facts.path_machine[0] == r"C:\Windows\system32"
    assert facts.path_effective == facts.path_machine + facts.path_user


# -- integrity ------------------------------------------------------------------------------------------------
def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


@pytest.fixture
def torch_env(image):
    venv = r"C:\venv"
    image.venv(venv, r"C:\Python312", python_exe=build_pe(dll=False))
    site = venv + r"\Lib\site-packages"
    image.torch_version_file(site, "2.4.0+cpu")
    files = {"torch/lib/a.dll": build_pe(dll_name="a.dll"), "torch/lib/b.dll": build_pe(dll_name="b.dll"),
             "torch/lib/c.dll": b"0123456789"}
    for name, data in files.items():
        image.write(site + "\\" + name.replace("/", "\\"), data)
    lines = [_record_line(n, d) for n, d in files.items()] + ["torch/__init__.py,,", "torch-2.4.0.dist-info/RECORD,,"]
    image.write(site + r"\torch-2.4.0.dist-info\RECORD", "\n".join(lines) + "\n")

    def env():
        return next(discover(OfflineImage(image.root), folders=[image.host(venv)]))

    return image, site, env


def test_intact_torch_lib_passes_size_and_hash_checks(torch_env):
    _, _, env = torch_env
    seen = []
    report = check_torch_files(env(), hashes=True, progress=lambda done, total, label: seen.append((done, total)))
    assert report.ok and report.checked == 3 and report.hashed
    assert seen[-1][0] == seen[-1][1] > 0


def test_quarantined_and_changed_files_are_named(torch_env):
    image, site, env = torch_env
    image.host(site + r"\torch\lib\a.dll").unlink()
    image.write(site + r"\torch\lib\b.dll", b"short")
    image.write(site + r"\torch\lib\c.dll", b"9876543210")  # same size, other bytes
    quick = check_torch_files(env())
    assert quick.missing == ["torch/lib/a.dll"] and quick.size_changed == ["torch/lib/b.dll"]
    assert quick.hash_changed == [] and not quick.ok
    full = check_torch_files(env(), hashes=True)
    assert full.hash_changed == ["torch/lib/c.dll"]


def test_the_size_check_reads_each_folder_once_and_no_file_on_its_own(torch_env, monkeypatch):
    """Sizes come from the folders' listings (on Windows a listing carries them): no stat of a file of its own,
    which under Wine costs a millisecond each (20 s for one torch's 11 000 files), but of one whose listed size is
    not RECORD's (Windows updates a listing lazily: the file itself has the last word)."""
    import pathlib

    image, site, env = torch_env
    image.write(site + r"\torch\lib\b.dll", b"short")
    environment = env()

    looked = []
    for name in ("stat", "is_file", "exists", "lstat"):
        real = getattr(pathlib.Path, name)
        monkeypatch.setattr(pathlib.Path, name, lambda self, *a, _real=real, **k: looked.append(self) or _real(
            self, *a, **k))
    quick = check_torch_files(environment)
    monkeypatch.undo()
    assert quick.size_changed == ["torch/lib/b.dll"] and quick.checked == 3
    assert [p.name for p in looked if "torch" in p.parts] == ["b.dll"]


def test_missing_record_is_a_problem_not_a_crash(torch_env):
    image, site, env = torch_env
    image.host(site + r"\torch-2.4.0.dist-info\RECORD").unlink()
    report = check_torch_files(env())
    assert not report.ok and "RECORD" in report.problem


@pytest.mark.wheels
def test_real_torch_240_record_matches_its_dlls(torch_image):
    image = torch_image()
    record = real(realfiles.extract, realfiles.TORCH_240, "torch-2.4.0.dist-info/RECORD")
    image.copy(record / "torch-2.4.0.dist-info" / "RECORD", SITE + r"\torch-2.4.0.dist-info\RECORD")
    image.host(SITE + r"\torch\__init__.py").unlink()  # only the DLLs and version.py of this release are here
    env = next(e for e in discover(OfflineImage(image.root)) if e.torch)
    report = check_torch_files(env)
    lib_entries = 11  # the DLLs; the .lib files are not in this image, nor anything outside torch\lib
    in_lib = [p for p in report.missing if p.startswith("torch/lib/")]
    assert report.checked > 10_000 > lib_entries and in_lib and all(p.endswith(".lib") for p in in_lib)
    assert "torch/__init__.py" in report.missing  # the whole install is checked, not only torch\lib
    image.host(SITE + r"\torch\lib\fbgemm.dll").unlink()
    assert "torch/lib/fbgemm.dll" in check_torch_files(env).missing


def test_a_record_is_parsed_once_and_again_when_pip_writes_it_again(torch_env, monkeypatch):
    from app.inventory import integrity

    image, site, env = torch_env
    record = image.host(site + r"\torch-2.4.0.dist-info\RECORD")
    text = record.read_text(encoding="utf-8") + f"torch/{record.stat().st_ino}.py,sha256=AAAA,1\n"  # not seen yet
    record.write_text(text, encoding="utf-8")
    parsed = []
    real_parse = integrity._parse_record
    monkeypatch.setattr(integrity, "_parse_record", lambda data: parsed.append(len(data)) or real_parse(data))
    first = integrity.read_record(record, prefix="")
    assert integrity.read_record(record, prefix="torch/lib/") == first[:3] and len(parsed) == 1
    record.write_text(text + "torch/extra.py,sha256=AAAA,1\n", encoding="utf-8")
    assert [e.path for e in integrity.read_record(record, prefix="torch/e")] == ["torch/extra.py"]
    assert len(parsed) == 2
    copy = record.with_name("RECORD-copy")  # pip's copy in another environment: its own file, the same bytes
    copy.write_bytes(record.read_bytes())
    assert integrity.read_record(copy, prefix="torch/e") == integrity.read_record(record, prefix="torch/e")
    assert len(parsed) == 2


def test_a_file_another_environment_lists_through_a_hard_link_is_read_once_and_a_copy_of_its_own_is_read(
        torch_env, tmp_path):
    """uv links every environment's files to one copy: the second environment's check reads no file the first
    read; a file of its own (a different size, as a half-written copy) is still read and named."""
    import os
    import shutil

    from app.inventory.integrity import SeenFiles

    image, site, env = torch_env
    first = env()
    second_site = tmp_path / "second-site"
    shutil.copytree(first.site_packages, second_site, copy_function=os.link)
    (second_site / "torch" / "lib" / "b.dll").unlink()
    (second_site / "torch" / "lib" / "b.dll").write_bytes(b"short")  # its own file, not the link
    (second_site / "torch" / "lib" / "a.dll").unlink()
    class Counted(SeenFiles):  # a size is added right after it was read from the file system
        read = 0

        def add(self, device, entries, sizes):
            self.read += len(entries)
            super().add(device, entries, sizes)

    seen = Counted()
    assert check_torch_files(first, seen=seen).ok and seen.read == 3
    second = check_torch_files(replace(first, site_packages=second_site), seen=seen)
    assert second.missing == ["torch/lib/a.dll"] and second.size_changed == ["torch/lib/b.dll"]
    assert seen.read == (4 if seen.enabled else 5)  # the new b.dll; c.dll, the same file, not again


def test_a_folder_in_the_place_of_a_file_whose_size_record_does_not_give_is_missing_in_every_environment(
        torch_env, tmp_path):
    """A RECORD row may hold a hash without a size: the folder is then checked file by file, never passed whole."""
    import os
    import shutil

    from app.inventory.integrity import SeenFiles

    image, site, env = torch_env
    record = image.host(site + r"\torch-2.4.0.dist-info\RECORD")
    record.write_text(record.read_text(encoding="utf-8").replace(
        "torch/lib/c.dll,sha256=", "torch/lib/d.dll,sha256=AAAA,\ntorch/lib/c.dll,sha256="), encoding="utf-8")
    image.host(site + r"\torch\lib\d.dll").mkdir()
    first = env()
    second_site = tmp_path / "second-site"
    shutil.copytree(first.site_packages, second_site, copy_function=os.link)
    seen = SeenFiles()
    for site_packages in (first.site_packages, second_site):
        report = check_torch_files(replace(first, site_packages=site_packages), seen=seen)
        assert report.missing == ["torch/lib/d.dll"]
