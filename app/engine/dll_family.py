"""Which runtime a DLL belongs to, from its file name or the package that ships it: CUDA and cuDNN with their major
version, ROCm (HIP), Intel XPU (SYCL, Level Zero), DirectML, FFmpeg with its release, OpenMP. One rule set, used by
the DLL index's maker (tools/make_dll_index.py) and by the product (app/inventory/dll_index.py). Stdlib only.

The family is a short label: "cuda-12", "cudnn-9", "ffmpeg-7", "rocm-6", "xpu-8", "directml", "openmp", or a bare
kind ("cuda", "rocm", "xpu") where neither the name nor the package says the major."""

from __future__ import annotations

import re
from typing import Optional

_I = re.IGNORECASE
# cuDNN first: its names start like CUDA's. cudnn64_8, cudnn_ops64_9, cudnn_ops_infer64_8, cudnn_graph64_9
_CUDNN = re.compile(r"cudnn(?:_\w+?)?64_(\d+)\.dll", _I)
# names that carry the CUDA major: cublas64_12, cublasLt64_11, cudart64_110 (11.0), cudart64_12, cusparse64_12,
# nvrtc64_120_0, nvrtc-builtins64_121, nvJitLink_120_0
_CUDA_MAJOR = re.compile(r"(?:cublas(?:lt)?64_|cudart64_|cusparse64_|nvrtc64_|nvrtc-builtins64_|nvjitlink_)"
                         r"(1\d|[1-9](?=\d\b|\d_|\.))\d*(?:_\d+)?\.dll", _I)
# CUDA libraries whose own number is not the CUDA major (cufft64_11 comes with CUDA 12), and torch's CUDA parts
_CUDA = re.compile(r"(?:cu(?:fft|fftw|rand|solver|solvermg|sparse|pti|blas|blaslt|dart|dnn)\w*|nvrtc\w*|nvjitlink\w*"
                   r"|nvtoolsext\w*|nvperf_host|nvjpeg\w*|npp\w*|c10_cuda|torch_cuda\w*|caffe2_nvrtc)\.dll", _I)
_ROCM = re.compile(r"(?:amdhip64(?:_(\d+))?|hiprtc\w*|amd_comgr\w*|rocblas|rocsolver|rocsparse|rocfft\w*|rocrand"
                   r"|hipblas\w*|hipfft|hipsparse|hipsolver|hiprand|miopen|rccl|c10_hip|torch_hip)\.dll", _I)
_XPU = re.compile(r"(?:sycl(\d*)|ze_loader|ze_intel_gpu\w*|ze_tracing_layer|pi_level_zero|pi_win_proxy_loader|ur_loader"
                  r"|ur_adapter_level_zero\w*|ur_win_proxy_loader|c10_xpu|torch_xpu\w*)\.dll", _I)
_DIRECTML = re.compile(r"directml(?:\.debug)?\.dll", _I)
_OPENMP = re.compile(r"(?:libiomp5md|libiompstubs5md|libomp\w*|vcomp\d+d?|libgomp-\d+)(?:\.x86_64)?\.dll", _I)
_FFMPEG = re.compile(r"(avcodec|avformat|avdevice|avutil|avfilter|swscale|swresample|postproc)-(\d+)\.dll", _I)
# a library's major minus this is the FFmpeg release it comes with (avcodec-61 is FFmpeg 7, avutil-59 is FFmpeg 7);
# swresample's majors span two releases, so it says no release; a major past the releases known says none either
_FFMPEG_OFFSET = {"avcodec": 54, "avformat": 54, "avdevice": 54, "avutil": 52, "avfilter": 3, "swscale": 1,
                  "postproc": 51}
_FFMPEG_RELEASES = range(4, 9)  # FFmpeg 4 to 8, whose library majors are known
_MANGLED = re.compile(r"-[0-9a-f]{32}(?=\.dll$)", _I)  # delvewheel's copy of a DLL: avcodec-61-<md5>.dll
_PACKAGE_CUDA = re.compile(r"nvidia-[a-z0-9-]+-cu(\d+)", _I)
_PACKAGE_FAMILY = {"onnxruntime-directml": "directml", "torch-directml": "directml", "intel-openmp": "openmp",
                   "intel-sycl-rt": "xpu"}


def dll_family(dll_name: str, package: str = "") -> Optional[str]:
    """The family of `dll_name` (a file name, any case), helped by the package that ships it; None for none."""
    name = _MANGLED.sub("", dll_name.rsplit("\\", 1)[-1].rsplit("/", 1)[-1])
    if found := _CUDNN.fullmatch(name):
        return f"cudnn-{found.group(1)}"
    if found := _CUDA_MAJOR.fullmatch(name):
        return f"cuda-{found.group(1)}"
    if _CUDA.fullmatch(name):
        from_package = _PACKAGE_CUDA.fullmatch(package)
        return f"cuda-{from_package.group(1)}" if from_package else "cuda"
    if found := _FFMPEG.fullmatch(name):
        release = int(found.group(2)) - _FFMPEG_OFFSET.get(found.group(1).lower(), 1000)
        return f"ffmpeg-{release}" if release in _FFMPEG_RELEASES else "ffmpeg"
    for pattern, kind in ((_ROCM, "rocm"), (_XPU, "xpu")):
        if found := pattern.fullmatch(name):
            return f"{kind}-{found.group(1)}" if found.group(1) else kind
    if _DIRECTML.fullmatch(name):
        return "directml"
    if _OPENMP.fullmatch(name):
        return "openmp"
    if not package or not name.lower().endswith(".dll"):
        return None
    from_package = _PACKAGE_CUDA.fullmatch(package)
    return f"cuda-{from_package.group(1)}" if from_package else _PACKAGE_FAMILY.get(package.lower())
