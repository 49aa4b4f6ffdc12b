"""Who holds a file, as Windows itself answers it: the Restart Manager (rstrtmgr.dll: RmStartSession,
RmRegisterResources, RmGetList). It lists every process that has one of the files open or loaded, with its name,
without elevation, also for a program started as administrator or in another session, which psutil's memory maps
cannot look into (AccessDenied). Paths are Windows' own, so subst drives, junctions and 8.3 names need no
comparing. Microsoft Learn: "Using Restart Manager" / RmGetList."""

from __future__ import annotations

import ctypes
import os
from ctypes import wintypes
from typing import Optional, Sequence

CCH_RM_SESSION_KEY = 32
CCH_RM_MAX_APP_NAME, CCH_RM_MAX_SVC_NAME = 255, 63
ERROR_MORE_DATA = 234
BATCH = 1024  # files registered per RmRegisterResources call (a session takes more calls, all counted)


class RM_UNIQUE_PROCESS(ctypes.Structure):
    _fields_ = [("dwProcessId", wintypes.DWORD), ("ProcessStartTime", wintypes.FILETIME)]


class RM_PROCESS_INFO(ctypes.Structure):
    _fields_ = [("Process", RM_UNIQUE_PROCESS), ("strAppName", wintypes.WCHAR * (CCH_RM_MAX_APP_NAME + 1)),
                ("strServiceShortName", wintypes.WCHAR * (CCH_RM_MAX_SVC_NAME + 1)),
                ("ApplicationType", ctypes.c_int), ("AppStatus", wintypes.ULONG), ("TSSessionId", wintypes.DWORD),
                ("bRestartable", wintypes.BOOL)]


def under_wine() -> bool:
    """Wine's ntdll exports wine_get_version; Windows' does not."""
    try:
        return hasattr(ctypes.WinDLL("ntdll"), "wine_get_version")
    except OSError:
        return False


def available() -> bool:
    """Windows' own Restart Manager is there to ask: not off Windows, and not under Wine, whose Restart Manager
    answers "nobody" whatever holds the file (psutil is asked there)."""
    return os.name == "nt" and not under_wine()


def holders(paths: Sequence[str]) -> Optional[list[dict]]:
    """[{"pid", "name"}] of the processes that hold any of `paths` (Windows paths); None where the Restart Manager
    cannot answer (not available, or it refused): the caller then asks psutil."""
    if not available():
        return None
    if not paths:
        return []
    try:
        rm = ctypes.WinDLL("rstrtmgr")
    except OSError:
        return None
    rm.RmStartSession.argtypes = [ctypes.POINTER(wintypes.DWORD), wintypes.DWORD, wintypes.LPWSTR]
    rm.RmRegisterResources.argtypes = [wintypes.DWORD, wintypes.UINT, ctypes.POINTER(wintypes.LPCWSTR),
                                       wintypes.UINT, ctypes.c_void_p, wintypes.UINT, ctypes.c_void_p]
    rm.RmGetList.argtypes = [wintypes.DWORD, ctypes.POINTER(wintypes.UINT), ctypes.POINTER(wintypes.UINT),
                             ctypes.POINTER(RM_PROCESS_INFO), ctypes.POINTER(wintypes.DWORD)]
    rm.RmEndSession.argtypes = [wintypes.DWORD]
    for function in (rm.RmStartSession, rm.RmRegisterResources, rm.RmGetList, rm.RmEndSession):
        function.restype = wintypes.DWORD
    return ask(rm, paths)


def ask(rm, paths: Sequence[str]) -> Optional[list[dict]]:
    """One Restart Manager session with `rm` (rstrtmgr.dll, its functions typed): every file registered, in batches
    ("RmRegisterResources can be called multiple times", Microsoft Learn); the list asked for again while it says
    ERROR_MORE_DATA with the size it needs (it can grow between two calls); the session always ended. None where
    it refuses."""
    session = wintypes.DWORD()
    key = ctypes.create_unicode_buffer(CCH_RM_SESSION_KEY + 1)
    if rm.RmStartSession(ctypes.byref(session), 0, key) != 0:
        return None
    try:
        files = list(paths)
        for start in range(0, len(files), BATCH):
            batch = files[start:start + BATCH]
            array = (wintypes.LPCWSTR * len(batch))(*batch)
            if rm.RmRegisterResources(session, len(batch), array, 0, None, 0, None) != 0:
                return None
        needed, count, reasons = wintypes.UINT(0), wintypes.UINT(0), wintypes.DWORD(0)
        infos = (RM_PROCESS_INFO * 1)()
        for _ in range(4):  # the list can grow between the calls
            count.value = len(infos)
            result = rm.RmGetList(session, ctypes.byref(needed), ctypes.byref(count), infos, ctypes.byref(reasons))
            if result == 0:
                return [{"pid": int(infos[i].Process.dwProcessId), "name": infos[i].strAppName or "?"}
                        for i in range(count.value)]
            if result != ERROR_MORE_DATA:
                return None
            infos = (RM_PROCESS_INFO * max(needed.value, 1))()
        return None
    finally:
        rm.RmEndSession(session)
