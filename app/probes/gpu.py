"""NVIDIA: a CUDA build of torch needs a driver at least as new as its CUDA version requires. Not where ZLUDA's
stand-ins run the CUDA build on an AMD card (app/probes/gpu_backends.py): there the driver is AMD's."""

from __future__ import annotations

from typing import Iterator

from app.engine.versions import version_tuple
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, WARNING, Finding
from app.probes.gpu_backends import zluda_stand_ins
from app.resources import known_issues


def run(ctx: ProbeContext) -> Iterator[Finding]:
    torch = ctx.env.torch if ctx.env else None
    if torch is None or not torch.cuda or zluda_stand_ins(ctx):
        return
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
