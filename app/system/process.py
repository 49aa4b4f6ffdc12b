"""Run a program and wait for it: bounded in time, cancellable, and never leaving a child behind.

A venv's `Scripts\\python.exe` is a launcher that starts the real interpreter as its own child, and that child
keeps torch's DLLs loaded. Stopping only the launcher would leave it running (and a repair started right after
would find the DLLs in use), so the whole process tree is ended: on Windows through a job object, elsewhere
through a process group.
"""

from __future__ import annotations

import contextlib
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
                            cwd=cwd, creationflags=creationflags, start_new_session=not windows)
    job = _WindowsJob(proc.pid) if windows else None
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
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()  # the launcher itself, should the job not hold it
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=10)


class _WindowsJob:
    """A job object holding the child, so that its own children (a venv launcher's real python.exe) end with it."""

    def __init__(self, pid: int) -> None:
        import ctypes
        from ctypes import wintypes

        self._kernel32 = kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        kernel32.CreateJobObjectW.restype = wintypes.HANDLE
        kernel32.OpenProcess.restype = wintypes.HANDLE
        kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
        kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
        kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
        self._job = kernel32.CreateJobObjectW(None, None)
        process_set_quota, process_terminate = 0x0100, 0x0001
        handle = kernel32.OpenProcess(process_set_quota | process_terminate, False, pid)
        self.assigned = bool(self._job and handle and kernel32.AssignProcessToJobObject(self._job, handle))
        if handle:
            kernel32.CloseHandle(handle)

    def terminate(self) -> bool:
        return self.assigned and bool(self._kernel32.TerminateJobObject(self._job, 1))

    def close(self) -> None:
        if self._job:
            self._kernel32.CloseHandle(self._job)
            self._job = None
