"""NVIDIA: a CUDA build of torch needs a driver at least as new as its CUDA version requires, and a card no newer
than the build has code for (an RTX 50-series card needs a cu128 build or newer). Not where ZLUDA's stand-ins run
the CUDA build on an AMD card, or where the nvcuda.dll torch would load is ZLUDA's (app/probes/gpu_backends.py):
there the driver is AMD's."""

from __future__ import annotations

import re
from typing import Iterator

from app.engine.versions import version_tuple
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.probes.gpu_backends import zluda_driver, zluda_stand_ins
from app.resources import known_issues


def run(ctx: ProbeContext) -> Iterator[Finding]:
    torch = ctx.env.torch if ctx.env else None
    if torch is None or not torch.cuda or zluda_stand_ins(ctx) or zluda_driver(ctx):
        return
    yield from _too_new(ctx, torch.cuda, torch.version)
    driver = ctx.machine.nvidia_driver
    if driver is None:
        yield ctx.finding("gpu-driver-missing", WARNING, {"cuda": torch.cuda}, ["update-gpu-driver"])
        return
    needed = known_issues()["cuda_driver_minimum_windows"].get(torch.cuda.split(".")[0])
    if needed and version_tuple(driver) < version_tuple(needed):
        yield ctx.finding("gpu-driver-too-old", BLOCKER, {
            "cuda": torch.cuda, "needed": needed, "driver": driver,
            "source": ctx.machine.nvidia_driver_source}, ["update-gpu-driver"])


PROBE = Probe("gpu", ENVIRONMENT, run)


def _too_new(ctx: ProbeContext, cuda: str, version: str) -> Iterator[Finding]:
    """A graphics card newer than the CUDA build: an RTX 50-series card (Blackwell, sm_120) runs only builds for
    CUDA 12.8 and newer (known_issues' gpu_minimum_cuda); an older build loads, warns, and fails at the first
    calculation on the card ("no kernel image is available")."""
    for gpu in ctx.machine.gpus:
        for rule in known_issues()["gpu_minimum_cuda"]:
            if re.search(rule["pattern"], gpu, re.IGNORECASE) and version_tuple(cuda) < version_tuple(rule["cuda"]):
                yield ctx.finding("gpu-too-new", BLOCKER, {
                    "gpu": gpu, "generation": rule["generation"], "cuda": cuda, "needed": rule["cuda"],
                    "torch": version, "first_torch": rule["torch"],
                    "variant": "cu" + rule["cuda"].replace(".", "")}, ["install-torch-for-gpu"])
                return
