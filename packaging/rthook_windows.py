# PyInstaller runtime hook for TorchDllDoctor.exe (build_installer.spec). It runs before the app, and before
# PyInstaller's own runtime hooks. Standard library only: nothing of the app is importable yet.
"""Two things a windowed (console=False) Windows build needs before the app starts.

1. Printing. A GUI-subsystem program gets no console of its own, and Python sets ``sys.stdout`` / ``sys.stderr``
   / ``sys.stdin`` to None unless the parent handed it real handles. Handed handles (``exe diagnose > out.txt``,
   a pipe, a test harness) are kept as they are. A stream that is None is attached to the console of the program
   that started us (``AttachConsole(ATTACH_PARENT_PROCESS)``, cmd or PowerShell) through ``CONOUT$`` / ``CONIN$``,
   which Python opens as a console (UTF-16 WriteConsoleW, so Chinese text is not mangled by the code page). Started
   from Explorer (or by another program without a console), there is no parent console: the stream becomes os.devnull,
   so a stray ``sys.stderr.write`` (a warning, a library's progress) cannot crash the wizard. The one-file build
   runs as the child of its own windowed bootloader, which has no console and hands on no streams: there the
   console is the one of the program that started the bootloader.

2. The user's Python must not see our DLLs. PyInstaller's bootloader calls ``SetDllDirectoryW(<_internal>)``, and
   child processes inherit that DLL directory: the ``python.exe`` the diagnosis runs would then find the
   ``msvcp140.dll`` / ``vcruntime140.dll`` we ship and hide a missing VC++ runtime. We swap it for
   ``AddDllDirectory`` (``os.add_dll_directory``), which our own extension modules and ctypes use just the same
   (Python loads them with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS) but which is not inherited.
"""


def _tdd_parent_of(pid: int):
    """(parent's id, parent's program file name) of process `pid`, from Windows' process list (Toolhelp32); None
    when it cannot be read."""
    import ctypes
    from ctypes import wintypes

    class PROCESSENTRY32W(ctypes.Structure):
        _fields_ = [("dwSize", wintypes.DWORD), ("cntUsage", wintypes.DWORD), ("th32ProcessID", wintypes.DWORD),
                    ("th32DefaultHeapID", ctypes.c_size_t), ("th32ModuleID", wintypes.DWORD),
                    ("cntThreads", wintypes.DWORD), ("th32ParentProcessID", wintypes.DWORD),
                    ("pcPriClassBase", wintypes.LONG), ("dwFlags", wintypes.DWORD),
                    ("szExeFile", wintypes.WCHAR * 260)]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.CreateToolhelp32Snapshot.argtypes = [wintypes.DWORD, wintypes.DWORD]
    kernel32.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    for name in ("Process32FirstW", "Process32NextW"):
        getattr(kernel32, name).argtypes = [wintypes.HANDLE, ctypes.POINTER(PROCESSENTRY32W)]
        getattr(kernel32, name).restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    kernel32.CloseHandle.restype = wintypes.BOOL
    snapshot = kernel32.CreateToolhelp32Snapshot(0x2, 0)  # TH32CS_SNAPPROCESS
    if snapshot is None or snapshot == wintypes.HANDLE(-1).value:
        return None
    try:
        entries, entry = {}, PROCESSENTRY32W()
        entry.dwSize = ctypes.sizeof(entry)
        more = kernel32.Process32FirstW(snapshot, ctypes.byref(entry))
        while more:
            entries[entry.th32ProcessID] = (entry.th32ParentProcessID, entry.szExeFile)
            more = kernel32.Process32NextW(snapshot, ctypes.byref(entry))
    finally:
        kernel32.CloseHandle(snapshot)
    if pid not in entries:
        return None
    parent = entries[pid][0]
    return parent, entries.get(parent, (0, ""))[1]


def _tdd_attach_shell_console(kernel32, bundle) -> bool:
    """Attach to the console of the program that started us (cmd or PowerShell): our parent's, or, in the one-file
    build, whose app runs in a child of its own windowed bootloader (no console), the bootloader's parent's."""
    import os
    import sys
    from ctypes import wintypes

    if kernel32.AttachConsole(wintypes.DWORD(-1 & 0xFFFFFFFF)):  # ATTACH_PARENT_PROCESS
        return True
    if bundle:
        me = _tdd_parent_of(os.getpid())
        if me is not None and me[1].lower() == os.path.basename(sys.executable).lower():
            bootloader = _tdd_parent_of(me[0])
            if bootloader is not None and bootloader[0]:
                return bool(kernel32.AttachConsole(wintypes.DWORD(bootloader[0])))
    return False


def _tdd_rthook() -> None:
    import os
    import sys

    if sys.platform != "win32":
        return
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)

    # --- 2. the DLL directory (first: nothing below loads a DLL of ours)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        kernel32.SetDllDirectoryW.argtypes = [wintypes.LPCWSTR]
        kernel32.SetDllDirectoryW.restype = wintypes.BOOL
        sys._tdd_dll_directory = os.add_dll_directory(bundle)  # kept referenced: closing it removes the directory
        kernel32.SetDllDirectoryW(None)

    # --- 1. the standard streams
    kernel32.AttachConsole.argtypes = [wintypes.DWORD]
    kernel32.AttachConsole.restype = wintypes.BOOL
    names = [n for n in ("stdin", "stdout", "stderr") if getattr(sys, n) is None]
    if not names:  # every stream was handed over (console build, or all redirected): keep them
        if not kernel32.GetConsoleOutputCP():
            # a windowed program with all three redirected (PowerShell's pipes; the one-file build's app, whose
            # bootloader hands it its own): the shell reads our output in its console's code page, which only that
            # console can say. Asked once, attached and freed at once (app/system/console.py reads it).
            try:
                if _tdd_attach_shell_console(kernel32, bundle):
                    try:
                        sys._tdd_shell_output_cp = int(kernel32.GetConsoleOutputCP())
                    finally:
                        kernel32.FreeConsole()
            except Exception:  # noqa: BLE001 - the code page is a nicety; starting is not
                pass
        return
    attached = _tdd_attach_shell_console(kernel32, bundle)
    for name in names:
        stream = None
        if attached:
            try:
                if name == "stdin":
                    stream = open("CONIN$", encoding="utf-8", errors="replace")  # noqa: SIM115
                else:
                    stream = open("CONOUT$", "w", encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
            except OSError:
                stream = None
        if stream is None:
            stream = open(os.devnull, "r" if name == "stdin" else "w", encoding="utf-8")  # noqa: SIM115
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    # the shell does not wait for a windowed program and reads the same console: no question is asked there
    # (app/cli/output.py shares_shell_console; TorchDllDoctor-cli.exe, a console program, is the one to ask)
    sys._tdd_borrowed_console = attached and "stdin" in names
    if attached and "stdout" in names:
        # cmd.exe does not wait for a windowed program and has already printed its prompt: start on a new line
        sys.stdout.write("\n")


_tdd_rthook()
del _tdd_rthook, _tdd_parent_of, _tdd_attach_shell_console
