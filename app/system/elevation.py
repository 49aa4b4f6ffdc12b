"""The one elevated step: start an installer (vc_redist) with administrator rights and wait for its exit code.

DESIGN.md, "Repair transactions": only the installer step runs elevated, in its own process; the app itself stays
`asInvoker`. So this module never elevates the app, a shell or a script host: the caller passes the installer's
argv, whose first item must be an absolute path to an .exe (ShellExecuteEx would otherwise search App Paths and
PATH for it).

How: ShellExecuteExW with the verb "runas" (Windows shows its consent prompt), SEE_MASK_NOCLOSEPROCESS for the
process handle, SEE_MASK_NOASYNC (the call returns only once the launch is complete) and SEE_MASK_FLAG_NO_UI (no
shell error dialogs: the errors are reported by us), SW_HIDE. The wait is WaitForSingleObject in short slices so
that a CancelToken is honoured: on cancel or timeout the installer is ended with TerminateProcess.

Limits: ShellExecuteExW blocks while the consent prompt is shown, so a cancel takes effect only after the user
answers it. "No" at the prompt is ERROR_CANCELLED (1223): ElevationDeclined.
"""

from __future__ import annotations

import contextlib
import ctypes
import ntpath
import subprocess
import time
from ctypes import wintypes
from typing import Iterator, Optional

from app.cancel import Cancelled, CancelToken
from app.system.base import ElevationDeclined

SEE_MASK_NOCLOSEPROCESS = 0x00000040
SEE_MASK_NOASYNC = 0x00000100
SEE_MASK_FLAG_NO_UI = 0x00000400
SW_HIDE = 0
ERROR_CANCELLED = 1223
WAIT_OBJECT_0 = 0x00000000
WAIT_TIMEOUT = 0x00000102
WAIT_FAILED = 0xFFFFFFFF
COINIT_APARTMENTTHREADED = 0x2
COINIT_DISABLE_OLE1DDE = 0x4
TERMINATED_EXIT_CODE = 1602  # what the installer is ended with: ERROR_INSTALL_USEREXIT, "user cancelled"
SLICE_MS = 50
END_WAIT_MS = 10_000  # how long to wait for a terminated installer to be gone


class SHELLEXECUTEINFOW(ctypes.Structure):
    _fields_ = [("cbSize", wintypes.DWORD), ("fMask", wintypes.ULONG), ("hwnd", wintypes.HWND),
                ("lpVerb", wintypes.LPCWSTR), ("lpFile", wintypes.LPCWSTR), ("lpParameters", wintypes.LPCWSTR),
                ("lpDirectory", wintypes.LPCWSTR), ("nShow", ctypes.c_int), ("hInstApp", wintypes.HINSTANCE),
                ("lpIDList", ctypes.c_void_p), ("lpClass", wintypes.LPCWSTR), ("hkeyClass", wintypes.HKEY),
                ("dwHotKey", wintypes.DWORD), ("hIconOrMonitor", wintypes.HANDLE), ("hProcess", wintypes.HANDLE)]


def installer_command(argv: list[str]) -> tuple[str, str]:
    """(the program, its parameters quoted as the C runtime parses them). ValueError unless argv[0] is an
    absolute path to an .exe and no argument holds a NUL."""
    if not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
        raise ValueError(f"not an installer command line: {argv!r:.200}")
    program = argv[0]
    if not ntpath.isabs(program) or program.startswith("\\\\?\\") or not program.lower().endswith(".exe"):
        raise ValueError(f"only an installer given by its absolute path (…\\x.exe) is run elevated: {program!r}")
    return program, subprocess.list2cmdline(argv[1:])


def run_elevated(argv: list[str], timeout: float, cancel: Optional[CancelToken] = None) -> int:
    """Run the installer `argv` elevated and return its exit code. Raises ElevationDeclined when the user says No
    at the consent prompt, Cancelled / TimeoutError after ending the installer, OSError when it cannot start (or
    cannot be ended)."""
    program, parameters = installer_command(argv)
    if cancel is not None:
        cancel.check()
    shell32 = ctypes.WinDLL("shell32", use_last_error=True)
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    shell32.ShellExecuteExW.argtypes = [ctypes.POINTER(SHELLEXECUTEINFOW)]
    shell32.ShellExecuteExW.restype = wintypes.BOOL
    kernel32.WaitForSingleObject.argtypes = [wintypes.HANDLE, wintypes.DWORD]
    kernel32.WaitForSingleObject.restype = wintypes.DWORD
    kernel32.GetExitCodeProcess.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
    kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    kernel32.TerminateProcess.argtypes = [wintypes.HANDLE, wintypes.UINT]
    kernel32.TerminateProcess.restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    kernel32.CloseHandle.restype = wintypes.BOOL

    info = SHELLEXECUTEINFOW()
    info.cbSize = ctypes.sizeof(info)
    info.fMask = SEE_MASK_NOCLOSEPROCESS | SEE_MASK_NOASYNC | SEE_MASK_FLAG_NO_UI
    info.lpVerb = "runas"
    info.lpFile = program
    info.lpParameters = parameters or None
    info.lpDirectory = ntpath.dirname(program)
    info.nShow = SW_HIDE
    with _com_for_shell():
        ok = shell32.ShellExecuteExW(ctypes.byref(info))
        error = ctypes.get_last_error()
    if not ok:
        if error == ERROR_CANCELLED:
            raise ElevationDeclined(f"administrator rights were not given to {ntpath.basename(program)}")
        raise ctypes.WinError(error, f"could not start {program} elevated: {ctypes.FormatError(error)}")
    process = info.hProcess
    if not process:
        raise OSError(f"{program} was started elevated, but Windows gave no handle to wait for it")
    try:
        deadline = time.monotonic() + timeout
        while True:
            state = kernel32.WaitForSingleObject(process, SLICE_MS)
            if state == WAIT_OBJECT_0:
                break
            if state != WAIT_TIMEOUT:
                error = ctypes.get_last_error()
                raise ctypes.WinError(error, f"could not wait for {program}: {ctypes.FormatError(error)}")
            if cancel is not None and cancel.cancelled:
                _end(kernel32, process, program)
                raise Cancelled()
            if time.monotonic() >= deadline:
                _end(kernel32, process, program)
                raise TimeoutError(f"{ntpath.basename(program)} did not finish within {timeout:.0f} s")
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(process, ctypes.byref(code)):
            error = ctypes.get_last_error()
            raise ctypes.WinError(error, f"could not read the exit code of {program}: {ctypes.FormatError(error)}")
        return int(code.value)
    finally:
        kernel32.CloseHandle(process)


def _end(kernel32, process, program: str) -> None:
    """TerminateProcess, then wait until the installer is gone; OSError when it cannot be ended (it runs on)."""
    if not kernel32.TerminateProcess(process, TERMINATED_EXIT_CODE):
        error = ctypes.get_last_error()
        raise ctypes.WinError(error, f"could not stop {program}; it is still running: {ctypes.FormatError(error)}")
    if kernel32.WaitForSingleObject(process, END_WAIT_MS) != WAIT_OBJECT_0:
        raise OSError(f"{program} was told to stop but is still running after {END_WAIT_MS // 1000} s")


@contextlib.contextmanager
def _com_for_shell() -> Iterator[None]:
    """ShellExecuteEx may hand the launch to shell extensions, which need COM on the calling thread (a worker
    thread has none): initialise it apartment-threaded for the call, unless the thread already chose a model."""
    ole32 = ctypes.WinDLL("ole32")
    ole32.CoInitializeEx.argtypes = [ctypes.c_void_p, wintypes.DWORD]
    ole32.CoInitializeEx.restype = ctypes.c_long
    result = ole32.CoInitializeEx(None, COINIT_APARTMENTTHREADED | COINIT_DISABLE_OLE1DDE)
    try:
        yield
    finally:
        if result >= 0:  # S_OK or S_FALSE: ours to undo; RPC_E_CHANGED_MODE (negative): the thread's own COM
            ole32.CoUninitialize()
