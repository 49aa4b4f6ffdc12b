"""The diagnosis of an offline image, run as the app runs it, and what it found by code."""

from __future__ import annotations

from app.inventory.discovery import discover
from app.probes.runner import run_diagnosis
from app.system.offline import OfflineImage


def diagnose(image, folders=(), **kwargs):
    system = OfflineImage(image.root)
    return run_diagnosis(system, list(discover(system, folders=[image.host(f) for f in folders])), **kwargs)


def codes(diagnosis, severity=None):
    return [f.code for f in diagnosis.findings if severity is None or f.severity == severity]


def finding(diagnosis, code):
    return next(f for f in diagnosis.findings if f.code == code)
