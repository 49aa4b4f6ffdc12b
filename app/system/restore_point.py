"""A System Restore point, made by the elevated helper before a machine-wide change (SRSetRestorePointW, srclient.dll).

BEGIN_SYSTEM_CHANGE (100) with the kind (APPLICATION_INSTALL 0, MODIFY_SETTINGS 12), then END_SYSTEM_CHANGE (101)
with the sequence number Windows gave. Windows may refuse: srclient.dll absent (Windows Server, some trimmed
images, Wine), System Protection turned off (ERROR_SERVICE_DISABLED, 1058), or another reason (its error code).
Windows 8 and later also skip a new point when one was made in the last 24 hours
(SystemRestorePointCreationFrequency): the call then still succeeds, and the newer point is the one kept.
"""

from __future__ import annotations

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


def create_restore_point(description: str, kind: int) -> tuple[bool, str]:
    """(True, "") when Windows made (or kept a recent) restore point, else (False, the reason)."""
    try:
        srclient = ctypes.WinDLL("srclient", use_last_error=True)
        call = srclient.SRSetRestorePointW
    except (OSError, AttributeError) as exc:
        return False, f"unavailable: srclient.dll cannot be used ({exc})"
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
    return True, ""
