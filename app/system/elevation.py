r"""What runs with administrator rights, and nothing else: Microsoft's own programs, started "runas".

docs/design.md, "Repair transactions", and docs/architecture.md, "Decisions": the app itself stays `asInvoker`, and
no code of ours ever runs elevated (its files lie where the user unzipped it, where any program of that user could
swap them while the permission prompt is up). What is elevated is one of two programs administrators own or Microsoft
signs:
- Microsoft's Visual C++ installer itself (`vc_redist.<arch>.exe /install /quiet /norestart`), the very file that
  was checked after the download, held open (`pinned_file`) so that nobody can change, replace, rename or delete it
  between its check and the moment Windows has started it; the prompt names Microsoft Corporation;
- Windows' registry tool `%SystemRoot%\System32\reg.exe` (`reg_argv`), for the few machine values this app
  writes; the prompt names Microsoft Windows.

How: ShellExecuteExW with the verb "runas" (Windows shows its consent prompt), owned by the wizard's window when
there is one (`owner`, so the prompt comes to the front instead of flashing in the taskbar), SEE_MASK_NOCLOSEPROCESS
for the process handle, SEE_MASK_NOASYNC (the call returns only once the launch is complete) and SEE_MASK_FLAG_NO_UI
(no shell error dialogs: the errors are reported by us), SW_HIDE. The first item of argv must be an absolute path
to an .exe (ShellExecuteEx would otherwise search App Paths and PATH for it).

Stopping. Microsoft's installer is never ended halfway: its bootstrapper hands the work to Windows Installer,
which goes on (or rolls back) whatever happens to the process we started, and the bootstrapper runs copies of itself
that a TerminateProcess would not reach. So a Stop asked for while it runs is said (`on_stop_asked`) and honoured
when the installer has ended; a time-out stops the waiting, not the installer, and says it still runs.
"No" at the prompt is ERROR_CANCELLED (1223): ElevationDeclined.
"""

from __future__ import annotations

import contextlib
import ctypes
import ntpath
import subprocess
import time
from ctypes import wintypes
from typing import Callable, Iterator, Optional

from app.cancel import CancelToken
from app.system.base import ElevationDeclined, StillRunning, StoppedAfterEnd
from app.system.files import FILE_SHARE_READ, open_for_reading

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
SLICE_MS = 50


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


def run_elevated(argv: list[str], timeout: float, cancel: Optional[CancelToken] = None, owner: int = 0,
                 on_stop_asked: Callable[[], None] = lambda: None) -> int:
    """Run `argv` elevated and return its exit code. Raises ElevationDeclined when the user says No at the consent
    prompt; Cancelled when a Stop was asked for before the start, StoppedAfterEnd (a Cancelled, with the program's
    `exit_code`) when it was asked for while it ran, only once it had ended; StillRunning when it has not ended
    within `timeout`; OSError when it cannot start."""
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
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    kernel32.CloseHandle.restype = wintypes.BOOL

    info = SHELLEXECUTEINFOW()
    info.cbSize = ctypes.sizeof(info)
    info.fMask = SEE_MASK_NOCLOSEPROCESS | SEE_MASK_NOASYNC | SEE_MASK_FLAG_NO_UI
    info.hwnd = owner or None
    info.lpVerb = "runas"
    info.lpFile = program
    info.lpParameters = parameters or None
    # started in System32, not in the user's folder it was copied to: an elevated program's working folder is one
    # more place a DLL or a file of somebody else's could be picked up from
    info.lpDirectory = system_folder()
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
        deadline, stop_asked = time.monotonic() + timeout, False
        while True:
            state = kernel32.WaitForSingleObject(process, SLICE_MS)
            if state == WAIT_OBJECT_0:
                break
            if state != WAIT_TIMEOUT:
                error = ctypes.get_last_error()
                raise ctypes.WinError(error, f"could not wait for {program}: {ctypes.FormatError(error)}")
            if cancel is not None and cancel.cancelled and not stop_asked:
                stop_asked = True
                on_stop_asked()
            if time.monotonic() >= deadline:
                raise StillRunning(f"{ntpath.basename(program)} did not finish within {timeout:.0f} s; it is "
                                   "still running")
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(process, ctypes.byref(code)):
            error = ctypes.get_last_error()
            raise ctypes.WinError(error, f"could not read the exit code of {program}: {ctypes.FormatError(error)}")
        if stop_asked:
            raise StoppedAfterEnd(f"{ntpath.basename(program)} ended with {code.value} after Stop was asked for",
                                  int(code.value))
        return int(code.value)
    finally:
        kernel32.CloseHandle(process)


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


# -- the installer, held so that what was checked is what runs ---------------------------------------------------
MSI_BUSY_MUTEX = "Global\\_MSIExecute"  # held by Windows Installer while an installation runs
SYNCHRONIZE = 0x00100000


@contextlib.contextmanager
def pinned_file(path: str) -> Iterator[tuple[str, bytes]]:
    """Open the file at the Windows path `path` for reading, sharing only reading: while it is held, no program
    (of this user or, short of an administrator closing our handle, any other) can write it, replace it, rename or
    delete it, nor rename a folder it lies in. Yields (its final path as Windows resolves it, with no link left
    on the way; its bytes read through this handle). The installer is checked from those bytes and started by that
    path while the handle is held: what was checked is what runs. OSError when the path goes through a link or a
    junction (its final path differs), or the file cannot be opened so (another program has it open for writing)."""
    try:
        kernel32, handle = open_for_reading(path, FILE_SHARE_READ)
    except OSError as exc:
        error = getattr(exc, "winerror", None) or 0
        raise ctypes.WinError(error, f"could not hold {path} for its check: {ctypes.FormatError(error)}") from None
    kernel32.GetFinalPathNameByHandleW.argtypes = [wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD,
                                                   wintypes.DWORD]
    kernel32.GetFinalPathNameByHandleW.restype = wintypes.DWORD
    try:
        buffer = ctypes.create_unicode_buffer(32768)
        if not kernel32.GetFinalPathNameByHandleW(handle, buffer, len(buffer), 0):
            error = ctypes.get_last_error()
            raise ctypes.WinError(error, f"could not read where {path} really is: {ctypes.FormatError(error)}")
        final = buffer.value[4:] if buffer.value.startswith("\\\\?\\") else buffer.value
        if final.startswith("UNC\\"):
            final = "\\" + final[3:]
        if ntpath.normcase(ntpath.normpath(final)) != ntpath.normcase(ntpath.normpath(path)):
            raise OSError(f"{path} is reached through a link or junction ({final}): not run")
        yield final, _read_handle(kernel32, handle)
    finally:
        kernel32.CloseHandle(handle)


def _read_handle(kernel32, handle) -> bytes:
    kernel32.ReadFile.argtypes = [wintypes.HANDLE, ctypes.c_void_p, wintypes.DWORD,
                                  ctypes.POINTER(wintypes.DWORD), ctypes.c_void_p]
    kernel32.ReadFile.restype = wintypes.BOOL
    chunks, block = [], ctypes.create_string_buffer(1 << 20)
    got = wintypes.DWORD()
    while True:
        if not kernel32.ReadFile(handle, block, len(block), ctypes.byref(got), None):
            error = ctypes.get_last_error()
            raise ctypes.WinError(error, f"could not read the installer: {ctypes.FormatError(error)}")
        if not got.value:
            return b"".join(chunks)
        chunks.append(block.raw[:got.value])


def installer_busy() -> bool:
    """Whether Windows Installer is running an installation now (its mutex `Global\\_MSIExecute` exists): then
    Microsoft's installer would answer 1618, so the app waits before it asks for permission."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenMutexW.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.LPCWSTR]
    kernel32.OpenMutexW.restype = wintypes.HANDLE
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    handle = kernel32.OpenMutexW(SYNCHRONIZE, False, MSI_BUSY_MUTEX)
    if handle:
        kernel32.CloseHandle(handle)
        return True
    return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: it exists, we may not open it


# -- Windows' registry tool, for the machine values this app writes -------------------------------------------------
def system_folder() -> str:
    """%SystemRoot%\\System32 as Windows says it is (GetSystemDirectoryW), never from a variable the user sets."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetSystemDirectoryW.argtypes = [wintypes.LPWSTR, wintypes.UINT]
    kernel32.GetSystemDirectoryW.restype = wintypes.UINT
    buffer = ctypes.create_unicode_buffer(32768)
    if not kernel32.GetSystemDirectoryW(buffer, len(buffer)):
        raise ctypes.WinError(ctypes.get_last_error(), "could not find the Windows system folder")
    return buffer.value


REG_MULTI_SZ_SEPARATOR = "|"  # reg.exe's /s: no path nor paging-file entry holds it


def reg_argv(folder: str, key: str, name: str, value) -> list[str]:
    """Windows' reg.exe command line (in `folder`, the system folder) that writes `value` (a RegistryValue; None:
    delete it) as `key\\name` in the 64-bit view. Started directly (never through cmd.exe), so nothing in the
    data is expanded: `%SystemRoot%` stays as written; the arguments are quoted as the C runtime parses them
    (installer_command). ValueError for what reg.exe cannot write as given."""
    spelled = key.strip().rstrip("\\")
    if spelled.upper().startswith("HKEY_LOCAL_MACHINE\\"):
        spelled = "HKLM" + spelled[len("HKEY_LOCAL_MACHINE"):]
    if not spelled.upper().startswith("HKLM\\"):
        raise ValueError(f"only machine values (HKLM) are written elevated: {key}")
    reg = ntpath.join(folder, "reg.exe")
    if value is None:
        return [reg, "delete", spelled, "/v", name, "/f", "/reg:64"]
    extra: list[str] = []
    if value.type in ("REG_DWORD", "REG_QWORD"):
        data = str(int(value.data))
    elif value.type in ("REG_SZ", "REG_EXPAND_SZ"):
        data = str(value.data)
    elif value.type == "REG_MULTI_SZ":
        items = list(value.data)
        if any(REG_MULTI_SZ_SEPARATOR in item for item in items):
            raise ValueError(f"{name}: an entry holds {REG_MULTI_SZ_SEPARATOR!r}, reg.exe's separator here")
        data, extra = REG_MULTI_SZ_SEPARATOR.join(items), ["/s", REG_MULTI_SZ_SEPARATOR]
    else:
        raise ValueError(f"{value.type} is not written by this app")
    return [reg, "add", spelled, "/v", name, "/t", value.type, *extra, "/d", data, "/f", "/reg:64"]
