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

The elevated side's own Windows calls live here too (the helper, app/repair/elevated.py, calls them):
`contain_children` puts the helper into a job object that ends every process it starts when the helper ends
(TerminateProcess from the unelevated side, on cancel or timeout, would otherwise leave the installer running),
and `admin_only_folder` makes the folder an installer is copied into, checked in and run from.
"""

from __future__ import annotations

import contextlib
import ctypes
import ntpath
import secrets
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


# -- the elevated side -------------------------------------------------------------------------------------------
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
ERROR_ALREADY_EXISTS = 183
SDDL_REVISION_1 = 1
# protected (P: nothing inherited from the parent), SYSTEM and the Administrators group only, for the folder and
# everything in it (OICI): no user, not even the one whose helper this is, can write, rename or delete in it
ADMIN_ONLY_SDDL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
# the same, and the Users group may read (the helper's results and the installer's log, copied out by the user's side)
RESULTS_SDDL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FRFX;;;BU)"
FOLDERID_PROGRAM_FILES = "{905E63B6-C1BF-494E-B29C-65B732D3D21A}"
_children_job = None  # kept for the helper's lifetime: closing the last handle ends the processes in the job


class _IO_COUNTERS(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in ("ReadOperationCount", "WriteOperationCount",
                                                         "OtherOperationCount", "ReadTransferCount",
                                                         "WriteTransferCount", "OtherTransferCount")]


class _JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD), ("SchedulingClass", wintypes.DWORD)]


class _JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", _JOBOBJECT_BASIC_LIMIT_INFORMATION), ("IoInfo", _IO_COUNTERS),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


class _SECURITY_ATTRIBUTES(ctypes.Structure):
    _fields_ = [("nLength", wintypes.DWORD), ("lpSecurityDescriptor", ctypes.c_void_p),
                ("bInheritHandle", wintypes.BOOL)]


def contain_children() -> None:
    """Put this process into a job object that is closed, and its processes ended, when this process ends (also
    when it is killed): the installer the helper starts cannot outlive the helper. Processes started later inherit
    the job, so there is no moment in which a child is outside it. Nested jobs exist since Windows 8."""
    global _children_job
    if _children_job is not None:
        return
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
    kernel32.SetInformationJobObject.restype = wintypes.BOOL
    kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    kernel32.AssignProcessToJobObject.restype = wintypes.BOOL
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        raise ctypes.WinError(ctypes.get_last_error(), "could not create a job object for the installer")
    limits = _JOBOBJECT_EXTENDED_LIMIT_INFORMATION()
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    if not (kernel32.SetInformationJobObject(job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS, ctypes.byref(limits),
                                             ctypes.sizeof(limits))
            and kernel32.AssignProcessToJobObject(job, kernel32.GetCurrentProcess())):
        error = ctypes.get_last_error()
        kernel32.CloseHandle(job)
        raise ctypes.WinError(error, f"could not hold the installer in a job object: {ctypes.FormatError(error)}")
    _children_job = job


def admin_only_folder() -> str:
    """A new, empty folder that only SYSTEM and the Administrators group can write (nor rename, nor delete), as
    a Windows path: ``%SystemRoot%\\SystemTemp\\TorchDllDoctor-<random>`` where SystemTemp exists (Windows 11
    and updated Windows 10: the folder Windows keeps for its own elevated temporary files; only SYSTEM and
    Administrators may even list it), else ``%ProgramFiles%\\TorchDllDoctor\\installers\\<random>`` (only
    administrators may create anything in Program Files). The parent matters as much as the folder: a user
    allowed to delete children of the parent could move our folder away and put one of theirs in its place.
    Both folders are looked up through Windows (GetSystemWindowsDirectoryW, SHGetKnownFolderPath), never through
    environment variables, which the user can set. The folder is created by us with a protected ACL
    (ADMIN_ONLY_SDDL) and a random name, and CreateDirectoryW fails on a name that exists, so nobody can have
    prepared it. A SystemTemp that exists but cannot be written gives way to the Program Files one."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetSystemWindowsDirectoryW.argtypes = [wintypes.LPWSTR, wintypes.UINT]
    kernel32.GetSystemWindowsDirectoryW.restype = wintypes.UINT
    kernel32.GetFileAttributesW.argtypes = [wintypes.LPCWSTR]
    kernel32.GetFileAttributesW.restype = wintypes.DWORD

    buffer = ctypes.create_unicode_buffer(32768)
    if not kernel32.GetSystemWindowsDirectoryW(buffer, len(buffer)):
        raise ctypes.WinError(ctypes.get_last_error(), "could not find the Windows folder")
    system_temp = ntpath.join(buffer.value, "SystemTemp")
    attributes = kernel32.GetFileAttributesW(system_temp)
    directory, reparse = 0x10, 0x400
    program_files = _known_folder(FOLDERID_PROGRAM_FILES)
    places = [([program_files, ntpath.join(program_files, "TorchDllDoctor"),
                ntpath.join(program_files, "TorchDllDoctor", "installers")], "")]
    if attributes != 0xFFFFFFFF and attributes & directory and not attributes & reparse:
        places.insert(0, ([system_temp], "TorchDllDoctor-"))  # when it cannot be written, the other one
    failures = []
    for parents, prefix in places:
        try:
            return _new_admin_folder(parents, prefix)
        except OSError as exc:
            failures.append(f"{parents[-1]}: {exc}")
    raise OSError("no folder only administrators can write could be made: " + "; ".join(failures))


def _new_admin_folder(parents: list[str], prefix: str) -> str:
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    advapi32 = ctypes.WinDLL("advapi32", use_last_error=True)
    kernel32.CreateDirectoryW.argtypes = [wintypes.LPCWSTR, ctypes.c_void_p]
    kernel32.CreateDirectoryW.restype = wintypes.BOOL
    kernel32.LocalFree.argtypes = [ctypes.c_void_p]
    advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW.argtypes = [
        wintypes.LPCWSTR, wintypes.DWORD, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW.restype = wintypes.BOOL
    descriptor = ctypes.c_void_p()
    if not advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW(ADMIN_ONLY_SDDL, SDDL_REVISION_1,
                                                                         ctypes.byref(descriptor), None):
        raise ctypes.WinError(ctypes.get_last_error(), "could not build the folder's access list")
    attributes_in = _SECURITY_ATTRIBUTES(ctypes.sizeof(_SECURITY_ATTRIBUTES), descriptor, False)
    try:
        for parent in parents[1:]:  # ours, under Program Files: made admin-only too when we are the first
            if not kernel32.CreateDirectoryW(parent, ctypes.byref(attributes_in)):
                error = ctypes.get_last_error()
                if error != ERROR_ALREADY_EXISTS:
                    raise ctypes.WinError(error, f"could not create {parent}: {ctypes.FormatError(error)}")
        for _ in range(8):
            folder = ntpath.join(parents[-1], prefix + secrets.token_hex(8))
            if kernel32.CreateDirectoryW(folder, ctypes.byref(attributes_in)):
                return folder
            error = ctypes.get_last_error()
            if error != ERROR_ALREADY_EXISTS:
                raise ctypes.WinError(error, f"could not create {folder}: {ctypes.FormatError(error)}")
        raise OSError(f"could not create a new folder in {parents[-1]}")
    finally:
        kernel32.LocalFree(descriptor)


def admin_records_folder() -> str:
    """``%ProgramFiles%\\TorchDllDoctor\\records``: where the elevated helper keeps its own record of each machine
    value it replaced, so that an undo restores only what the helper itself saw there (the user's journal can be
    changed by any program of the user). Admin-only (ADMIN_ONLY_SDDL)."""
    return _protected_folders(["TorchDllDoctor", "records"], ADMIN_ONLY_SDDL)


def results_folder_path(job_sha256: str) -> str:
    """Where the helper of the job with that SHA-256 writes its results and the installer's log:
    ``%ProgramFiles%\\TorchDllDoctor\\results\\<first 32 hex digits>``, which only administrators can write and
    users can read (the unelevated side copies out what it needs, and never lets the helper write in its folders)."""
    return ntpath.join(_known_folder(FOLDERID_PROGRAM_FILES), "TorchDllDoctor", "results", job_sha256[:32])


def admin_results_folder(job_sha256: str) -> str:
    """results_folder_path, created (by the elevated helper) when it is not there: admins write, users read."""
    return _protected_folders(["TorchDllDoctor", "results", job_sha256[:32]], RESULTS_SDDL, readable_from=1)


def _protected_folders(parts: list[str], sddl: str, readable_from: Optional[int] = None) -> str:
    """%ProgramFiles%\\<parts...>, each created with its access list when missing (the first parts admin-only,
    those from `readable_from` on with `sddl`), and each a plain folder (a link is never used)."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    advapi32 = ctypes.WinDLL("advapi32", use_last_error=True)
    kernel32.CreateDirectoryW.argtypes = [wintypes.LPCWSTR, ctypes.c_void_p]
    kernel32.CreateDirectoryW.restype = wintypes.BOOL
    kernel32.GetFileAttributesW.argtypes = [wintypes.LPCWSTR]
    kernel32.GetFileAttributesW.restype = wintypes.DWORD
    kernel32.LocalFree.argtypes = [ctypes.c_void_p]
    advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW.argtypes = [
        wintypes.LPCWSTR, wintypes.DWORD, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW.restype = wintypes.BOOL
    descriptors = []
    try:
        for text in (ADMIN_ONLY_SDDL, sddl):
            descriptor = ctypes.c_void_p()
            if not advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW(text, SDDL_REVISION_1,
                                                                                 ctypes.byref(descriptor), None):
                raise ctypes.WinError(ctypes.get_last_error(), "could not build the folder's access list")
            descriptors.append(descriptor)
        folder = _known_folder(FOLDERID_PROGRAM_FILES)
        for number, part in enumerate(parts):
            folder = ntpath.join(folder, part)
            chosen = descriptors[1] if readable_from is not None and number >= readable_from else descriptors[0]
            if number == len(parts) - 1:
                chosen = descriptors[1]
            attributes_in = _SECURITY_ATTRIBUTES(ctypes.sizeof(_SECURITY_ATTRIBUTES), chosen, False)
            if not kernel32.CreateDirectoryW(folder, ctypes.byref(attributes_in)):
                error = ctypes.get_last_error()
                if error != ERROR_ALREADY_EXISTS:
                    raise ctypes.WinError(error, f"could not create {folder}: {ctypes.FormatError(error)}")
            attributes = kernel32.GetFileAttributesW(folder)
            if attributes == 0xFFFFFFFF or not attributes & 0x10 or attributes & 0x400:
                raise OSError(f"{folder} is not a plain folder (a link?): not used")
        return folder
    finally:
        for descriptor in descriptors:
            kernel32.LocalFree(descriptor)


def _known_folder(folder_id: str) -> str:
    class GUID(ctypes.Structure):
        _fields_ = [("Data1", wintypes.DWORD), ("Data2", wintypes.WORD), ("Data3", wintypes.WORD),
                    ("Data4", ctypes.c_ubyte * 8)]

    ole32 = ctypes.WinDLL("ole32")
    shell32 = ctypes.WinDLL("shell32")
    guid = GUID()
    ole32.CLSIDFromString.argtypes = [wintypes.LPCWSTR, ctypes.POINTER(GUID)]
    if ole32.CLSIDFromString(folder_id, ctypes.byref(guid)) != 0:
        raise OSError(f"not a folder id: {folder_id}")
    path = ctypes.c_wchar_p()
    shell32.SHGetKnownFolderPath.argtypes = [ctypes.POINTER(GUID), wintypes.DWORD, wintypes.HANDLE,
                                             ctypes.POINTER(ctypes.c_wchar_p)]
    shell32.SHGetKnownFolderPath.restype = ctypes.c_long
    result = shell32.SHGetKnownFolderPath(ctypes.byref(guid), 0, None, ctypes.byref(path))
    try:
        if result != 0 or not path.value:
            raise OSError(f"Windows did not say where the folder {folder_id} is (0x{result & 0xFFFFFFFF:08X})")
        return path.value
    finally:
        ole32.CoTaskMemFree.argtypes = [ctypes.c_void_p]
        ole32.CoTaskMemFree(ctypes.cast(path, ctypes.c_void_p))
