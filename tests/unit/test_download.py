"""The one downloader (app/sources/download.py) against a real HTTPS server on 127.0.0.1 (tests/https_server.py),
trusted through REQUESTS_CA_BUNDLE, as any requests user would."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from app.cancel import Cancelled, CancelToken
from app.i18n import LANGUAGES, _texts
from app.sources.download import (
    ERROR_CODES,
    DownloadError,
    RangeNotSupported,
    download,
    download_error_text,
    fetch_range,
)
from tests.https_server import Fault

DATA = os.urandom(3 * 1024 * 1024 + 12345)
SHA = hashlib.sha256(DATA).hexdigest()
CAP = 64 * 1024 * 1024
FAST = {"connect_timeout": 2.0, "read_timeout": 2.0, "backoff": 0.01}


pytestmark = pytest.mark.usefixtures("trusted_server")  # tests/conftest.py


@pytest.fixture
def serve(server):
    def add(path: str, data: bytes = DATA, **fault) -> str:
        server.files[path] = data
        if fault:
            server.faults[path] = Fault(**fault)
        return server.url(path)
    return add


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def failure(call, *args, **kwargs) -> DownloadError:
    with pytest.raises(DownloadError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_download_writes_the_exact_file_and_reports_progress(serve, tmp_path):
    url = serve("/plain.bin")
    events = []
    result = download(url, tmp_path / "out.bin", max_bytes=CAP, sha256=SHA, progress=events.append, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    assert leftovers(tmp_path) == ["out.bin"]
    assert (result.size, result.sha256, result.attempts) == (len(DATA), SHA, 1)
    dones = [e.done for e in events]
    assert dones == sorted(dones) and len(events) > 3
    assert events[-1].done == events[-1].total == len(DATA) and events[-1].eta == 0.0
    assert any(e.speed > 0 for e in events)
    middle = [e for e in events if 0 < e.done < len(DATA)]
    assert middle and all(e.total == len(DATA) for e in middle)


def test_dropped_connection_is_resumed_with_range(serve, server, tmp_path):
    half = len(DATA) // 2
    url = serve("/drop.bin", drop_at=half)
    result = download(url, tmp_path / "out.bin", max_bytes=CAP, sha256=SHA, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    second = server.requests_for("/drop.bin")[1]
    match = re.fullmatch(r"bytes=(\d+)-", second.headers.get("Range", ""))
    assert match and int(match.group(1)) > 0
    assert second.headers.get("If-Range") == '"test-etag"'
    assert result.attempts == 2


def test_server_ignoring_range_restarts_from_zero(serve, server, tmp_path):
    url = serve("/norange.bin", drop_at=len(DATA) // 2, ignore_range=True)
    download(url, tmp_path / "out.bin", max_bytes=CAP, sha256=SHA, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    assert "Range" in server.requests_for("/norange.bin")[1].headers  # it asked, the server said 200


def test_resume_from_the_wrong_start_restarts_from_zero(serve, server, tmp_path):
    url = serve("/wrongstart.bin", drop_at=len(DATA) // 2, wrong_range_start=True)
    download(url, tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    assert "Range" not in server.requests_for("/wrongstart.bin")[-1].headers


def test_server_errors_are_retried(serve, server, tmp_path):
    url = serve("/flaky.bin", statuses=[500, 503])
    download(url, tmp_path / "out.bin", max_bytes=CAP, sha256=SHA, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    assert len(server.requests_for("/flaky.bin")) == 3


def test_server_errors_beyond_the_retries_fail(serve, server, tmp_path):
    url = serve("/broken.bin", statuses=[500] * 10)
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, retries=2, **FAST)
    assert (error.code, error.values["status"]) == ("server-error", 500)
    assert len(server.requests_for("/broken.bin")) == 3
    assert leftovers(tmp_path) == []


def test_stalled_server_times_out_quickly(serve, tmp_path):
    url = serve("/stall.bin", stall_at=100_000)
    start = time.monotonic()
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, read_timeout=0.3, connect_timeout=2,
                    retries=1, backoff=0.01)
    assert error.code == "timeout"
    assert time.monotonic() - start < 5
    assert leftovers(tmp_path) == []


def test_wrong_hash_leaves_nothing_and_keeps_the_old_file(serve, tmp_path):
    url = serve("/hash.bin")
    (tmp_path / "out.bin").write_bytes(b"old")
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, sha256="0" * 64, **FAST)
    assert error.code == "hash-mismatch"
    assert leftovers(tmp_path) == ["out.bin"] and (tmp_path / "out.bin").read_bytes() == b"old"


def test_redirect_to_plain_http_is_refused(serve, server, tmp_path):
    serve("/target.bin")
    url = serve("/to-http", redirect=f"http://127.0.0.1:{server.port}/target.bin")
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert error.code == "insecure-redirect"
    assert server.requests_for("/target.bin") == []
    assert leftovers(tmp_path) == []


def test_redirect_to_https_is_followed(serve, server, tmp_path):
    serve("/moved.bin")
    url = serve("/old-name", redirect=server.url("/moved.bin", host="localhost"))
    result = download(url, tmp_path / "out.bin", max_bytes=CAP, sha256=SHA, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA
    assert result.url == server.url("/moved.bin", host="localhost")


def test_announced_size_over_the_cap_is_refused_before_downloading(serve, tmp_path):
    url = serve("/big.bin")
    events = []
    error = failure(download, url, tmp_path / "out.bin", max_bytes=100_000, progress=events.append, **FAST)
    assert error.code == "too-large"
    assert all(e.done == 0 for e in events)  # refused on Content-Length, not after streaming
    assert leftovers(tmp_path) == []


def test_streamed_size_over_the_cap_is_refused(serve, tmp_path):
    url = serve("/big-unannounced.bin", no_length=True)
    error = failure(download, url, tmp_path / "out.bin", max_bytes=100_000, **FAST)
    assert error.code == "too-large"
    assert leftovers(tmp_path) == []


def test_cancel_halfway_leaves_no_file(serve, tmp_path):
    url = serve("/cancel.bin")
    token = CancelToken()

    def cancel_at_half(event) -> None:
        if event.done >= len(DATA) // 2:
            token.cancel()

    with pytest.raises(Cancelled) as caught:
        download(url, tmp_path / "out.bin", max_bytes=CAP, progress=cancel_at_half, token=token, **FAST)
    assert isinstance(caught.value, DownloadError) and caught.value.code == "cancelled"
    assert leftovers(tmp_path) == []


def test_cancel_while_the_server_is_silent_returns_at_once_not_after_the_read_timeout(serve, tmp_path):
    url = serve("/silent.bin", stall_at=100_000)
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        download(url, tmp_path / "out.bin", max_bytes=CAP, token=token, read_timeout=60.0, connect_timeout=5.0)
    assert time.monotonic() - started < 5.0  # the read timeout is 60 s: the socket was shut under the read
    assert leftovers(tmp_path) == []


def test_verify_hook_sees_the_whole_file_before_the_rename_and_can_refuse(serve, tmp_path):
    url = serve("/unsigned.bin")
    seen = []

    def refuse(path: Path) -> None:
        seen.append((path.parent, path.read_bytes() == DATA, (tmp_path / "out.bin").exists()))
        raise DownloadError("verification-failed")

    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, verify_file=refuse, **FAST)
    assert error.code == "verification-failed"
    assert seen == [(tmp_path, True, False)]
    assert leftovers(tmp_path) == []


def mount_tmpfs(folder: Path, options: str) -> bool:
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


def test_full_disk_is_reported_and_leaves_nothing(serve, tmp_path):
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk, "size=1M"):
        pytest.skip("cannot mount a small disk here (needs root)")
    try:
        url = serve("/full.bin")
        error = failure(download, url, disk / "out.bin", max_bytes=CAP, **FAST)
        assert error.code == "disk-full"
        assert leftovers(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_read_only_folder_is_permission_denied(serve, tmp_path):
    disk = tmp_path / "ro"
    if not mount_tmpfs(disk, "size=1M,ro"):
        pytest.skip("cannot mount a read-only disk here (needs root)")
    try:
        error = failure(download, serve("/ro.bin"), disk / "out.bin", max_bytes=CAP, **FAST)
        assert error.code == "permission-denied"
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_not_found_is_not_retried(server, tmp_path):
    error = failure(download, server.url("/missing.bin"), tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert (error.code, error.values["status"]) == ("not-found", 404)
    assert len(server.requests_for("/missing.bin")) == 1
    assert leftovers(tmp_path) == []


def test_plain_http_url_is_refused_without_a_request(server, tmp_path):
    error = failure(download, f"http://127.0.0.1:{server.port}/plain.bin", tmp_path / "out.bin", max_bytes=CAP)
    assert error.code == "not-https"
    assert server.log == [] and leftovers(tmp_path) == []


def test_unknown_host_name_is_a_name_lookup_error(tmp_path):
    error = failure(download, "https://no-such-host.invalid/file.bin", tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert error.code == "name-lookup"
    assert leftovers(tmp_path) == []


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_refused_connection_is_offline(tmp_path):
    error = failure(download, f"https://127.0.0.1:{unused_port()}/file.bin", tmp_path / "out.bin", max_bytes=CAP,
                    retries=1, **FAST)
    assert error.code == "offline"
    assert leftovers(tmp_path) == []


def test_untrusted_certificate_is_a_tls_error(serve, monkeypatch, tmp_path):
    url = serve("/tls.bin")
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")  # back to requests' own bundle, which does not know the test CA
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert error.code == "tls"
    assert leftovers(tmp_path) == []


def test_the_system_proxy_setting_is_used(serve, monkeypatch, tmp_path):
    url = serve("/proxied.bin")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("NO_PROXY", "")
    error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, retries=0, **FAST)
    assert error.code == "proxy"


class SignInProxy:
    """A real proxy on 127.0.0.1 that answers every CONNECT with 407 (a company proxy wanting Windows' sign-in)."""

    def __init__(self) -> None:
        import socket
        import threading

        self.asked = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                if request.startswith(b"CONNECT "):
                    self.asked += 1
                connection.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Negotiate\r\n"
                                   b"Proxy-Authenticate: NTLM\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self.listener.close()


def test_a_proxy_that_asks_for_a_sign_in_is_said_so_and_not_asked_again(serve, monkeypatch, tmp_path):
    url = serve("/signed-in.bin")
    proxy = SignInProxy()
    try:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        error = failure(download, url, tmp_path / "out.bin", max_bytes=CAP, retries=3, **FAST)
    finally:
        proxy.close()
    assert error.code == "proxy-auth" and proxy.asked == 1  # one CONNECT: a second would be refused the same
    assert leftovers(tmp_path) == []
    for lang in LANGUAGES:
        words = download_error_text(error, lang)
        assert "HTTPS_PROXY" in words and "127.0.0.1" in words
    assert "could not be reached" not in download_error_text(error, "en")


def test_fetch_range_returns_exactly_the_asked_bytes(serve, server):
    url = serve("/zip.bin")
    assert fetch_range(url, 1000, 5000, **FAST) == DATA[1000:6000]
    assert server.requests_for("/zip.bin")[0].headers["Range"] == "bytes=1000-5999"
    assert fetch_range(url, len(DATA) - 10, 100, **FAST) == DATA[-10:]


def test_fetch_range_says_when_the_server_ignores_range(serve):
    url = serve("/zip-norange.bin", ignore_range=True)
    with pytest.raises(RangeNotSupported) as caught:
        fetch_range(url, 1000, 5000, **FAST)
    assert caught.value.code == "range-not-supported"


def test_fetch_range_follows_the_same_redirect_rules(serve, server):
    serve("/member.bin")
    error = failure(fetch_range, serve("/zip-http", redirect=f"http://127.0.0.1:{server.port}/member.bin"), 0, 10)
    assert error.code == "insecure-redirect"
    good = serve("/zip-moved", redirect=server.url("/member.bin", host="localhost"))
    assert fetch_range(good, 10, 20, **FAST) == DATA[10:30]


def test_every_error_code_has_plain_words_in_both_languages():
    for code in ERROR_CODES:
        entry = _texts()[f"download.error.{code}"]
        assert set(LANGUAGES) <= set(entry)
        assert set(re.findall(r"{(\w+)", entry["en"])) == set(re.findall(r"{(\w+)", entry["zh_CN"]))
    error = DownloadError("too-large", host="example.com", size=3e6, limit=1e6, size_mb=3.0, limit_mb=1.0)
    assert "3.0 MB" in download_error_text(error, "en") and "3.0 MB" in download_error_text(error, "zh_CN")
    for lang in LANGUAGES:
        text = download_error_text(DownloadError("offline", host="example.com"), lang)
        assert "example.com" in text and "HRESULT" not in text


def test_the_systems_trust_store_checks_certificates(serve, monkeypatch, tmp_path):
    """A company proxy's root in the system's store (here: OpenSSL's default file, SSL_CERT_FILE) is trusted, as
    the browser and pip trust it; requests' own bundle (certifi) alone does not know it."""
    import requests

    url = serve("/system-trust.bin")
    ca = os.environ["REQUESTS_CA_BUNDLE"]
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)  # requests reads it too (this machine sets both)
    monkeypatch.setenv("SSL_CERT_FILE", ca)
    result = download(url, tmp_path / "out.bin", max_bytes=CAP, **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA and result.size == len(DATA)
    error = failure(download, url, tmp_path / "certifi.bin", max_bytes=CAP, session=requests.Session(), **FAST)
    assert error.code == "tls"


def test_a_certificate_the_users_pip_names_is_the_one_used(serve, monkeypatch, tmp_path):
    from app.sources.download import new_session

    url = serve("/pip-cert.bin")
    ca = os.environ["REQUESTS_CA_BUNDLE"]
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    download(url, tmp_path / "out.bin", max_bytes=CAP, session=new_session(Path(ca)), **FAST)
    assert (tmp_path / "out.bin").read_bytes() == DATA


def test_a_download_security_software_stopped_is_named_with_where_to_look():
    """ERROR_VIRUS_INFECTED / ERROR_VIRUS_DELETED while the download is written (Microsoft Learn, System Error
    Codes 0-499): said as security software with Protection history, not "check the disk"."""
    from app.sources.download import _disk_error

    for code in (225, 226):
        error = OSError(22, "Operation did not complete successfully because the file contains a virus",
                        r"C:\\Users\\me\\Downloads\\.vc_redist.x64.exe.tmp")
        error.winerror = code
        said = _disk_error(error, Path("C:/Users/me/Downloads"))
        assert said.code == "security-blocked"
        english, chinese = download_error_text(said, "en"), download_error_text(said, "zh_CN")
        assert "Protection history" in english and "Check the disk" not in english and "保护历史记录" in chinese


def test_a_failure_where_windows_names_a_proxy_script_says_what_to_do_in_both_languages():
    """The browser's proxy from a setup script (AutoConfigURL; read through winreg in tests/windows): the app's
    connection went direct, so the words say how to give it the proxy."""
    error = DownloadError("offline", host="aka.ms", proxy_script="http://wpad.corp.example/proxy.pac")
    for lang in LANGUAGES:
        said = download_error_text(error, lang)
        assert "http://wpad.corp.example/proxy.pac" in said and "HTTPS_PROXY" in said and "aka.ms" in said
    assert "setup script" not in download_error_text(DownloadError("offline", host="aka.ms"), "en")
