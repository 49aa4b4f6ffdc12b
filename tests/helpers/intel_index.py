"""A package index serving Intel's OpenMP wheel (intel-openmp 2024.2.1, the app's download catalogue's entry)."""

from __future__ import annotations

from app.resources import download_catalog

ENTRY = download_catalog()["intel_openmp"]
WHEEL_PATH = "/packages/ab/" + ENTRY["wheel"]


def serve_index(mirror, wheel_bytes: bytes, digest: str = ENTRY["wheel_sha256"]) -> None:
    link = f'<a href="../../packages/ab/{ENTRY["wheel"]}#sha256={digest}">{ENTRY["wheel"]}</a>'
    page = f"<html><body>{link}</body></html>"
    mirror.files["/simple/intel-openmp/"] = page.encode()
    mirror.files[WHEEL_PATH] = wheel_bytes
