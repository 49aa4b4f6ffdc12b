"""LiveWindows: the machine we run on, read through winreg, ctypes and subprocess (Windows only).

Registry keys are read through the 64-bit view; the 32-bit view is reached by its WOW6432Node path,
the same spelling OfflineImage's registry.json uses. Values whose data does not match their type are
noted in `problems` and skipped.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile
import threading
import time
from ctypes import wintypes
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.system.base import (
    HIVES,
    NAME_MAX,
    USER_ENVIRONMENT_KEY,
    DiskSpace,
    MemoryStatus,
    RegistryValue,
    RunResult,
    System,
    check_registry_value,
    check_variable,
    same_value,
    user_key,
    variable_value,
)
from app.system.confine import is_whole_windows_path
from app.system.process import run_process, users_environment

USER_ENVIRONMENT = USER_ENVIRONMENT_KEY
SYSTEM_ENVIRONMENT = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
REG_TIMEOUT_S = 300.0  # reg.exe writes at once (the wait starts once the permission prompt is answered)
ARCHITECTURES = {9: "AMD64", 0: "x86", 12: "ARM64", 5: "ARM", 6: "IA64"}
# IMAGE_FILE_MACHINE_* values (IsWow64Process2) as Windows names the architecture
IMAGE_FILE_MACHINES = {0x8664: "AMD64", 0x14C: "x86", 0xAA64: "ARM64", 0x1C4: "ARM", 0x200: "IA64"}
DRIVE_FIXED = 3
CREATE_NO_WINDOW = 0x08000000
HWND_BROADCAST = 0xFFFF
WM_SETTINGCHANGE = 0x001A
SMTO_ABORTIFHUNG = 0x0002
BROADCAST_TIMEOUT_MS = 5000  # per window
BROADCAST_WAIT_S = 10.0  # in all: then the broadcast goes on without us


class _OSVERSIONINFOEXW(ctypes.Structure):
    _fields_ = [("dwOSVersionInfoSize", wintypes.DWORD), ("dwMajorVersion", wintypes.DWORD),
                ("dwMinorVersion", wintypes.DWORD), ("dwBuildNumber", wintypes.DWORD),
                ("dwPlatformId", wintypes.DWORD), ("szCSDVersion", wintypes.WCHAR * 128),
                ("wServicePackMajor", wintypes.WORD), ("wServicePackMinor", wintypes.WORD),
                ("wSuiteMask", wintypes.WORD), ("wProductType", wintypes.BYTE), ("wReserved", wintypes.BYTE)]


class _SYSTEM_INFO(ctypes.Structure):
    _fields_ = [("wProcessorArchitecture", wintypes.WORD), ("wReserved", wintypes.WORD),
                ("dwPageSize", wintypes.DWORD), ("lpMinimumApplicationAddress", ctypes.c_void_p),
                ("lpMaximumApplicationAddress", ctypes.c_void_p), ("dwActiveProcessorMask", ctypes.c_size_t),
                ("dwNumberOfProcessors", wintypes.DWORD), ("dwProcessorType", wintypes.DWORD),
                ("dwAllocationGranularity", wintypes.DWORD), ("wProcessorLevel", wintypes.WORD),
                ("wProcessorRevision", wintypes.WORD)]


class _MEMORYSTATUSEX(ctypes.Structure):
    _fields_ = [("dwLength", wintypes.DWORD), ("dwMemoryLoad", wintypes.DWORD),
                ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]


FILETIME_EPOCH_S = 11644473600  # seconds from 1601-01-01 (FILETIME's start) to 1970-01-01


class LiveWindows(System):
    def __init__(self) -> None:
        if os.name != "nt":
            raise OSError("LiveWindows reads the Windows machine it runs on; this is not Windows")
        import winreg

        self._winreg = winreg
        self._kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        self.problems: list[str] = []
        self._types = {getattr(winreg, name): name for name in
                       ("REG_SZ", "REG_EXPAND_SZ", "REG_MULTI_SZ", "REG_DWORD", "REG_QWORD", "REG_BINARY")}

    # -- files --------------------------------------------------------------------------------------------
    def host_path(self, windows_path: str) -> Optional[Path]:
        """The path itself; None for a relative one (read from a file, it would be taken from wherever this program
        runs: app/system/confine.py), and for one no file can have: a NUL, or a name longer than Windows allows
        (255 UTF-16 units: asked about, Windows answers an error that is not "not found")."""
        parts = re.split(r"[\\/]", windows_path)
        if not is_whole_windows_path(windows_path) or "\0" in windows_path or any(
                len(part.encode("utf-16-le", "surrogatepass")) > 2 * NAME_MAX for part in parts):
            return None
        return Path(windows_path)

    def windows_path(self, host: Path) -> str:
        return str(host)

    # -- registry -----------------------------------------------------------------------------------------
    def _open(self, key: str):
        hive, _, path = key.partition("\\")
        hive_name = HIVES.get(hive.upper(), hive.upper())
        root = getattr(self._winreg, hive_name, None)
        if root is None:
            return None
        try:
            return self._winreg.OpenKey(root, path, 0, self._winreg.KEY_READ | self._winreg.KEY_WOW64_64KEY)
        except OSError:
            return None

    def registry_values(self, key: str) -> dict[str, RegistryValue]:
        handle = self._open(key)
        if handle is None:
            return {}
        values: dict[str, RegistryValue] = {}
        with handle:
            for index in range(100_000):
                try:
                    name, data, kind = self._winreg.EnumValue(handle, index)
                except OSError:
                    break
                checked = self._checked(kind, data)
                if checked is None:
                    self.problems.append(f"registry value {key}\\{name or '(default)'} is damaged "
                                         f"(type {kind}, data {data!r:.60})")
                else:
                    values[name] = checked
        return values

    def _checked(self, kind: int, data: object) -> Optional[RegistryValue]:
        name = self._types.get(kind)
        expected = {"REG_SZ": str, "REG_EXPAND_SZ": str, "REG_MULTI_SZ": list, "REG_DWORD": int,
                    "REG_QWORD": int, "REG_BINARY": (bytes, type(None))}.get(name or "")
        if expected is None or not isinstance(data, expected):
            return None
        return RegistryValue(name, b"" if data is None else data)

    def registry_subkeys(self, key: str) -> list[str]:
        handle = self._open(key)
        if handle is None:
            return []
        names = []
        with handle:
            for index in range(100_000):
                try:
                    names.append(self._winreg.EnumKey(handle, index))
                except OSError:
                    break
        return sorted(names)

    def set_registry_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        self._write_value(self._winreg.HKEY_CURRENT_USER, key, user_key(key).partition("\\")[2], name, value)

    def set_machine_value(self, key: str, name: str, value: Optional[RegistryValue]) -> None:
        """HKLM, 64-bit view, through Windows' own reg.exe started elevated (app/system/elevation.py reg_argv): no
        code of ours runs with administrator rights. Read back afterwards: the words come from the registry, not
        from reg.exe's exit code."""
        from app.system.elevation import reg_argv, system_folder

        check_registry_value(name, value)
        code = self.run_elevated(reg_argv(system_folder(), key, name, value), REG_TIMEOUT_S)
        now = self.registry_value(key, name)
        if not same_value(now, value):
            raise OSError(f"{key}\\{name} was not changed (reg.exe ended with {code}; the value is "
                          f"{now.data if now is not None else 'not there'})")
        if key.lower().endswith("\\environment"):
            self._announce_environment_change()

    def _write_value(self, hive, key: str, path: str, name: str, value: Optional[RegistryValue]) -> None:
        """Write (or, with None, delete) one value in the 64-bit view; a missing value to delete is no error."""
        check_registry_value(name, value)
        winreg = self._winreg
        access = winreg.KEY_SET_VALUE | winreg.KEY_WOW64_64KEY
        try:
            if value is None:
                try:
                    handle = winreg.OpenKey(hive, path, 0, access)
                except FileNotFoundError:
                    return  # no key, so no value: nothing to delete
                with handle:
                    try:
                        winreg.DeleteValue(handle, name)
                    except FileNotFoundError:
                        return
            else:
                with winreg.CreateKeyEx(hive, path, 0, access) as handle:
                    winreg.SetValueEx(handle, name, 0, getattr(winreg, value.type), value.data)
        except OSError as exc:
            action = "delete" if value is None else "write"
            message = f"could not {action} the registry value {key}\\{name or '(default)'}: {exc.strerror or exc}"
            raise (OSError(exc.errno, message) if exc.errno is not None else OSError(message)) from exc

    def registry_key_written(self, key: str) -> Optional[float]:
        """RegQueryInfoKey's last write time (winreg.QueryInfoKey: 100 ns units since 1601)."""
        handle = self._open(key)
        if handle is None:
            return None
        with handle:
            try:
                stamp = self._winreg.QueryInfoKey(handle)[2]
            except OSError:
                return None
        return stamp / 10_000_000 - FILETIME_EPOCH_S if stamp else None

    # -- memory and disks ---------------------------------------------------------------------------------
    def memory_status(self) -> Optional[MemoryStatus]:
        """GlobalMemoryStatusEx: ullTotalPageFile is the commit limit, ullAvailPageFile what can still be committed."""
        status = _MEMORYSTATUSEX()
        status.dwLength = ctypes.sizeof(status)
        self._kernel32.GlobalMemoryStatusEx.argtypes = [ctypes.POINTER(_MEMORYSTATUSEX)]
        if not self._kernel32.GlobalMemoryStatusEx(ctypes.byref(status)) or not status.ullTotalPageFile:
            return None
        return MemoryStatus(status.ullTotalPageFile, status.ullTotalPageFile - status.ullAvailPageFile,
                            status.ullTotalPhys or None)

    def disk_space(self, drive: str) -> Optional[DiskSpace]:
        try:
            usage = shutil.disk_usage(drive.rstrip("\\") + "\\")
        except OSError:
            return None
        return DiskSpace(usage.total, usage.free)

    def started_at(self) -> Optional[float]:
        """Now minus GetTickCount64 (milliseconds since Windows started)."""
        self._kernel32.GetTickCount64.restype = ctypes.c_ulonglong
        return time.time() - self._kernel32.GetTickCount64() / 1000

    # -- environment --------------------------------------------------------------------------------------
    def environment(self, scope: str) -> dict[str, str]:
        """Read from the registry each time (no cache), so a change made by set_user_variable shows at once."""
        if scope == "process":
            return users_environment()  # without the folders Qt and the frozen app added for themselves
        key = USER_ENVIRONMENT if scope == "user" else SYSTEM_ENVIRONMENT
        return {name: str(value.data) for name, value in self.registry_values(key).items()
                if value.type in ("REG_SZ", "REG_EXPAND_SZ")}

    def set_user_variable(self, name: str, value: Optional[str], data_type: Optional[str] = None) -> None:
        check_variable(name, value)
        if value is None:
            self.set_registry_value(USER_ENVIRONMENT, name, None)
        else:
            existing = self.registry_value(USER_ENVIRONMENT, name)
            self.set_registry_value(USER_ENVIRONMENT, name, variable_value(value, existing, data_type))
        self._announce_environment_change()

    def _announce_environment_change(self) -> None:
        """WM_SETTINGCHANGE "Environment" to every top-level window, so that Explorer (and what it starts next)
        sees the change. Best effort and bounded: a hung window is skipped (SMTO_ABORTIFHUNG, 5 s each), and
        after BROADCAST_WAIT_S we return while the broadcast finishes on its own; a failure is not an error."""

        def broadcast() -> None:
            try:
                send = ctypes.WinDLL("user32", use_last_error=True).SendMessageTimeoutW
                send.argtypes = [wintypes.HWND, wintypes.UINT, wintypes.WPARAM, wintypes.LPARAM, wintypes.UINT,
                                 wintypes.UINT, ctypes.POINTER(ctypes.c_size_t)]
                send.restype = ctypes.c_ssize_t
                text = ctypes.create_unicode_buffer("Environment")
                result = ctypes.c_size_t()
                send(HWND_BROADCAST, WM_SETTINGCHANGE, 0, ctypes.addressof(text), SMTO_ABORTIFHUNG,
                     BROADCAST_TIMEOUT_MS, ctypes.byref(result))
            except Exception:  # noqa: BLE001 - best effort: the change is made, only the news of it failed
                pass

        worker = threading.Thread(target=broadcast, name="WM_SETTINGCHANGE", daemon=True)
        worker.start()
        worker.join(BROADCAST_WAIT_S)

    @property
    def windows_version(self) -> Optional[str]:
        """From RtlGetVersion, which (unlike GetVersionEx) is not lied to by compatibility shims."""
        info = _OSVERSIONINFOEXW()
        info.dwOSVersionInfoSize = ctypes.sizeof(info)
        try:
            status = ctypes.WinDLL("ntdll").RtlGetVersion(ctypes.byref(info))
        except (OSError, AttributeError):
            return None
        if status != 0:
            return None
        return f"{info.dwMajorVersion}.{info.dwMinorVersion}.{info.dwBuildNumber}"

    @property
    def architecture(self) -> Optional[str]:
        """The processor's own architecture: IsWow64Process2's native machine, because GetNativeSystemInfo tells an
        x64 program emulated on an ARM64 computer (our .exe, an x64 Python) "AMD64"; before Windows 10 1709,
        which lacks IsWow64Process2, GetNativeSystemInfo."""
        native = self.native_machine()
        if native is not None:
            return native
        info = _SYSTEM_INFO()
        self._kernel32.GetNativeSystemInfo(ctypes.byref(info))
        return ARCHITECTURES.get(info.wProcessorArchitecture)

    def native_machine(self) -> Optional[str]:
        """IsWow64Process2(GetCurrentProcess()): the native machine (AMD64, ARM64, ...); None where Windows has no
        IsWow64Process2 or the call fails."""
        try:
            function = self._kernel32.IsWow64Process2
        except AttributeError:
            return None
        function.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.USHORT), ctypes.POINTER(wintypes.USHORT)]
        function.restype = wintypes.BOOL
        self._kernel32.GetCurrentProcess.restype = wintypes.HANDLE
        process_machine, native = wintypes.USHORT(), wintypes.USHORT()
        if not function(self._kernel32.GetCurrentProcess(), ctypes.byref(process_machine), ctypes.byref(native)):
            return None
        return IMAGE_FILE_MACHINES.get(native.value)

    def fixed_drives(self) -> list[str]:
        mask = self._kernel32.GetLogicalDrives()
        drives = [f"{chr(65 + i)}:" for i in range(26) if mask & (1 << i)]
        self._kernel32.GetDriveTypeW.argtypes = [wintypes.LPCWSTR]
        return [d for d in drives if self._kernel32.GetDriveTypeW(d + "\\") == DRIVE_FIXED]

    @property
    def code_page(self) -> Optional[int]:
        return int(self._kernel32.GetACP()) or None

    def _windows_roots(self) -> list[str]:
        """%SystemRoot%, and the Windows folder as Windows itself names it (%SystemRoot% can be overridden)."""
        roots = super()._windows_roots()
        buffer = ctypes.create_unicode_buffer(1024)
        self._kernel32.GetSystemWindowsDirectoryW.argtypes = [wintypes.LPWSTR, wintypes.UINT]
        if 0 < self._kernel32.GetSystemWindowsDirectoryW(buffer, len(buffer)) < len(buffer):
            roots.append(buffer.value)
        return roots

    @property
    def ui_language(self) -> Optional[str]:
        language = self._kernel32.GetUserDefaultUILanguage()
        buffer = ctypes.create_unicode_buffer(85)
        self._kernel32.LCIDToLocaleName.argtypes = [wintypes.DWORD, wintypes.LPWSTR, ctypes.c_int, wintypes.DWORD]
        if self._kernel32.LCIDToLocaleName(language, buffer, len(buffer), 0):
            return buffer.value or None
        return None

    def run(self, argv: list[str], timeout: float, env: Optional[dict[str, str]] = None,
            cwd: Optional[Path] = None, cancel: Optional[CancelToken] = None,
            on_output: Optional[Callable[[str], None]] = None) -> RunResult:
        env = users_environment() if env is None else env
        code, out, err = run_process(argv, timeout, env=env, cwd=str(cwd) if cwd else None, cancel=cancel,
                                     creationflags=CREATE_NO_WINDOW,
                                     on_output=(lambda line: on_output(_decode(line))) if on_output else None)
        return RunResult(code, _decode(out), _decode(err))

    def run_elevated(self, argv: list[str], timeout: float, cancel: Optional[CancelToken] = None,
                     on_stop_asked: Callable[[], None] = lambda: None) -> int:
        """ShellExecuteExW "runas", owned by the wizard's window, and a wait (app/system/elevation.py)."""
        from app.system.elevation import run_elevated

        return run_elevated(argv, timeout, cancel, self.owner_window, on_stop_asked)

    def pinned(self, windows_path: str):
        from app.system.elevation import pinned_file

        return pinned_file(windows_path)

    def query_event_log(self, channel: str, xpath: str, count: int, timeout: float) -> RunResult:
        wevtutil = self.system32 / "wevtutil.exe" if self.system32 is not None else Path("wevtutil.exe")
        return self.run([str(wevtutil), "qe", channel, f"/q:{xpath}", "/f:xml", "/rd:true", f"/c:{count}"], timeout)

    def installer_busy(self) -> bool:
        from app.system.elevation import installer_busy

        return installer_busy()

    def temp_folder(self) -> Path:
        return Path(os.environ.get("TMP") or os.environ.get("TEMP") or tempfile.gettempdir())  # as GetTempPathW


def _decode(data: bytes) -> str:
    """Child output is UTF-8 when we asked for it, else the console's code page (e.g. 936 on Chinese Windows)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("mbcs", errors="replace")
