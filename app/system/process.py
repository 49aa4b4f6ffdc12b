"""Run a program and wait for it: bounded in time, cancellable, and never leaving a child behind.

A venv's `Scripts\\python.exe` is a launcher that starts the real interpreter as its own child, and that child
keeps torch's DLLs loaded. Stopping only the launcher would leave it running (and a repair started right after
would find the DLLs in use), so the whole process tree is ended: on Windows through a job object, elsewhere
through a process group.

On Windows the child starts suspended and runs only once it is in the job, so nothing it starts can escape it, and
the job is made to end with this app (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`): should the app itself be killed (Task
Manager, a crash, a power button held), Windows ends pip and everything it started, so a repair's pip never goes on
beside the undo that the next start offers.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

from app.cancel import Cancelled, CancelToken

POLL_S = 0.05


def own_folders() -> list[str]:
    """Folders this app puts on PATH for its own use: the frozen app's bundle folder, and those of PySide6 and shiboken6
    (PySide6 prepends them when it is imported, and they hold Qt's copies of msvcp140.dll and vcruntime140_1.dll)."""
    # the bundle's own folder only: a one-file build runs from wherever the user put it (Desktop, Downloads,
    # D:\), and that folder and what lies under it are the user's, not ours
    folders = [getattr(sys, "_MEIPASS", None)]
    for package in ("PySide6", "shiboken6"):
        try:
            spec = importlib.util.find_spec(package)  # where it is, without importing it
        except (ImportError, ValueError):
            spec = None
        folders.extend((spec.submodule_search_locations or []) if spec is not None else [])
    return [os.path.normcase(os.path.abspath(folder)) for folder in folders if folder]


def users_environment(environ: Optional[dict[str, str]] = None) -> dict[str, str]:
    """This process's environment as the user's own programs would get it: PATH without our own folders. Used for
    every program we start and for the PATH the DLL search is modelled with; otherwise the user's python.exe
    would find Qt's runtime DLLs through our PATH, and a missing VC++ runtime would go unseen."""
    env = dict(os.environ if environ is None else environ)
    own = own_folders()

    def ours(entry: str) -> bool:
        entry = os.path.normcase(os.path.abspath(entry.strip().strip('"'))) if entry.strip() else ""
        return bool(entry) and any(entry == folder or entry.startswith(folder.rstrip(os.sep) + os.sep)
                                   for folder in own)

    for key in [k for k in env if k.upper() == "PATH"]:
        env[key] = os.pathsep.join(e for e in env[key].split(os.pathsep) if e and not ours(e))
    return env


def run_process(argv: list[str], timeout: float, *, env: Optional[dict[str, str]] = None, cwd: Optional[str] = None,
                cancel: Optional[CancelToken] = None, creationflags: int = 0,
                on_output: Optional[Callable[[bytes], None]] = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr). Raises TimeoutError or Cancelled after the whole tree has ended.
    `on_output` receives each line of either stream as it comes (pip's progress, shown to the user)."""
    windows = os.name == "nt"
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd, creationflags=creationflags | (CREATE_SUSPENDED if windows else 0),
                            start_new_session=not windows)
    job = None
    if windows:
        try:
            job = _WindowsJob(proc.pid)
        except BaseException:
            _end_tree(proc, None)  # never left suspended
            raise
    deadline = time.monotonic() + timeout
    readers = [_LineReader(stream, on_output) for stream in (proc.stdout, proc.stderr)] if on_output else []
    try:
        while True:
            try:
                if readers:
                    proc.wait(timeout=POLL_S)
                    for reader in readers:
                        reader.join()
                    return proc.returncode, readers[0].data, readers[1].data
                out, err = proc.communicate(timeout=POLL_S)
                return proc.returncode, out, err
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.cancelled:
                    _end_tree(proc, job)
                    raise Cancelled() from None
                if time.monotonic() >= deadline:
                    _end_tree(proc, job)
                    raise TimeoutError(f"{os.path.basename(argv[0])} did not finish within {timeout:.0f} s") from None
    finally:
        if job is not None:
            job.close()


class _LineReader(threading.Thread):
    def __init__(self, stream, on_line: Callable[[bytes], None]) -> None:
        super().__init__(daemon=True)
        self.stream, self.on_line, self.chunks = stream, on_line, []
        self.start()

    def run(self) -> None:
        for line in iter(self.stream.readline, b""):
            self.chunks.append(line)
            self.on_line(line)
        self.stream.close()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


def _end_tree(proc: subprocess.Popen, job: Optional[_WindowsJob]) -> None:
    if job is not None:
        job.terminate()
    elif os.name != "nt":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()  # the launcher itself, should the job not hold it
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=10)


class _WindowsJob:
    """A job object holding the child from its first instruction: the child was started suspended, is put in the job,
    and only then resumed, so that its own children (a venv launcher's real python.exe, pip's) are in the job too.
    The job ends them all with TerminateJobObject (Stop, the time limit) and, through KILL_ON_JOB_CLOSE, when its
    last handle closes: at the end of the run, or with this process if it is killed. Should Windows refuse the job
    (`assigned` false), the child still runs and only it is ended. OSError when the child cannot be opened or
    resumed: the caller ends it (a suspended process can be terminated)."""

    def __init__(self, pid: int) -> None:
        from ctypes import wintypes

        self._kernel32 = kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        ntdll = ctypes.WinDLL("ntdll")
        kernel32.CreateJobObjectW.restype = wintypes.HANDLE
        kernel32.CreateJobObjectW.argtypes = [wintypes.LPVOID, wintypes.LPCWSTR]
        kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, wintypes.LPVOID, wintypes.DWORD]
        kernel32.OpenProcess.restype = wintypes.HANDLE
        kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
        kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
        kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
        kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
        ntdll.NtResumeProcess.argtypes = [wintypes.HANDLE]
        ntdll.NtResumeProcess.restype = ctypes.c_long  # NTSTATUS
        self._job = kernel32.CreateJobObjectW(None, None)
        if self._job:
            limits = _ExtendedLimits()
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
            # refused (a job that cannot have the limit): still the job that Stop and the time limit end
            kernel32.SetInformationJobObject(self._job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(limits),
                                             ctypes.sizeof(limits))
        handle = kernel32.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE | PROCESS_SUSPEND_RESUME, False, pid)
        if not handle:
            self.close()
            raise ctypes.WinError(ctypes.get_last_error())
        try:
            self.assigned = bool(self._job and kernel32.AssignProcessToJobObject(self._job, handle))
            status = ntdll.NtResumeProcess(handle)
        finally:
            kernel32.CloseHandle(handle)
        if status != 0:
            self.close()
            raise OSError(f"the program could not be started (NtResumeProcess: 0x{status & 0xFFFFFFFF:08X})")

    def terminate(self) -> bool:
        return self.assigned and bool(self._kernel32.TerminateJobObject(self._job, 1))

    def close(self) -> None:
        """The job's last handle: Windows ends whatever still runs in it (nothing, when the child has ended)."""
        if self._job:
            self._kernel32.CloseHandle(self._job)
            self._job = None


CREATE_SUSPENDED = 0x00000004
PROCESS_TERMINATE, PROCESS_SET_QUOTA, PROCESS_SUSPEND_RESUME = 0x0001, 0x0100, 0x0800
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9  # JOBOBJECTINFOCLASS
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000


class _BasicLimits(ctypes.Structure):  # JOBOBJECT_BASIC_LIMIT_INFORMATION (winnt.h); DWORD is 32 bits
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32)]


class _IoCounters(ctypes.Structure):  # IO_COUNTERS
    _fields_ = [(name, ctypes.c_uint64) for name in ("ReadOperationCount", "WriteOperationCount",
                                                     "OtherOperationCount", "ReadTransferCount",
                                                     "WriteTransferCount", "OtherTransferCount")]


class _ExtendedLimits(ctypes.Structure):  # JOBOBJECT_EXTENDED_LIMIT_INFORMATION: 144 bytes on x64
    _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]
