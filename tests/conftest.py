from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.demo.image_builder import ImageBuilder
from tests import realfiles

pytest.register_assert_rewrite("tests.helpers")  # a failed assert in a helper shows its values, as in a test
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


PYTHON_HOME = r"C:\Users\alice\AppData\Local\Programs\Python\Python312"
VENV = r"C:\Users\alice\ComfyUI\venv"
SITE = VENV + r"\Lib\site-packages"
TORCH_LIB = SITE + r"\torch\lib"


def real(call, *args):
    """Run a realfiles download; skip when offline, unless CI demands the real files."""
    try:
        return call(*args)
    except realfiles.RealFileUnavailable as exc:
        if os.environ.get("TDD_REQUIRE_WHEELS") == "1":
            pytest.fail(f"real test files are required here: {exc}")
        pytest.skip(f"real test files unavailable (offline?): {exc}")


def torch_core(name: str) -> bool:
    """The members of a torch wheel a diagnosis reads: the package's __init__.py and version.py, torch\\lib's DLLs."""
    return name in ("torch/__init__.py", "torch/version.py") or (name.startswith("torch/lib/")
                                                                  and name.endswith(".dll"))


def windows_drive(root: Path) -> ImageBuilder:
    """A Windows 11 drive with the current VC++ runtime in System32 (the real msvc-runtime wheel's DLLs)."""
    image = ImageBuilder(root)
    image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
    image.vc_runtime("x64", "14.51.36231")
    return image


def python_at(image: ImageBuilder, folder: str) -> None:
    """python.org's real CPython 3.12 at `folder` (python.exe, its DLLs), with an empty Lib\\site-packages."""
    python = real(realfiles.windows_python)
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, folder + "\\" + name, link=True)
    image.mkdir(folder + r"\Lib\site-packages")


def build_torch_image(root: Path, torch: str = realfiles.TORCH_240, *, libomp: bool = False,
                      vc_runtime: bool = True) -> ImageBuilder:
    """A Windows 11 drive with python.org's CPython 3.12, a ComfyUI-style venv and a real torch\\lib."""
    lib = real(realfiles.torch_lib, torch)
    python = real(realfiles.windows_python)
    image = ImageBuilder(root)
    if vc_runtime:
        image.copy_files(real(realfiles.msvc_runtime_dlls), r"C:\Windows\System32", link=True)
        image.vc_runtime("x64", "14.51.36231")
    for name in ("python.exe", "python312.dll", "python3.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        image.copy(python / name, PYTHON_HOME + "\\" + name, link=True)
    image.venv(VENV, PYTHON_HOME, "3.12.9", python_exe=(python / "python.exe").read_bytes())
    image.copy_files(sorted(lib.glob("*.dll")), TORCH_LIB, link=True)
    image.torch_version_file(SITE, torch.split("==")[1] + "+cpu")
    image.torch_record(SITE, torch.split("==")[1])  # pip's record of what is there (libomp140 is added later)
    if libomp:
        image.copy(lib / "libiomp5md.dll", TORCH_LIB + r"\libomp140.x86_64.dll", link=True)
    return image


@pytest.fixture
def torch_image(tmp_path):
    """Factory: torch_image(torch=..., libomp=..., vc_runtime=...) -> ImageBuilder."""
    return lambda **kwargs: build_torch_image(tmp_path / "image", **kwargs)


LAB_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"


def app_in_lab(lab, env, extra: dict, *argv: str):
    """The app's command line, run by the Windows Python of the lab environment `env`, with `extra` variables. Wine 8
    quirk (measured: 2 runs in 6): after OMP's abort in the replay's child, the app's own process sometimes ends with
    exit 0 and no output at all; never seen without the abort, so such a run is asked again."""
    from tests.winelab import REPO_ROOT, to_windows_path

    code = LAB_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
    for _ in range(3):
        result = lab.run_python(["-c", code], env=extra, timeout=900, torch_env=env)
        if result.returncode != 0 or result.stdout or result.stderr:
            return result
    return result


def wine_unavailable(reason: str):
    """Skip a Windows-lab test, unless CI demands the lab (TDD_REQUIRE_WINE=1)."""
    if os.environ.get("TDD_REQUIRE_WINE") == "1":
        pytest.fail(f"the Windows lab is required here (TDD_REQUIRE_WINE=1): {reason}")
    pytest.skip(f"Windows lab unavailable: {reason}")


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


def lab_or_skip(make, *args, **kwargs):
    """What a call of the Windows lab makes, or a skip (a failure under TDD_REQUIRE_WINE) when the lab cannot."""
    from tests.winelab import WineLabUnavailable

    try:
        return make(*args, **kwargs)
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))


def lab_env(lab, name: str, **kwargs):
    """A torch install in the Windows lab (tests/winelab.py make_torch_env)."""
    return lab_or_skip(lab.make_torch_env, name, **kwargs)


def chinese_windows(lab, extra=None) -> dict:
    """The env of a run on a Chinese Windows (tests/winelab.py chinese_windows)."""
    return lab_or_skip(lab.chinese_windows, extra)


@pytest.fixture(scope="session")
def seed_env(lab):
    """torch 2.4.0 as pip installs it: no libomp140.x86_64.dll. Shared: tests must not change it.

    Its folder has a space and Chinese characters, as a ComfyUI unzipped on a Chinese user's Desktop does."""
    return lab_env(lab, "lab-seed-240 张伟的桌面", torch_version="2.4.0")


@pytest.fixture(scope="session")
def fixed_env(lab):
    """torch 2.4.0 with libiomp5md.dll copied to libomp140.x86_64.dll. Shared: tests must not change it."""
    return lab_env(lab, "lab-fixed-240 张伟的桌面", torch_version="2.4.0", libomp=True)


VC_RUNTIMES_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"


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


def tree_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file of a folder, by name: byte-for-byte comparisons before and after."""
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def pip_install(image: ImageBuilder, requirement: str, site: str, *, python: str = "3.12", keep=None,
                stop_at: int | None = None) -> list[str]:
    """Install a real wheel into an image's `site` (a Windows folder) as pip lays it out: its members in the wheel's
    order, INSTALLER, and RECORD. `keep(name)` picks members (RECORD then lists only those, as if the wheel held
    no others); `stop_at` stops at the first member whose full Windows path reaches that length, as pip does at
    the path limit (RECORD still lists every file). The wheel's DLLs and .pyd files are hard links into the
    extracted cache. Returns the RECORD paths written."""
    import base64
    import hashlib
    import zipfile

    wheel = real(lambda: realfiles.download(requirement, python=python))
    with zipfile.ZipFile(wheel) as zipped:
        names = [n for n in zipped.namelist() if not n.endswith("/")]
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        dist_info = record_name.rsplit("/", 1)[0]
        chosen = [n for n in names if n != record_name and (keep is None or keep(n) or n.startswith(dist_info))]
        big = [n for n in chosen if n.lower().endswith((".dll", ".pyd"))]
        extracted = {name: real(lambda n=name: realfiles.extract(requirement, n, python=python)) for name in big}
        written = []
        for name in chosen:
            target = site + "\\" + name.replace("/", "\\")
            if stop_at is not None and len(target) >= stop_at:
                break
            if name in big:
                image.copy(extracted[name] / name, target, link=True)
            else:
                image.write(target, zipped.read(name))
            written.append(name)
        record = zipped.read(record_name).decode()
    installer = b"pip\n"
    digest = base64.urlsafe_b64encode(hashlib.sha256(installer).digest()).rstrip(b"=").decode()
    lines = [line for line in record.splitlines() if line.strip()]
    if keep is not None:
        kept = set(chosen) | {record_name}
        lines = [line for line in lines if line.split(",")[0] in kept]
    lines.append(f"{dist_info}/INSTALLER,sha256={digest},{len(installer)}")
    image.write(site + "\\" + dist_info.replace("/", "\\") + "\\INSTALLER", installer)
    image.write(site + "\\" + record_name.replace("/", "\\"), "\n".join(lines) + "\n")
    return written


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
