"""Classifying pasted Windows DLL errors (English and Chinese) and the plain-words texts for each cause.

The inputs are real: the seed error, messages quoted from public issue threads (URLs beside them),
Windows' own message-box wording, and Wine's wording as measured with FormatMessageW under Wine 8.
"""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.i18n import LANGUAGES
from app.probes.error_text import (
    ADVICE,
    FIELDS,
    KINDS,
    ErrorCause,
    advice_catalogue,
    catalogue,
    classify_error,
)

SEED_EN = (r'OSError: [WinError 126] The specified module could not be found. Error loading '
           r'"C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\lib\fbgemm.dll" or one of its dependencies.')
SEED_ZH = (r'OSError: [WinError 126] 找不到指定的模块。 Error loading '
           r'"D:\ComfyUI_windows_portable\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll" '
           r'or one of its dependencies.')
ENTRY_POINT_BOX_ZH = (r"无法定位程序输入点 omp_get_max_threads 于动态链接库 "
                      r"D:\ComfyUI\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll 上。")

# https://github.com/shiyu-coder/Kronos/issues/166 (torch 2.9 with an old msvcp140.dll)
TRACEBACK_1114_ZH = r"""Traceback (most recent call last):
  File "D:\python_project\开源项目\Kronos\examples\prediction_example.py", line 6, in <module>
    from model import Kronos, KronosTokenizer, KronosPredictor
  File "D:\python_project\开源项目\Kronos\model\__init__.py", line 1, in <module>
    from .kronos import KronosTokenizer, Kronos, KronosPredictor
  File "D:\python_project\开源项目\Kronos\model\kronos.py", line 3, in <module>
    import torch
  File "D:\python_project\开源项目\Kronos\.venv\Lib\site-packages\torch\__init__.py", line 281, in <module>
    _load_dll_libraries()
  File "D:\python_project\开源项目\Kronos\.venv\Lib\site-packages\torch\__init__.py", line 264, in _load_dll_libraries
    raise err
OSError: [WinError 1114] 动态链接库(DLL)初始化例程失败。 Error loading "D:\python_project\开源项目\Kronos\.venv\Lib\site-packages\torch\lib\c10.dll" or one of its dependencies.
"""  # noqa: E501

# The same traceback on an English Windows, from a ComfyUI venv.
TRACEBACK_1114_EN = r"""Traceback (most recent call last):
  File "C:\Users\alice\ComfyUI\main.py", line 136, in <module>
    import comfy.utils
  File "C:\Users\alice\ComfyUI\comfy\utils.py", line 20, in <module>
    import torch
  File "C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\__init__.py", line 281, in <module>
    _load_dll_libraries()
  File "C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\__init__.py", line 264, in _load_dll_libraries
    raise err
OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\lib\c10.dll" or one of its dependencies.
"""  # noqa: E501

# https://github.com/harry0703/MoneyPrinterTurbo/issues/90
OMP_15 = ("OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.\n"
          "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program. "
          "That is dangerous, since it can degrade performance or cause incorrect results. The best thing to do "
          "is to ensure that only a single OpenMP runtime is linked into the process, e.g. by avoiding static "
          "linking of the OpenMP runtime in any library. As an unsafe, unsupported, undocumented workaround you "
          "can set the environment variable KMP_DUPLICATE_LIB_OK=TRUE to allow the program to continue to "
          "execute, but that may cause crashes or silently produce incorrect results. For more information, "
          "please see http://www.intel.com/software/products/support/.")

BANNED_EN_WORDS = ("module", "hresult", "ordinal", "procedure", "entry point")


def texts_of(cause: ErrorCause) -> str:
    return " ".join(cause.text("en").values()) + " " + " ".join(cause.text("zh_CN").values())


# --- the seed error --------------------------------------------------------------------------------------


def test_seed_error_is_a_missing_file_and_names_fbgemm():
    cause = classify_error(SEED_EN)
    assert cause.kind == "module-not-found"
    assert cause.winerror == 126
    assert cause.hresult is None
    assert cause.dll == "fbgemm.dll"
    assert cause.dll_path == r"C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\lib\fbgemm.dll"
    assert cause.symbol is None
    assert cause.language == "en"


def test_seed_error_on_chinese_windows_is_the_same_cause_in_chinese():
    cause = classify_error(SEED_ZH)
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == ("module-not-found", 126, "fbgemm.dll", "zh_CN")
    assert cause.dll_path == r"D:\ComfyUI_windows_portable\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll"


def test_seed_error_explained_in_both_languages_names_the_dll_and_points_to_the_diagnosis():
    cause = classify_error(SEED_EN)
    en, zh = cause.text("en"), cause.text("zh_CN")
    assert "fbgemm.dll" in en["title"] and "fbgemm.dll" in zh["title"]
    assert "Torch DLL Doctor" in en["action"] and "Torch DLL Doctor" in zh["action"]
    assert "diagnosis" in en["action"] and "诊断" in zh["action"]


def test_error_from_a_job_runner_with_spaces_in_the_path():
    # https://github.com/ostris/ai-toolkit/issues/91
    cause = classify_error(r'Error running job: [WinError 126] 找不到指定的模块。 Error loading '
                           r'"C:\Users\daizh\Documents\LORA Traning\ai-toolkit\venv\Lib\site-packages\torch\lib'
                           r'\fbgemm.dll" or one of its dependencies.')
    assert cause.kind == "module-not-found"
    assert cause.dll == "fbgemm.dll"
    assert cause.dll_path.startswith(r"C:\Users\daizh\Documents\LORA Traning")


def test_doubled_full_stop_from_comfyui_portable_is_tolerated():
    # https://github.com/Comfy-Org/ComfyUI/issues/3703
    cause = classify_error(r'OSError: [WinError 126] The specified module could not be found.。 Error loading "K:\Comfy'
                           r'UI_windows_portable\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll" or one of its '
                           r'dependencies.')
    assert (cause.kind, cause.dll, cause.language) == ("module-not-found", "fbgemm.dll", "en")


def test_other_windows_language_is_classified_by_the_number_and_wrapped_lines_are_joined():
    # https://github.com/kohya-ss/sd-scripts/issues/1597 (German Windows, log wrapped by the console)
    cause = classify_error('02:54:18-197331 ERROR    Could not load torch: [WinError 126] Das angegebene Modul wurde '
                           'nicht gefunden. Error loading\n                         '
                           r'"P:\AI\kohya_ss\venv\lib\site-packages\torch\lib\fbgemm.dll" or one of its dependencies.')
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == ("module-not-found", 126, "fbgemm.dll", "de")


def test_curly_quotes_around_the_path_are_understood():
    cause = classify_error("OSError: [WinError 126] 找不到指定的模块。 Error loading “D:\\AI\\venv\\Lib\\site-packages"
                           "\\torch\\lib\\fbgemm.dll” or one of its dependencies.")
    assert cause.dll == "fbgemm.dll"
    assert cause.dll_path == r"D:\AI\venv\Lib\site-packages\torch\lib\fbgemm.dll"


def test_message_alone_without_a_number_is_enough():
    assert classify_error("The specified module could not be found.").kind == "module-not-found"
    assert classify_error("找不到指定的模块。").kind == "module-not-found"
    cause = classify_error("The specified\r\n  MODULE could not\nbe found")
    assert (cause.kind, cause.winerror, cause.language) == ("module-not-found", 126, "en")


# --- message boxes ------------------------------------------------------------------------------------


def test_chinese_entry_point_message_box_gives_function_and_dll_path():
    cause = classify_error(ENTRY_POINT_BOX_ZH)
    assert cause.kind == "procedure-not-found"
    assert cause.winerror == 127
    assert cause.symbol == "omp_get_max_threads"
    assert cause.dll == "fbgemm.dll"
    assert cause.dll_path == r"D:\ComfyUI\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll"
    assert cause.language == "zh_CN"
    assert "omp_get_max_threads" in cause.text("zh_CN")["explanation"]
    assert "omp_get_max_threads" in cause.text("en")["explanation"]


def test_entry_point_message_naming_only_a_dll_file_has_no_path():
    # The seed document's message box (docs/knowledge.md): ordinal 703 of libomp140.
    cause = classify_error("无法定位程序输入点 omp_get_max_threads 于动态链接库 libomp140.x86_64.dll 上")
    assert (cause.kind, cause.symbol, cause.dll, cause.dll_path) == (
        "procedure-not-found", "omp_get_max_threads", "libomp140.x86_64.dll", None)


def test_english_entry_point_message_box():
    cause = classify_error("The procedure entry point omp_get_max_threads could not be located in the dynamic link "
                           r"library C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\lib\fbgemm.dll.")
    assert (cause.kind, cause.winerror, cause.language) == ("procedure-not-found", 127, "en")
    assert cause.symbol == "omp_get_max_threads"
    assert cause.dll == "fbgemm.dll"
    assert cause.dll_path == r"C:\Users\alice\ComfyUI\venv\Lib\site-packages\torch\lib\fbgemm.dll"


def test_entry_point_message_box_wrapped_over_lines_with_a_cpp_function_name():
    cause = classify_error("The procedure entry point\n?dispatchKeySetToDispatchKey_@DispatchKeyExtractor@c10@@QEBA?AW4"
                           "DispatchKey@2@VDispatchKeySet@2@00@Z could not be located in the dynamic link library\n"
                           r"C:\Program Files\My App\torch_cpu.dll.")
    assert cause.kind == "procedure-not-found"
    assert cause.symbol.startswith("?dispatchKeySetToDispatchKey_@")
    assert cause.dll == "torch_cpu.dll"
    assert cause.dll_path == r"C:\Program Files\My App\torch_cpu.dll"


def test_function_number_message_box_gives_the_number_as_the_function():
    cause = classify_error("The ordinal 703 could not be located in the dynamic link library libomp140.x86_64.dll.")
    assert (cause.kind, cause.symbol, cause.dll) == ("procedure-not-found", "#703", "libomp140.x86_64.dll")
    cause = classify_error("无法定位序数703于动态链接库libomp140.x86_64.dll上。")
    assert (cause.kind, cause.symbol, cause.dll, cause.language) == (
        "procedure-not-found", "#703", "libomp140.x86_64.dll", "zh_CN")


def test_code_execution_cannot_proceed_names_the_missing_dll():
    cause = classify_error("The code execution cannot proceed because libomp140.x86_64.dll was not found. "
                           "Reinstalling the program may fix this problem.")
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == (
        "module-not-found", 126, "libomp140.x86_64.dll", "en")
    cause = classify_error("由于找不到 VCRUNTIME140_1.dll，无法继续执行代码。重新安装程序可能会解决此问题。")
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == (
        "module-not-found", 126, "VCRUNTIME140_1.dll", "zh_CN")


def test_older_windows_missing_dll_message_box():
    cause = classify_error("The program can't start because MSVCP140.dll is missing from your computer. "
                           "Try reinstalling the program to fix this problem.")
    assert (cause.kind, cause.dll) == ("module-not-found", "MSVCP140.dll")
    cause = classify_error("无法启动此程序，因为计算机中丢失 MSVCP140.dll。尝试重新安装该程序以解决此问题。")
    assert (cause.kind, cause.dll, cause.language) == ("module-not-found", "MSVCP140.dll", "zh_CN")


def test_ctypes_could_not_find_module_is_a_missing_file():
    cause = classify_error(r"FileNotFoundError: Could not find module 'C:\Users\alice\ComfyUI\venv\Lib\site-packages"
                           r"\llama_cpp\lib\llama.dll' (or one of its dependencies). Try using the full path with "
                           "constructor syntax.")
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == ("module-not-found", 126, "llama.dll", None)
    assert cause.dll_path.endswith(r"\llama_cpp\lib\llama.dll")


# --- the other causes -----------------------------------------------------------------------------------


def test_multi_line_traceback_ending_in_1114_for_c10():
    for traceback, language in ((TRACEBACK_1114_ZH, "zh_CN"), (TRACEBACK_1114_EN, "en")):
        cause = classify_error(traceback)
        assert cause.kind == "dll-init-failed"
        assert cause.winerror == 1114
        assert cause.dll == "c10.dll"
        assert cause.dll_path.endswith(r"\site-packages\torch\lib\c10.dll")
        assert cause.language == language
        assert "c10.dll" in cause.text("en")["title"]
        assert "Visual C++" in cause.text("en")["explanation"]


def test_dll_initialization_message_with_full_width_parentheses():
    cause = classify_error("动态链接库（DLL）初始化例程失败。")
    assert (cause.kind, cause.winerror, cause.language) == ("dll-init-failed", 1114, "zh_CN")


def test_openmp_error_15_is_an_openmp_conflict_on_libiomp5md():
    cause = classify_error(OMP_15)
    assert cause.kind == "openmp-conflict"
    assert cause.dll == "libiomp5md.dll"
    assert cause.winerror is None
    assert cause.language is None  # the OpenMP runtime speaks English on every Windows
    assert "KMP_DUPLICATE_LIB_OK" in cause.text("en")["action"]


def test_openmp_error_15_inside_a_chinese_log():
    # https://github.com/modelscope/ms-agent/issues/175
    cause = classify_error("2023-12-09 17:18:49,734 - modelscope - INFO - Loading done!\n" + OMP_15)
    assert (cause.kind, cause.dll) == ("openmp-conflict", "libiomp5md.dll")


def test_winerror_182_is_an_openmp_conflict():
    cause = classify_error(r'OSError: [WinError 182] The operating system cannot run %1. Error loading "C:\Users'
                           r'\alice\miniconda3\envs\ai\Lib\site-packages\torch\lib\shm.dll" or one of its '
                           r'dependencies.')
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == ("openmp-conflict", 182, "shm.dll", "en")
    cause = classify_error("操作系统无法运行 %1。")
    assert (cause.kind, cause.winerror, cause.language) == ("openmp-conflict", 182, "zh_CN")


def test_winerror_182_names_the_dll_torch_was_loading_in_both_languages():
    # https://github.com/pytorch/pytorch/issues/89752 (Anaconda, torch 1.13)
    cause = classify_error(r'OSError: [WinError 182] Operating system can\'t execute %1. Error loading "I:\Programms'
                           r'\AnaCONDA\lib\site-packages\torch\lib\shm.dll" or one of its dependencies.')
    assert (cause.kind, cause.winerror, cause.dll, cause.advice) == ("openmp-conflict", 182, "shm.dll",
                                                                     "remove-duplicate-openmp")
    assert "shm.dll" in cause.text("en")["title"] and "shm.dll" in cause.text("en")["explanation"]
    assert "shm.dll" in cause.text("zh_CN")["title"] and "OpenMP" in cause.text("zh_CN")["title"]
    unnamed = classify_error("操作系统无法运行 %1。")  # no DLL, no conda: not stated as an OpenMP clash
    assert unnamed.dll is None and unnamed.text("en")["title"] == "A DLL of another version was loaded"


def test_cudnn_code_193_is_its_own_copy_made_for_another_system_or_damaged():
    # https://github.com/DeepLabCut/DeepLabCut/issues/1947
    cause = classify_error("2022-08-13 12:58:33.458304: I tensorflow/stream_executor/cuda/cuda_dnn.cc:384] Loaded "
                           "cuDNN version 8500\nCould not load library cudnn_cnn_infer64_8.dll. Error code 193")
    assert (cause.kind, cause.winerror, cause.dll, cause.advice) == ("bad-image", 193, "cudnn_cnn_infer64_8.dll",
                                                                     "reinstall-cudnn")
    en, zh = cause.text("en"), cause.text("zh_CN")
    assert "cudnn_cnn_infer64_8.dll" in en["title"] and "damaged" in en["title"] and "损坏" in zh["title"]
    assert "cuDNN" in en["action"] and "64-bit Python" not in " ".join(en.values())
    # torch's own copy in torch\lib is torch's to put back; a 32-bit Python is still the 32-bit advice
    inside = classify_error('OSError: [WinError 193] %1 is not a valid Win32 application. Error loading "C:\\env'
                            '\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.')
    assert (inside.dll, inside.advice) == ("cudnn_cnn_infer64_8.dll", "reinstall-torch")
    assert classify_error("Could not load library cudnn64_8.dll. Error code 193 (Python 3.8 32-bit)").advice == \
        "64-bit-python"


@pytest.mark.parametrize("text, symbol", [
    ("the procedure entry point ?foo@@YAXXZ could not be located in the dynamic link library C:\\Users\\a\\venv"
     "\\Lib\\site-packages\\torchvision\\_C.pyd", "?foo@@YAXXZ"),
    # https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/514: typed from the dialog, the name cut short
    ("the procedure entry point ?tls_local_tensor_type_@....... set could not be located in the dynamic link "
     "library \nC:\\......\\lib\\site-packages\\torchvision\\_C.pyd.", "?tls_local_tensor_type_@.......set"),
])
def test_lower_case_entry_point_dialog_names_torchvisions_extension(text, symbol):
    cause = classify_error(text)
    assert (cause.kind, cause.dll, cause.symbol, cause.advice) == ("procedure-not-found", "_C.pyd", symbol,
                                                                   "reinstall-package")
    assert cause.dll_path.endswith("torchvision\\_C.pyd")


def test_winerror_127_traceback_names_the_dll_torch_was_loading():
    # https://github.com/zeyad-mansour/lunar/issues/58
    cause = classify_error(r'OSError: [WinError 127] The specified procedure could not be found. Error loading '
                           r'"C:\Users\Admin\AppData\Local\Programs\Python\Python39\lib\site-packages\torch\lib'
                           r'\c10_cuda.dll" or one of its dependencies.')
    assert (cause.kind, cause.winerror, cause.dll, cause.symbol) == ("procedure-not-found", 127, "c10_cuda.dll", None)
    assert cause.text("en")["explanation"]  # reads well without a function name


@pytest.mark.parametrize("text, kind, code, language", [
    ("OSError: [WinError 193] %1 is not a valid Win32 application", "bad-image", 193, "en"),
    ("OSError: [WinError 193] %1 不是有效的 Win32 应用程序。", "bad-image", 193, "zh_CN"),
    ("%1 is not a valid Win32 application.", "bad-image", 193, "en"),
    ("PermissionError: [WinError 5] Access is denied", "access-denied", 5, "en"),
    ("OSError: [WinError 5] 拒绝访问。", "access-denied", 5, "zh_CN"),
    ("The specified procedure could not be found.", "procedure-not-found", 127, "en"),
    ("找不到指定的程序。", "procedure-not-found", 127, "zh_CN"),
    ("A dynamic link library (DLL) initialization routine failed.", "dll-init-failed", 1114, "en"),
    ("The operating system cannot run %1.", "openmp-conflict", 182, "en"),
])
def test_windows_system_messages(text, kind, code, language):
    cause = classify_error(text)
    assert (cause.kind, cause.winerror, cause.language) == (kind, code, language)


@pytest.mark.parametrize("text, kind, language", [
    # FormatMessageW under Wine 8, English and zh_CN locales (measured in the Windows lab)
    ("Module not found.", "module-not-found", "en"),
    ("找不到模块。", "module-not-found", "zh_CN"),
    ("Procedure not found.", "procedure-not-found", "en"),
    ("找不到过程。", "procedure-not-found", "zh_CN"),
    ("Bad EXE format for %1.", "bad-image", "en"),
    ("%1 的 EXE 格式无效。", "bad-image", "zh_CN"),
    ("Access denied.", "access-denied", "en"),
    ("访问被拒绝。", "access-denied", "zh_CN"),
    ("DLL initialization failed.", "dll-init-failed", "en"),
    ("DLL 初始化失败。", "dll-init-failed", "zh_CN"),
    ("Invalid ordinal for %1.", "openmp-conflict", "en"),
    ("%1 的序数词无效。", "openmp-conflict", "zh_CN"),
])
def test_wine_wording_is_recognised(text, kind, language):
    cause = classify_error(text)
    assert (cause.kind, cause.language) == (kind, language)


def test_wine_wording_at_the_end_of_a_line_without_full_stop():
    assert classify_error("OSError: [WinError 126] Module not found\nnext line").kind == "module-not-found"
    assert classify_error("拒绝访问").kind == "access-denied"
    assert classify_error("Access denied").language == "en"


def test_wine_seed_error_from_the_windows_lab():
    cause = classify_error(r'OSError: [WinError 126] Module not found. Error loading "C:\lab\envs\seed\Lib'
                           r'\site-packages\torch\lib\fbgemm.dll" or one of its dependencies.')
    assert (cause.kind, cause.dll, cause.language) == ("module-not-found", "fbgemm.dll", "en")
    # tests/lab/test_winelab.py, zh_CN locale
    cause = classify_error(r'OSError: [WinError 126] 找不到模块。 Error loading "C:\lab\envs\seed\Lib'
                           r'\site-packages\torch\lib\fbgemm.dll" or one of its dependencies.')
    assert (cause.kind, cause.dll, cause.language) == ("module-not-found", "fbgemm.dll", "zh_CN")


# --- numbers and HRESULTs -------------------------------------------------------------------------------


@pytest.mark.parametrize("code, kind", [(126, "module-not-found"), (127, "procedure-not-found"), (193, "bad-image"),
                                        (5, "access-denied"), (182, "openmp-conflict"), (1114, "dll-init-failed")])
def test_bare_numbers_and_every_spelling_of_the_code(code, kind):
    hresult = 0x80070000 | code
    spellings = [code, str(code), f"[WinError {code}]", f"WinError {code}", f"OSError: [WinError {code}]",
                 f"error code {code}", f"Error {code}", f"LoadLibrary failed with error {code}:",
                 hresult, hresult - (1 << 32), f"0x{hresult:08X}", f"0x{hresult:08x}",
                 f"HRESULT: 0x{hresult:08X}", f"(Exception from HRESULT: 0x{hresult:08x})",
                 f"error {hresult - (1 << 32)}", f"code {hresult}"]
    for spelling in spellings:
        cause = classify_error(spelling)
        assert (cause.kind, cause.winerror) == (kind, code), spelling


def test_hresult_is_normalised_to_upper_case_hex():
    cause = classify_error("HRESULT: 0x8007007e")
    assert (cause.kind, cause.winerror, cause.hresult) == ("module-not-found", 126, "0x8007007E")
    assert classify_error(-2147024770).hresult == "0x8007007E"
    assert classify_error(2147942526).hresult == "0x8007007E"
    assert classify_error("failed: -2147024770").hresult == "0x8007007E"
    assert classify_error(0x8007045A).hresult == "0x8007045A"
    assert classify_error(126).hresult is None


def test_explicit_winerror_wins_over_hresult_and_hresult_over_message_text():
    cause = classify_error("[WinError 127] 找不到指定的程序。 (HRESULT 0x8007007E) "
                           "The specified module could not be found.")
    assert (cause.kind, cause.winerror) == ("procedure-not-found", 127)
    cause = classify_error("The specified module could not be found. (Exception from HRESULT: 0x800700C1)")
    assert (cause.kind, cause.winerror, cause.hresult) == ("bad-image", 193, "0x800700C1")
    assert cause.language == "en"


def test_winerror_wins_over_a_generic_error_number():
    cause = classify_error("[WinError 1114] A dynamic link library (DLL) initialization routine failed. "
                           "Process exited with error code 5")
    assert (cause.kind, cause.winerror) == ("dll-init-failed", 1114)


def test_dll_from_error_loading_wins_over_the_message_box():
    cause = classify_error(SEED_ZH + "\n" + ENTRY_POINT_BOX_ZH.replace("fbgemm.dll", "torch_cpu.dll"))
    assert (cause.kind, cause.dll) == ("module-not-found", "fbgemm.dll")
    assert cause.symbol == "omp_get_max_threads"


def test_the_final_exception_of_a_chained_traceback_decides():
    text = (SEED_EN + "\n\nDuring handling of the above exception, another exception occurred:\n\n" + TRACEBACK_1114_EN)
    cause = classify_error(text)
    assert (cause.kind, cause.dll) == ("dll-init-failed", "c10.dll")


# --- what is not one of ours ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "", "   \n", "hello",
    "ImportError: DLL load failed while importing _C",
    "  File \"C:\\x\\main.py\", line 126, in <module>", "OMP: Info #276: omp_set_nested routine deprecated",
    "Listening on http://127.0.0.1:8188", "0x00007FF8A1B2C3D4", "build 1722345600",
    "Access denied for user 'root'@'localhost'",
])
def test_unrecognised_text_is_unknown(text):
    cause = classify_error(text)
    assert cause.kind == "unknown"
    assert cause.winerror is None
    assert all(cause.text(lang)["title"] for lang in LANGUAGES)


def test_unknown_windows_error_keeps_its_number():
    cause = classify_error("FileNotFoundError: [WinError 2] The system cannot find the file specified")
    assert (cause.kind, cause.winerror) == ("unknown", 2)
    assert (classify_error(2).kind, classify_error(2).winerror) == ("unknown", 2)


@pytest.mark.parametrize("value", [-1, 0, 1 << 40, -(1 << 40), 0x80004005, True, None, 1.5, b"126"])
def test_odd_values_are_unknown_and_never_raise(value):
    assert classify_error(value).kind in KINDS


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_classified_without_raising(text):
    cause = classify_error(text)
    assert cause.kind in KINDS
    for lang in LANGUAGES:
        assert all(cause.text(lang)[field] for field in FIELDS)


FRAGMENTS = [SEED_EN, SEED_ZH, ENTRY_POINT_BOX_ZH, OMP_15, "[WinError ", "126", "]", "0x8007", "007F", "Error loading",
             '"', "“", "”", "。", "（", "）", "\n", " ", "于动态链接库", "上", "The procedure entry point ", "x.dll",
             " could not be located in the dynamic link library ", "-2147024770", "由于找不到", "，无法继续执行代码"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=12))
def test_mixed_real_fragments_are_classified_without_raising(pieces):
    cause = classify_error("".join(pieces))
    assert cause.kind in KINDS
    assert cause.dll is None or ("\\" not in cause.dll and cause.dll)
    for lang in LANGUAGES:
        assert "{" not in "".join(cause.text(lang).values()) or "{" in "".join(pieces)


# --- the texts ------------------------------------------------------------------------------------------


def test_catalogue_has_every_kind_and_nothing_else():
    assert set(catalogue()) == set(KINDS)
    for kind in KINDS:
        assert set(catalogue()[kind]) == set(LANGUAGES)


def test_every_kind_has_all_three_texts_in_both_languages():
    for kind in KINDS:
        for lang in LANGUAGES:
            entry = catalogue()[kind][lang]
            for field in FIELDS:
                assert entry.get(field, "").strip(), (kind, lang, field)


def test_catalogue_keys_and_placeholders_are_only_the_known_ones():
    allowed_keys = {f + s + general for f in FIELDS
                    for s in ("", "_no_symbol", "_no_dll", "_no_dll_no_symbol", "_owner", "_owner_no_dll")
                    for general in ("", "_general")}
    for kind in KINDS:
        for lang in LANGUAGES:
            for key, template in catalogue()[kind][lang].items():
                assert key in allowed_keys, (kind, lang, key)
                key = key.removesuffix("_general")  # words for a text that names no PyTorch: the same rules
                names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
                assert names <= {"dll", "symbol", "owner"}, (kind, lang, key, names)
                assert ("owner" in names) == ("_owner" in key), (kind, lang, key)  # only there, and always
                if key.endswith("_no_dll_no_symbol"):
                    assert not names, (kind, lang, key)
                elif key.endswith("_no_dll"):
                    assert "dll" not in names, (kind, lang, key)
                elif key.endswith("_no_symbol"):
                    assert "symbol" not in names, (kind, lang, key)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dll, symbol", [("fbgemm.dll", "omp_get_max_threads"), ("fbgemm.dll", None),
                                         (None, "omp_get_max_threads"), (None, None)])
def test_texts_read_well_with_or_without_dll_and_function(kind, dll, symbol):
    cause = ErrorCause(kind, dll=dll, symbol=symbol)
    for lang in LANGUAGES:
        text = cause.text(lang)
        assert set(text) == set(FIELDS)
        for field in FIELDS:
            assert text[field].strip()
            assert "{" not in text[field] and "}" not in text[field]
            assert "None" not in text[field] and " -" not in text[field]
        if dll is not None and kind not in ("unknown", "not-a-dll-error"):
            assert dll in text["title"]


def test_english_texts_avoid_programmer_words():
    for kind in KINDS:
        for key, template in catalogue()[kind]["en"].items():
            for word in BANNED_EN_WORDS:
                assert word not in template.lower(), (kind, key, word)
        filled = " ".join(ErrorCause(kind, dll="fbgemm.dll", symbol="#703").text("en").values()).lower()
        assert not any(word in filled for word in BANNED_EN_WORDS)


def test_chinese_texts_are_chinese_and_not_copies_of_english():
    for kind in KINDS:
        zh, en = catalogue()[kind]["zh_CN"], catalogue()[kind]["en"]
        assert set(zh) == set(en), kind  # the same variants in both languages
        for key, template in zh.items():
            assert len(re.findall(r"[\u4e00-\u9fff]", template)) >= 4, (kind, key)
            assert template != en[key]


def test_every_action_points_to_the_diagnosis():
    for kind in set(KINDS) - {"not-a-dll-error"}:  # that one must not talk about torch at all
        assert "Torch DLL Doctor" in catalogue()[kind]["en"]["action"]
        assert "诊断" in catalogue()[kind]["zh_CN"]["action"]


def test_other_languages_fall_back_to_english():
    cause = classify_error(SEED_ZH)
    assert cause.text("fr") == cause.text("en")
    assert cause.text("") == cause.text("en")
    assert cause.text("zh_CN") != cause.text("en")


# --- more wordings, more errors, and what is not ours ------------------------------------------------------


@pytest.mark.parametrize("text", ["ModuleNotFoundError: No module named 'torch'",
                                  "Module not found: Error: Can't resolve './App'",
                                  "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
                                  "Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>"])
def test_error_reports_of_something_else_are_not_dll_errors_and_do_not_talk_about_torch(text):
    cause = classify_error(text)
    memory = "out of memory" in text  # what it does mean, in its own words
    assert (cause.kind, cause.winerror, cause.dll, cause.advice) == (
        "not-a-dll-error", None, None, "gpu-memory" if memory else "not-torch")
    for lang in LANGUAGES:
        assert "torch" not in " ".join(cause.text(lang).values()).lower()


# --- advice you can trust: a cause as fact only with its evidence -------------------------------

@pytest.mark.parametrize(("text", "advice", "said"), [
    ("CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be "
     "asynchronously reported", "cuda-kernel-image", "cu128"),
    ("torch.OutOfMemoryError: CUDA error: out of memory", "gpu-memory", "ran out of memory"),
    ("Allocation on device 0 would exceed allowed memory. (out of memory)", "gpu-memory", "ran out of memory"),
])
def test_gpu_errors_without_a_prefix_are_no_dll_error_and_say_what_they_mean(text, advice, said):
    cause = classify_error(text)
    assert (cause.kind, cause.advice) == ("not-a-dll-error", advice)
    assert said in cause.text("en")["explanation"] and "torch" not in str(cause.text("zh_CN")).lower()


def test_torchcodec_names_ffmpeg_not_the_vc_runtime():
    text = ("RuntimeError: Could not load libtorchcodec. Likely causes:\n 1. FFmpeg is not properly installed...\n"
            "[start of libtorchcodec loading traceback]\nFFmpeg version 8: Could not load this library: C:\\x\\"
            "torchcodec\\libtorchcodec_core8.dll\nFFmpeg version 7: Could not load this library: C:\\x\\torchcodec"
            "\\libtorchcodec_core7.dll")
    cause = classify_error(text)
    assert cause.advice == "torchcodec-ffmpeg"
    words = cause.text("en")
    assert "FFmpeg" in words["title"] and "shared" in words["action"]
    assert "Visual C++ runtime is not what is missing" in words["explanation"]


def test_nvrtc_builtins_is_a_cuda_version_mismatch_not_the_driver():
    cause = classify_error("RuntimeError: nvrtc: error: failed to open nvrtc-builtins64_121.dll.\n  Make sure "
                           "that nvrtc-builtins64_121.dll is installed correctly.")
    assert cause.advice == "cuda-version-mismatch" and "graphics driver" not in cause.text("en")["explanation"]


def test_winerror_1455_first_is_the_cause_of_a_later_access_denied_on_a_cudnn_file():
    text = ("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
            "\"C:\\ai\\venv\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies.\n"
            "During handling of the above exception, another exception occurred:\n"
            "PermissionError: [WinError 5] Access is denied: 'C:\\ai\\venv\\lib\\site-packages\\torch\\lib\\"
            "cudnn_ops_infer64_8.dll'")
    cause = classify_error(text)
    assert (cause.kind, cause.winerror, cause.advice) == ("paging-file-too-small", 1455, "paging-file")


def test_cublas_1114_in_torch_lib_is_not_said_to_come_with_the_driver():
    text = ('OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading '
            '"C:\\ZLUDA\\venv\\lib\\site-packages\\torch\\lib\\cublas64_11.dll" or one of its dependencies.')
    cause = classify_error(text)
    said = cause.text("en")["explanation"]
    assert cause.advice == "cuda-library-init"
    assert "not with the graphics driver" in said and "ZLUDA" in said and "most likely" in said.lower()


@pytest.mark.parametrize(("text", "advice"), [
    ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\a\\torch\\lib\\shm.dll" '
     'or one of its dependencies.', "shm-likely"),
    ('torch 2.3.0\nOSError: [WinError 126] The specified module could not be found. Error loading "C:\\a\\torch\\'
     'lib\\shm.dll" or one of its dependencies.', "upgrade-torch"),
    ('OSError: [WinError 126] The specified module could not be found. Error loading "\\\\server\\share\\venv\\'
     'torch\\lib\\shm.dll" or one of its dependencies.', "shm-likely"),
])
def test_shm_dll_is_blamed_on_torch_230_only_when_the_text_shows_it(text, advice):
    cause = classify_error(text)
    assert cause.advice == advice
    if advice == "shm-likely":
        assert "most likely" in cause.text("en")["explanation"].lower()


def test_winerror_182_outside_conda_on_another_dll_is_mixed_versions_not_openmp():
    cause = classify_error('OSError: [WinError 182] The operating system cannot run %1. Error loading '
                           '"C:\\sd\\venv\\lib\\site-packages\\torch\\lib\\nvfuser_codegen.dll" or one of its '
                           'dependencies.')
    assert cause.advice == "mixed-versions" and "OpenMP" not in cause.text("en")["title"]


def test_c10_hip_is_sent_to_amds_driver_never_the_vc_runtime():
    cause = classify_error('OSError: [WinError 126] The specified module could not be found. Error loading '
                           '"C:\\ai\\venv\\lib\\site-packages\\torch\\lib\\c10_hip.dll" or one of its dependencies.')
    words = cause.text("en")
    assert cause.advice == "amd-hip" and "AMD" in words["action"]
    assert "Visual C++ Redistributable" not in words["action"]


@pytest.mark.parametrize(("pasted", "name"), [
    ('OSError: [WinError 126] The specified module could not be found. Error loading "...fbgemm.dll" or one of its '
     'dependencies.', "fbgemm.dll"),
    ('OSError: [WinError 182] Error loading "C:\\x\\torch\\lib\\nvfuser_codegen. dll" or one of its dependencies.',
     "nvfuser_codegen.dll"),
])
def test_misquoted_names_are_named_as_the_user_meant_them(pasted, name):
    assert classify_error(pasted).dll == name


@pytest.mark.parametrize("text, language", [
    ("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
     r'"C:\env\Lib\site-packages\torch\lib\cudnn_cnn_infer64_8.dll" or one of its dependencies.', "en"),
    (r'OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "F:\a\torch\lib\cudnn_cnn_infer64_8.dll" '
     "or one of its dependencies.", "zh_CN"),
    ('Die Auslagerungsdatei ist zu klein, um diesen Vorgang durchzuführen. Error loading "cudnn_cnn_infer64_8.dll"',
     "de"),
    ('ページング ファイルが小さすぎるため、この操作を完了できません。 Error loading "cudnn_cnn_infer64_8.dll"', "ja"),
])
def test_paging_file_too_small_while_loading_the_cuda_dlls(text, language):
    cause = classify_error(text)
    assert (cause.kind, cause.winerror, cause.dll, cause.language) == (
        "paging-file-too-small", 1455, "cudnn_cnn_infer64_8.dll", language)
    assert cause.advice == "paging-file"
    assert "paging file" in cause.text("en")["action"] and "虚拟内存" in cause.text("zh_CN")["action"]


@pytest.mark.parametrize("text, kind, language", [
    ("Das angegebene Modul wurde nicht gefunden.", "module-not-found", "de"),
    ("Le module spécifié est introuvable.", "module-not-found", "fr"),
    ("No se puede encontrar el módulo especificado.", "module-not-found", "es"),
    ("Не найден указанный модуль.", "module-not-found", "ru"),
    ("指定されたモジュールが見つかりません。", "module-not-found", "ja"),
    ("지정된 모듈을 찾을 수 없습니다.", "module-not-found", "ko"),
    ("Die angegebene Prozedur wurde nicht gefunden.", "procedure-not-found", "de"),
    ("La procédure spécifiée est introuvable.", "procedure-not-found", "fr"),
    ("Не найдена указанная процедура.", "procedure-not-found", "ru"),
    ("指定されたプロシージャが見つかりません。", "procedure-not-found", "ja"),
    ("%1 ist keine zulässige Win32-Anwendung.", "bad-image", "de"),
    ("%1 n’est pas une application Win32 valide.", "bad-image", "fr"),
    ("%1 は有効な Win32 アプリケーションではありません。", "bad-image", "ja"),
    ("Eine DLL-Initialisierungsroutine ist fehlgeschlagen.", "dll-init-failed", "de"),
    ("Отказано в доступе.", "access-denied", "ru"),
    ("The specified program could not be found.", "procedure-not-found", "en"),
    ("T he specified module could not be found. (0x8007007E)", "module-not-found", "en"),
    ("The specified mod\nule could not be fo\nund.", "module-not-found", "en"),
])
def test_windows_messages_in_other_languages_and_wrapped_anywhere(text, kind, language):
    cause = classify_error(text)
    assert (cause.kind, cause.language) == (kind, language)


def test_dll_and_function_names_wrapped_by_a_message_box_or_a_console():
    cause = classify_error("The procedure entry point omp_get_max\n_threads could not be located in the dynamic link "
                           "library C:\\ComfyUI\\venv\\Lib\\site-packages\\torch\\lib\\fbge\nmm.dll.")
    assert (cause.kind, cause.symbol, cause.dll) == ("procedure-not-found", "omp_get_max_threads", "fbgemm.dll")
    assert cause.advice == "place-libomp140"
    cause = classify_error('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\env'
                           '\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_in\nfer64_8.dll" or one of its dependencies.')
    assert cause.dll == "cudnn_cnn_infer64_8.dll"


@pytest.mark.parametrize("text, kind, dll, advice", [
    ("Could not load library cudnn_ops_infer64_8.dll. Error code 126\nPlease make sure cudnn_ops_infer64_8.dll is in "
     "your library path!", "module-not-found", "cudnn_ops_infer64_8.dll", "install-cudnn"),
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", "module-not-found",
     "cudnn_ops64_9.dll", "install-cudnn"),
    ("FileNotFoundError: Could not find module 'nvcuda.dll' (or one of its dependencies).", "module-not-found",
     "nvcuda.dll", "gpu-driver"),
    ("The program can't start because MSVCP140.dll is missing from your computer.", "module-not-found",
     "MSVCP140.dll", "install-vc-runtime"),
    ("Unable to load DLL 'LibTorchSharp' or one of its dependencies: The specified module could not be found. "
     "(Exception from HRESULT: 0x8007007E)", "module-not-found", "LibTorchSharp", "install-vc-runtime"),
    ('OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\env\\Lib\\site-packages'
     '\\torch\\lib\\torch_python.dll" or one of its dependencies.', "procedure-not-found", "torch_python.dll",
     "reinstall-torch"),
    ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\env\\Lib\\site-packages'
     '\\torch\\lib\\fbgemm.dll" or one of its dependencies.', "module-not-found", "fbgemm.dll", "place-libomp140"),
    ('OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "C:\\env'
     '\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.', "dll-init-failed", "c10.dll",
     "install-vc-runtime"),
    ("OSError: [WinError 193] %1 is not a valid Win32 application (Python 3.8 32-bit)", "bad-image", None,
     "64-bit-python"),
])
def test_the_dll_is_named_cleanly_and_the_advice_fits(text, kind, dll, advice):
    cause = classify_error(text)
    assert (cause.kind, cause.dll, cause.advice) == (kind, dll, advice)


def test_the_missing_nvidia_driver_is_named():
    cause = classify_error("FileNotFoundError: Could not find module 'nvcuda.dll' (or one of its dependencies).")
    assert "NVIDIA" in cause.text("en")["explanation"] and "NVIDIA" in cause.text("zh_CN")["action"]


def test_escape_sequences_and_control_characters_never_reach_the_words():
    cause = classify_error('OSError: [WinError 126] The specified module could not be found. Error loading '
                           '"C:\\x\\torch\\lib\\\x1b[31mfbg\x07emm.dll\x1b[0m" or one of its dependencies.')
    assert cause.dll == "fbgemm.dll"
    cause = classify_error("The procedure entry point \x1b]0;pwned\x07evil\x1b[2J could not be located in the dynamic "
                           "link library \x9b31mx.dll")
    for lang in LANGUAGES:
        words = "".join(cause.text(lang).values())
        assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in words)


def test_every_cause_carries_advice_and_every_advice_has_plain_words():
    for text in ["126", "hello", SEED_EN, OMP_15, "ModuleNotFoundError: x"]:
        assert classify_error(text).advice in ADVICE
    allowed = {f + s + general for f in FIELDS for s in ("", "_no_symbol", "_no_dll", "_no_dll_no_symbol")
               for general in ("", "_general")}
    assert set(advice_catalogue()) <= set(ADVICE)
    for advice, texts in advice_catalogue().items():
        assert set(texts) == set(LANGUAGES), advice
        assert set(texts["en"]) == set(texts["zh_CN"]) <= allowed, advice
        for key, template in texts["en"].items():
            assert not any(word in template.lower() for word in BANNED_EN_WORDS), (advice, key)
            assert len(re.findall(r"[\u4e00-\u9fff]", texts["zh_CN"][key])) >= 4, (advice, key)
        if "action" in texts["en"]:
            assert "Torch DLL Doctor" in texts["en"]["action"] and "诊断" in texts["zh_CN"]["action"], advice


def test_no_explanation_names_a_repair_by_its_id():
    """What `explain`, the cards, the guides and the messages say is for readers: a repair is described in words,
    never by its id."""
    import json

    from app.repair.actions import ACTIONS
    from app.resources import resources_folder

    def texts(value):
        if isinstance(value, dict):
            for inner in value.values():
                yield from texts(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from texts(inner)
        elif isinstance(value, str):
            yield value

    said = []  # every explanation, finding, guide step and message, in both languages
    for name in ("error_causes.json", "findings.json", "ui_text.json"):
        said += texts(json.loads((resources_folder() / name).read_text(encoding="utf-8")))
    assert len(said) > 1000
    assert [(action, text) for text in said for action in ACTIONS if action in text] == []


def test_winerror_1114_on_c10_names_an_old_copy_loaded_first_as_well_as_an_old_runtime():
    """pytorch/pytorch#166628, #169429: with a current runtime, a program that imports PyQt5 first fails the same."""
    text = (r'OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading '
            r'"C:\app\venv\Lib\site-packages\torch\lib\c10.dll" or one of its dependencies.')
    cause = classify_error(text)
    assert cause.kind == "dll-init-failed" and cause.dll == "c10.dll"
    en, zh = cause.text("en")["explanation"], cause.text("zh_CN")["explanation"]
    assert "too old" in en and "PyQt5" in en and "before torch" in en and '"import torch" works' in en
    assert "版本太旧" in zh and "PyQt5" in zh and "在 torch 之前导入" in zh


def test_the_windows_error_behind_an_errno_22_is_asked_once_in_the_worker_not_when_drawn(monkeypatch):
    """The C runtime's errno 22 hides Windows' own error (a quarantine's 225): it is asked once, by `settle` on
    the worker's thread; drawing the words again (the window does, often) asks nothing."""
    import app.system.files as files
    from app.failures import os_error_words, settle

    asked = []
    monkeypatch.setattr(files, "windows_error_of", lambda path: asked.append(path) or 225)
    error = OSError(22, "Invalid argument", r"C:\venv\torch\lib\torch_cpu.dll")
    settle(error)
    for _ in range(3):
        assert "Protection history" in os_error_words(error, "en")
    assert asked == [r"C:\venv\torch\lib\torch_cpu.dll"]
