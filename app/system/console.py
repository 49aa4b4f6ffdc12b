"""Which encoding the command line writes in when its output is redirected: Windows PowerShell 5.1 reads a program's
piped output in the console's output code page ([Console]::OutputEncoding, 936 on a Chinese Windows), so UTF-8
there garbles every Chinese word. A console itself gets Unicode from Python (WriteConsoleW) whatever is chosen."""

from __future__ import annotations

import os
import sys
from typing import Optional

UTF8_CP = 65001
# the East Asian code pages, in which UTF-8 garbles every word of the reader's language and which can write it;
# elsewhere (437, 850, 1252) UTF-8 stays: those cannot write the Chinese report at all
EAST_ASIAN_CPS = (932, 936, 949, 950)


def console_output_cp() -> Optional[int]:
    """The code page the shell reads our redirected output in: GetConsoleOutputCP of the console this process is
    attached to; without one (a windowed program whose streams were all handed over: PowerShell running the
    one-file build, whose app is a child of its own windowed bootloader), the shell's console's, which the frozen
    app's start asked for (packaging/rthook_windows.py: `chcp 65001` and PowerShell's UTF-8 setting are kept), else
    GetOEMCP, the code page every console of this Windows starts in and PowerShell 5.1's [Console]::OutputEncoding
    unless changed. None off Windows."""
    if os.name != "nt":
        return None
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32")
    shell = getattr(sys, "_tdd_shell_output_cp", 0)  # the frozen app asked the shell's console at start
    return int(kernel32.GetConsoleOutputCP()) or shell or int(kernel32.GetOEMCP()) or None


def output_encoding(is_console: bool, console_cp: Optional[int]) -> str:
    """UTF-8 on a console (Python writes Unicode to it anyway), off Windows, and outside the East Asian code pages;
    a redirected output where the shell reads an East Asian code page: that code page, as the shell expects."""
    if is_console or console_cp not in EAST_ASIAN_CPS:
        return "utf-8"
    return f"cp{console_cp}"
