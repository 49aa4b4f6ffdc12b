"""The one downloader: every file the app fetches (the VC++ installer, Intel's OpenMP runtime, one member of a
zip) comes through here.

- HTTPS only, on every hop: redirects are followed by hand and an `http://` hop is refused.
- The file streams into a temporary file beside the target (same folder, so the final rename is atomic), is
  fsynced, checked (size cap, SHA-256, the optional `verify_file` hook, where the Authenticode check plugs
  in), then renamed over the target. Anything that fails or is cancelled leaves the folder as it was.
- A dropped connection is resumed with an HTTP Range request, but only when the server really resumed (206
  with the right Content-Range start, same validator); otherwise it starts again from byte 0.
- Transient failures (dropped connection, timeout, refused connection, 408/429/5xx) are retried with bounded
  exponential backoff; the count restarts whenever an attempt brought new bytes.
- The system proxy: requests' default `trust_env` is kept, so HTTPS_PROXY / HTTP_PROXY / NO_PROXY (and on
  Windows the Internet Options proxy server, which urllib reads from the registry) apply, as does
  REQUESTS_CA_BUNDLE. A proxy setup script Internet Options name (not run here) is said in the words of a
  connection that went nowhere, with HTTPS_PROXY as the way to give the proxy. A proxy that asks for a sign-in
  (407) is said as such: a sign-in goes into HTTPS_PROXY (`http://name:password@proxy:port`); Windows' own
  sign-in to a proxy is not made.
- The system's trust store (`new_session`): certificates are checked by Windows itself (truststore, as pip does
  since 24.2), so a company proxy that inspects TLS with its own root in the Windows store works here as it does
  in the browser and in pip. A certificate the user's pip names, or REQUESTS_CA_BUNDLE, is used instead.
- Errors are `DownloadError(code, **values)`; `download_error_text` turns one into plain words (en, zh_CN) from
  `resources/ui_text.json` (`download.error.<code>`). No user-facing words live in this module.
- requests and urllib3 are imported by the functions that use them, not here: the wizard imports this module at
  start (its errors and progress type) and should not pay for them (0.16 s here, about a second under Wine).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import queue
import re
import socket
import ssl
import tempfile
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeVar
from urllib.parse import urljoin, urlsplit

from app.cancel import Cancelled, CancelToken
from app.failures import refusal_kind
from app.i18n import words
from app.system.files import replace_file

if TYPE_CHECKING:
    import requests

T = TypeVar("T")
CHUNK = 4 << 20  # largest read; the size adapts to the speed (_read_pieces)
SMALLEST_READ = 16 << 10
READ_SLICE = 0.1  # seconds one read should take
MAX_REDIRECTS = 10
CONNECT_TIMEOUT = 15.0
READ_TIMEOUT = 30.0
RETRIES = 4
BACKOFF = 1.0  # seconds before the first retry; doubles each time, capped at BACKOFF_CAP
BACKOFF_CAP = 30.0
PROGRESS_INTERVAL = 0.1  # seconds between progress events (also sent after every 1% of the file)
SPEED_WINDOW = 3.0  # seconds of history behind the speed figure
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

ERROR_CODES = (
    "offline", "name-lookup", "tls", "proxy", "not-found", "server-error", "http-error", "timeout",
    "connection-lost", "disk-full", "permission-denied", "write-failed", "hash-mismatch", "too-large",
    "insecure-redirect", "too-many-redirects", "cancelled", "not-https", "range-not-supported", "bad-response",
    "verification-failed", "bad-wheel", "index-not-https", "proxy-auth", "security-blocked",
)


class DownloadError(Exception):
    """A download that did not happen; `code` is one of ERROR_CODES, `values` fill its sentence."""

    def __init__(self, code: str, **values: object) -> None:
        super().__init__(code, values)
        self.code = code
        self.values = values

    def __str__(self) -> str:
        return f"{self.code} {self.values}" if self.values else self.code

    def text(self, lang: str) -> str:
        said = words(f"download.error.{self.code}", lang, **self.values)
        if self.values.get("proxy_script"):  # the browser's proxy comes from a script this app cannot run
            said += " " + words("download.proxy_script", lang, script=self.values["proxy_script"])
        return said


class DownloadCancelled(DownloadError, Cancelled):
    """Cancelled through the CancelToken: also a `Cancelled`, so the app's usual handling applies."""

    def __init__(self, **values: object) -> None:
        DownloadError.__init__(self, "cancelled", **values)


class RangeNotSupported(DownloadError):
    """The server sent the whole file instead of the asked range: fetch the whole file instead."""

    def __init__(self, **values: object) -> None:
        DownloadError.__init__(self, "range-not-supported", **values)


def download_error_text(error: DownloadError, lang: str = "en") -> str:
    return error.text(lang)


@dataclass(frozen=True)
class DownloadProgress:
    url: str
    done: int  # bytes on disk so far
    total: Optional[int]  # None while the server has not said
    speed: float  # bytes per second over the last few seconds
    eta: Optional[float]  # seconds left; None while unknown
    attempt: int  # 1 for the first try, more after retries and resumes

    @property
    def fraction(self) -> Optional[float]:
        return self.done / self.total if self.total else None


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    size: int
    sha256: Optional[str]  # computed only when one was asked for: hashing a local 200 MB file costs as much as the copy
    url: str  # after redirects
    attempts: int


ProgressCallback = Callable[[DownloadProgress], None]
VerifyFile = Callable[[Path], None]  # raises DownloadError to refuse the file


@dataclass(frozen=True)
class _Policy:
    connect_timeout: float
    read_timeout: float
    retries: int
    backoff: float


class _Retry(Exception):
    """An attempt failed in a way worth another try; `error` is what to report if none is left."""

    def __init__(self, error: DownloadError, wait: bool = True) -> None:
        super().__init__(error.code)
        self.error = error
        self.wait = wait


def _host(url: str) -> str:
    return urlsplit(url).hostname or url


def _require_https(url: str, code: str = "not-https") -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise DownloadError(code, host=parts.hostname or url, url=url)


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps (urllib3's `reason`, args, __cause__, __context__)."""
    found: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        linked = [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]
        todo.extend(item for item in linked if isinstance(item, BaseException))
    return found


PROXY_SIGN_IN = re.compile(r"Tunnel connection failed: 407\b")  # urllib3's words for the proxy's answer


def _network_error(exc: BaseException, url: str) -> DownloadError:
    """A requests/urllib3/socket failure in the user's words."""
    import requests
    import urllib3.exceptions

    host = _host(url)
    causes = _chain(exc)
    if any(isinstance(c, (requests.exceptions.SSLError, ssl.SSLError, urllib3.exceptions.SSLError)) for c in causes):
        return DownloadError("tls", host=host)
    if any(isinstance(c, (requests.exceptions.ProxyError, urllib3.exceptions.ProxyError)) for c in causes):
        # the proxy answered, asking for a sign-in (urllib3: "Tunnel connection failed: 407 Proxy Authentication
        # Required"): not a proxy that cannot be reached, and another try would be asked the same
        if any(PROXY_SIGN_IN.search(str(c)) for c in causes):
            return DownloadError("proxy-auth", host=host)
        return DownloadError("proxy", host=host)
    if any(isinstance(c, (socket.gaierror, urllib3.exceptions.NameResolutionError)) for c in causes):
        return DownloadError("name-lookup", host=host)  # before "offline": NameResolutionError is a NewConnectionError
    if any(isinstance(c, urllib3.exceptions.NewConnectionError) or
           (isinstance(c, OSError) and c.errno in (errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH,
                                                   errno.ENETDOWN, errno.EADDRNOTAVAIL))
           for c in causes):
        return DownloadError("offline", host=host)  # before "timeout": NewConnectionError is a ConnectTimeoutError
    if any(isinstance(c, (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError, socket.timeout,
                          TimeoutError)) for c in causes):
        return DownloadError("timeout", host=host)
    return DownloadError("connection-lost", host=host)


# where a proxy set up by a script (which this app cannot run) would explain it: the connection went direct
PROXY_SCRIPT_CODES = ("offline", "name-lookup", "timeout", "connection-lost")


def _with_proxy_script(error: DownloadError) -> DownloadError:
    """The network failure, with the proxy setup script Windows names when the user set no proxy of their own."""
    if error.code not in PROXY_SCRIPT_CODES or any(os.environ.get(n) for n in ("HTTPS_PROXY", "https_proxy",
                                                                                "ALL_PROXY", "all_proxy")):
        return error
    from app.system.proxy import proxy_script

    script = proxy_script()
    if script:
        error.values["proxy_script"] = script
    return error


def _retried_network_error(exc: BaseException, url: str) -> BaseException:
    error = _with_proxy_script(_network_error(exc, url))
    if error.code in ("tls", "name-lookup", "proxy-auth"):
        return error  # another try would end the same way
    return _Retry(error)


def _disk_error(exc: OSError, folder: Path) -> DownloadError:
    if refusal_kind(exc) == "virus":  # security software stopped or removed the file as it was written
        return DownloadError("security-blocked", folder=str(folder), path=exc.filename or str(folder))
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DownloadError("disk-full", folder=str(folder))
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) or isinstance(exc, PermissionError):
        return DownloadError("permission-denied", folder=str(folder))
    return DownloadError("write-failed", folder=str(folder), detail=exc.strerror or str(exc))


def _too_large(host: str, size: int, limit: int) -> DownloadError:
    return DownloadError("too-large", host=host, size=size, limit=limit, size_mb=size / 1e6, limit_mb=limit / 1e6)


def _status_error(response: requests.Response) -> BaseException:
    status = response.status_code
    host = _host(response.url)
    if status in (404, 410):
        return DownloadError("not-found", host=host, status=status)
    if status in RETRIED_STATUSES:
        return _Retry(DownloadError("server-error", host=host, status=status))
    return DownloadError("http-error", host=host, status=status)


def _open(session: requests.Session, url: str, headers: dict[str, str], policy: _Policy,
          token: Optional[CancelToken]) -> requests.Response:
    """GET `url`, following redirects by hand so that every hop is checked to be HTTPS."""
    import requests
    import urllib3.exceptions

    _require_https(url)
    for _ in range(MAX_REDIRECTS + 1):
        if token is not None and token.cancelled:
            raise DownloadCancelled(host=_host(url))
        try:
            # verify= spelled out: requests lets REQUESTS_CA_BUNDLE override a session's own CA bundle otherwise
            response = session.get(url, headers=headers, stream=True, allow_redirects=False,
                                   timeout=(policy.connect_timeout, policy.read_timeout), verify=session.verify)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _retried_network_error(exc, url) from exc
        if response.is_redirect:
            location = response.headers.get("Location", "")
            response.close()
            url = urljoin(url, location)
            _require_https(url, "insecure-redirect")
            continue
        return response
    raise DownloadError("too-many-redirects", host=_host(url))


def _content_range(response: requests.Response) -> Optional[tuple[int, int, Optional[int]]]:
    """(first, last, total) of a `Content-Range: bytes first-last/total` header; None when absent or malformed."""
    value = response.headers.get("Content-Range", "")
    unit, _, spec = value.strip().partition(" ")
    span, _, total = spec.partition("/")
    first, _, last = span.partition("-")
    if unit.lower() != "bytes":
        return None
    try:
        return int(first), int(last), None if total.strip() == "*" else int(total)
    except ValueError:
        return None


def _content_length(response: requests.Response) -> Optional[int]:
    try:
        return int(response.headers["Content-Length"])
    except (KeyError, ValueError):
        return None


def _read_pieces(response: requests.Response, largest: int, token: Optional[CancelToken], host: str):
    """The body as it arrives, in reads sized to take about READ_SLICE seconds at the speed seen so far: large
    reads are what make a fast link fast (read1's 16 KB TLS records cost 3x the time), small ones keep progress
    and cancellation prompt on a slow link. Cancelling shuts the socket under a read that waits on a silent
    server, so Stop never waits for the read timeout."""
    raw = response.raw
    size = min(SMALLEST_READ, largest)
    unhook = token.on_cancel(lambda: _interrupt(response)) if token is not None else (lambda: None)
    try:
        while True:
            started = time.monotonic()
            try:
                piece = raw.read(size)
            except Exception:
                if token is not None and token.cancelled:
                    raise DownloadCancelled(host=host) from None
                raise
            if token is not None and token.cancelled:
                raise DownloadCancelled(host=host)
            if not piece:
                return
            yield piece
            took = time.monotonic() - started
            rate = len(piece) / took if took > 0 else float("inf")
            size = int(max(SMALLEST_READ, min(largest, size * 4, rate * READ_SLICE)))  # grows 4x a read at most
    finally:
        unhook()


def _interrupt(response: requests.Response) -> None:
    """Wake the thread blocked reading `response`: shut its socket down (the plain socket's shutdown, under
    TLS, so the reader sees end of file or an error instead of waiting)."""
    sock = getattr(getattr(response.raw, "_connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _write_all(out, data: bytes) -> None:
    """An unbuffered write may take only part of the data (a nearly full disk): write the rest, or fail."""
    view = memoryview(data)
    while view:
        written = out.write(view)
        if not written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


class _Sink:
    """Writes and hashes in a thread of its own, so the disk and SHA-256 work while the next piece arrives (both
    release the GIL); a bounded queue keeps at most QUEUED pieces in memory. A write error is raised in the
    downloading thread at its next call."""

    QUEUED = 4

    def __init__(self, out, hashing: bool = True) -> None:
        self.out = out
        self.hashing = hashing
        self.digest = hashlib.sha256()
        self.queue: queue.Queue[Optional[bytes]] = queue.Queue(self.QUEUED)
        self.error: Optional[OSError] = None
        self.thread = threading.Thread(target=self._run, name="download-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            piece = self.queue.get()
            try:
                if piece is None:
                    return
                if self.error is None:
                    try:
                        _write_all(self.out, piece)
                        if self.hashing:
                            self.digest.update(piece)
                    except OSError as exc:
                        self.error = exc
            finally:
                self.queue.task_done()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def write(self, piece: bytes) -> None:
        self._raise()
        self.queue.put(piece)

    def drain(self) -> None:
        """Everything handed over is on disk (or its error is raised)."""
        self.queue.join()
        self._raise()

    def reset(self) -> None:
        self.drain()
        self.out.seek(0)
        self.out.truncate(0)
        self.digest = hashlib.sha256()

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()


class _Meter:
    """Speed over the last few seconds, ETA, and when the next progress event is due."""

    def __init__(self, url: str, callback: Optional[ProgressCallback]) -> None:
        self.url = url
        self.callback = callback
        self.samples: deque[tuple[float, int]] = deque()
        self.last_time = 0.0
        self.last_done = -1

    def restart(self) -> None:
        self.samples.clear()

    def update(self, done: int, total: Optional[int], attempt: int, final: bool = False) -> None:
        if self.callback is None:
            return
        now = time.monotonic()
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[0][0] > SPEED_WINDOW:
            self.samples.popleft()
        step = (total or 0) // 100
        due = (final or self.last_done < 0 or now - self.last_time >= PROGRESS_INTERVAL
               or (step > 0 and done - self.last_done >= step))
        if not due:
            return
        first_time, first_done = self.samples[0]
        speed = (done - first_done) / (now - first_time) if now > first_time and done >= first_done else 0.0
        eta = None
        if total is not None:
            eta = 0.0 if done >= total else ((total - done) / speed if speed > 0 else None)
        self.last_time, self.last_done = now, done
        self.callback(DownloadProgress(self.url, done, total, speed, eta, attempt))


def _backoff(policy: _Policy, failures: int, token: Optional[CancelToken], url: str) -> None:
    delay = min(policy.backoff * (2 ** (failures - 1)), BACKOFF_CAP)
    if token is not None:
        if token.wait(delay):
            raise DownloadCancelled(host=_host(url))
    else:
        time.sleep(delay)


def new_session(cert: Optional[Path] = None) -> requests.Session:
    """The one way a requests session is made: `cert` (the company certificate the user's pip trusts) when given;
    else REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE when set (requests reads them); else the system's trust store
    (truststore: Windows' CertGetCertificateChain, macOS' Security framework, OpenSSL's default paths on Linux),
    falling back to requests' own bundle where truststore is not installed (Python 3.9)."""
    import requests

    session = requests.Session()
    if cert is not None:
        session.verify = str(cert)
        return session
    if os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE"):
        return session
    try:
        import truststore
    except ImportError:
        return session
    session.mount("https://", _system_trust_adapter(truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)))
    return session


def _system_trust_adapter(context: ssl.SSLContext):
    """A requests adapter whose connections (direct, and through a proxy) are checked with `context`."""
    from requests.adapters import HTTPAdapter

    class SystemTrust(HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs):
            kwargs["ssl_context"] = context
            return super().init_poolmanager(*args, **kwargs)

        def proxy_manager_for(self, proxy, **kwargs):
            kwargs["ssl_context"] = context
            return super().proxy_manager_for(proxy, **kwargs)

    return SystemTrust()


def download(url: str, target: Path, *, max_bytes: int, sha256: Optional[str] = None,
             progress: Optional[ProgressCallback] = None, token: Optional[CancelToken] = None,
             verify_file: Optional[VerifyFile] = None, connect_timeout: float = CONNECT_TIMEOUT,
             read_timeout: float = READ_TIMEOUT, retries: int = RETRIES, backoff: float = BACKOFF,
             chunk_size: int = CHUNK, session: Optional[requests.Session] = None) -> DownloadResult:
    """Fetch `url` into `target` (replaced atomically). Raises DownloadError (DownloadCancelled when `token` is
    cancelled); then `target` is as it was and no temporary file is left.

    `max_bytes` refuses a bigger file (announced or streamed). `sha256` (hex) is checked before the rename;
    so is `verify_file(temporary_path)`, which raises DownloadError to refuse. `retries` is how many failed
    attempts in a row (without new bytes) are tried again."""

    _require_https(url)
    target = Path(target)
    folder = target.parent
    policy = _Policy(connect_timeout, read_timeout, retries, backoff)
    expected = sha256.lower() if sha256 else None
    own_session = session is None
    session = session or new_session()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        if own_session:
            session.close()
        raise _disk_error(exc, folder) from exc
    temporary = Path(name)
    try:
        with open(fd, "wb", buffering=0) as out:
            result = _fetch_into(session, url, out, max_bytes=max_bytes, expected=expected, policy=policy,
                                 token=token, meter=_Meter(url, progress), chunk_size=chunk_size, folder=folder)
            try:
                os.fsync(out.fileno())
            except OSError as exc:
                raise _disk_error(exc, folder) from exc
        final_url, size, digest, attempts = result
        if verify_file is not None:
            verify_file(temporary)
        if token is not None and token.cancelled:
            raise DownloadCancelled(host=_host(url))
        try:
            replace_file(temporary, target)
        except OSError as exc:
            raise _disk_error(exc, folder) from exc
        return DownloadResult(target, size, digest, final_url, attempts)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        if own_session:
            session.close()


def _fetch_into(session: requests.Session, url: str, out, *, max_bytes: int, expected: Optional[str],
                policy: _Policy, token: Optional[CancelToken], meter: _Meter, chunk_size: int,
                folder: Path) -> tuple[str, int, Optional[str], int]:
    """The attempts: (final url, size, sha256, attempts). `out` holds the bytes so far; the hash follows it."""
    sink = _Sink(out, hashing=expected is not None)
    try:
        return _attempts(session, url, sink, max_bytes=max_bytes, expected=expected, policy=policy, token=token,
                         meter=meter, chunk_size=chunk_size, folder=folder)
    finally:
        sink.close()


def _attempts(session: requests.Session, url: str, sink: _Sink, *, max_bytes: int, expected: Optional[str],
              policy: _Policy, token: Optional[CancelToken], meter: _Meter, chunk_size: int,
              folder: Path) -> tuple[str, int, str, int]:
    import requests
    import urllib3.exceptions

    host = _host(url)
    done = 0
    validator: Optional[str] = None  # ETag or Last-Modified of the first answer: a resume must match it
    total: Optional[int] = None
    attempts = 0
    failures = 0  # in a row, without new bytes

    def restart() -> None:
        nonlocal done
        try:
            sink.reset()
        except OSError as exc:
            raise _disk_error(exc, folder) from exc
        done = 0
        meter.restart()

    while True:
        attempts += 1
        before = done
        try:
            if token is not None and token.cancelled:
                raise DownloadCancelled(host=host)
            headers = {"Accept-Encoding": "identity"}
            if done:
                headers["Range"] = f"bytes={done}-"
                if validator:
                    headers["If-Range"] = validator
            response = _open(session, url, headers, policy, token)
            try:
                status = response.status_code
                if status not in (200, 206):
                    raise _status_error(response)
                if status == 206:
                    span = _content_range(response)
                    if not done or span is None or span[0] != done or (total is not None and span[2] != total):
                        restart()  # not the resume we asked for: start again from byte 0, at once
                        raise _Retry(DownloadError("bad-response", host=host), wait=False)
                    length = span[2]
                else:
                    if done:
                        restart()  # the server ignored Range (or the file changed): this answer is from byte 0
                    length = _content_length(response)
                if response.headers.get("Content-Encoding", "identity").lower() != "identity":
                    length = None  # decoded size is unknown in advance
                if length is not None and length > max_bytes:
                    raise _too_large(host, length, max_bytes)
                total = length
                validator = _strong_validator(response) if validator is None or status == 200 else validator
                meter.update(done, total, attempts)
                try:
                    for piece in _read_pieces(response, chunk_size, token, host):
                        if token is not None and token.cancelled:
                            raise DownloadCancelled(host=host)
                        if done + len(piece) > max_bytes:
                            raise _too_large(host, done + len(piece), max_bytes)
                        try:
                            sink.write(piece)
                        except OSError as exc:
                            raise _disk_error(exc, folder) from exc
                        done += len(piece)
                        meter.update(done, total, attempts)
                except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
                    raise _retried_network_error(exc, url) from exc
                if total is not None and done != total:
                    raise _Retry(DownloadError("connection-lost", host=host))
                final_url = response.url
            finally:
                response.close()
        except _Retry as retry:
            failures = 1 if done > before else failures + 1
            if failures > policy.retries:
                raise retry.error from retry
            if retry.wait:
                _backoff(policy, failures, token, url)
            continue
        try:
            sink.drain()
        except OSError as exc:
            raise _disk_error(exc, folder) from exc
        meter.update(done, done, attempts, final=True)
        hexdigest = sink.digest.hexdigest() if sink.hashing else None
        if expected is not None and hexdigest != expected:
            raise DownloadError("hash-mismatch", host=host, expected=expected, actual=hexdigest)
        return final_url, done, hexdigest, attempts


def _strong_validator(response: requests.Response) -> Optional[str]:
    """What If-Range may carry: a strong ETag, else Last-Modified (weak ETags are not allowed there)."""
    etag = response.headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return response.headers.get("Last-Modified")


def _retrying(session: Optional[requests.Session], policy: _Policy, token: Optional[CancelToken], url: str,
              attempt: Callable[[requests.Session], T]) -> T:
    """Run `attempt` until it returns, retrying what `_Retry` marks as worth retrying, with backoff."""

    own_session = session is None
    session = session or new_session()
    failures = 0
    try:
        while True:
            try:
                return attempt(session)
            except _Retry as retry:
                failures += 1
                if failures > policy.retries:
                    raise retry.error from retry
                if retry.wait:
                    _backoff(policy, failures, token, url)
    finally:
        if own_session:
            session.close()


def _read_body(response: requests.Response, url: str, limit: int, token: Optional[CancelToken]) -> bytes:
    """The whole body, at most `limit` bytes (more is an error raised by the caller's check)."""
    import requests
    import urllib3.exceptions

    pieces, got = [], 0
    try:
        for piece in _read_pieces(response, CHUNK, token, _host(url)):
            if token is not None and token.cancelled:
                raise DownloadCancelled(host=_host(url))
            got += len(piece)
            if got > limit:
                raise _too_large(_host(url), got, limit)
            pieces.append(piece)
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise _retried_network_error(exc, url) from exc
    return b"".join(pieces)


def fetch_range(url: str, start: int, length: int, *, token: Optional[CancelToken] = None,
                connect_timeout: float = CONNECT_TIMEOUT, read_timeout: float = READ_TIMEOUT,
                retries: int = RETRIES, backoff: float = BACKOFF,
                session: Optional[requests.Session] = None) -> bytes:
    """Bytes `start` .. `start + length - 1` of `url` (fewer at the end of the file), with the same HTTPS and
    redirect rules as `download`. Raises RangeNotSupported when the server answers with the whole file, so
    the caller can download the whole file instead."""
    _require_https(url)
    if start < 0 or length <= 0:
        raise ValueError("start must be >= 0 and length > 0")
    host = _host(url)
    policy = _Policy(connect_timeout, read_timeout, retries, backoff)

    def attempt(session: requests.Session) -> bytes:
        headers = {"Accept-Encoding": "identity", "Range": f"bytes={start}-{start + length - 1}"}
        response = _open(session, url, headers, policy, token)
        try:
            if response.status_code == 200:
                raise RangeNotSupported(host=host)  # closed unread: it may be the whole large file
            if response.status_code != 206:
                raise _status_error(response)
            span = _content_range(response)
            if span is None or span[0] != start or span[1] > start + length - 1 or _encodings(response):
                raise DownloadError("bad-response", host=host)  # a compressed range is not the file's bytes
            want = span[1] - span[0] + 1
            try:
                data = _read_body(response, url, want, token)
            except DownloadError as exc:
                raise DownloadError("bad-response", host=host) if exc.code == "too-large" else exc from exc
            if len(data) != want:
                raise _Retry(DownloadError("connection-lost", host=host))
            return data
        finally:
            response.close()

    return _retrying(session, policy, token, url, attempt)


def _encodings(response: requests.Response) -> list[str]:
    """The Content-Encoding codings, in the order they were applied, identity left out."""
    value = response.headers.get("Content-Encoding", "")
    return [c.strip().lower() for c in value.split(",") if c.strip() and c.strip().lower() != "identity"]


def _inflate(body: bytes, wbits: int, limit: int, host: str) -> bytes:
    """A gzip or zlib (or raw deflate) body inflated, at most `limit` bytes whatever it claims."""
    inflater = zlib.decompressobj(wbits)
    pieces, size, data = [], 0, body
    while True:
        piece = inflater.decompress(data, limit + 1 - size)
        size += len(piece)
        if size > limit:
            raise _too_large(host, size, limit)
        pieces.append(piece)
        if inflater.eof:
            data = inflater.unused_data
            if not data.startswith(b"\x1f\x8b"):  # another gzip member follows, or the end
                return b"".join(pieces)
            inflater = zlib.decompressobj(wbits)
            continue
        data = inflater.unconsumed_tail
        if not data and not piece:
            raise DownloadError("bad-response", host=host)  # cut short


def _decoded(response: requests.Response, body: bytes, limit: int) -> bytes:
    """A page body as sent (Content-Encoding gzip or deflate, as mirrors compress pages), decoded."""
    host = _host(response.url)
    for coding in reversed(_encodings(response)):
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise DownloadError("bad-response", host=host)  # not one we asked for
        try:
            body = _inflate(body, zlib.MAX_WBITS | 32, limit, host)  # a gzip or a zlib header, told apart
        except zlib.error:
            if coding != "deflate":
                raise DownloadError("bad-response", host=host) from None
            try:
                body = _inflate(body, -zlib.MAX_WBITS, limit, host)  # "deflate" sent raw, as some servers do
            except zlib.error:
                raise DownloadError("bad-response", host=host) from None
    return body


def fetch_page(url: str, *, accept: str, max_bytes: int = 8 << 20, token: Optional[CancelToken] = None,
               session: Optional[requests.Session] = None) -> tuple[str, str, bytes]:
    """A small document (a package index page): (final URL after redirects, Content-Type, body), with the same
    HTTPS, redirect and error rules as `download`. The page may come compressed (gzip, deflate): it is decoded,
    to at most `max_bytes` either way."""
    policy = _Policy(CONNECT_TIMEOUT, READ_TIMEOUT, RETRIES, BACKOFF)

    def attempt(session: requests.Session) -> tuple[str, str, bytes]:
        response = _open(session, url, {"Accept": accept, "Accept-Encoding": "gzip, deflate"}, policy, token)
        try:
            if response.status_code != 200:
                raise _status_error(response)
            body = _decoded(response, _read_body(response, url, max_bytes, token), max_bytes)
            return response.url, response.headers.get("Content-Type", ""), body
        finally:
            response.close()

    return _retrying(session, policy, token, url, attempt)


def remote_size(url: str, *, token: Optional[CancelToken] = None,
                session: Optional[requests.Session] = None) -> Optional[int]:
    """The file's size from a one-byte range request (Content-Range's total); None when the server cannot say."""
    policy = _Policy(CONNECT_TIMEOUT, READ_TIMEOUT, RETRIES, BACKOFF)

    def attempt(session: requests.Session) -> Optional[int]:
        response = _open(session, url, {"Accept-Encoding": "identity", "Range": "bytes=0-0"}, policy, token)
        try:
            span = _content_range(response) if response.status_code == 206 else None
            return span[2] if span else None
        finally:
            response.close()

    return _retrying(session, policy, token, url, attempt)
