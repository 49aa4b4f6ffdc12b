"""A System Restore point, made by the elevated helper before a machine-wide change (SRSetRestorePointW, srclient.dll).

BEGIN_SYSTEM_CHANGE (100) with the kind (APPLICATION_INSTALL 0, MODIFY_SETTINGS 12), then END_SYSTEM_CHANGE (101)
with the sequence number Windows gave. Windows may refuse: srclient.dll absent (Windows Server, some trimmed
images, Wine), System Protection turned off (ERROR_SERVICE_DISABLED, 1058), or another reason (its error code).
Windows 8 and later also skip a new point when one was made in the last 24 hours
(SystemRestorePointCreationFrequency, 1440 minutes unless set): the call then still succeeds and gives the earlier
point's sequence number, so "a restore point was made" cannot be said from the call alone; the result says which
point exists (its number), now or from the last day. COM is initialised first, with the security Microsoft's
"Using System Restore" sample sets (CoInitializeEx, CoInitializeSecurity: packet privacy, impersonate, dynamic
cloaking), which SRSetRestorePointW needs.
"""

from __future__ import annotations

import contextlib
import ctypes
from ctypes import wintypes

BEGIN_SYSTEM_CHANGE, END_SYSTEM_CHANGE = 100, 101
APPLICATION_INSTALL, MODIFY_SETTINGS = 0, 12
ERROR_SERVICE_DISABLED = 1058
MAX_DESC_W = 256


class RESTOREPOINTINFOW(ctypes.Structure):
    _pack_ = 1  # srrestoreptapi.h: #pragma pack(1)
    _fields_ = [("dwEventType", wintypes.DWORD), ("dwRestorePtType", wintypes.DWORD),
                ("llSequenceNumber", ctypes.c_int64), ("szDescription", ctypes.c_wchar * MAX_DESC_W)]


class STATEMGRSTATUS(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("nStatus", wintypes.DWORD), ("llSequenceNumber", ctypes.c_int64)]


COINIT_MULTITHREADED, RPC_E_CHANGED_MODE, RPC_E_TOO_LATE = 0x0, 0x80010106, 0x80010119
RPC_C_AUTHN_LEVEL_PKT_PRIVACY, RPC_C_IMP_LEVEL_IMPERSONATE, EOAC_DYNAMIC_CLOAKING = 6, 3, 0x40


def _com_ready() -> None:
    """COM for this thread, and the process's COM security as SRSetRestorePointW expects it (best effort: a
    caller that already set them is fine: RPC_E_CHANGED_MODE, RPC_E_TOO_LATE)."""
    ole32 = ctypes.WinDLL("ole32")
    ole32.CoInitializeEx.argtypes = [ctypes.c_void_p, wintypes.DWORD]
    ole32.CoInitializeEx.restype = ctypes.c_long
    ole32.CoInitializeSecurity.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p,
                                           wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p, wintypes.DWORD,
                                           ctypes.c_void_p]
    ole32.CoInitializeSecurity.restype = ctypes.c_long
    ole32.CoInitializeEx(None, COINIT_MULTITHREADED)
    ole32.CoInitializeSecurity(None, -1, None, None, RPC_C_AUTHN_LEVEL_PKT_PRIVACY, RPC_C_IMP_LEVEL_IMPERSONATE,
                               None, EOAC_DYNAMIC_CLOAKING, None)


def create_restore_point(description: str, kind: int) -> tuple[bool, str]:
    """(True, "point <sequence number>") when Windows has a restore point from now or from the last day (it makes at
    most one a day), else (False, the reason)."""
    try:
        srclient = ctypes.WinDLL("srclient", use_last_error=True)
        call = srclient.SRSetRestorePointW
    except (OSError, AttributeError) as exc:
        return False, f"unavailable: srclient.dll cannot be used ({exc})"
    with contextlib.suppress(OSError, AttributeError):  # no COM (a trimmed Windows): the call below says the rest
        _com_ready()
    call.argtypes = [ctypes.POINTER(RESTOREPOINTINFOW), ctypes.POINTER(STATEMGRSTATUS)]
    call.restype = wintypes.BOOL
    info = RESTOREPOINTINFOW(BEGIN_SYSTEM_CHANGE, kind, 0, description[:MAX_DESC_W - 1])
    status = STATEMGRSTATUS()
    if not call(ctypes.byref(info), ctypes.byref(status)):
        code = status.nStatus or ctypes.get_last_error()
        if code == ERROR_SERVICE_DISABLED:
            return False, "protection-off: System Protection is turned off for the system drive (1058)"
        return False, f"error: Windows refused ({code}: {ctypes.FormatError(code).strip() if code else '?'})"
    done = RESTOREPOINTINFOW(END_SYSTEM_CHANGE, kind, status.llSequenceNumber, "")
    call(ctypes.byref(done), ctypes.byref(STATEMGRSTATUS()))
    return True, f"point {status.llSequenceNumber}"
