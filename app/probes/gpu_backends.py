"""AMD's ways to run PyTorch on Windows, and what "the driver" means for them (docs/facts.md):

- the ROCm (HIP) build of PyTorch: `c10_hip.dll` / `torch_hip.dll` in torch\\lib import `amdhip64_*.dll`, which
  AMD's graphics driver puts in System32, and the ROCm libraries (rocBLAS, MIOpen, hipBLAS, ...), which come with
  AMD's HIP SDK or the ROCm packages the build was installed with;
- ZLUDA: a CUDA build of PyTorch whose CUDA libraries in torch\\lib (`cublas64_11.dll`, `cusparse64_11.dll`,
  `nvrtc64_*.dll`) were replaced by ZLUDA's stand-ins, which import AMD's HIP runtime and ROCm libraries instead of
  NVIDIA's. A stand-in is known by its import table, not by its name. There NVIDIA's driver is not the driver:
  AMD's is, with the HIP SDK.

The missing DLLs themselves are the dependency check's (`missing-dll@amd-driver`, `@hip-sdk`); this probe says
that ZLUDA is in use, so that no NVIDIA advice is given.
"""

from __future__ import annotations

import re
from typing import Iterator

from app.engine.pe import PEInfo
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.dll_owner import is_zluda_file
from app.probes.finding import INFO, Finding

# what AMD's graphics driver installs (System32): the HIP runtime and its code-object compiler
AMD_DRIVER = re.compile(r"^(?:amdhip64\w*|amd_comgr\w*|hiprtc\w*)\.dll$", re.I)
# the ROCm libraries: AMD's HIP SDK (C:\Program Files\AMD\ROCm\<version>\bin) or the build's own ROCm packages
HIP_SDK = re.compile(r"^(?:rocblas|rocsolver|rocsparse|rocfft|rocrand|hipblas\w*|hipsparse\w*|hipfft|hiprand|"
                     r"hipsolver|miopen\w*|rccl)\.dll$", re.I)
CUDA_LIBRARY = re.compile(r"^(?:cublas|cublaslt|cusparse|cufft|curand|cusolver|cudart|nvrtc|cudnn)\w*\.dll$", re.I)
ZLUDA = "zluda-stand-ins"


def is_amd(name: str) -> bool:
    return bool(AMD_DRIVER.match(name) or HIP_SDK.match(name))


def zluda_stand_ins(ctx: ProbeContext) -> dict[str, list[str]]:
    """torch\\lib's CUDA-named DLLs that import AMD's libraries: {stand-in: the AMD DLLs it imports}."""
    found = {}
    for path in ctx.torch_dlls():
        if not CUDA_LIBRARY.match(path.name):
            continue
        info = ctx.cache.get(path)
        if isinstance(info, PEInfo):
            amd = sorted({i.name for i in info.imports if is_amd(i.name)}, key=str.lower)
            if amd:
                found[path.name] = amd
    return found


def zluda_driver(ctx: ProbeContext) -> bool:
    """The nvcuda.dll torch\\lib would load is ZLUDA's (in a `.zluda` or `zluda` folder, or beside AMD's HIP
    runtime): the driver is AMD's, never NVIDIA's."""
    if ctx.env is None or ctx.env.torch is None:
        return False
    found = ctx.loader().resolve("nvcuda.dll", ctx.env.torch.folder / "lib")
    return is_zluda_file(found.path)


def run(ctx: ProbeContext) -> Iterator[Finding]:
    if ctx.env is None or ctx.env.torch is None:
        return
    stand_ins = zluda_stand_ins(ctx)
    if stand_ins:
        needs = sorted({n for names in stand_ins.values() for n in names}, key=str.lower)
        yield ctx.finding(ZLUDA, INFO, {"dlls": sorted(stand_ins, key=str.lower), "dll_list": ", ".join(
            sorted(stand_ins, key=str.lower)), "needs": needs, "need_list": ", ".join(needs)},
            ["update-amd-driver"])


PROBE = Probe("gpu-backends", ENVIRONMENT, run)
