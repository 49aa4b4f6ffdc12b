"""Live replay of torch's Windows DLL loading, run by the USER's own Python. Stdlib only, Python 3.8+.

This file is a resource, not part of the ``app`` package: the parent (Torch DLL Doctor) runs it with the
python.exe of the environment under diagnosis, and reads one JSON line from its stdout.

Command line the parent must use
================================

::

    "<env>\\python.exe" -B "<folder>\\replay_loader.py" [--no-import] [--openmp-user PATH]... [--import-first MODULE]...

* ``<env>\\python.exe`` is the interpreter the user's application runs: for a venv its
  ``Scripts\\python.exe`` (so ``sys.exec_prefix`` is the venv, as torch sees it), for conda the env's
  ``python.exe``, for an embedded Python the ``python.exe`` beside its ``._pth`` file.
* Only ``-B`` (write no ``.pyc`` into the user's folders). Deliberately **not** ``-I``, ``-E``, ``-s`` or
  ``-S``: they change ``sys.path`` (no site-packages, no user site, no ``PYTHONPATH``, no ``.pth`` files), so
  torch could be found elsewhere or not at all. A ``._pth`` file keeps applying, as it does for the user.
  Not ``-X utf8`` either: the report is pure ASCII, so no console code page matters, and the import of
  torch should run in the user's own text mode.
* Environment: the one the user's application gets (PATH matters: torch's retry searches it). Working
  folder: the application's, if known, else the interpreter's folder (the legacy ``LoadLibraryW`` retry
  also searches the current folder). stdout and stderr should be pipes; stdin may be NUL.
* Allow about two minutes under a real Windows (torch's import alone takes seconds; antivirus scans of
  ``torch_cpu.dll`` can take longer), then treat a timeout as a hang in a DLL's initialisation. Measured
  under Wine 8 with torch 2.4.0 (CPython 3.12): 1-3 s when a DLL fails, 6-7 s when ``import torch`` works,
  0.1 s without torch.
* ``--no-import``: replay only, skip steps 6 and 7.
* ``--import-first MODULE`` (repeatable): a module the user's program imports before torch (``PyQt5``); step 1b
  imports it, in the order given, so its side effects (PyQt5's ``os.add_dll_directory`` of ``Qt5\\bin`` and its
  PATH change, an old ``msvcp140.dll`` it loads) are in place when torch loads, as in that program.
* ``--openmp-user PATH`` (repeatable): another copy of the OpenMP runtime that a program of this environment
  also uses (conda's ``Library\\bin\\libiomp5md.dll``, which mkl and numpy bind to); step 7 makes it do one
  OpenMP call, as its first user would. Without it, step 7 still runs torch's own parallel operation.

The script's own folder is removed from ``sys.path`` (where ``python script.py`` put it), so the search for
torch sees what the user's interpreter sees.

What it does (torch/__init__.py ``_load_dll_libraries``, torch 2.4 to 2.9, step by step)
=========================================================================================

1. Finds torch with ``importlib.util.find_spec("torch")`` (a top-level package's ``__init__`` is not run).
   No torch: the report says so (``"status": "torch_missing"``) and the script stops.
1b. With ``--import-first``: imports each module (``__import__``, errors noted, never fatal) and notes the runtime
   DLLs the process has loaded afterwards and how PATH changed. Nothing is undone: torch must meet that state.
2. Computes torch's ``dll_paths``: ``torch\\lib``, ``<exec_prefix>\\Library\\bin``, inside a venv
   ``<base_exec_prefix>\\Library\\bin``, ``<userbase>\\Library\\bin``, and ``<exec_prefix>\\bin`` when this
   torch's ``__init__.py`` has that rule (newer versions); existing ones only. Then the NvToolsExt folder
   and, for CUDA builds (``cuda`` read from ``torch\\version.py`` as text), ``CUDA_PATH_V<x_y>\\bin``.
3. ``SetErrorMode(SEM_FAILCRITICALERRORS)`` for the whole run (no message boxes), ``os.add_dll_directory``
   for each path.
4. The VC++ check: ``ctypes.CDLL`` of vcruntime140.dll, msvcp140.dll and vcruntime140_1.dll, each one.
5. ``LoadLibraryExW(dll, NULL, 0x1100)`` for each ``glob.glob(torch\\lib\\*.dll)``, in that order. On 126,
   PATH is patched once (``dll_paths + PATH``) and ``LoadLibraryW`` retried. Where torch would raise, the
   replay notes it and goes on, so that every failing DLL is seen. Afterwards PATH and the DLL folders are
   restored, so step 6 starts as torch would (the DLLs that loaded stay loaded).
6. ``import torch``: the user's real error text, or the version on success.
7. After a successful import, one parallel operation: ``torch.get_num_threads()`` (the OpenMP runtime torch
   bound to starts up) and ``torch.ones(64, 64) @ torch.ones(64, 64)``, its sum checked (262144). Then each
   ``--openmp-user`` copy is loaded by its full path (``LoadLibraryExW``, torch's flags) and its
   ``omp_get_max_threads`` called. Two OpenMP runtimes in one process end it here with "OMP: Error #15" on
   stderr: so the report is printed once before this step (the parent keeps the last one, and finds
   ``parallel.finished`` false when the process died in it). Bounded: a 64x64 product and one call per copy.
8. Prints exactly one line ``TDD-REPLAY-JSON: {...}`` to stdout, last, ASCII only (``ensure_ascii``),
   written straight to the stdout file descriptor, then exits with code 0 through ``os._exit`` (torch's
   thread pools cannot hang the exit). The line is printed whatever happens (``try``/``finally``), unless
   the process itself dies (a DLL's initialisation aborting it): for that case the script writes progress
   lines ``TDD-REPLAY-STEP: {...}`` to stderr before each step, so the last one names the culprit.
   The parent must take the **last** stdout line containing the marker (torch may print too); use
   :func:`parse_output`. Do not rely on the exit code.

Report (``"schema": "torch-dll-doctor.replay/1"``)
==================================================

All keys are always present; values not yet known are ``null`` (or empty). Windows error codes are always
given as numbers beside their text, so the parent never depends on the text (which is in the machine's UI
language: FormatMessageW, as torch's own error uses).

``schema``            "torch-dll-doctor.replay/1"
``status``            "replayed" (steps 1-6 ran; failures are in the fields below), "torch_missing",
                      "torch_not_a_package" (``torch`` is a plain module, e.g. a stray torch.py),
                      "not_windows", or "internal_error" (see ``internal_error``)
``platform``          ``sys.platform``
``python_version``    "3.12.9";  ``python_build``: ``sys.version``
``executable``        ``sys.executable``;  ``bits``: 32 or 64 (pointer size of this Python)
``machine``           ``PROCESSOR_ARCHITEW6432`` or ``PROCESSOR_ARCHITECTURE`` (e.g. "AMD64", "ARM64")
``exec_prefix``, ``base_exec_prefix``;  ``in_venv``: they differ
``cwd``               the working folder;  ``sys_path``: ``sys.path`` as searched for torch
``argv``              the script's arguments
``encodings``         {"stdout", "stderr", "filesystem", "locale"}: how torch's own prints are encoded
``torch_preimported`` "torch" was already in ``sys.modules`` before the replay (a ``.pth`` imported it)
``torch_dir``         the torch package folder;  ``torch_init``: its ``__init__.py`` (``spec.origin``)
``torch_version_text`` ``__version__`` read from ``torch\\version.py`` as text (e.g. "2.4.0+cpu") or null
``torch_cuda_text``   ``cuda`` from ``version.py`` (e.g. "12.1") or null
``torch_init_variant`` {"root_bin_dir": bool (adds ``<exec_prefix>\\bin``), "vc_arm64_skip": bool
                      (skips vcruntime140_1.dll on ARM64), "loader_found": bool (``__init__.py`` has
                      ``LoadLibraryExW``)}
``userbase``          ``sysconfig.get_config_var("userbase")``
``imported_first``    [{"module", "ok", "error" (type: message), "winerror", "elapsed_s", "path_added" (PATH entries
                      it put in front), "runtime_loaded" (full paths of the VC++ runtime DLLs loaded after it)}]
``dll_path_candidates`` [{"role", "path", "exists"}] in torch's order; roles: torch_lib, exec_prefix_library,
                      base_exec_prefix_library, userbase_library, exec_prefix_bin, nvtoolsext, cuda
``dll_paths``         the folders torch adds (existing candidates), in order
``dll_dir_errors``    {path: message} for ``os.add_dll_directory`` failures (torch would raise there)
``with_load_library_flags``  ``hasattr(kernel32, "AddDllDirectory")``
``vc_check``          {"vcruntime140.dll": null | {"winerror", "message", "exception"}, ...}; null = loaded
``vc_loaded_from``    {name: full path of the loaded module, or null}
``vc_hint``           torch would print its "Visual C++ Redistributable is not installed" hint
``dlls``              one entry per ``torch\\lib\\*.dll``, in glob order:
                      {"path", "name",
                       "error":   LoadLibraryExW's GetLastError, null when it loaded (or was not tried),
                       "message": its system message,
                       "retry_error", "retry_message": the PATH retry with LoadLibraryW (null: no retry
                                  or it loaded),
                       "loaded":  the DLL is loaded at the end,
                       "stops_torch": torch raises on this outcome (an error other than 126, or the retry
                                  failed),
                       "after_failure": an earlier DLL already stopped torch, so torch never gets here,
                       "ms":      time spent loading it}
``first_failure``     null, or the first DLL torch raises on: {"path", "name", "winerror" (the final code),
                      "message", "stage" ("LoadLibraryExW" | "LoadLibraryW" | "PATH"), "torch_message"
                      (the text of torch's OSError, "[WinError 126] ... Error loading ...")}
``path_patched``      torch's PATH patch happened;  ``path_patched_by``: name of the DLL that triggered it
``loaded_modules``    full paths of every module in the process after step 5 (which copy won)
``loaded_at_end``     full paths of every module loaded when the import succeeded or failed: the copies of
                      vcruntime140.dll, msvcp140.dll and the OpenMP runtime that really won (the parent reads
                      their versions with its own PE reader: Wine's version.dll cannot read a builtin-named DLL)
``import``            {"attempted", "ok", "version", "file", "error_type", "message" (``str(exc)``),
                       "winerror", "traceback_tail" (last lines), "elapsed_s"}
``parallel``          {"attempted", "finished" (false: the process died in step 7; the report printed before it
                       is the last one), "threads", "sum" (262144.0 when right), "ok", "error",
                       "openmp_users": [{"path", "loaded", "error", "threads"}], "elapsed_s"}
``timings``           {"find_s", "replay_s", "import_s"}
``elapsed_s``         whole run
``notes``             non-fatal problems of the replay itself (strings)
``internal_error``    null, or the replay's own failure (type, message, traceback tail)
"""

import contextlib
import json
import os
import sys
import time
import traceback

SCHEMA = "torch-dll-doctor.replay/1"
MARKER = "TDD-REPLAY-JSON: "
STEP_MARKER = "TDD-REPLAY-STEP: "

SEM_FAILCRITICALERRORS = 0x0001
#: LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, as torch passes it.
TORCH_LOAD_FLAGS = 0x00001100
ERROR_MOD_NOT_FOUND = 126
VC_DLLS = ("vcruntime140.dll", "msvcp140.dll", "vcruntime140_1.dll")
TRACEBACK_LINES = 12


def parse_output(stdout_text):
    """The report dict from the script's stdout (text), or None when no marker line is there.

    The last line carrying the marker wins; text before the marker on that line (a torch print without a
    newline) is ignored.
    """
    found = None
    for line in stdout_text.splitlines():
        at = line.find(MARKER)
        if at >= 0:
            found = line[at + len(MARKER) :]
    if found is None:
        return None
    return json.loads(found.strip())


# --------------------------------------------------------------------------- output


def _new_report():
    return {
        "schema": SCHEMA,
        "status": None,
        "platform": sys.platform,
        "python_version": None,
        "python_build": None,
        "executable": None,
        "bits": None,
        "machine": None,
        "exec_prefix": None,
        "base_exec_prefix": None,
        "in_venv": None,
        "cwd": None,
        "sys_path": [],
        "argv": [],
        "encodings": {},
        "torch_preimported": None,
        "torch_dir": None,
        "torch_init": None,
        "torch_version_text": None,
        "torch_cuda_text": None,
        "torch_init_variant": None,
        "userbase": None,
        "imported_first": [],
        "dll_path_candidates": [],
        "dll_paths": [],
        "dll_dir_errors": {},
        "with_load_library_flags": None,
        "vc_check": {},
        "vc_loaded_from": {},
        "vc_hint": None,
        "dlls": [],
        "first_failure": None,
        "path_patched": False,
        "path_patched_by": None,
        "loaded_modules": [],
        "loaded_at_end": [],
        "import": {
            "attempted": False,
            "ok": None,
            "version": None,
            "file": None,
            "error_type": None,
            "message": None,
            "winerror": None,
            "traceback_tail": [],
            "elapsed_s": None,
        },
        "parallel": {
            "attempted": False,
            "finished": None,
            "threads": None,
            "sum": None,
            "ok": None,
            "error": None,
            "openmp_users": [],
            "elapsed_s": None,
        },
        "timings": {"find_s": None, "replay_s": None, "import_s": None},
        "elapsed_s": None,
        "notes": [],
        "internal_error": None,
    }


def _write_fd(fd, text):
    """Write ASCII text to a file descriptor, all of it; never raises."""
    try:
        data = text.encode("ascii", "backslashreplace")
        while data:
            n = os.write(fd, data)
            if n <= 0:
                return False
            data = data[n:]
        return True
    except BaseException:
        return False


def _flush_streams():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass


def _step(fd, step, **fields):
    """A progress line on stderr, so the parent knows where a process that died was."""
    fields["step"] = step
    try:
        line = STEP_MARKER + json.dumps(fields, ensure_ascii=True) + "\n"
    except BaseException:
        return
    _flush_streams()
    _write_fd(fd, line)


def _emit(report, fd):
    try:
        line = json.dumps(report, ensure_ascii=True, default=repr)
    except BaseException as exc:
        line = json.dumps(
            {"schema": SCHEMA, "status": "internal_error", "internal_error": f"report not serialisable: {exc!r}"},
            ensure_ascii=True,
        )
    _flush_streams()
    if not _write_fd(fd, MARKER + line + "\n"):
        try:
            sys.__stdout__.write(MARKER + line + "\n")
            sys.__stdout__.flush()
        except BaseException:
            pass


def _describe_exception(exc):
    kind = type(exc)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    try:
        text = "".join(traceback.format_exception(kind, exc, exc.__traceback__))
        tail = text.rstrip().splitlines()[-TRACEBACK_LINES:]
    except BaseException:
        tail = []
    try:
        message = str(exc)
    except BaseException:
        message = repr(exc)
    return name, message, tail


def _fd_of(stream, default):
    try:
        return stream.fileno()
    except BaseException:
        return default


# --------------------------------------------------------------------------- helpers


def _read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _version_py_values(text):
    """``__version__`` and ``cuda`` from torch/version.py, read as text (importing it would import torch)."""
    import re

    def value(name):
        pattern = "^" + name + r"\s*(?::[^=\n]*)?=\s*(?:'([^'\n]*)'|\"([^\"\n]*)\"|None\b)"
        m = re.search(pattern, text, re.M)
        if not m:
            return None
        found = m.group(1) if m.group(1) is not None else m.group(2)
        return found  # None for "= None"

    return value("__version__"), value("cuda")


def _drop_own_folder_from_sys_path():
    """``python replay_loader.py`` puts this file's folder first on sys.path; the user's Python would not."""
    try:
        here = os.path.normcase(os.path.dirname(os.path.abspath(__file__)))
        if sys.path and os.path.normcase(os.path.abspath(sys.path[0] or os.curdir)) == here:
            del sys.path[0]
    except BaseException:
        pass


class _Win32:
    """The few kernel32 calls the replay needs, with exact prototypes (64- and 32-bit)."""

    def __init__(self):
        import ctypes
        from ctypes import wintypes

        self.ctypes = ctypes
        k = ctypes.WinDLL("kernel32.dll", use_last_error=True)
        self.kernel32 = k
        k.SetErrorMode.restype = wintypes.UINT
        k.SetErrorMode.argtypes = [wintypes.UINT]
        k.LoadLibraryW.restype = ctypes.c_void_p
        k.LoadLibraryW.argtypes = [ctypes.c_wchar_p]
        self.with_load_library_flags = hasattr(k, "AddDllDirectory")
        if self.with_load_library_flags:
            k.LoadLibraryExW.restype = ctypes.c_void_p
            k.LoadLibraryExW.argtypes = [ctypes.c_wchar_p, ctypes.c_void_p, wintypes.DWORD]
        k.GetModuleFileNameW.restype = wintypes.DWORD
        k.GetModuleFileNameW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, wintypes.DWORD]
        k.GetCurrentProcess.restype = ctypes.c_void_p
        k.GetCurrentProcess.argtypes = []

    def set_error_mode(self, mode):
        return self.kernel32.SetErrorMode(mode)

    def _call(self, fn, *args):
        self.ctypes.set_last_error(0)
        handle = fn(*args)
        return handle, (0 if handle else self.ctypes.get_last_error())

    def load_ex(self, path, flags):
        return self._call(self.kernel32.LoadLibraryExW, path, None, flags)

    def load(self, path):
        return self._call(self.kernel32.LoadLibraryW, path)

    def message(self, code):
        """The system message for a Windows error code, in the machine's UI language (FormatMessageW)."""
        if code is None:
            return None
        try:
            return self.ctypes.FormatError(code).strip()
        except BaseException:
            return None

    def function(self, handle, name):
        """An ``int f(void)`` export of a loaded module (GetProcAddress), or None."""
        ctypes = self.ctypes
        k = self.kernel32
        k.GetProcAddress.restype = ctypes.c_void_p
        k.GetProcAddress.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        address = k.GetProcAddress(handle, name.encode("ascii"))
        return ctypes.CFUNCTYPE(ctypes.c_int)(address) if address else None

    def module_path(self, handle):
        if not handle:
            return None
        buf = self.ctypes.create_unicode_buffer(32768)
        n = self.kernel32.GetModuleFileNameW(handle, buf, len(buf))
        return buf.value[:n] if n else None

    def loaded_modules(self):
        ctypes = self.ctypes
        from ctypes import wintypes

        k = self.kernel32
        enum = getattr(k, "K32EnumProcessModules", None)
        if enum is None:
            enum = ctypes.WinDLL("psapi.dll", use_last_error=True).EnumProcessModules
        enum.restype = wintypes.BOOL
        enum.argtypes = [ctypes.c_void_p, ctypes.c_void_p, wintypes.DWORD, ctypes.POINTER(wintypes.DWORD)]
        process = k.GetCurrentProcess()
        count = 1024
        while True:
            handles = (ctypes.c_void_p * count)()
            needed = wintypes.DWORD(0)
            if not enum(process, handles, ctypes.sizeof(handles), ctypes.byref(needed)):
                raise ctypes.WinError(ctypes.get_last_error())
            n = needed.value // ctypes.sizeof(ctypes.c_void_p)
            if n <= count:
                return [p for p in (self.module_path(h) for h in handles[:n]) if p]
            count = n + 64


# --------------------------------------------------------------------------- the replay


def _python_facts(r, argv):
    r["python_version"] = ".".join(str(n) for n in sys.version_info[:3])
    r["python_build"] = sys.version
    r["executable"] = sys.executable
    import struct

    r["bits"] = struct.calcsize("P") * 8
    r["machine"] = os.environ.get("PROCESSOR_ARCHITEW6432") or os.environ.get("PROCESSOR_ARCHITECTURE")
    r["exec_prefix"] = sys.exec_prefix
    r["base_exec_prefix"] = sys.base_exec_prefix
    r["in_venv"] = sys.exec_prefix != sys.base_exec_prefix
    r["argv"] = list(argv)
    r["encodings"] = {
        "stdout": getattr(sys.stdout, "encoding", None),
        "stderr": getattr(sys.stderr, "encoding", None),
        "filesystem": sys.getfilesystemencoding(),
    }
    try:
        import locale

        r["encodings"]["locale"] = locale.getpreferredencoding(False)
    except BaseException as exc:
        r["notes"].append(f"locale: {exc}")
    try:
        r["cwd"] = os.getcwd()
    except OSError as exc:
        r["notes"].append(f"getcwd: {exc}")


def _find_torch(r):
    """Step 1. Returns the torch package folder, or None (status set)."""
    import importlib.util

    r["torch_preimported"] = "torch" in sys.modules
    r["sys_path"] = list(sys.path)
    spec = importlib.util.find_spec("torch")
    if spec is None:
        r["status"] = "torch_missing"
        return None
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    locations = list(spec.submodule_search_locations or [])
    r["torch_init"] = origin
    if not locations:
        r["status"] = "torch_not_a_package"
        return None
    # torch computes its folders from os.path.dirname(__file__), i.e. spec.origin
    torch_dir = os.path.dirname(origin) if origin else locations[0]
    r["torch_dir"] = torch_dir
    if origin is None:
        r["notes"].append("torch has no __init__.py (a namespace package: an incomplete or removed install)")
    return torch_dir


def _torch_texts(r, torch_dir):
    version_text = _read_text(os.path.join(torch_dir, "version.py"))
    cuda = None
    if version_text is None:
        r["notes"].append("torch\\version.py is missing or unreadable")
    else:
        r["torch_version_text"], cuda = _version_py_values(version_text)
        r["torch_cuda_text"] = cuda
    init_text = _read_text(r["torch_init"]) if r["torch_init"] else None
    variant = {"root_bin_dir": False, "vc_arm64_skip": False, "loader_found": False}
    if init_text is not None:
        variant["root_bin_dir"] = "py_root_bin_path" in init_text
        variant["vc_arm64_skip"] = '!= "ARM64"' in init_text or "!= 'ARM64'" in init_text
        variant["loader_found"] = "LoadLibraryExW" in init_text
    r["torch_init_variant"] = variant
    return cuda, variant


def _dll_paths(r, torch_dir, cuda_version, variant):
    """Step 2: torch's dll_paths, in torch's order."""
    import glob
    import sysconfig

    pfiles_path = os.getenv("ProgramFiles", "C:\\Program Files")  # noqa: SIM112 (as torch)
    th_dll_path = os.path.join(torch_dir, "lib")
    userbase = sysconfig.get_config_var("userbase")
    r["userbase"] = userbase
    candidates = [
        ("torch_lib", th_dll_path),
        ("exec_prefix_library", os.path.join(sys.exec_prefix, "Library", "bin")),
        (
            "base_exec_prefix_library",
            os.path.join(sys.base_exec_prefix, "Library", "bin") if sys.exec_prefix != sys.base_exec_prefix else "",
        ),
        ("userbase_library", os.path.join(userbase, "Library", "bin") if userbase is not None else ""),
    ]
    if userbase is None:
        r["notes"].append("sysconfig userbase is None: torch's os.path.join would raise TypeError here")
    if variant["root_bin_dir"]:
        candidates.append(("exec_prefix_bin", os.path.join(sys.exec_prefix, "bin")))
    dll_paths = [p for _, p in candidates if p and os.path.exists(p)]

    if all(not os.path.exists(os.path.join(p, "nvToolsExt64_1.dll")) for p in dll_paths):
        default_nvtx = os.path.join(pfiles_path, "NVIDIA Corporation", "NvToolsExt")
        nvtoolsext_dll_path = os.path.join(os.getenv("NVTOOLSEXT_PATH", default_nvtx), "bin", "x64")
    else:
        nvtoolsext_dll_path = ""
    if cuda_version and all(not glob.glob(os.path.join(p, "cudart64*.dll")) for p in dll_paths):
        cuda_path_var = "CUDA_PATH_V" + cuda_version.replace(".", "_")
        default_path = os.path.join(pfiles_path, "NVIDIA GPU Computing Toolkit", "CUDA", "v" + cuda_version)
        cuda_path = os.path.join(os.getenv(cuda_path_var, default_path), "bin")
    else:
        cuda_path = ""
    candidates += [("nvtoolsext", nvtoolsext_dll_path), ("cuda", cuda_path)]
    dll_paths.extend(p for p in (nvtoolsext_dll_path, cuda_path) if p and os.path.exists(p))

    r["dll_path_candidates"] = [
        {"role": role, "path": p or None, "exists": bool(p) and os.path.exists(p)} for role, p in candidates
    ]
    r["dll_paths"] = dll_paths
    return th_dll_path, dll_paths


def _vc_check(r, win, variant):
    """Step 4: torch's VC++ check, each DLL on its own."""
    ctypes = win.ctypes
    failed = []
    for name in VC_DLLS:
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            code = getattr(exc, "winerror", None)
            if code is None and isinstance(exc, FileNotFoundError):
                # ctypes (3.8+) turns ERROR_MOD_NOT_FOUND into FileNotFoundError("Could not find module ...")
                # without a winerror; every other code comes as OSError with winerror set.
                code = ERROR_MOD_NOT_FOUND
            r["vc_check"][name] = {
                "winerror": code,
                "message": win.message(code),
                "exception": f"{type(exc).__name__}: {exc}",
            }
            r["vc_loaded_from"][name] = None
            failed.append(name)
        else:
            r["vc_check"][name] = None
            r["vc_loaded_from"][name] = win.module_path(lib._handle)
    checked = list(VC_DLLS)
    if variant["vc_arm64_skip"] and r["machine"] == "ARM64":
        checked.remove("vcruntime140_1.dll")
    r["vc_hint"] = any(n in failed for n in checked)


def _load_all(r, win, th_dll_path, dll_paths, out_fd):
    """Step 5: torch's LoadLibraryExW loop, continued past the first failure."""
    import glob

    stopped = False
    for index, dll in enumerate(glob.glob(os.path.join(th_dll_path, "*.dll"))):
        name = os.path.basename(dll)
        entry = {
            "path": dll,
            "name": name,
            "error": None,
            "message": None,
            "retry_error": None,
            "retry_message": None,
            "loaded": False,
            "stops_torch": False,
            "after_failure": stopped,
            "ms": None,
        }
        r["dlls"].append(entry)
        _step(out_fd, "load", index=index, name=name)
        started = time.perf_counter()
        stage = None
        final = None
        loaded = False
        if win.with_load_library_flags:
            handle, err = win.load_ex(dll, TORCH_LOAD_FLAGS)
            if handle:
                loaded = True
            else:
                entry["error"], entry["message"] = err, win.message(err)
                if err != ERROR_MOD_NOT_FOUND:
                    stage, final = "LoadLibraryExW", err
        if not loaded and stage is None:
            if not r["path_patched"]:
                if "PATH" not in os.environ:
                    stage = "PATH"  # torch: os.environ["PATH"] raises KeyError
                    r["notes"].append("PATH is not set: torch raises KeyError('PATH') when it patches PATH")
                else:
                    os.environ["PATH"] = ";".join(dll_paths + [os.environ["PATH"]])
                    r["path_patched"], r["path_patched_by"] = True, name
            if stage is None:
                handle, err = win.load(dll)
                if handle:
                    loaded = True
                else:
                    entry["retry_error"], entry["retry_message"] = err, win.message(err)
                    stage, final = "LoadLibraryW", err
        entry["ms"] = round((time.perf_counter() - started) * 1000, 1)
        entry["loaded"] = loaded
        if stage is not None:
            entry["stops_torch"] = True
            if not stopped:
                stopped = True
                message = win.message(final) if final is not None else None
                torch_message = None
                if final is not None:
                    torch_message = f'[WinError {final}] {message} Error loading "{dll}" or one of its dependencies.'
                r["first_failure"] = {
                    "path": dll,
                    "name": name,
                    "winerror": final,
                    "message": message,
                    "stage": stage,
                    "torch_message": torch_message,
                }


def _import_torch(r, out_fd):
    """Step 6: the real import, for the user's real error text."""
    imp = r["import"]
    imp["attempted"] = True
    _step(out_fd, "import")
    started = time.perf_counter()
    try:
        torch = __import__("torch")  # like an import statement: importlib's own frames stay out of the traceback
    except BaseException as exc:
        imp["ok"] = False
        imp["error_type"], imp["message"], imp["traceback_tail"] = _describe_exception(exc)
        imp["winerror"] = getattr(exc, "winerror", None)
    else:
        imp["ok"] = True
        version = getattr(torch, "__version__", None)
        imp["version"] = None if version is None else str(version)
        imp["file"] = getattr(torch, "__file__", None)
    imp["elapsed_s"] = round(time.perf_counter() - started, 3)
    r["timings"]["import_s"] = imp["elapsed_s"]


def _import_first(r, win, argv, out_fd):
    """Step 1b: the modules the user's program imports before torch, with their side effects left in place."""
    runtime = ("vcruntime140", "msvcp140", "concrt140", "vcomp140")
    for module in [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--import-first"]:
        entry = {"module": module, "ok": False, "error": None, "winerror": None, "elapsed_s": None,
                 "path_added": [], "runtime_loaded": []}
        r["imported_first"].append(entry)
        _step(out_fd, "import_first", name=module)
        before = os.environ.get("PATH", "").split(";")
        started = time.perf_counter()
        try:
            __import__(module)
        except BaseException as exc:
            entry["error"] = "{}: {}".format(*_describe_exception(exc)[:2])
            entry["winerror"] = getattr(exc, "winerror", None)
        else:
            entry["ok"] = True
        entry["elapsed_s"] = round(time.perf_counter() - started, 3)
        after = os.environ.get("PATH", "").split(";")
        entry["path_added"] = [p for p in after if p and p not in before]
        try:
            entry["runtime_loaded"] = [p for p in win.loaded_modules()
                                       if os.path.basename(p).lower().startswith(runtime)]
        except BaseException as exc:
            r["notes"].append(f"listing loaded modules after importing {module} failed: {exc}")


def _openmp_users(argv):
    """The paths given with ``--openmp-user PATH``."""
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--openmp-user"]


def _parallel(r, win, argv, err_fd, report_fd):
    """Step 7: one parallel operation in torch, then one OpenMP call into every other copy its users load."""
    par = r["parallel"]
    par["attempted"], par["finished"] = True, False
    started = time.perf_counter()
    _emit(r, report_fd)  # if OMP aborts the process below, this report (import done) is the last one
    _step(err_fd, "parallel")
    try:
        torch = sys.modules["torch"]
        par["threads"] = int(torch.get_num_threads())
        ones = torch.ones(64, 64)
        par["sum"] = float((ones @ ones).sum())
        par["ok"] = par["sum"] == 64.0 * 64 * 64
    except BaseException as exc:
        par["ok"] = False
        par["error"] = "{}: {}".format(*_describe_exception(exc)[:2])
    for path in _openmp_users(argv):
        entry = {"path": path, "loaded": False, "error": None, "threads": None}
        par["openmp_users"].append(entry)
        _step(err_fd, "openmp_user", path=path)
        handle, err = win.load_ex(path, TORCH_LOAD_FLAGS) if win.with_load_library_flags else win.load(path)
        if not handle:
            entry["error"] = err
            continue
        entry["loaded"] = True
        try:
            function = win.function(handle, "omp_get_max_threads")
            entry["threads"] = int(function()) if function is not None else None
        except BaseException as exc:
            entry["error"] = "{}: {}".format(*_describe_exception(exc)[:2])
    par["elapsed_s"] = round(time.perf_counter() - started, 3)
    par["finished"] = True


def _run(r, argv, out_fd, report_fd=None):
    _python_facts(r, argv)
    if sys.platform != "win32":
        r["status"] = "not_windows"
        return
    win = _Win32()
    win.set_error_mode(SEM_FAILCRITICALERRORS)  # no message boxes, for the whole run
    r["with_load_library_flags"] = win.with_load_library_flags

    _step(out_fd, "find")
    started = time.perf_counter()
    _drop_own_folder_from_sys_path()
    torch_dir = _find_torch(r)
    r["timings"]["find_s"] = round(time.perf_counter() - started, 3)
    if torch_dir is None:
        return
    _import_first(r, win, argv, out_fd)

    started = time.perf_counter()
    cuda_version, variant = _torch_texts(r, torch_dir)
    _step(out_fd, "dll_paths")
    th_dll_path, dll_paths = _dll_paths(r, torch_dir, cuda_version, variant)

    old_path = os.environ.get("PATH")
    cookies = []
    try:
        for p in dll_paths:
            try:
                cookies.append(os.add_dll_directory(p))
            except (OSError, AttributeError) as exc:
                r["dll_dir_errors"][p] = str(exc)
        _step(out_fd, "vc_check")
        _vc_check(r, win, variant)
        _load_all(r, win, th_dll_path, dll_paths, out_fd)
        try:
            r["loaded_modules"] = win.loaded_modules()
        except BaseException as exc:
            r["notes"].append(f"listing loaded modules failed: {exc}")
    finally:
        # torch keeps its PATH patch and DLL folders; the import below redoes both, from the user's state
        if old_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = old_path
        for cookie in cookies:
            with contextlib.suppress(OSError):
                cookie.close()
        r["timings"]["replay_s"] = round(time.perf_counter() - started, 3)
    r["status"] = "replayed"

    if "--no-import" not in argv:
        _import_torch(r, out_fd)
    _step(out_fd, "loaded")
    _list_loaded(r, win)
    if r["import"]["ok"] and report_fd is not None:
        _parallel(r, win, argv, out_fd, report_fd)
        _list_loaded(r, win)


def _list_loaded(r, win):
    try:
        r["loaded_at_end"] = win.loaded_modules()
    except BaseException as exc:
        r["notes"].append(f"listing loaded modules after the import failed: {exc}")


def main(argv=None):
    """Run the replay and print the report line; returns the exit code (always 0)."""
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    out_fd = _fd_of(sys.__stdout__, 1)
    err_fd = _fd_of(sys.__stderr__, 2)
    report = _new_report()
    try:
        _run(report, argv, err_fd, out_fd)
    except BaseException as exc:
        name, message, tail = _describe_exception(exc)
        report["internal_error"] = {"type": name, "message": message, "traceback_tail": tail}
        report["status"] = "internal_error"
    finally:
        report["elapsed_s"] = round(time.perf_counter() - started, 3)
        _step(err_fd, "done")
        _emit(report, out_fd)
    return 0


if __name__ == "__main__":
    code = main()
    _flush_streams()
    os._exit(code)  # no interpreter shutdown: torch's threads and atexit handlers cannot hang or crash it
