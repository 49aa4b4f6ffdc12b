"""A real HTTPS server on 127.0.0.1 for the downloader's tests and benchmark: http.server + ssl in a thread,
with a test CA and a server certificate (127.0.0.1, localhost) made for the run by the `openssl` command line
tool (Debian's `openssl` package; no Python dependency). Clients trust it through REQUESTS_CA_BUNDLE.

It serves byte strings or files by path, supports single `Range: bytes=a-b` requests, logs every request
(path and headers), and injects faults per path (`Fault`).

    python -m tests.https_server FOLDER   # serves FOLDER's files as /<name>; prints "port CA-file", then waits
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional, Union

BLOCK = 1 << 20


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1 and localhost, signed by a fresh CA."""
    if shutil.which("openssl") is None:
        raise RuntimeError("the `openssl` command line tool is needed to make the test CA (apt-get install openssl)")
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = folder / "ca.key", folder / "ca.pem"
    key, csr, cert, ext = folder / "server.key", folder / "server.csr", folder / "server.pem", folder / "server.ext"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_cert),
            "-days", "2", "-subj", "/CN=Torch DLL Doctor test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                   "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(cert), "-days", "2", "-extfile", str(ext))
    return ca_cert, cert, key


@dataclass
class Fault:
    """What goes wrong on one path. Counts say how many requests are affected (then it behaves)."""

    statuses: list[int] = field(default_factory=list)  # answered in turn before the file, e.g. [500, 500]
    drop_at: Optional[int] = None  # send the headers and this many bytes, then cut the connection
    drops: int = 1  # how many requests are cut
    ignore_range: bool = False  # always 200 with the whole file
    wrong_range_start: bool = False  # answer a Range with 206 but from byte 0
    stall_at: Optional[int] = None  # send this many bytes, then say nothing more
    redirect: Optional[str] = None  # 302 to this (absolute or relative) location
    no_length: bool = False  # no Content-Length: the body ends when the connection closes
    gzip: bool = False  # a whole-file answer is gzip-compressed when the request accepts gzip (as mirrors do)


@dataclass
class Request:
    path: str
    headers: dict[str, str]


class HttpsServer:
    def __init__(self, folder: Path) -> None:
        self.ca, cert, key = make_certificates(folder)
        self.files: dict[str, Union[bytes, Path]] = {}
        self.faults: dict[str, Fault] = {}
        self.log: list[Request] = []
        # a link as users have it, for the benchmarks: each request waits `latency_s` before its answer, and the
        # body goes out at `bytes_per_s` at most (0: as fast as the loopback goes)
        self.latency_s = 0.0
        self.bytes_per_s = 0.0
        self.stopping = threading.Event()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server = self

        class Handler(_Handler):
            owner = server

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def requests_for(self, path: str) -> list[Request]:
        return [r for r in self.log if r.path == path]

    def __enter__(self) -> HttpsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    owner: HttpsServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        owner = self.owner
        path = self.path
        owner.log.append(Request(path, dict(self.headers.items())))
        if owner.latency_s:
            time.sleep(owner.latency_s)
        fault = owner.faults.get(path) or Fault()
        if fault.statuses:
            self._empty(fault.statuses.pop(0))
            return
        if fault.redirect is not None:
            self._empty(302, {"Location": fault.redirect})
            return
        body = owner.files.get(path)
        if body is None:
            self._empty(404)
            return
        size = len(body) if isinstance(body, bytes) else body.stat().st_size
        first, last = 0, size - 1
        status = 200
        wanted = self.headers.get("Range")
        if wanted and not fault.ignore_range and wanted.startswith("bytes="):
            a, _, b = wanted[6:].partition("-")
            first = int(a)
            last = min(int(b), size - 1) if b else size - 1
            status = 206
            if first >= size:
                self._empty(416, {"Content-Range": f"bytes */{size}"})
                return
            if fault.wrong_range_start:
                first = 0
        compressed = fault.gzip and status == 200 and "gzip" in self.headers.get("Accept-Encoding", "")
        if compressed:
            body = gzip.compress(body if isinstance(body, bytes) else body.read_bytes())
            last = len(body) - 1
        self.send_response(status)
        self.send_header("ETag", '"test-etag"')
        if self.path.endswith("/"):  # an index page, as pip wants it said
            self.send_header("Content-Type", "text/html")
        if compressed:
            self.send_header("Content-Encoding", "gzip")
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        if fault.no_length:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        cut = None
        if fault.drop_at is not None and fault.drops > 0:
            fault.drops -= 1
            cut = fault.drop_at
        self._send(body, first, last + 1, cut, fault.stall_at)

    def _send(self, body: Union[bytes, Path], start: int, end: int, cut: Optional[int],
              stall: Optional[int]) -> None:
        limit = min(x for x in (end, cut, stall) if x is not None)
        sent = start
        source = None if isinstance(body, bytes) else open(body, "rb")  # noqa: SIM115 - closed below
        try:
            if source is not None:
                source.seek(start)
            began, pace = time.monotonic(), self.owner.bytes_per_s
            while sent < limit:
                n = min(BLOCK, limit - sent)
                block = body[sent:sent + n] if source is None else source.read(n)
                self.wfile.write(block)
                sent += n
                if pace:
                    ahead = (sent - start) / pace - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
            self.wfile.flush()
        except OSError:
            return
        finally:
            if source is not None:
                source.close()
        if stall is not None and sent >= stall:
            self.owner.stopping.wait(60)
        if cut is not None or stall is not None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _empty(self, status: int, headers: Optional[dict[str, str]] = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


def main() -> None:
    folder = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as certs, HttpsServer(Path(certs)) as server:
        for path in folder.iterdir():
            server.files["/" + path.name] = path
        print(server.port, server.ca, flush=True)
        sys.stdin.read()  # serve until the parent closes our standard input


if __name__ == "__main__":
    main()
