/* A stand-in for Microsoft's vc_redist.x64.exe / vc_redist.x86.exe, for tests only.
 *
 * A real Windows console program (built by tests/standin/__init__.py with Debian's mingw-w64). It takes the
 * real switches and does, in miniature, what the real installer does that the app can observe:
 *
 *   vc_redist_standin.exe [/install | /repair | /uninstall] [/quiet | /passive] [/norestart] [/log FILE]
 *
 *   - writes a Burn-style log to FILE (when /log is given; else, as Burn does, to
 *     %TEMP%\dd_vcredist_<amd64|x86>_<yyyymmddhhmmss>.log): a header, the action, and at the end
 *     "Exit code: 0x..., restarting: No" (plus "Error 0x80070643: Failed to install MSI package." for 1603);
 *   - on success (exit 0, 3010 or 1641) of /install or /repair, writes the registry values vc_redist writes:
 *     HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\<arch> with Installed=1 (DWORD),
 *     Version="v14.44.35211.00" (REG_SZ), Major/Minor/Bld/Rbld (DWORD); x64 in the 64-bit registry view,
 *     x86 in the 32-bit view (WOW6432Node). /uninstall deletes that key. Other exit codes change nothing;
 *   - exits with the code the test chose.
 *
 * Configuration (a test chooses the outcome; nothing here is a real vc_redist switch):
 *   1. the file "standin.cfg" in the exe's own folder, lines "name=value" (read first), then
 *   2. the environment variables TDD_STANDIN_EXIT, TDD_STANDIN_SLEEP_MS, TDD_STANDIN_ARCH,
 *      TDD_STANDIN_VERSION (these win).
 *   Names: exit (default 0), sleep_ms (default 0: how long to "install" before touching the registry),
 *   arch (x64 or x86; default: x86 when the exe's name contains "x86", else x64), version (default
 *   14.44.35211.0), and for "busy the first time" and "a newer runtime is present":
 *     first_exit + state (TDD_STANDIN_FIRST_EXIT, TDD_STANDIN_STATE): when the file named by state does not
 *       exist yet, create it and exit with first_exit (doing nothing else); later runs use exit as usual;
 *     register (TDD_STANDIN_REGISTER): 1 = write the runtime key (with version) whatever the exit code, as
 *       the machine looks when vc_redist says 1638 (a newer runtime is already there);
 *     runtime_dlls (TDD_STANDIN_RUNTIME_DLLS): a folder of DLLs the "installer" puts into the system folder on
 *       success, as vc_redist does with msvcp140.dll & co.: at once when it answers 0; when it answers 3010 or
 *       1641 (a restart is needed: the DLLs are in use) it stages each as <name>.tdd-pending in the system folder
 *       and schedules the replacement for the next restart (MoveFileExW MOVEFILE_DELAY_UNTIL_REBOOT, which
 *       writes PendingFileRenameOperations), so the old files stay until then;
 *     trace (TDD_STANDIN_TRACE): a file to which every run appends one line
 *       "run <unix time in ms> exe=<its own path> cmd=<its command line>" (where it ran from, and when).
 *   The file is the dependable way: a program started elevated on real Windows does not necessarily get its
 *   caller's environment; under Wine it does (and the app downloads the installer into a folder of its own,
 *   where no standin.cfg is, so tests that run the whole repair use the variables).
 *
 * The exe carries a version resource (vc_redist_standin.rc: 14.44.35211.0, CompanyName Microsoft Corporation).
 */
#ifndef UNICODE
#define UNICODE
#endif
#ifndef _UNICODE
#define _UNICODE
#endif
#include <stdarg.h>
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#define RUNTIMES_KEY L"SOFTWARE\\Microsoft\\VisualStudio\\14.0\\VC\\Runtimes\\"

/* A section named as WiX Burn names the one that marks a bundle (Microsoft's Redistributable is a Burn bundle):
 * the app runs only a file that has it (app/sources/vc_redist.py redistributable_refusal). */
__attribute__((section(".wixburn"), used)) static const char g_burn_marker[16] = "tdd-standin-burn";

static FILE *g_log;
static wchar_t g_arch[16] = L"x64";
static DWORD g_version[4] = {14, 44, 35211, 0};
static DWORD g_exit_code = 0;
static DWORD g_sleep_ms = 0;
static DWORD g_first_exit = 0;
static int g_has_first_exit = 0;
static int g_register_always = 0;
static wchar_t g_state[MAX_PATH * 2] = L"";
static wchar_t g_runtime_dlls[MAX_PATH * 2] = L"";
static wchar_t g_trace[MAX_PATH * 2] = L"";

static void log_line(const wchar_t *kind, const wchar_t *format, ...) {
    if (!g_log) return;
    SYSTEMTIME t;
    GetLocalTime(&t);
    fwprintf(g_log, L"[%04X:%04X][%04d-%02d-%02dT%02d:%02d:%02d]%ls: ", GetCurrentProcessId(), GetCurrentThreadId(),
             t.wYear, t.wMonth, t.wDay, t.wHour, t.wMinute, t.wSecond, kind);
    va_list args;
    va_start(args, format);
    vfwprintf(g_log, format, args);
    va_end(args);
    fwprintf(g_log, L"\n");
    fflush(g_log);
}

static void set_option(const wchar_t *name, const wchar_t *value) {
    if (!_wcsicmp(name, L"exit")) {
        g_exit_code = (DWORD)wcstoul(value, NULL, 0);
    } else if (!_wcsicmp(name, L"sleep_ms")) {
        g_sleep_ms = (DWORD)wcstoul(value, NULL, 0);
    } else if (!_wcsicmp(name, L"arch")) {
        if (!_wcsicmp(value, L"x64") || !_wcsicmp(value, L"x86") || !_wcsicmp(value, L"arm64"))
            wcsncpy(g_arch, value, 15);
    } else if (!_wcsicmp(name, L"first_exit")) {
        g_first_exit = (DWORD)wcstoul(value, NULL, 0);
        g_has_first_exit = 1;
    } else if (!_wcsicmp(name, L"state")) {
        wcsncpy(g_state, value, MAX_PATH * 2 - 1);
    } else if (!_wcsicmp(name, L"runtime_dlls")) {
        wcsncpy(g_runtime_dlls, value, MAX_PATH * 2 - 1);
    } else if (!_wcsicmp(name, L"trace")) {
        wcsncpy(g_trace, value, MAX_PATH * 2 - 1);
    } else if (!_wcsicmp(name, L"register")) {
        g_register_always = wcstoul(value, NULL, 0) != 0;
    } else if (!_wcsicmp(name, L"version")) {
        DWORD v[4] = {0, 0, 0, 0};
        if (swscanf(value, L"%lu.%lu.%lu.%lu", &v[0], &v[1], &v[2], &v[3]) >= 3) memcpy(g_version, v, sizeof v);
    }
}

static void trim(wchar_t *s) {
    size_t n = wcslen(s);
    while (n && (s[n - 1] == L'\r' || s[n - 1] == L'\n' || s[n - 1] == L' ' || s[n - 1] == L'\t')) s[--n] = 0;
}

static void read_config(const wchar_t *exe_dir) {
    wchar_t path[MAX_PATH * 2];
    _snwprintf(path, MAX_PATH * 2, L"%lsstandin.cfg", exe_dir);
    FILE *f = _wfopen(path, L"rt");
    if (f) {
        wchar_t line[512];
        while (fgetws(line, 512, f)) {
            trim(line);
            wchar_t *eq = wcschr(line, L'=');
            if (!eq || line[0] == L'#') continue;
            *eq = 0;
            set_option(line, eq + 1);
        }
        fclose(f);
    }
    static const wchar_t *vars[][2] = {{L"TDD_STANDIN_EXIT", L"exit"}, {L"TDD_STANDIN_SLEEP_MS", L"sleep_ms"},
                                       {L"TDD_STANDIN_ARCH", L"arch"}, {L"TDD_STANDIN_VERSION", L"version"},
                                       {L"TDD_STANDIN_FIRST_EXIT", L"first_exit"}, {L"TDD_STANDIN_STATE", L"state"},
                                       {L"TDD_STANDIN_REGISTER", L"register"},
                                       {L"TDD_STANDIN_RUNTIME_DLLS", L"runtime_dlls"},
                                       {L"TDD_STANDIN_TRACE", L"trace"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        wchar_t value[MAX_PATH * 2];
        DWORD n = GetEnvironmentVariableW(vars[i][0], value, MAX_PATH * 2);
        if (n > 0 && n < MAX_PATH * 2) set_option(vars[i][1], value);
    }
}

/* The view vc_redist writes: x64 and arm64 in the 64-bit registry, x86 in the 32-bit one (WOW6432Node). */
static REGSAM view(void) { return _wcsicmp(g_arch, L"x86") ? KEY_WOW64_64KEY : KEY_WOW64_32KEY; }

static LONG write_runtime_key(void) {
    wchar_t key[256];
    _snwprintf(key, 256, L"%ls%ls", RUNTIMES_KEY, g_arch);
    HKEY h;
    LONG rc = RegCreateKeyExW(HKEY_LOCAL_MACHINE, key, 0, NULL, REG_OPTION_NON_VOLATILE, KEY_SET_VALUE | view(),
                              NULL, &h, NULL);
    if (rc != ERROR_SUCCESS) return rc;
    wchar_t version[64];
    _snwprintf(version, 64, L"v%lu.%lu.%lu.%02lu", g_version[0], g_version[1], g_version[2], g_version[3]);
    DWORD one = 1;
    rc = RegSetValueExW(h, L"Installed", 0, REG_DWORD, (const BYTE *)&one, sizeof one);
    if (rc == ERROR_SUCCESS)
        rc = RegSetValueExW(h, L"Version", 0, REG_SZ, (const BYTE *)version, (DWORD)((wcslen(version) + 1) * 2));
    static const wchar_t *names[4] = {L"Major", L"Minor", L"Bld", L"Rbld"};
    for (int i = 0; i < 4 && rc == ERROR_SUCCESS; i++)
        rc = RegSetValueExW(h, names[i], 0, REG_DWORD, (const BYTE *)&g_version[i], sizeof(DWORD));
    RegCloseKey(h);
    return rc;
}

static LONG delete_runtime_key(void) {
    wchar_t key[256];
    _snwprintf(key, 256, L"%ls%ls", RUNTIMES_KEY, g_arch);
    LONG rc = RegDeleteKeyExW(HKEY_LOCAL_MACHINE, key, view(), 0);
    return rc == ERROR_FILE_NOT_FOUND ? ERROR_SUCCESS : rc;
}

/* One line per run into the trace file: when (Unix time in ms), from where, in which working folder, with what
   command line. */
static void trace_run(const wchar_t *exe) {
    if (!g_trace[0]) return;
    FILE *f = _wfopen(g_trace, L"a, ccs=UTF-8");
    if (!f) return;
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    ULONGLONG t = ((ULONGLONG)ft.dwHighDateTime << 32 | ft.dwLowDateTime) / 10000ULL - 11644473600000ULL;
    wchar_t cwd[MAX_PATH * 2] = L"";
    GetCurrentDirectoryW(MAX_PATH * 2, cwd);
    fwprintf(f, L"run %llu exe=%ls cwd=%ls cmd=%ls\n", t, exe, cwd, GetCommandLineW());
    fclose(f);
}

/* The runtime DLLs into the system folder: at once, or (restart) staged and scheduled for the next boot. */
static LONG place_runtime_dlls(int at_restart) {
    if (!g_runtime_dlls[0]) return ERROR_SUCCESS;
    wchar_t system[MAX_PATH], pattern[MAX_PATH * 2];
    if (!GetSystemDirectoryW(system, MAX_PATH)) return (LONG)GetLastError();
    _snwprintf(pattern, MAX_PATH * 2, L"%ls\\*.dll", g_runtime_dlls);
    WIN32_FIND_DATAW found;
    HANDLE h = FindFirstFileW(pattern, &found);
    if (h == INVALID_HANDLE_VALUE) return (LONG)GetLastError();
    LONG rc = ERROR_SUCCESS;
    do {
        wchar_t source[MAX_PATH * 2], target[MAX_PATH * 2], staged[MAX_PATH * 2];
        _snwprintf(source, MAX_PATH * 2, L"%ls\\%ls", g_runtime_dlls, found.cFileName);
        _snwprintf(target, MAX_PATH * 2, L"%ls\\%ls", system, found.cFileName);
        if (!at_restart) {
            if (!CopyFileW(source, target, FALSE)) { rc = (LONG)GetLastError(); break; }
            log_line(L"i000", L"Replaced %ls", target);
            continue;
        }
        _snwprintf(staged, MAX_PATH * 2, L"%ls.tdd-pending", target);
        if (!CopyFileW(source, staged, FALSE) ||
            !MoveFileExW(staged, target, MOVEFILE_DELAY_UNTIL_REBOOT | MOVEFILE_REPLACE_EXISTING)) {
            rc = (LONG)GetLastError();
            break;
        }
        log_line(L"i000", L"%ls is in use: its replacement waits for the restart (%ls)", target, staged);
    } while (FindNextFileW(h, &found));
    FindClose(h);
    return rc;
}

/* How this process runs: TokenElevationType 1 (default: no split token), 2 (full: elevated), 3 (limited). */
static void log_token(void) {
    HANDLE token;
    DWORD type = 0, elevated = 0, size;
    if (OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) {
        TOKEN_ELEVATION elevation;
        GetTokenInformation(token, TokenElevationType, &type, sizeof type, &size);
        if (GetTokenInformation(token, TokenElevation, &elevation, sizeof elevation, &size))
            elevated = elevation.TokenIsElevated;
        CloseHandle(token);
    }
    log_line(L"i000", L"Token: elevated=%ls, elevation type=%lu", elevated ? L"yes" : L"no", type);
}

int wmain(int argc, wchar_t **argv) {
    wchar_t exe[MAX_PATH * 2];
    DWORD n = GetModuleFileNameW(NULL, exe, MAX_PATH * 2);
    if (n == 0 || n >= MAX_PATH * 2) return 1;
    wchar_t *slash = wcsrchr(exe, L'\\');
    wchar_t exe_dir[MAX_PATH * 2];
    wcsncpy(exe_dir, exe, MAX_PATH * 2);
    exe_dir[slash ? (size_t)(slash - exe) + 1 : 0] = 0;
    {
        wchar_t name[MAX_PATH];
        wcsncpy(name, slash ? slash + 1 : exe, MAX_PATH - 1);
        name[MAX_PATH - 1] = 0;
        _wcslwr(name);
        if (wcsstr(name, L"x86")) wcscpy(g_arch, L"x86");
    }
    read_config(exe_dir);
    trace_run(exe);

    const wchar_t *action = L"install", *ui = L"full", *log_path = NULL;
    int norestart = 0;
    for (int i = 1; i < argc; i++) {
        const wchar_t *a = argv[i];
        if (a[0] == L'/' || a[0] == L'-') a++;
        if (!_wcsicmp(a, L"install") || !_wcsicmp(a, L"repair") || !_wcsicmp(a, L"uninstall")) action = a;
        else if (!_wcsicmp(a, L"quiet") || !_wcsicmp(a, L"q") || !_wcsicmp(a, L"passive")) ui = a;
        else if (!_wcsicmp(a, L"norestart")) norestart = 1;
        else if ((!_wcsicmp(a, L"log") || !_wcsicmp(a, L"l")) && i + 1 < argc) log_path = argv[++i];
    }
    wchar_t default_log[MAX_PATH * 2];
    if (!log_path) {  /* as Burn does without /log: %TEMP%\dd_vcredist_<amd64|x86>_<yyyymmddhhmmss>.log */
        wchar_t temp[MAX_PATH];
        SYSTEMTIME now;
        GetLocalTime(&now);
        DWORD n = GetTempPathW(MAX_PATH, temp);
        if (n > 0 && n < MAX_PATH) {
            _snwprintf(default_log, MAX_PATH * 2, L"%lsdd_vcredist_%ls_%04d%02d%02d%02d%02d%02d.log", temp,
                       wcscmp(g_arch, L"x86") ? L"amd64" : L"x86", now.wYear, now.wMonth, now.wDay, now.wHour,
                       now.wMinute, now.wSecond);
            default_log[MAX_PATH * 2 - 1] = 0;
            log_path = default_log;
        }
    }
    if (log_path) g_log = _wfopen(log_path, L"wt, ccs=UTF-8");

    log_line(L"i001", L"Burn v3.14.1.8722, Windows v10.0, path: %ls (vc_redist stand-in for tests)", exe);
    log_line(L"i000", L"Microsoft Visual C++ 2015-2022 Redistributable (%ls) - %lu.%lu.%lu", g_arch, g_version[0],
             g_version[1], g_version[2]);
    log_line(L"i000", L"Command line: action=%ls, ui=%ls, norestart=%ls", action, ui, norestart ? L"yes" : L"no");
    log_token();
    log_line(L"i052", L"Condition 'VersionNT64' evaluates to true.");
    if (g_sleep_ms) {
        log_line(L"i000", L"Applying for %lu ms", g_sleep_ms);
        Sleep(g_sleep_ms);
    }

    DWORD code = g_exit_code;
    int first_time = 0;
    if (g_has_first_exit && g_state[0]) {
        HANDLE h = CreateFileW(g_state, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        if (h != INVALID_HANDLE_VALUE) {  /* it did not exist: this is the first run */
            CloseHandle(h);
            first_time = 1;
            code = g_first_exit;
            log_line(L"i000", L"First run (state file %ls created): exit code %lu", g_state, code);
        }
    }
    int success = code == 0 || code == 3010 || code == 1641;
    if (success || (g_register_always && !first_time)) {
        LONG rc = _wcsicmp(action, L"uninstall") ? write_runtime_key() : delete_runtime_key();
        if (rc != ERROR_SUCCESS) {
            log_line(L"e000", L"Error 0x%08lx: Failed to write the registry key for %ls.", HRESULT_FROM_WIN32(rc),
                     g_arch);
            code = 1603;
        } else {
            log_line(L"i000", L"%ls the registry key %ls%ls (%ls view)",
                     _wcsicmp(action, L"uninstall") ? L"Wrote" : L"Deleted", RUNTIMES_KEY, g_arch,
                     view() == KEY_WOW64_64KEY ? L"64-bit" : L"32-bit");
        }
    }
    if (success && _wcsicmp(action, L"uninstall")) {
        LONG rc = place_runtime_dlls(code != 0);
        if (rc != ERROR_SUCCESS) {
            log_line(L"e000", L"Error 0x%08lx: Failed to place the runtime DLLs.", HRESULT_FROM_WIN32(rc));
            code = 1603;
        }
    }
    if (code == 1603) {
        log_line(L"e000", L"Error 0x80070643: Failed to install MSI package.");
        log_line(L"e000", L"Error 0x80070643: Failed to execute MSI package.");
    } else if (code == 1638) {
        log_line(L"i000", L"A newer version of the Visual C++ runtime is already installed.");
    } else if (code == 1618) {
        log_line(L"e000", L"Error 0x80070652: Another installation is already in progress.");
    } else if (code == 1602) {
        log_line(L"e000", L"Error 0x80070642: User cancelled installation.");
    }
    log_line(L"i399", L"Apply complete, result: 0x%lx, restart: %ls, ba requested restart:  No", code,
             code == 3010 ? L"Required" : L"None");
    log_line(L"i007", L"Exit code: 0x%lx, restarting: No", code);
    if (g_log) fclose(g_log);
    return (int)code;
}
