"""What only Windows can show, run by Windows' own Python: on the GitHub Windows runner
(.github/workflows/windows.yml) and, to prove this file, by the lab's Windows CPython under Wine
(tests/lab/test_winelab.py runs it there). Elsewhere these skip: the Linux suite proves the same code through
the Windows lab instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.windows,
              pytest.mark.skipif(os.name != "nt", reason="needs Windows (the lab runs this file under Wine)")]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def system():
    from app.system.live import LiveWindows

    return LiveWindows()


def test_this_python_is_described_from_its_files(system):
    from app.inventory.environment import inspect_environment

    env = inspect_environment(system, Path(sys.executable))
    assert env is not None
    assert env.python_version == "{}.{}.{}".format(*sys.version_info[:3])
    assert env.is_64bit == (sys.maxsize > 2**32)


def test_the_registry_is_read_through_winreg(system):
    values = system.registry_values(r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion")
    assert "CurrentBuild" in values or "CurrentBuildNumber" in values
    assert system.windows_version  # from the registry and the kernel, never guessed


def test_windows_checks_the_signature_of_python_exe(system):
    check = system.verify_signature(Path(sys.executable))  # python.org's python.exe is signed by the PSF
    assert check.status == "trusted", check
    assert "Python Software Foundation" in (check.signer or ""), check


def test_stopping_a_program_ends_its_whole_tree(system):
    from app.cancel import Cancelled, CancelToken

    token = CancelToken()
    tree = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
            " time.sleep(60)")
    started = time.monotonic()
    import threading

    threading.Timer(2.0, token.cancel).start()
    with pytest.raises(Cancelled):
        system.run([sys.executable, "-c", tree], timeout=60, cancel=token)
    assert time.monotonic() - started < 20  # the job object ends the child's child too, at once


def test_programs_we_start_do_not_inherit_the_folders_qt_put_on_path(system):
    import PySide6  # on Windows its __init__ puts its own folder (with Qt's msvcp140.dll) first on PATH

    qt = os.path.normcase(os.path.dirname(PySide6.__file__))
    assert any(os.path.normcase(p).startswith(qt) for p in os.environ["PATH"].split(os.pathsep))
    seen = system.run([sys.executable, "-c", "import os; print(os.environ['PATH'])"], timeout=60)
    assert not any(os.path.normcase(p).startswith(qt) for p in seen.stdout.strip().split(os.pathsep))
    assert not any(os.path.normcase(p).startswith(qt) for p in system.environment("process")["PATH"].split(";"))


def test_diagnose_reads_this_computer_and_writes_the_json_document(tmp_path):
    out = tmp_path / "diagnosis.json"
    bootstrap = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; " \
                "raise SystemExit(main(sys.argv[1:]))"  # the app on the path (an embeddable Python ignores cwd)
    done = subprocess.run([sys.executable, "-c", bootstrap, "diagnose", "--env", sys.prefix, "--json", str(out),
                           "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=600)
    # 3: this Python has no torch, nothing to check (the document says so)
    assert done.returncode in (0, 1, 3) and out.exists(), (done.returncode, done.stderr[-3000:])
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["source"]["kind"] == "live" and document["schema"].startswith("torch-dll-doctor.diagnosis/")


def test_the_consoles_output_code_page_is_read_from_windows():
    """What a redirected `diagnose` is written in (app/system/console.py): the console's code page, or UTF-8."""
    from app.system.console import console_output_cp, output_encoding

    cp = console_output_cp()
    assert cp is None or (isinstance(cp, int) and cp > 0)
    encoding = output_encoding(False, cp)
    assert "没有".encode(encoding, errors="replace")


def test_the_restart_manager_names_a_process_that_has_a_dll_loaded(tmp_path):
    """Windows' own answer to "who holds this file" (real Windows only: Wine's Restart Manager is a stub)."""
    import shutil

    from app.system.restart_manager import holders, under_wine

    if under_wine():
        pytest.skip("Wine's Restart Manager answers nobody; the lab proves the psutil path instead")
    dll = tmp_path / "held.dll"
    shutil.copy(Path(sys.base_prefix) / "python3.dll", dll)
    child = subprocess.Popen([sys.executable, "-c", f"import ctypes, time; ctypes.CDLL({str(dll)!r}); "
                              "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        found = holders([str(dll)])
        assert found is not None and child.pid in [h["pid"] for h in found]
    finally:
        child.kill()
        child.wait()


def test_a_program_with_a_dll_below_a_torch_folder_is_named_before_the_folder_is_set_aside(tmp_path):
    """The in-use check of a folder target (a user-site torch set aside, torch replaced by pip): Windows' Restart
    Manager names the python.exe that has torch\\lib\\held.dll loaded, with its name, when asked about `torch`."""
    import shutil

    from app.repair.in_use import processes_using
    from app.system.restart_manager import under_wine

    if under_wine():
        pytest.skip("Wine's Restart Manager answers nobody; the Linux suite proves the psutil path instead")
    torch = tmp_path / "site-packages" / "torch"
    (torch / "lib").mkdir(parents=True)
    dll = torch / "lib" / "held.dll"
    shutil.copy(Path(sys.base_prefix) / "python3.dll", dll)
    child = subprocess.Popen([sys.executable, "-c", f"import ctypes, time; ctypes.CDLL({str(dll)!r}); "
                              "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        found = processes_using([torch])
        assert found is not None
        (holder,) = [h for h in found if h["pid"] == child.pid]
        assert holder["name"] and holder["name"] != "?"
    finally:
        child.kill()
        child.wait()


def test_a_held_installer_cannot_be_changed_nor_its_folder_renamed(tmp_path):
    """What the elevated step relies on (app/system/elevation.py pinned_file): while the installer is held, no
    program can write, replace, rename or delete it, nor rename a folder on its way (NTFS refuses to rename a
    folder with an open file below it); a path through a junction is refused."""
    from app.system.elevation import pinned_file
    from app.system.restart_manager import under_wine

    folder = tmp_path / "downloads"
    folder.mkdir()
    installer = folder / "vc_redist.x64.exe"
    installer.write_bytes(b"MZ" + bytes(100))
    with pinned_file(str(installer)) as (final, data):
        assert data == installer.read_bytes()
        actions = [lambda: open(installer, "r+b").close(), lambda: os.remove(installer),  # noqa: SIM115
                   lambda: os.rename(installer, folder / "moved.exe")]
        if not under_wine():  # NTFS refuses to rename a folder with an open file below it; Wine's Linux rename does not
            actions.append(lambda: os.rename(folder, tmp_path / "moved"))
        for action in actions:
            with pytest.raises(OSError):
                action()
    junction = tmp_path / "through"
    done = subprocess.run(["cmd", "/c", "mklink", "/J", str(junction), str(folder)], capture_output=True)
    if done.returncode == 0 and (junction / "vc_redist.x64.exe").exists():  # Wine's mklink says 0 and makes none
        with pytest.raises(OSError, match="link or junction"), pinned_file(str(junction / "vc_redist.x64.exe")):
            pass


def test_a_store_python_is_read_from_the_folder_its_registration_names(system):
    """Where a Microsoft Store Python is installed for this user (the runner may have none): its package's
    PackageRootFolder holds a python.exe that can be read by name, although WindowsApps cannot be listed."""
    from app.inventory.discovery import APPMODEL_PACKAGES, _store_install

    names = [n for n in system.registry_subkeys(APPMODEL_PACKAGES)
             if n.lower().startswith("pythonsoftwarefoundation.python.3.")]
    if not names:
        pytest.skip("no Store Python on this computer")
    minor = names[0].split("_")[0].rsplit(".", 1)[-1]
    install = _store_install(system, minor)
    assert install is not None and (install / "python.exe").stat().st_size > 0


def test_smart_app_control_is_read_as_windows_own_reg_exe_reads_it(system):
    """Smart App Control's state, read through winreg, is the one Windows' own reg.exe reports for the same value
    (VerifiedAndReputablePolicyState: 0 off, 1 on, 2 evaluation); where Windows has none (Windows 10, Windows
    Server runners) it is unknown, never "off"."""
    import re

    from app.inventory.machine import CI_POLICY_KEY, SMART_APP_CONTROL_STATES, read_machine_facts

    facts = read_machine_facts(system)
    query = subprocess.run(["reg", "query", CI_POLICY_KEY, "/v", "VerifiedAndReputablePolicyState"],
                           capture_output=True, text=True, timeout=60)
    found = re.search(r"VerifiedAndReputablePolicyState\s+REG_DWORD\s+0x([0-9a-fA-F]+)", query.stdout)
    if found is None:
        assert facts.smart_app_control is None
    else:
        assert facts.smart_app_control == SMART_APP_CONTROL_STATES[int(found.group(1), 16)]


def test_an_errno_22_from_the_c_runtime_is_asked_of_windows_again(tmp_path):
    """open() keeps only errno 22 for most Windows errors (Defender's 225 and 226 among them): the refusal's kind
    comes from Windows itself, here a sharing violation (32) of a file another handle holds without sharing."""
    from app.failures import refusal_kind
    from app.system.files import open_for_reading, windows_error_of

    held = tmp_path / "torch_cpu.dll"
    held.write_bytes(b"MZ")
    kernel32, handle = open_for_reading(str(held), 0)  # no sharing
    try:
        assert windows_error_of(str(held)) == 32
        assert refusal_kind(OSError(22, "Invalid argument", str(held))) == "denied"
    finally:
        kernel32.CloseHandle(handle)
    assert windows_error_of(str(held)) is None
    assert windows_error_of(str(tmp_path / "gone.dll")) == 2


def test_a_proxy_setup_script_in_internet_options_is_named_when_a_download_goes_nowhere(tmp_path, monkeypatch):
    """Internet Options' AutoConfigURL (a PAC script, as company policies set it) is read through winreg; a
    download that cannot connect then says the browser's proxy comes from that script."""
    import socket
    import winreg

    from app.sources.download import DownloadError, download
    from app.system.proxy import INTERNET_SETTINGS, proxy_script

    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with winreg.CreateKey(winreg.HKEY_CURRENT_USER, INTERNET_SETTINGS) as key:
        try:
            before = winreg.QueryValueEx(key, "AutoConfigURL")
        except OSError:
            before = None
        winreg.SetValueEx(key, "AutoConfigURL", 0, winreg.REG_SZ, "http://wpad.example.invalid/proxy.pac")
        try:
            assert proxy_script() == "http://wpad.example.invalid/proxy.pac"
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            with pytest.raises(DownloadError) as caught:
                download(f"https://127.0.0.1:{port}/x.bin", tmp_path / "x.bin", max_bytes=1000, retries=0,
                         connect_timeout=5)
            assert caught.value.code == "offline"
            assert "proxy.pac" in caught.value.text("en") and "HTTPS_PROXY" in caught.value.text("zh_CN")
        finally:
            if before is None:
                winreg.DeleteValue(key, "AutoConfigURL")
            else:
                winreg.SetValueEx(key, "AutoConfigURL", 0, before[1], before[0])


def test_the_one_file_builds_console_is_found_two_processes_up(tmp_path):
    """The one-file build's app runs in a child of its windowed bootloader: packaging/rthook_windows.py finds the
    console of the program that started the bootloader through Windows' process list. Here this Python starts a
    Python (the bootloader's place) that starts another (the app's): the last finds its parent and the one above."""
    hook = (REPO / "packaging" / "rthook_windows.py").read_text(encoding="utf-8")
    functions = hook[:hook.index("\n_tdd_rthook()\n")]
    app = tmp_path / "app.py"
    app.write_text(functions + "\nimport json, os\nme = _tdd_parent_of(os.getpid())\n"
                   "print(json.dumps({'me': me, 'up': _tdd_parent_of(me[0])}))\n", encoding="utf-8")
    bootloader = tmp_path / "bootloader.py"
    bootloader.write_text("import os, subprocess, sys\nprint(os.getpid(), flush=True)\n"
                          f"subprocess.run([sys.executable, {str(app)!r}], check=True)\n", encoding="utf-8")
    run = subprocess.run([sys.executable, str(bootloader)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    middle, line = run.stdout.splitlines()[:2]
    seen = json.loads(line)
    python = os.path.basename(sys.executable).lower()
    assert seen["me"][0] == int(middle) and seen["me"][1].lower() == python, seen
    assert seen["up"] is not None and seen["up"][0] == os.getpid() and seen["up"][1].lower() == python, seen


def test_a_root_in_the_computers_store_is_trusted_by_the_apps_downloads(tmp_path, monkeypatch):
    """A company proxy that inspects TLS signs with its own root, which group policy puts in LocalMachine\\Root:
    the app's download (no certificate named, truststore) refuses the server while Windows does not trust its
    root ("tls"), fetches it once the root is in the store, and refuses it again once it is gone. Real Windows only:
    Wine's SSL policy accepts any root (tests/lab/test_live_windows.py shows what Wine can)."""
    import ctypes
    import ssl
    from ctypes import wintypes

    from app.system.restart_manager import under_wine

    if under_wine():
        pytest.skip("Wine's SSL chain policy accepts any root: the lab shows Windows' check answers instead")
    from app.sources.download import DownloadError, download
    from tests.https_server import HttpsServer

    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    crypt32 = ctypes.WinDLL("crypt32", use_last_error=True)
    crypt32.CertOpenStore.argtypes = [ctypes.c_void_p, wintypes.DWORD, ctypes.c_void_p, wintypes.DWORD,
                                      wintypes.LPCWSTR]
    crypt32.CertOpenStore.restype = ctypes.c_void_p
    crypt32.CertAddEncodedCertificateToStore.argtypes = [ctypes.c_void_p, wintypes.DWORD, ctypes.c_char_p,
                                                         wintypes.DWORD, wintypes.DWORD,
                                                         ctypes.POINTER(ctypes.c_void_p)]
    crypt32.CertAddEncodedCertificateToStore.restype = wintypes.BOOL
    crypt32.CertDeleteCertificateFromStore.argtypes = [ctypes.c_void_p]
    crypt32.CertDeleteCertificateFromStore.restype = wintypes.BOOL
    crypt32.CertCloseStore.argtypes = [ctypes.c_void_p, wintypes.DWORD]

    def fetch(server, name: str) -> str:
        try:
            download(server.url("/company.txt", host="localhost"), tmp_path / name, max_bytes=1 << 20, retries=0)
        except DownloadError as error:
            return "error:" + error.code
        return "ok:" + (tmp_path / name).read_text(encoding="utf-8")

    with HttpsServer(tmp_path / "certs") as server:
        server.files["/company.txt"] = b"through the company's proxy"
        assert fetch(server, "before.txt") == "error:tls"
        store = crypt32.CertOpenStore(ctypes.c_void_p(10), 0, None, 0x20000, "Root")  # SYSTEM_W, LOCAL_MACHINE
        assert store, ctypes.get_last_error()  # the runner's user is an administrator, as group policy is
        der = ssl.PEM_cert_to_DER_cert(server.ca.read_text(encoding="ascii"))
        added = ctypes.c_void_p()
        assert crypt32.CertAddEncodedCertificateToStore(store, 1, der, len(der), 3, ctypes.byref(added)), \
            ctypes.get_last_error()  # X509_ASN_ENCODING, CERT_STORE_ADD_REPLACE_EXISTING
        try:
            assert fetch(server, "after.txt") == "ok:through the company's proxy"
        finally:
            assert crypt32.CertDeleteCertificateFromStore(added), ctypes.get_last_error()
            crypt32.CertCloseStore(store, 0)
        assert fetch(server, "again.txt") == "error:tls"


def test_the_restart_managers_structures_have_the_x64_sdk_layout():
    """RM_UNIQUE_PROCESS and RM_PROCESS_INFO as restartmanager.h lays them out on x64 (12 and 668 bytes): a field
    off by one would read every holder's name from the wrong place (checked in Windows' own ctypes)."""
    import ctypes

    from app.system.restart_manager import RM_PROCESS_INFO, RM_UNIQUE_PROCESS

    assert ctypes.sizeof(RM_UNIQUE_PROCESS) == 12 and ctypes.sizeof(RM_PROCESS_INFO) == 668
    assert RM_PROCESS_INFO.strAppName.offset == 12 and RM_PROCESS_INFO.ApplicationType.offset == 652


def test_microsofts_real_installer_is_fetched_checked_and_run_elevated_with_nothing_left_running(system, tmp_path):
    """What the lab's signed stand-in cannot show: Microsoft's own vc_redist.x64.exe (a WiX Burn bundle), fetched
    from Microsoft's link, checked (Microsoft's signature, a version new enough), held and run elevated by
    ShellExecuteEx "runas" (the runner's administrator gets no prompt); the handle Windows gives is the whole
    install's: when the wait ends, no copy of the bundle runs any more, its exit code is one of the documented ones
    (0, 1638 "a newer one is installed", 3010 "restart"), and Burn wrote its log into %TEMP%, which the report
    keeps."""
    from app.system.restart_manager import under_wine

    if under_wine():
        pytest.skip("Microsoft's installer comes from the internet, which the lab has not; the lab runs a signed "
                    "stand-in (tests/lab/test_live_vc_runtime.py)")
    import psutil

    from app.repair.vc_runtime import run_installer
    from app.sources.vc_redist import fetch_installer

    installer, digest = fetch_installer(system, "x64", tmp_path, None, None)
    said: list[str] = []
    log = tmp_path / "installer.log"
    code, outcome = run_installer(system, [str(installer), "/install", "/quiet", "/norestart"], said.append, None,
                                  digest, kept_log=log)
    assert code in (0, 1638, 3010), (code, outcome, said)
    left = [p.info for p in psutil.process_iter(["pid", "name", "exe"])
            if (p.info["name"] or "").lower().startswith("vc_redist")]
    assert not left, left
    assert log.is_file() and log.stat().st_size > 0



def test_microsofts_real_installer_loads_no_dll_from_the_folder_it_runs_from(system, tmp_path):
    """Run elevated from the user's own folder (transactions\\<id>\\downloads), the installer must take no DLL from
    beside it, where any program of the user could put one during the prompt: each DLL it imports at start is one
    of Windows' KnownDLLs (always System32's) or an API set, unless its load configuration tells the loader to
    look in System32 only (DependentLoadFlags LOAD_LIBRARY_SEARCH_SYSTEM32, 0x800). Burn loads the rest itself,
    after SetDefaultDllDirectories (WiX). The design of the elevated step (docs/architecture.md, "Decisions") rests
    on this."""
    from app.system.restart_manager import under_wine

    if under_wine():
        pytest.skip("Microsoft's installer comes from the internet, which the lab has not")
    import pefile

    from app.engine.pe import read_pe
    from app.sources.vc_redist import fetch_installer

    installer, _ = fetch_installer(system, "x64", tmp_path, None, None)
    known = {name.lower() for name in system.known_dlls()}  # this Windows' own list, from its registry
    assert "kernel32.dll" in known
    imported = {d.name.lower() for d in read_pe(installer, with_exports=False).imports if not d.delay}  # at start
    pe = pefile.PE(str(installer), fast_load=True)
    try:
        pe.parse_data_directories([pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_LOAD_CONFIG"]])
        config = getattr(pe, "DIRECTORY_ENTRY_LOAD_CONFIG", None)
        flags = getattr(config.struct, "DependentLoadFlags", 0) if config is not None else 0
    finally:
        pe.close()
    from_beside = sorted(n for n in imported if n not in known and not n.startswith(("api-ms-win-", "ext-ms-")))
    assert not from_beside or flags & 0x800, (from_beside, hex(flags or 0))
