from __future__ import annotations

import os

import pytest

from tests import realfiles

pytest.register_assert_rewrite("tests.helpers")  # a failed assert in a helper shows its values, as in a test
# after the rewrite is registered: a failed assert in a helper shows its values
from tests.helpers.images import build_torch_image, real  # noqa: E402
from tests.helpers.lab import VC_RUNTIMES_KEY, lab_env, wine_unavailable  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # the wizard's tests need no screen

LAB_HINT = "the Windows lab (tests marked wine) runs when asked: python -m pytest --lab (or -m wine)"


def pytest_addoption(parser):
    parser.addoption("--lab", action="store_true", help="also run the Windows lab: real Windows CPython, torch and "
                     "PyInstaller under Wine (tests marked wine; minutes each, one at a time)")


def _lab_asked(config) -> bool:
    return config.getoption("--lab") or "wine" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    """The fast suite by default: the lab's tests are skipped, with how to run them, unless asked for."""
    if _lab_asked(config):
        return
    skip = pytest.mark.skip(reason=LAB_HINT)
    for item in items:
        if item.get_closest_marker("wine"):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, config):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if LAB_HINT in str(r.longrepr)]
    if skipped and not _lab_asked(config):
        terminalreporter.write_line(f"{len(skipped)} tests of the Windows lab not run: {LAB_HINT}")


@pytest.fixture
def torch_image(tmp_path):
    """Factory: torch_image(torch=..., libomp=..., vc_runtime=...) -> ImageBuilder."""
    return lambda **kwargs: build_torch_image(tmp_path / "image", **kwargs)


@pytest.fixture(scope="session")
def lab():
    """The Windows lab (tests/winelab.py): real Windows CPython 3.12 under Wine."""
    from tests.winelab import WineLab

    wine_lab = WineLab()
    reason = wine_lab.unavailable_reason()
    if reason is not None:
        wine_unavailable(reason)
    yield wine_lab
    wine_lab.shutdown()


@pytest.fixture(scope="session")
def seed_env(lab):
    """torch 2.4.0 as pip installs it: no libomp140.x86_64.dll. Shared: tests must not change it.

    Its folder has a space and Chinese characters, as a ComfyUI unzipped on a Chinese user's Desktop does."""
    return lab_env(lab, "lab-seed-240 张伟的桌面", torch_version="2.4.0")


@pytest.fixture(scope="session")
def fixed_env(lab):
    """torch 2.4.0 with libiomp5md.dll copied to libomp140.x86_64.dll. Shared: tests must not change it."""
    return lab_env(lab, "lab-fixed-240 张伟的桌面", torch_version="2.4.0", libomp=True)


@pytest.fixture
def clean_runtimes(lab):
    """No VC++ runtime keys in the lab's registry before and after the test (the stand-in installer writes them):
    a plan is then not refused as "nothing to do", and no test sees another's install."""

    def clear():
        for arch in ("x64", "x86"):
            for view in ("64", "32"):
                lab.wine_reg(["delete", f"{VC_RUNTIMES_KEY}\\{arch}", "/f", f"/reg:{view}"])

    clear()
    yield
    clear()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real HTTPS server on 127.0.0.1 with its own test CA (tests/https_server.py)."""
    from tests.https_server import HttpsServer

    with HttpsServer(tmp_path_factory.mktemp("certs")) as running:
        yield running


@pytest.fixture
def trusted_server(server, monkeypatch):
    """The client trusts the test CA the way any requests user can; proxies of the machine stay out."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(server.ca))
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server.faults.clear()
    server.log.clear()
    return server


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """The journal and the logs in a folder of the test's own (TDD_DATA_DIR)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TDD_DATA_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def wheel():
    """The real torch 2.4.0 wheel from PyPI, as a file in the download cache."""
    return real(realfiles.download, realfiles.TORCH_240)


@pytest.fixture(scope="module")
def wheel_sha256(wheel):
    """The SHA-256 of `wheel`, as an index lists it."""
    import hashlib

    digest = hashlib.sha256()
    with open(wheel, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def installed(wheel):
    """What pip leaves in dist-info (RECORD as the wheel has it, limited to the files the image holds: torch\\lib's
    DLLs and torch\\version.py), and the real version.py."""
    import base64
    import hashlib
    import zipfile

    from tests.helpers.damaged_torch import DIST_INFO

    with zipfile.ZipFile(wheel) as zipped:
        record = zipped.read(f"{DIST_INFO}/RECORD").decode()
        kept = [line for line in record.splitlines()
                if (line.startswith("torch/lib/") and line.split(",")[0].endswith(".dll"))
                or line.startswith(("torch/version.py,", f"{DIST_INFO}/WHEEL,", f"{DIST_INFO}/METADATA,",
                                    f"{DIST_INFO}/RECORD,"))]
        installer = "pip\n"
        digest = hashlib.sha256(installer.encode()).digest()
        kept.append(f"{DIST_INFO}/INSTALLER,sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},4")
        return {"RECORD": "\n".join(kept) + "\n", "WHEEL": zipped.read(f"{DIST_INFO}/WHEEL"),
                "METADATA": zipped.read(f"{DIST_INFO}/METADATA"), "INSTALLER": installer,
                "version.py": zipped.read("torch/version.py")}
