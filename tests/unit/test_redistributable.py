"""Only Microsoft's Visual C++ Redistributable is started elevated as one: a program Microsoft signed is not enough
(MSBuild, OneDriveSetup and Teams are signed by Microsoft too, and a file of any of them can be named
vc_redist.x64.exe). Its version resource must say it is the Redistributable, and it must be a WiX Burn bundle. PE
files written by the test builder, with the version resources those programs really carry."""

from __future__ import annotations

import pytest

from app.demo.pe_writer import build_pe
from app.engine.pe import read_pe_stream
from app.sources.vc_redist import redistributable_refusal

BURN = ((".wixburn", b"\0" * 64),)
REDIST = "Microsoft Visual C++ 2015-2022 Redistributable (x64) - 14.44.35211"


def pe(tmp_path, *, product, description, original, sections=BURN):
    data = build_pe(machine="x86", dll=False, dll_name="vc_redist.x64.exe", company="Microsoft Corporation",
                    file_version=(14, 44, 35211, 0), product_version=(14, 44, 35211, 0), product_name=product,
                    description=description, original_filename=original, extra_sections=sections)
    path = tmp_path / "vc_redist.x64.exe"
    path.write_bytes(data)
    with open(path, "rb") as f:
        return read_pe_stream(f, str(path))


@pytest.mark.parametrize("product, description, original", [
    ("Microsoft® Build Tools", "MSBuild.exe", "MSBuild.exe"),
    ("Microsoft OneDrive", "Microsoft OneDrive Setup", "OneDriveSetup.exe"),
    ("Microsoft Teams", "Microsoft Teams", "Teams.exe"),
    (REDIST, REDIST, "MSBuild.exe"),  # the words copied, the file another
    ("Microsoft Visual C++ 2015-2022 Redistributable Helper", REDIST, "VC_redist.x64.exe"),
])
def test_another_microsoft_program_named_vc_redist_is_refused(tmp_path, product, description, original):
    refusal = redistributable_refusal(pe(tmp_path, product=product, description=description, original=original))
    assert refusal is not None and "not Microsoft's Visual C++ Redistributable" in refusal


def test_the_redistributable_is_accepted_and_must_be_a_burn_bundle(tmp_path):
    assert redistributable_refusal(pe(tmp_path, product=REDIST, description=REDIST,
                                      original="VC_redist.x64.exe")) is None
    newer = "Microsoft Visual C++ v14 Redistributable (x64) - 14.50.35719"
    assert redistributable_refusal(pe(tmp_path, product=newer, description=newer,
                                      original="VC_redist.x64.exe")) is None
    refusal = redistributable_refusal(pe(tmp_path, product=REDIST, description=REDIST,
                                         original="VC_redist.x64.exe", sections=()))
    assert refusal is not None and ".wixburn" in refusal
