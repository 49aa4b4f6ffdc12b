"""What has no Windows load code, each called what it is: a crash (an access violation, its exit code, an Event
Viewer record with its faulting module), pip replacing a file a program holds, PyInstaller's loader, an NTSTATUS
exit code written in decimal, and "DLL load failed while importing X" with its reason cut off (X's folder's DLLs,
from the index)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.i18n import LANGUAGES
from app.probes.error_text import ACCESS_DENIED, BAD_IMAGE, CRASH, MODULE_NOT_FOUND, classify_error

EVENT_VIEWER = ("Faulting application name: python.exe, version: 3.11.7150.1013, time stamp: 0x6570d1c5\n"
                "Faulting module name: torch_cpu.dll, version: 0.0.0.0, time stamp: 0x66a8b7a2\n"
                "Exception code: 0xc0000005\nFault offset: 0x0000000001a2b3c4\n"
                "Faulting module path: C:\\venv\\Lib\\site-packages\\torch\\lib\\torch_cpu.dll")
PIP_IN_USE = ("Installing collected packages: torch\n  Attempting uninstall: torch\n"
              "ERROR: Could not install packages due to an OSError: [WinError 5] Access is denied: "
              "'C:\\venv\\Lib\\site-packages\\torch\\lib\\c10.dll'\nConsider using the `--user` option or check the "
              "permissions.")


def _words(cause, lang: str = "en") -> str:
    return " ".join(cause.text(lang).values())


@pytest.mark.parametrize("text", ["Process finished with exit code -1073741819 (0xC0000005)",
                                  "Process finished with exit code 3221225477",
                                  "Windows fatal exception: access violation"])
def test_an_access_violation_is_a_crash_never_a_missing_file(text):
    cause = classify_error(text)
    assert cause.kind == CRASH and cause.advice == "crash"
    assert "crashed" in cause.text("en")["title"] and "崩溃" in cause.text("zh_CN")["title"]
    assert "could not find" not in _words(cause)


def test_an_event_viewer_record_names_its_faulting_module():
    cause = classify_error(EVENT_VIEWER)
    assert cause.kind == CRASH and cause.dll == "torch_cpu.dll"
    for lang in LANGUAGES:
        assert "torch_cpu.dll" in cause.text(lang)["title"]


@pytest.mark.parametrize("text, kind", [("exit code 3221225781", MODULE_NOT_FOUND),
                                        ("exited with code -1073741515", MODULE_NOT_FOUND),
                                        ("Process finished with exit code -1073741701", BAD_IMAGE)])
def test_an_ntstatus_exit_code_in_decimal_is_read_as_its_hexadecimal(text, kind):
    assert classify_error(text).kind == kind


def test_pips_access_denied_while_installing_is_an_install_problem_naming_the_file():
    cause = classify_error(PIP_IN_USE)
    assert cause.kind == ACCESS_DENIED and cause.advice == "install-file-in-use" and cause.dll == "c10.dll"
    for lang in LANGUAGES:
        assert "c10.dll" in cause.text(lang)["title"] and "pip" in cause.text(lang)["title"]
    assert "install problem" in _words(cause) and "python.exe" in _words(cause)


@pytest.mark.parametrize("text, dll", [
    ("Failed to load Python DLL 'C:\\Users\\bob\\AppData\\Local\\Temp\\_MEI123\\python311.dll'.\n"
     "LoadLibrary: The specified module could not be found.", "python311.dll"),
    ("[PYI-4711:ERROR] Error loading Python DLL", None),
])
def test_pyinstallers_loader_messages_are_said_as_its_own(text, dll):
    cause = classify_error(text)
    assert cause.advice == "pyinstaller-python-dll" and cause.dll == dll
    assert "PyInstaller" in _words(cause) and "PyInstaller" in _words(cause, "zh_CN")


def test_an_import_whose_reason_was_cut_off_says_so_and_names_the_dlls_of_its_folder():
    text = "Traceback (most recent call last):\n  import cv2\nImportError: DLL load failed while importing cv2\n"
    cause = classify_error(text)
    assert cause.advice == "import-reason-cut" and cause.dll == "cv2.pyd"
    said = subprocess.run([sys.executable, "-m", "app", "explain", text], capture_output=True, text=True,
                          encoding="utf-8", timeout=60).stdout
    assert "cut off" in said and "opencv_videoio_ffmpeg" in said



@pytest.mark.parametrize("text, kind, lang", [
    ("OSError: [WinError 1114] Routine di inizializzazione della libreria di collegamento dinamico (DLL) non "
     "riuscita. Error loading \"c10.dll\"", "dll-init-failed", "it"),
    ("ImportError: DLL load failed while importing _C: DLL(동적 연결 라이브러리) 초기화 루틴을 실패했습니다.",
     "dll-init-failed", "ko"),
    ("ImportError: DLL load failed while importing _C: Acesso negado.", "access-denied", "pt"),
    ("python.exe - Entry Point Not Found\nc10.dll", "procedure-not-found", "en"),
    ("python.exe - 无法找到入口 torch_cpu.dll", "procedure-not-found", "zh_CN"),
])
def test_windows_words_in_more_languages_and_the_popups_title_retyped(text, kind, lang):
    cause = classify_error(text)
    assert (cause.kind, cause.language) == (kind, lang)
