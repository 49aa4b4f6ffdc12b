"""Which runtime a vc_redist file the user gives (`repair --action install-vc-runtime --source`) installs: read from
its version resource's FileDescription, as Explorer's Properties shows it, else its name (every vc_redist is a
32-bit Burn program: the header cannot tell). PE files written by the test builder (app/demo/pe_writer.py)."""

from __future__ import annotations

from app.demo.pe_writer import write_pe
from app.engine.pe import read_pe
from app.sources.vc_redist import installer_arch, local_installers

VERSION = (14, 44, 35211, 0)


def vc_redist(path, description=None):
    return write_pe(path, machine="x86", dll=False, file_version=VERSION, product_version=VERSION,
                    company="Microsoft Corporation", description=description)


def test_the_description_names_the_runtime_whatever_the_file_is_called(tmp_path):
    for arch in ("x64", "x86", "arm64"):
        path = vc_redist(tmp_path / f"setup-{arch}.exe",
                         f"Microsoft Visual C++ 2015-2022 Redistributable ({arch}) - 14.44.35211")
        assert read_pe(path).description.endswith("- 14.44.35211")
        assert installer_arch(path) == arch
    renamed = vc_redist(tmp_path / "vc_redist.x86.exe", "Microsoft Visual C++ 2015-2022 Redistributable (x64) - 1")
    assert installer_arch(renamed) == "x64"  # the file's own words win over a name somebody gave it


def test_without_a_description_the_name_says_it_a_browsers_copy_included(tmp_path):
    assert installer_arch(vc_redist(tmp_path / "VC_redist.x64.exe")) == "x64"
    assert installer_arch(vc_redist(tmp_path / "vc_redist.x86 (1).exe")) == "x86"
    assert installer_arch(vc_redist(tmp_path / "setup.exe")) is None
    broken = tmp_path / "vc_redist.arm64.exe"
    broken.write_bytes(b"MZ not a program")
    assert installer_arch(broken) == "arm64"  # unreadable tables: the name still says what it claims to be


def test_a_folder_gives_one_installer_of_each_runtime_the_plainest_name_first(tmp_path):
    vc_redist(tmp_path / "vc_redist.x64.exe")
    vc_redist(tmp_path / "vc_redist.x64 (1).exe")
    vc_redist(tmp_path / "vc_redist.x86.exe")
    vc_redist(tmp_path / "notes.exe", "Microsoft Visual C++ 2015-2022 Redistributable (arm64)")  # not a vc_redist name
    (tmp_path / "vc_redist.x64.txt").write_text("readme")
    found = local_installers(tmp_path)
    assert {arch: path.name for arch, path in found.items()} == {"x64": "vc_redist.x64.exe",
                                                                 "x86": "vc_redist.x86.exe"}
    assert local_installers(tmp_path / "vc_redist.x86.exe") == {"x86": tmp_path / "vc_redist.x86.exe"}
