"""Turns a Windows DLL loading error, pasted by the user, into a cause a non-programmer understands.

The input is a number (126, an HRESULT such as 0x8007007E as int) or pasted text: a whole Python traceback,
a Windows message box, in English or Simplified Chinese, possibly mixed. :func:`classify_error` finds

- the error: an explicit ``[WinError N]`` / ``error code N`` first, then an HRESULT (``0x8007007E``, or the
  same value in decimal, -2147024770 or 2147942526), then the wording of the system message itself;
- the DLL named: torch's ``Error loading "...\\fbgemm.dll" or one of its dependencies`` wins over the DLL
  in a message box ("The procedure entry point X could not be located in the dynamic link library Y");
- the function named in such a message box, and the language of the system message.

The plain-words texts live in ``resources/error_causes.json``: for every kind, ``en`` and ``zh_CN`` with
``title``, ``explanation`` and ``action``, plus variants for when the DLL or the function is unknown
(``title_no_dll``, ``explanation_no_symbol``, ``explanation_no_dll_no_symbol``...).
:meth:`ErrorCause.text` picks, for each field, the first variant whose placeholders are all known, so no
sentence is ever built from translated fragments.

Messages are matched after mapping full-width punctuation (``。：（）“”``) to ASCII one character for one
character, so match positions stay valid in the cleaned text (paths are cut from it). Cleaning takes out terminal
escape sequences and control characters (:func:`printable`) and the escaping of JSON and repr() output. Windows'
system messages (English, Chinese, German, French, Spanish, Italian, Portuguese, Dutch, Polish, Turkish, Russian,
Japanese, Korean) are matched with all whitespace taken out, so a console or a message box may wrap them anywhere;
DLL and function names wrapped over lines are joined again.

Besides the kind, every cause carries an ``advice`` (one of :data:`ADVICE`): what fixed the same error in public
threads (``tests/data/pasted_errors.json``), e.g. fbgemm.dll missing -> ``place-libomp140`` (torch 2.4.0), c10.dll
failing to start -> ``install-vc-runtime`` (torch 2.9), nvcuda.dll missing -> ``gpu-driver``. An error report that
is about something else ("CUDA out of memory", "No module named ...") is ``not-a-dll-error``, whose words never
mention PyTorch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Optional, Union

from app.i18n import supported
from app.probes.error_catalogue import placeholders, resource

MODULE_NOT_FOUND = "module-not-found"
PROCEDURE_NOT_FOUND = "procedure-not-found"
BAD_IMAGE = "bad-image"
ACCESS_DENIED = "access-denied"
OPENMP_CONFLICT = "openmp-conflict"
DLL_INIT_FAILED = "dll-init-failed"
PAGING_FILE = "paging-file-too-small"
CRASH = "crash"  # not a load failure: the program ran and crashed (an access violation), in a module it names
NOT_A_DLL_ERROR = "not-a-dll-error"
UNKNOWN = "unknown"

#: Windows error code -> kind.
CODE_KINDS = {
    126: MODULE_NOT_FOUND,  # ERROR_MOD_NOT_FOUND
    127: PROCEDURE_NOT_FOUND,  # ERROR_PROC_NOT_FOUND
    193: BAD_IMAGE,  # ERROR_BAD_EXE_FORMAT
    5: ACCESS_DENIED,  # ERROR_ACCESS_DENIED
    182: OPENMP_CONFLICT,  # ERROR_INVALID_ORDINAL: conflicting OpenMP packages in conda
    1114: DLL_INIT_FAILED,  # ERROR_DLL_INIT_FAILED
    1455: PAGING_FILE,  # ERROR_COMMITMENT_LIMIT: the paging file is too small (loading the big CUDA DLLs)
    4551: ACCESS_DENIED,  # ERROR_SYSTEM_INTEGRITY_POLICY_VIOLATION: Application Control blocked the file
    1260: ACCESS_DENIED,  # ERROR_ACCESS_DISABLED_BY_POLICY: blocked by group policy
    32: ACCESS_DENIED,  # ERROR_SHARING_VIOLATION: a program holds the file (pip replacing a .pyd in use)
}
#: The NTSTATUS a program that could not start exits with (0xC0000139, STATUS_ENTRYPOINT_NOT_FOUND) -> kind.
NTSTATUS_KINDS = {"c0000135": MODULE_NOT_FOUND, "c0000139": PROCEDURE_NOT_FOUND, "c000007b": BAD_IMAGE,
                  "c0000142": DLL_INIT_FAILED}
# the same as a process's exit code, unsigned and signed (3221225781 and -1073741515 are 0xC0000135)
_NTSTATUS_DECIMAL = {str(value): f"{value:08x}" for value in (0xC0000135, 0xC0000139, 0xC000007B, 0xC0000142)}
_NTSTATUS_DECIMAL.update({str(value - (1 << 32)): f"{value:08x}" for value in (0xC0000135, 0xC0000139, 0xC000007B,
                                                                                0xC0000142)})
NTSTATUS_NAMES = {"STATUS_DLL_NOT_FOUND": MODULE_NOT_FOUND, "STATUS_ENTRYPOINT_NOT_FOUND": PROCEDURE_NOT_FOUND,
                  "STATUS_INVALID_IMAGE_FORMAT": BAD_IMAGE, "STATUS_DLL_INIT_FAILED": DLL_INIT_FAILED}
#: kind -> the code its system message stands for.
KIND_CODES = {MODULE_NOT_FOUND: 126, PROCEDURE_NOT_FOUND: 127, BAD_IMAGE: 193, ACCESS_DENIED: 5, OPENMP_CONFLICT: 182,
              DLL_INIT_FAILED: 1114, PAGING_FILE: 1455}
KINDS = (*KIND_CODES, CRASH, NOT_A_DLL_ERROR, UNKNOWN)
#: What to do, by what fixed the same error in public threads (tests/data/pasted_errors.json).
ADVICE = ("install-vc-runtime", "place-libomp140", "upgrade-torch", "reinstall-torch", "reinstall-package",
          "64-bit-python", "gpu-driver", "install-cudnn", "reinstall-cudnn", "paging-file", "allow-blocked-file",
          "app-control", "remove-duplicate-openmp", "not-torch", "diagnose",
          # causes said as "most likely", in order, where the text does not show which one it is
          "cuda-library-init", "cuda-version-mismatch", "shm-likely", "mixed-versions", "amd-hip",
          "cuda-kernel-image", "gpu-memory", "torchcodec-ffmpeg", "directml",
          # errors of 2025-26 that are not PyTorch's DLLs: a GPU newer than the build, NumPy 2 beside a package made
          # for NumPy 1, companions built for another torch, CUDA libraries other packages need, no torch wheel
          "gpu-too-new", "numpy-2", "xformers-mismatch", "bitsandbytes-cuda", "onnxruntime-cuda", "ctranslate2-cuda",
          "no-torch-build", "torch-cuda-library",
          # what is no DLL failing to load, or says no reason: pip replacing a file in use, PyInstaller's loader, a
          # crash (an access violation), "DLL load failed while importing X" with its reason cut off
          "install-file-in-use", "pyinstaller-python-dll", "crash", "import-reason-cut")
#: An advice that lists the likely causes in order (the text does not show which) names these fixes among them.
LIKELY_COVERS = {"shm-likely": ("upgrade-torch", "install-vc-runtime", "reinstall-torch"),
                 "cuda-library-init": ("gpu-driver", "reinstall-torch"),
                 "cuda-version-mismatch": ("reinstall-torch",), "mixed-versions": ("reinstall-torch",),
                 "gpu-memory": ("not-torch",), "cuda-kernel-image": ("not-torch",), "gpu-too-new": ("not-torch",),
                 "torchcodec-ffmpeg": ("reinstall-package",),
                 "torch-cuda-library": ("reinstall-torch", "install-vc-runtime", "restore-torch-files")}
FIELDS = ("title", "explanation", "action")
#: Tried in this order for each field; the first that exists and whose placeholders are all known is used.
# _owner: words naming {owner}, the package whose DLL it is (with or without the DLL's name)
_VARIANT_SUFFIXES = ("_owner", "_owner_no_dll", "", "_no_symbol", "_no_dll", "_no_dll_no_symbol")
# a text that names neither PyTorch nor a program that uses it: each variant's "_general" words first, where it has some
_GENERAL_SUFFIXES = tuple(s for suffix in _VARIANT_SUFFIXES for s in (suffix + "_general", suffix))

_HRESULT_FACILITY_WIN32 = 0x80070000


@dataclass(frozen=True)
class ErrorCause:
    kind: str  # one of KINDS
    winerror: Optional[int] = None  # the Windows error code (126, 127, 193, 5, 182, 1114, 1455...)
    hresult: Optional[str] = None  # "0x8007007E" when the input had an HRESULT
    dll: Optional[str] = None  # file name only: "fbgemm.dll"
    dll_path: Optional[str] = None  # the full path, when the input gave one
    symbol: Optional[str] = None  # the function named in an entry-point message; "#703" for an ordinal
    language: Optional[str] = None  # "en", "zh_CN", "de", "ja"...: language of the pasted system message
    advice: Optional[str] = None  # one of ADVICE: what fixes it
    owner: Optional[str] = None  # the package or program the DLL belongs to, when it is not PyTorch ("onnxruntime")
    names_torch: bool = True  # the text names PyTorch, its files or a program that uses it; else the words do not

    def text(self, lang: str) -> dict[str, str]:
        """{"title", "explanation", "action"} in `lang` ("en" or "zh_CN"; anything else gives "en"),
        with {dll} and {symbol} filled in. The advice's own words, when it has some, come before the kind's."""
        lang = supported(lang)
        texts = catalogue().get(self.kind) or catalogue()[UNKNOWN]
        entries = [texts[lang]]
        advice = advice_catalogue().get(self.advice or "")
        if advice:
            entries.insert(0, advice[lang])
        values = {"dll": self.dll, "symbol": self.symbol, "owner": self.owner}
        suffixes = _VARIANT_SUFFIXES if self.names_torch else _GENERAL_SUFFIXES
        return {name: _fill(entries, name, values, suffixes) for name in FIELDS}


@cache
def catalogue() -> dict[str, dict[str, dict[str, str]]]:
    """resources/error_causes.json: {kind: {lang: {field or field_variant: text}}}."""
    return {kind: texts for kind, texts in resource().items() if kind not in ("advice", "facts")}


@cache
def advice_catalogue() -> dict[str, dict[str, dict[str, str]]]:
    """resources/error_causes.json "advice": {advice: {lang: {field or field_variant: text}}}; every field is
    optional (the kind's own words are used for the rest)."""
    return resource().get("advice", {})


def _fill(entries: list[dict[str, str]], name: str, values: dict[str, Optional[str]],
          suffixes: tuple[str, ...] = _VARIANT_SUFFIXES) -> str:
    for entry in entries:
        for suffix in suffixes:
            template = entry.get(name + suffix)
            if template is not None and all(values.get(p) is not None for p in placeholders(template)):
                return template.format_map(values)
    # The catalogue's tests make this unreachable; if it happens anyway, show a dash rather than crash.
    return entries[-1][name].format_map(_Dashes((k, v) for k, v in values.items() if v is not None))


class _Dashes(dict):
    def __missing__(self, key: str) -> str:
        return "-"


# --- reading the input --------------------------------------------------------------------------------------

# One character for one character, so that a match's span is valid in the cleaned text too.
_PUNCTUATION = str.maketrans({
    "。": ".", "．": ".", "，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "［": "[", "］": "]",
    "“": '"', "”": '"', "„": '"', "＂": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "＇": "'", "´": "'",
    "＃": "#", "　": " ", "\u00a0": " ", "\u2009": " ", "\u200b": " ", "\ufeff": " ", "\t": " ",
    **{chr(0xFF10 + i): str(i) for i in range(10)},  # full-width digits
})

# Terminal escape sequences (colours, cursor moves, window titles) and the other control characters.
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal escape sequences and control characters (line breaks and tabs are kept), so that
    nothing taken from a paste can change the terminal it is printed on."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n").replace("\r", "\n")))


def _clean(text: str) -> str:
    """The pasted text as a message: no escapes, \\" and doubled backslashes of JSON or repr() output undone."""
    text = printable(text)
    # \"C:\\x.dll\" from a Jupyter error's JSON; a run of backslashes is tried from its start only (linear)
    text = re.sub(r'(?<!\\)\\+(["\'])', r"\1", text)
    return re.sub(r"\\{2,}", lambda m: "\\", text)


_I = re.IGNORECASE
_EXT = r"(?:dll|pyd|exe|sys|drv|ocx|cpl|so)"
# A DLL name or path ending in a known extension (also wrapped over lines), else one word.
_DLL_REF = rf'(?P<dll>[^"<>|*?\n]{{0,300}}?(?:\n[^"<>|*?\n]{{0,300}}?)?\.{_EXT}(?!\w)|[^\s"<>|*?]+)'
# "\s*(?:[:=]\s*)?", never "\s*[:=]?\s*": two runs of spaces side by side split a long run every way (quadratic)
_WINERROR = re.compile(r"\bwin\s*error\s*(?:[:=]\s*)?(-?\d{1,12})(?!\d)", _I)
_ERROR_CODE = re.compile(r"(?:\berror(?:\s*code)?|错误(?:代码|码)?|エラー\s*コード|Fehlercode|code\s+d'erreur)"
                         r"\s*(?:[:=]\s*)?(-?\d{1,12})(?![\w.])", _I)
_HRESULT_HEX = re.compile(r"(?<!\w)0x([89a-f][0-9a-f]{7})(?!\w)", _I)  # failure HRESULTs have the top bit set
_HRESULT_DEC = re.compile(r"(?<![\w.\-])(-?\d{10})(?![\w.])")
# torch's 'Error loading "X" or one of its dependencies' (typos: "Erro", "Eror"); the path may be wrapped
_ERROR_LOADING = re.compile(r"\be?rr?o?r?\s+loading\s+(?P<q>[\"'])(?P<path>[^\"'\n]{1,400}(?:\n[^\"'\n]{1,400}){0,3}?)"
                            r"(?P=q)", _I)
# Other programs' words for the DLL they could not load; the kind comes from the message or the code.
_NAMED_DLL = [re.compile(p, _I) for p in (
    r"\bcould\s+not\s+find\s+module\s+(?P<q>[\"'])(?P<path>[^\"'\n]+?)(?P=q)",  # ctypes
    r"\bunable\s+to\s+load\s+(?:dll|shared\s+library)\s+(?P<q>[\"'])(?P<path>[^\"'\n]+?)(?P=q)",  # .NET
    r"无法加载\s*DLL\s*(?P<q>[\"'])(?P<path>[^\"'\n]+?)(?P=q)",  # .NET, Chinese
    r"\bcould\s+not\s+load\s+library\s+(?P<path>[^\s\"']+?\.dll)(?!\w)",  # cuDNN, onnxruntime
    r"\bcould\s+not\s+(?:locate|find)\s+(?P<q>[\"']?)(?P<path>[^\s\"']+?\.dll)(?P=q)(?!\w)",  # cuDNN 8/9, TensorFlow
    r"\bfailed\s+to\s+load\s+(?:dll\s+|library\s+)?(?P<q>[\"']?)(?P<path>[^\s\"']+?\.dll)(?P=q)(?!\w)",
    r"\bcannot\s+load\s+(?P<q>[\"'])(?P<path>[^\"'\n]+?\.dll)(?P=q)",
    r"\bcould\s+not\s+load\s+this\s+library\s*:\s*(?P<path>[^\n]+?\.dll)(?!\w)",  # torchcodec's loader
    r"\bfailed\s+to\s+open\s+(?P<q>[\"']?)(?P<path>[^\s\"']+?\.dll)(?P=q)(?!\w)",  # NVRTC's builtins
    r"\bAccess\s+is\s+denied\s*:\s*(?P<q>[\"'])(?P<path>[^\"'\n]+?\.(?:dll|pyd))(?P=q)",  # pip, installing
    r"\bbeing\s+used\s+by\s+another\s+process\s*:\s*(?P<q>[\"'])(?P<path>[^\"'\n]+?\.(?:dll|pyd))(?P=q)",
    r"\bFailed\s+to\s+load\s+Python\s+DLL\s+(?P<q>[\"'])(?P<path>[^\"'\n]+?\.dll)(?P=q)",  # PyInstaller
)]
# "Could not load library X. Error code 126" / "Could not locate X" without a code: a missing file.
_MISSING_WORDS = re.compile(r"\bcould\s+not\s+(?:locate|find)\s+[\"']?[^\s\"']+?\.dll\b|"
                            r"\bfailed\s+to\s+open\s+[\"']?nvrtc-builtins[^\s\"']*?\.dll\b|"
                            r"\bplease\s+make\s+sure\s+\S+\.dll\s+is\s+in\s+your\s+library\s+path", _I)
_DEPENDENCIES = re.compile(r"\be?rr?o?r?\s+loading\s+[\"'][^\n]{1,400}?[\"']\s+or\s+one\s+of\s+its\s+dep", _I)
_CTYPES_NOT_FOUND = re.compile(r"\bcould\s+not\s+find\s+module\s+(?P<q>[\"'])(?P<path>[^\n]+?)(?P=q)", _I)
_OMP_15 = re.compile(r"(?:\bOMP\s*:\s*Error\s*#\s*15\b|\bError\s*#\s*15\s*:\s*(?=Initializing))\s*:?\s*"
                     r"(?:Initializing\s+(?P<dll>[^\s,]+))?", _I)
_OMP_ALREADY = re.compile(r"\bbut\s+found\s+(?P<dll>[^\s,]+)\s+already\s+initiali[sz]ed", _I)
_NTSTATUS = re.compile(r"\b0x(?P<code>c0000135|c0000139|c000007b|c0000142)\b|"
                       r"(?<![\w.\-])(?P<dec>3221225(?:781|785|595|794)|-107374(?:1515|1511|1701|1502))(?![\w.])|"
                       r"\b(?P<name>STATUS_(?:DLL_NOT_FOUND|ENTRYPOINT_NOT_FOUND|INVALID_IMAGE_FORMAT|DLL_INIT_FAILED))\b",
                       _I)
_ANY_DLL = re.compile(r"(?<![\w.\-{])[\w\-+]+(?:\.[\w\-+]+)*\.dll(?!\w)", _I)
# a crash: exception 0xC0000005 (exit code 3221225477 or -1073741819), and Event Viewer's record of one
_ACCESS_VIOLATION = re.compile(r"\b0xc0000005\b|(?<![\w.\-])(?:3221225477|-1073741819)(?![\w.])|"
                               r"\b(?:EXCEPTION|STATUS)_ACCESS_VIOLATION\b|\baccess\s+violation\b", _I)
_FAULTING_MODULE = re.compile(r"(?:\bFaulting\s+module\s+name|错误模块名称|Name\s+des\s+fehlerhaften\s+Moduls)"
                              r"[ \t]*[:=][ \t]*(?P<dll>[^\s,]{1,200})", _I)
# Python's words with the reason after its colon cut off: the line ends after the module's name
_IMPORT_ALONE = re.compile(r"\bDLL\s+load\s+failed\s+while\s+importing\s+(?P<module>[\w.]{1,200})[ \t]*(?=\n|$)", _I)
_PIP_INSTALLING = re.compile(r"\bCould\s+not\s+install\s+packages\s+due\s+to\s+an?\s+(?:OSError|EnvironmentError)|"
                             r"\bAttempting\s+uninstall\b|\bInstalling\s+collected\s+packages\b", _I)
_PYINSTALLER = re.compile(r"\bFailed\s+to\s+load\s+Python\s+DLL\b|\[PYI-\d+:ERROR\]|"
                          r"\bError\s+loading\s+Python\s+DLL\b", _I)


def _en(phrase: str) -> str:
    """An English phrase as a regex: words separated by any whitespace (wrapped lines), whole words."""
    return r"\b" + r"\s+".join(re.escape(word) for word in phrase.split()) + r"\b"


def _zh(phrase: str) -> str:
    """A Chinese phrase as a regex: whitespace (or none) allowed between any two characters."""
    return r"\s*".join(re.escape(ch) for ch in phrase if not ch.isspace())


# "... could not be located in the dynamic link library Y." / "... 于动态链接库 Y 上。" (Y: a name or a full path)
_EN_IN_LIBRARY = _en("could not be located in") + r"\s+(?:the\s+)?" + _en("dynamic link library") + r"\s+" + _DLL_REF
# the name ends at its extension: "上" follows it at once, and a CJK character is a word character to re's \w
_ZH_IN_LIBRARY = _zh("于动态链接库") + rf"\s*(?P<dll>[^\n]+?(?:\n[^\n]+?)?\.{_EXT}(?![A-Za-z0-9_])|[^\n]+?)\s*上"
# A function name, also when a message box wrapped it over lines or the user cut it short with a gap
# ("?tls_local_tensor_type_@....... set": pytorch-YOLOv3 #514); the words after it end it.
_SYMBOL = r"(?P<symbol>\S+?(?:\s*\n\s*\S+?|[ \t]+\S+?){0,8}?)"

# Wine's short messages are common phrases too ("Module not found: Error: Can't resolve...", "Access denied for
# user..."), so they count only as a whole sentence: followed by a full stop or the end of the line.
_END = r"(?=[ \t]*(?:\.|\r?\n|$))"

# (kind, language, pattern): messages that name the DLL or the function. Windows' own wording, and Wine's
# (measured with FormatMessageW under Wine 8, English and zh_CN locales), which is what users of the Windows lab see.
_MESSAGES: list[tuple[str, str, re.Pattern[str]]] = [
    (kind, lang, re.compile(pattern, _I)) for kind, lang, pattern in [
        (PROCEDURE_NOT_FOUND, "en", _en("procedure entry point") + r"\s+" + _SYMBOL + r"\s+" + _EN_IN_LIBRARY),
        (PROCEDURE_NOT_FOUND, "en", r"\bthe\s+ordinal\s+(?P<ordinal>\d+)\s+" + _EN_IN_LIBRARY),
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("无法定位程序输入点") + r"\s*(?P<symbol>[^\n]+?(?:\n[^\n]+?){0,4}?)\s*" +
         _ZH_IN_LIBRARY),  # a long C++ name, wrapped by the message box
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("无法定位序数") + r"\s*(?P<ordinal>\d+)\s*" + _ZH_IN_LIBRARY),
        (MODULE_NOT_FOUND, "en", _en("code execution cannot proceed because") + r"\s+(?P<dll>[^\n]+?)\s+" +
         _en("was not found")),
        (MODULE_NOT_FOUND, "en", r"\bprogram\s+can'?t\s+start\s+because\s+(?P<dll>[^\n]+?)\s+is\s+missing"),
        (MODULE_NOT_FOUND, "zh_CN", _zh("由于找不到") + r"\s*(?P<dll>[^\n]+?)\s*,\s*" + _zh("无法继续执行代码")),
        (MODULE_NOT_FOUND, "zh_CN", _zh("计算机中丢失") + r"\s*" + _DLL_REF),
        (MODULE_NOT_FOUND, "en", _en("module not found") + _END),  # Wine
        (MODULE_NOT_FOUND, "zh_CN", _zh("找不到模块") + _END),  # Wine
        (PROCEDURE_NOT_FOUND, "en", _en("procedure not found") + _END),  # Wine
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("找不到过程") + _END),  # Wine
        (ACCESS_DENIED, "en", _en("access denied") + _END),  # Wine
        (ACCESS_DENIED, "zh_CN", _zh("访问被拒绝") + _END),  # Wine
        (DLL_INIT_FAILED, "en", _en("DLL initialization failed") + _END),  # Wine
        (DLL_INIT_FAILED, "zh_CN", r"\bDLL\s*" + _zh("初始化失败") + _END),  # Wine
    ]
]

# (kind, language, phrase): Windows' system messages (FormatMessage) in the languages users paste most. They are
# matched with every space and line break taken out, so a console or a message box may wrap them anywhere, even
# inside a word ("T he specified module").
_SYSTEM_MESSAGES: list[tuple[str, str, str]] = [
    (MODULE_NOT_FOUND, "en", "The specified module could not be found"),
    (MODULE_NOT_FOUND, "en", "The specified module was not found"),
    (MODULE_NOT_FOUND, "en", "cannot find module."),
    (MODULE_NOT_FOUND, "zh_CN", "找不到指定的模块"),
    (MODULE_NOT_FOUND, "zh_TW", "找不到指定的模組"),
    (MODULE_NOT_FOUND, "de", "Das angegebene Modul wurde nicht gefunden"),
    (MODULE_NOT_FOUND, "fr", "Le module spécifié est introuvable"),
    (MODULE_NOT_FOUND, "es", "No se puede encontrar el módulo especificado"),
    (MODULE_NOT_FOUND, "it", "Impossibile trovare il modulo specificato"),
    (MODULE_NOT_FOUND, "pt", "Não foi possível encontrar o módulo especificado"),
    (MODULE_NOT_FOUND, "pt", "O módulo especificado não foi encontrado"),
    (MODULE_NOT_FOUND, "nl", "Kan opgegeven module niet vinden"),
    (MODULE_NOT_FOUND, "pl", "Nie można odnaleźć określonego modułu"),
    (MODULE_NOT_FOUND, "tr", "Belirtilen modül bulunamadı"),
    (MODULE_NOT_FOUND, "ru", "Не найден указанный модуль"),
    (MODULE_NOT_FOUND, "ja", "指定されたモジュールが見つかりません"),
    (MODULE_NOT_FOUND, "ko", "지정된 모듈을 찾을 수 없습니다"),
    (PROCEDURE_NOT_FOUND, "en", "The specified procedure could not be found"),
    (PROCEDURE_NOT_FOUND, "en", "The specified program could not be found"),  # 找不到指定的程序, translated back
    (PROCEDURE_NOT_FOUND, "en", "The specified procedure cannot be found"),
    (PROCEDURE_NOT_FOUND, "zh_CN", "找不到指定的程序"),
    (PROCEDURE_NOT_FOUND, "de", "Die angegebene Prozedur wurde nicht gefunden"),
    (PROCEDURE_NOT_FOUND, "fr", "La procédure spécifiée est introuvable"),
    (PROCEDURE_NOT_FOUND, "es", "No se encontró el proceso especificado"),
    (PROCEDURE_NOT_FOUND, "es", "No se puede encontrar el procedimiento especificado"),
    (PROCEDURE_NOT_FOUND, "it", "Impossibile trovare la procedura specificata"),
    (PROCEDURE_NOT_FOUND, "pt", "Não foi possível encontrar o procedimento especificado"),
    (PROCEDURE_NOT_FOUND, "nl", "Kan opgegeven procedure niet vinden"),
    (PROCEDURE_NOT_FOUND, "pl", "Nie można odnaleźć określonej procedury"),
    (PROCEDURE_NOT_FOUND, "ru", "Не найдена указанная процедура"),
    (PROCEDURE_NOT_FOUND, "ja", "指定されたプロシージャが見つかりません"),
    (PROCEDURE_NOT_FOUND, "ko", "지정된 프로시저를 찾을 수 없습니다"),
    (BAD_IMAGE, "en", "is not a valid Win32 application"),
    (BAD_IMAGE, "en", "bad EXE format for"),  # Wine
    (BAD_IMAGE, "zh_CN", "不是有效的 Win32 应用程序"),
    (BAD_IMAGE, "zh_CN", "的 EXE 格式无效"),  # Wine
    (BAD_IMAGE, "de", "ist keine zulässige Win32-Anwendung"),
    (BAD_IMAGE, "fr", "n'est pas une application Win32 valide"),
    (BAD_IMAGE, "es", "no es una aplicación Win32 válida"),
    (BAD_IMAGE, "it", "non è un'applicazione di Win32 valida"),
    (BAD_IMAGE, "pt", "não é um aplicativo Win32 válido"),
    (BAD_IMAGE, "ru", "не является приложением Win32"),
    (BAD_IMAGE, "ja", "は有効な Win32 アプリケーションではありません"),
    (BAD_IMAGE, "ko", "올바른 Win32 응용 프로그램이 아닙니다"),
    (ACCESS_DENIED, "en", "access is denied"),
    (ACCESS_DENIED, "en", "An Application Control policy has blocked this file"),
    (ACCESS_DENIED, "zh_CN", "应用程序控制策略已阻止此文件"),  # WinError 4551 on a Chinese Windows
    (ACCESS_DENIED, "de", "Eine Anwendungssteuerungsrichtlinie hat diese Datei blockiert"),  # 4551, German
    (ACCESS_DENIED, "es", "Una directiva de Control de aplicaciones bloqueó este archivo"),  # 4551, Spanish
    (ACCESS_DENIED, "zh_CN", "拒绝访问"),
    (ACCESS_DENIED, "de", "Zugriff verweigert"),
    (ACCESS_DENIED, "fr", "Accès refusé"),
    (ACCESS_DENIED, "es", "Acceso denegado"),
    (ACCESS_DENIED, "it", "Accesso negato"),
    (ACCESS_DENIED, "pt", "Acesso negado"),
    (ACCESS_DENIED, "ru", "Отказано в доступе"),
    (ACCESS_DENIED, "ja", "アクセスが拒否されました"),
    (ACCESS_DENIED, "ko", "액세스가 거부되었습니다"),
    (DLL_INIT_FAILED, "en", "A dynamic link library (DLL) initialization routine failed"),
    (DLL_INIT_FAILED, "zh_CN", "动态链接库(DLL)初始化例程失败"),
    (DLL_INIT_FAILED, "zh_CN", "动态链接库DLL初始化例程失败"),
    (DLL_INIT_FAILED, "de", "Eine DLL-Initialisierungsroutine ist fehlgeschlagen"),
    (DLL_INIT_FAILED, "fr", "Une routine d'initialisation d'une bibliothèque de liens dynamiques (DLL) a échoué"),
    (DLL_INIT_FAILED, "es", "Error en una rutina de inicialización de biblioteca de vínculos dinámicos (DLL)"),
    (DLL_INIT_FAILED, "ru", "Произошел сбой в программе инициализации библиотеки динамической компоновки (DLL)"),
    (DLL_INIT_FAILED, "it", "Routine di inizializzazione della libreria di collegamento dinamico (DLL) non riuscita"),
    (DLL_INIT_FAILED, "ja", "ダイナミック リンク ライブラリ (DLL) 初期化ルーチンの実行に失敗しました"),
    (DLL_INIT_FAILED, "ko", "DLL(동적 연결 라이브러리) 초기화 루틴을 실패했습니다"),
    # the message boxes' titles, retyped alone ("python.exe - Entry Point Not Found")
    (PROCEDURE_NOT_FOUND, "en", "Entry Point Not Found"),
    (PROCEDURE_NOT_FOUND, "zh_CN", "无法找到入口"),
    (PAGING_FILE, "en", "The paging file is too small for this operation to complete"),
    (PAGING_FILE, "zh_CN", "页面文件太小,无法完成操作"),
    (PAGING_FILE, "de", "Die Auslagerungsdatei ist zu klein"),
    (PAGING_FILE, "fr", "Le fichier de pagination est insuffisant"),
    (PAGING_FILE, "es", "El archivo de paginación es demasiado pequeño"),
    (PAGING_FILE, "it", "Il file di paging è troppo piccolo"),
    (PAGING_FILE, "pt", "O arquivo de paginação é muito pequeno"),
    (PAGING_FILE, "ru", "Файл подкачки слишком мал"),
    (PAGING_FILE, "ja", "ページング ファイルが小さすぎる"),
    (PAGING_FILE, "ko", "페이징 파일이 너무 작"),
    (OPENMP_CONFLICT, "en", "The operating system cannot run"),
    (OPENMP_CONFLICT, "en", "invalid ordinal for"),  # Wine
    (OPENMP_CONFLICT, "zh_CN", "操作系统无法运行"),
    (OPENMP_CONFLICT, "zh_CN", "的序数词无效"),  # Wine
    (OPENMP_CONFLICT, "de", "Das Betriebssystem kann"),
    (OPENMP_CONFLICT, "ru", "Операционная система не может запустить"),
    (OPENMP_CONFLICT, "ja", "オペレーティング システムは %1 を実行できません"),
]


def _squeeze(text: str) -> tuple[str, list[int]]:
    """`text` folded to lower case without any whitespace, and for each of its characters the index in `text`."""
    chars, index = [], []
    for i, ch in enumerate(text):
        if not ch.isspace():
            chars.append(ch)
            index.append(i)
    return "".join(chars).casefold(), index


_SQUEEZED_MESSAGES = [(kind, lang, re.sub(r"\s+", "", phrase.translate(_PUNCTUATION)).casefold())
                      for kind, lang, phrase in _SYSTEM_MESSAGES]

# What makes a text an error report of something else: an exception line, a traceback, an "error:" line.
# a line's own indent only ([^\S\n]): a \s* from every line start over the blank lines below it is quadratic
_OTHER_ERROR = re.compile(r"(?m)(?:\b\w*(?:Error|Exception)\s*:|^[^\S\n]*Traceback\s+\(most\s+recent\s+call\s+last\)|"
                          r"\bCUDA\s+out\s+of\s+memory\b|^[^\S\n]*(?:ERROR|error)\s*:|\bFatal\s+error\b|"
                          r"\bCUDA\s+error\s*:|\bAllocation\s+on\s+device\s+\d+\s+would\s+exceed)")
# Words that tie a text to loading a DLL: never "not a DLL error" then.
_DLL_WORDS = re.compile(r"\.dll\b|\.pyd\b|\bDLL\b|dynamic\s+link|LoadLibrary|动态链接库|OMP:\s*Error|\bdlopen", _I)


@dataclass(frozen=True)
class _Clue:
    at: int
    kind: str
    language: Optional[str] = None
    dll_span: Optional[tuple[int, int]] = None
    symbol: Optional[str] = None


def _code_from_number(value: int) -> tuple[Optional[int], Optional[str]]:
    """A number as (Windows error code, HRESULT): 126 -> (126, None); -2147024770 or 2147942526 ->
    (126, "0x8007007E"). Anything else -> (None, None)."""
    if 0 <= value <= 0xFFFF:
        return value, None
    if -(1 << 31) <= value < (1 << 32):
        unsigned = value & 0xFFFFFFFF
        if unsigned & 0xFFFF0000 == _HRESULT_FACILITY_WIN32:
            return unsigned & 0xFFFF, f"0x{unsigned:08X}"
    return None, None


def _parse_int(text: str) -> Optional[int]:
    text = text.strip()
    try:
        return int(text, 16) if text[:2].lower() == "0x" else int(text)
    except ValueError:
        return None


def _file_name(path: str) -> str:
    return re.split(r"[\\/]", path)[-1]


_BAD_NAME = re.compile(r"[{}%<>|*?\x00-\x1f]")


def _joined_lines(text: str) -> str:
    """A name a console wrapped, joined: each line break taken out with the spaces and tabs beside it (by lines, not
    by a pattern that would try each space of a long run as a start)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return "".join([lines[0].rstrip(" \t"), *(line.strip(" \t") for line in lines[1:-1]), lines[-1].lstrip(" \t")])


def _split_dll(reference: str) -> tuple[Optional[str], Optional[str]]:
    """(file name, full path or None) of a DLL named in a message; None for nothing usable. Line breaks a console
    or a message box put inside the name are taken out."""
    reference = _joined_lines(reference)
    reference = reference.strip().strip("\"'").rstrip(".,;:)").strip()
    reference = re.sub(r"\.\s+(dll|pyd|exe)$", r".\1", reference, flags=_I)  # "nvfuser_codegen. dll"
    reference = re.sub(r"^\.{2,}[\\/]?", "", reference)  # "...fbgemm.dll", a shortened path
    if not reference:
        return None, None
    name = printable(_file_name(reference)).strip()
    if not name or _BAD_NAME.search(name) or len(name) > 120:
        return None, None
    return name, reference if name != reference else None


def classify_error(error: Union[str, int]) -> ErrorCause:
    """The cause of a Windows DLL loading error given as a number or as pasted text. Never raises: input
    that says nothing recognisable gives kind "unknown"; an error report of something else, "not-a-dll-error"."""
    if isinstance(error, bool) or not isinstance(error, (int, str)):
        return ErrorCause(UNKNOWN, advice="diagnose")
    if isinstance(error, int):
        return _from_number(error)
    number = _parse_int(error) if len(error) < 40 else None
    if number is not None:
        return _from_number(number)
    return _from_text(error)


def _from_number(value: int) -> ErrorCause:
    code, hresult = _code_from_number(value)
    kind = CODE_KINDS.get(code, UNKNOWN)
    return ErrorCause(kind, code, hresult, advice=_advice(kind, None, None, None, "", code), names_torch=False)


def _explicit_codes(text: str) -> tuple[list[int], list[int]]:
    """Explicit numbers: [WinError N], else "error (code) N" (every one, and the known ones); the last counts, as the
    last exception of a chained traceback is the one that stopped the program."""
    explicit: list[int] = []
    known_explicit: list[int] = []
    for pattern in (_ERROR_CODE, _WINERROR):
        codes = [_code_from_number(int(m.group(1)))[0] for m in pattern.finditer(text)]
        explicit.extend(c for c in codes if c is not None)
        known = [c for c in codes if c in CODE_KINDS]
        known_explicit = known or known_explicit  # a known [WinError N] replaces any "error N"
    return explicit, known_explicit


def _hresults(text: str) -> list[tuple[int, str]]:
    """HRESULTs, hexadecimal or decimal, as (Windows code or -1, "0x8007007E")."""
    hresults: list[tuple[int, str]] = []
    for m in _HRESULT_HEX.finditer(text):
        value = int(m.group(1), 16)
        code, normal = _code_from_number(value)
        hresults.append((code if code is not None else -1, normal or f"0x{value:08X}"))
    for m in _HRESULT_DEC.finditer(text):
        code, normal = _code_from_number(int(m.group(1)))
        if normal is not None and code is not None:
            hresults.append((code, normal))
    return hresults


def _from_text(original: str) -> ErrorCause:
    original = _clean(original)
    text = original.translate(_PUNCTUATION)

    explicit, known_explicit = _explicit_codes(text)
    hresults = _hresults(text)
    known_hresults = [(c, h) for c, h in hresults if c in CODE_KINDS]

    # 3. the wording of the messages (and the NTSTATUS a program that could not start exits with)
    clues = _message_clues(text)
    for m in _NTSTATUS.finditer(text):
        code = m.group("code") or _NTSTATUS_DECIMAL.get(m.group("dec") or "")
        kind = NTSTATUS_KINDS[code.lower()] if code else NTSTATUS_NAMES[m.group("name").upper()]
        clues.append(_Clue(m.start(), kind))

    kind, code = UNKNOWN, None
    if 1455 in known_explicit and known_explicit[-1] != 1455:
        known_explicit = [1455]  # the paging file ran out first; what failed after it (WinError 5 on a cuDNN file)
    if known_explicit:
        code = known_explicit[-1]
        kind = CODE_KINDS[code]
    elif known_hresults:
        code = known_hresults[-1][0]
        kind = CODE_KINDS[code]
    elif clues:
        kind = max(clues, key=lambda clue: clue.at).kind
        code = KIND_CODES[kind]
        if kind == OPENMP_CONFLICT and all(c.language is None for c in clues if c.kind == OPENMP_CONFLICT):
            code = None  # known only from "OMP: Error #15": no Windows error code involved
    elif explicit:
        code = explicit[-1]
    elif hresults and hresults[-1][0] >= 0:
        code = hresults[-1][0]
    elif _DEPENDENCIES.search(text):  # torch's words without Windows' message: its usual cause
        kind = MODULE_NOT_FOUND

    hresult = next((h for c, h in reversed(hresults) if c == code), hresults[-1][1] if hresults else None)

    matching = [clue for clue in clues if clue.kind == kind] or clues
    language = next((c.language for c in sorted(matching, key=lambda c: -c.at) if c.language), None)
    symbol = next((c.symbol for c in sorted(clues, key=lambda c: -c.at) if c.symbol), None)
    if symbol:
        symbol = printable(re.sub(r"\s+", "", symbol))

    dll, dll_path = None, None
    loading = list(_ERROR_LOADING.finditer(text))  # torch's own words name the DLL it was loading: they win
    for m in reversed(loading):
        dll, dll_path = _split_dll(original[m.start("path"):m.end("path")])
        if dll:
            break
    if dll is None:
        spans = [clue.dll_span for clue in sorted(matching, key=lambda c: -c.at) if clue.dll_span]
        spans += [clue.dll_span for clue in sorted(clues, key=lambda c: -c.at) if clue.dll_span]
        named = [m.span("path") for p in _NAMED_DLL for m in p.finditer(text)]
        spans += sorted(named, key=lambda s: -s[0])
        for start, end in spans:
            dll, dll_path = _split_dll(original[start:end])
            if dll:
                break
    if dll is None and kind != UNKNOWN:  # the last DLL file name anywhere in the text
        names = [m for m in _ANY_DLL.finditer(text)]
        if names:
            dll, dll_path = _split_dll(original[names[-1].start():names[-1].end()])

    if kind == UNKNOWN:
        kind, dll, dll_path = _without_a_load_code(text, code, dll, dll_path)
    advice = _no_code_advice(kind, text) or _advice(kind, dll, dll_path, symbol, text, code)
    return ErrorCause(kind, code, hresult, dll, dll_path, symbol, language, advice, owner_of(dll, dll_path, text),
                      names_torch(text, dll, dll_path))


def _without_a_load_code(text: str, code: Optional[int], dll: Optional[str],
                         dll_path: Optional[str]) -> tuple[str, Optional[str], Optional[str]]:
    """(kind, DLL, path) of a text that shows no load failure's code or message: a crash (an access violation, an
    Event Viewer record: its faulting module), "DLL load failed while importing X" with its reason cut off (X's
    file), a person's own words ("missing fbgemm.dll"), or an error report of something else."""
    faulting = _FAULTING_MODULE.search(text)
    if faulting or _ACCESS_VIOLATION.search(text):
        return CRASH, (_split_dll(faulting.group("dll"))[0] if faulting else dll), None
    alone = _IMPORT_ALONE.search(text)
    if alone and code is None:
        return UNKNOWN, alone.group("module").rsplit(".", 1)[-1] + ".pyd", None
    if dll is None:  # a person's own words: "missing fbgemm.dll", "fbgemm.dll not found"
        said = _OWN_WORDS_MISSING.search(text)
        if said:
            return MODULE_NOT_FOUND, _file_name(next(g for g in said.groups() if g)), dll_path
    if code is None and _NOT_DLL_KINDS.search(text):
        return NOT_A_DLL_ERROR, dll, dll_path  # a build that does not fit (NumPy, xFormers, the GPU, no wheel)
    if code is None and _OTHER_ERROR.search(text) and not _DLL_WORDS.search(text):
        return NOT_A_DLL_ERROR, dll, dll_path
    return UNKNOWN, dll, dll_path


def _no_code_advice(kind: str, text: str) -> Optional[str]:
    """The advice of what is no DLL failing to load, or says no reason: pip replacing a file in use, PyInstaller's
    loader, a crash, an import whose reason was cut off."""
    if kind == ACCESS_DENIED and _PIP_INSTALLING.search(text):
        return "install-file-in-use"
    if _PYINSTALLER.search(text):
        return "pyinstaller-python-dll"
    if kind == CRASH:
        return "crash"
    if kind == UNKNOWN and _IMPORT_ALONE.search(text):
        return "import-reason-cut"
    return None


def import_alone(text: str) -> Optional[str]:
    """X of "DLL load failed while importing X" with nothing after it (its reason cut off), as the text names it."""
    found = _IMPORT_ALONE.search(text)
    return found.group("module") if found else None


def _message_clues(text: str) -> list[_Clue]:
    clues: list[_Clue] = []
    for kind, lang, pattern in _MESSAGES:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            symbol = groups.get("symbol")
            if groups.get("ordinal"):
                symbol = "#" + groups["ordinal"]
            dll_span = m.span("dll") if groups.get("dll") else None
            clues.append(_Clue(m.start(), kind, lang, dll_span, symbol.strip() if symbol else None))
    squeezed, index = _squeeze(text)
    for kind, lang, phrase in _SQUEEZED_MESSAGES:
        start = squeezed.find(phrase)
        while start >= 0:
            clues.append(_Clue(index[start], kind, lang))
            start = squeezed.find(phrase, start + 1)
    # Words that are English whatever the Windows language, so no clue to the user's language: Python's ctypes
    # ("Could not find module 'x.dll' (or one of its dependencies)"), cuDNN's, and the OpenMP runtime's.
    for m in _CTYPES_NOT_FOUND.finditer(text):
        clues.append(_Clue(m.start(), MODULE_NOT_FOUND, None, m.span("path")))
    for m in _MISSING_WORDS.finditer(text):
        clues.append(_Clue(m.start(), MODULE_NOT_FOUND))
    omp = list(_OMP_15.finditer(text)) or list(_OMP_ALREADY.finditer(text))  # "found X already..." if cut short
    for m in omp:
        clues.append(_Clue(m.start(), OPENMP_CONFLICT, None, m.span("dll") if m.group("dll") else None))
    return clues


# --- what to do ---------------------------------------------------------------------------------------------

_VC_RUNTIME = re.compile(r"^(?:msvcp140(?:_\w+)?|vcruntime140(?:_\w+)?|concrt140|vcomp140|vccorlib140|ucrtbase|"
                         r"api-ms-win-crt-[\w-]+)\.dll$", _I)
_GPU_DRIVER = re.compile(r"^(?:nvcuda|nvapi64|nvml|nvfatbinaryloader)\.dll$", _I)  # what NVIDIA's driver ships
_NVRTC_BUILTINS = re.compile(r"^nvrtc-builtins\w*\.dll$", _I)  # CUDA's runtime compiler: ships with the CUDA build
_NVRTC_NAMED = re.compile(r"nvrtc-builtins\w*\.dll", _I)
_AMD_HIP = re.compile(r"^(?:c10_hip|torch_hip|amdhip64\w*|hiprtc\w*|rocblas|miopen\w*|hipblas\w*)\.dll$", _I)
_CONDA = re.compile(r"[\\/](?:ana|mini)conda\w*[\\/]|[\\/]miniforge\w*[\\/]|\bconda\b", _I)
_OPENMP_DLL = re.compile(r"^(?:libiomp5md|libomp\w*|vcomp140\w*)\.dll$", _I)
_KERNEL_IMAGE = re.compile(r"no\s+kernel\s+image\s+is\s+available\s+for\s+execution", _I)
_GPU_MEMORY = re.compile(r"CUDA\s+(?:error\s*:\s*)?out\s+of\s+memory|"
                         r"Allocation\s+on\s+device\s+\d+\s+would\s+exceed", _I)
_TORCHCODEC = re.compile(r"Could\s+not\s+load\s+libtorchcodec|libtorchcodec_core\d", _I)
_DIRECTML = re.compile(r"torch_directml|\bDirectML\.dll\b", _I)  # Microsoft's DirectML plug-in for PyTorch
# 2.3.0 itself, never a nightly or a pre-release of it (2.3.0.dev20240101, 2.3.0a0)
_SHM_230 = re.compile(r"(?:torch|pytorch)[^\n]{0,40}?\b2\.3\.0(?![.\w])|\b2\.3\.0\+c(?:pu|u\d+)\b", _I)
_CUDA_LIBRARY = re.compile(r"^(?:cudnn\w*|cublas\w*|cufft\w*|curand\w*|cusparse\w*|cusolver\w*|cudart\w*|"
                           r"nvrtc\w*|zlibwapi)\.dll$", _I)
_TORCH_LIB = re.compile(r"[\\/]torch[\\/]lib[\\/]", _I)
_TORCH_WORDS = re.compile(r"\btorch\b|\bpytorch\b|torch\._C|\bcaffe2", _I)
_APP_CONTROL = re.compile(r"Application\s+Control\s+policy|应用程序控制策略|0x800711C7|Anwendungssteuerungsrichtlinie|"
                          r"directiva\s+de\s+Control\s+de\s+aplicaciones|strat[ée]gie\s+de\s+contr[ôo]le\s+d.applications",
                          _I)
_GPU_TOO_NEW = re.compile(r"CUDA\s+capability\s+sm_1[02]\d\s+is\s+not\s+compatible|"
                          r"sm_1[02]\d\s+is\s+not\s+compatible\s+with\s+the\s+current\s+PyTorch", _I)
_NUMPY_2 = re.compile(r"compiled\s+using\s+NumPy\s+1\.x\s+cannot\s+be\s+run\s+in\s+NumPy\s+2|"
                      r"_ARRAY_API\s+not\s+found|numpy\._?core\.multiarray\s+failed\s+to\s+import|"
                      r"numpy\.dtype\s+size\s+changed,\s+may\s+indicate\s+binary\s+incompatibility", _I)
_XFORMERS = re.compile(r"xFormers\s+was\s+built\s+for\s*:|xFormers\s+can'?t\s+load\s+C\+\+/CUDA\s+extensions", _I)
_BITSANDBYTES = re.compile(r"libbitsandbytes_cuda\w*|bitsandbytes\s+CUDA\s+binary|"
                           r"bitsandbytes\s+was\s+compiled\s+without\s+GPU\s+support", _I)
_ONNXRUNTIME_CUDA = re.compile(r"onnxruntime_providers_(?:cuda|tensorrt)\.dll|CUDAExecutionProvider|"
                               r"provider_bridge_ort\.cc", _I)
_CTRANSLATE2 = re.compile(r"ctranslate2|faster[\s_-]?whisper|whisperx|"
                          r"Library\s+\S+\.dll\s+is\s+not\s+found\s+or\s+cannot\s+be\s+loaded", _I)
_CTRANSLATE2_CUDA = re.compile(r"(?:cudnn_\w+64_\d+|cublas(?:Lt)?64_\d+|cudnn64_\d+)\.dll", _I)
_NO_TORCH_BUILD = re.compile(r"(?:No\s+matching\s+distribution\s+found\s+for|"
                             r"Could\s+not\s+find\s+a\s+version\s+that\s+satisfies\s+the\s+requirement)\s+torch\b",
                             _I)
# the advice of each, tried first (a CUDA library CTranslate2 needs only where the text shows CTranslate2)
_NEWER_ADVICE = ((_GPU_TOO_NEW, "gpu-too-new"), (_NUMPY_2, "numpy-2"), (_XFORMERS, "xformers-mismatch"),
                 (_BITSANDBYTES, "bitsandbytes-cuda"), (_ONNXRUNTIME_CUDA, "onnxruntime-cuda"),
                 (_NO_TORCH_BUILD, "no-torch-build"))
_NOT_DLL_KINDS = re.compile("|".join(p.pattern for p in (_GPU_TOO_NEW, _NUMPY_2, _XFORMERS, _NO_TORCH_BUILD)), _I)
# A name starts where a run of name characters starts (a CJK character is one to re's \w), and after 缺少 it stops at
# the next 缺少: each character is scanned from one start only, so a long run takes linear time.
_OWN_WORDS_MISSING = re.compile(r"\bmissing\s+(?P<dll>[\w.+-]+\.dll)\b|"
                                r"(?<![\w.+-])(?P<dll2>[\w.+-]+\.dll)\s+(?:is\s+)?(?:missing|not\s+found|cannot\s+be\s+found)\b|"
                                r"缺少\s*(?P<dll3>(?:(?!缺少)[\w.+-])+\.dll)|"
                                r"(?<![\w.+-])(?P<dll4>[\w.+-]+\.dll)\s*(?:丢失|缺失|找不到|加载失败)", _I)
_THIRTY_TWO_BIT = re.compile(r"\b32[\s-]?bit\b|Python3\d*-32\b|\(Intel\)\]", _I)


def _advice(kind: str, dll: Optional[str], dll_path: Optional[str], symbol: Optional[str], text: str,
            code: Optional[int] = None) -> str:
    """The advice (one of ADVICE) for a cause, by what fixed the same error in public threads."""
    name = (dll or "").lower()
    in_torch = bool(dll_path and _TORCH_LIB.search(dll_path)) or name in _TORCH_DLLS
    torch_text = in_torch or bool(_TORCH_WORDS.search(text))
    if _CTRANSLATE2.search(text) and (_CTRANSLATE2_CUDA.match(name) or _CTRANSLATE2_CUDA.search(text)):
        return "ctranslate2-cuda"  # CTranslate2's CUDA 12 and cuDNN 9 libraries, which it does not bring
    joined = re.sub(r"\n", "", text)  # a terminal that wrapped the words at 80 columns ("CUDAE\nxecutionProvider")
    for rule, advice in _NEWER_ADVICE:  # each names its package's own fix, whatever the kind
        if rule.search(text) or rule.search(joined) or rule.search(name):
            return advice
    if kind == NOT_A_DLL_ERROR:
        if _KERNEL_IMAGE.search(text):
            return "cuda-kernel-image"
        if _GPU_MEMORY.search(text):
            return "gpu-memory"
        return "not-torch"
    if _TORCHCODEC.search(text):
        return "torchcodec-ffmpeg"  # its own loader tries libtorchcodec_core4..8.dll: FFmpeg's shared DLLs
    if _DIRECTML.search(text) and kind in (PROCEDURE_NOT_FOUND, MODULE_NOT_FOUND):
        return "directml"  # torch-directml is made for one PyTorch release, and needs DirectX 12
    if _AMD_HIP.match(name):
        return "amd-hip"  # the ROCm build: its HIP libraries come with AMD's driver / HIP runtime
    if _NVRTC_BUILTINS.match(name) or _NVRTC_NAMED.search(text):
        return "cuda-version-mismatch"
    if kind == PAGING_FILE:
        return "paging-file"
    if kind == OPENMP_CONFLICT:
        if code == 182 and not _OPENMP_DLL.match(name) and not _CONDA.search(dll_path or text):
            return "mixed-versions"  # ERROR_INVALID_ORDINAL, no OpenMP runtime and no conda in sight
        return "remove-duplicate-openmp"
    if kind == ACCESS_DENIED:  # 4551: Smart App Control / App Control for Business, not an antivirus
        return "app-control" if code == 4551 or _APP_CONTROL.search(text) else "allow-blocked-file"
    if kind == UNKNOWN:
        return "diagnose"
    if kind != BAD_IMAGE and _VC_RUNTIME.match(name):
        return "install-vc-runtime"
    if (symbol or "").lower().startswith(("omp_", "__kmpc")) and in_torch:
        return "place-libomp140"  # torch's DLL found an OpenMP runtime without the functions it needs
    if kind == MODULE_NOT_FOUND:
        if _GPU_DRIVER.match(name):
            return "gpu-driver"
        if name in ("fbgemm.dll", "libomp140.x86_64.dll"):
            return "place-libomp140"  # torch 2.4.0 shipped without libomp140.x86_64.dll
        if name == "shm.dll":  # torch 2.3.0's new MKL dependency (fixed in 2.3.1): only when the text shows 2.3.0
            return "upgrade-torch" if _SHM_230.search(text) else "shm-likely"
        if _CUDA_LIBRARY.match(name) and not in_torch:
            return "install-cudnn"
        if _CUDA_LIBRARY.match(name):  # NVIDIA's library inside torch\lib (a CUDA build): cuDNN, said as cuDNN
            return "torch-cuda-library"
        if dll or torch_text:
            return "install-vc-runtime"
        return "reinstall-package"
    if kind == PROCEDURE_NOT_FOUND:
        if in_torch or (not dll and torch_text):
            return "reinstall-torch"  # a stale DLL left inside torch\lib, or half an upgrade
        return "reinstall-package"
    if kind == BAD_IMAGE:
        if _THIRTY_TWO_BIT.search(text):
            return "64-bit-python"
        if _CUDA_LIBRARY.match(name) and not in_torch:
            return "reinstall-cudnn"  # cuDNN's own message: its copy is for another system, or damaged
        if not torch_text:
            return "64-bit-python"
        return "reinstall-torch"
    if kind == DLL_INIT_FAILED:
        if _CUDA_LIBRARY.match(name):
            return "cuda-library-init"  # it ships with the CUDA build; the driver ships nvcuda.dll
        return "install-vc-runtime"  # torch 2.9 and later need the current VC++ runtime
    return "diagnose"


# Whose DLL it is: (what the DLL's name, its path or the text shows, the package or program it belongs to). The words
# then name that one, never PyTorch (which the text may not even show).
_OWNERS = (  # (the DLL's name or its loader's own words, the folder it is in, whose it is)
    (r"libtorchcodec", r"[\\/]torchcodec[\\/]", "torchcodec"),
    (r"^onnxruntime(?:\w*\.dll)?$|Unable\s+to\s+load\s+DLL\s+'onnxruntime", r"[\\/]onnxruntime[\\/]", "onnxruntime"),
    (r"libtriton", r"[\\/]triton[\\/]", "Triton"),
    (r"sageattention", r"[\\/]sageattention\w*[\\/]", "SageAttention"),
    (r"koboldcpp", r"[\\/]koboldcpp\w*[\\/]", "KoboldCpp"),
    (r"^llama\.dll$|^ggml\w*\.dll$|llama_cpp", r"[\\/]llama_cpp[\\/]", "llama.cpp"),
    (r"(?!)", r"[\\/]QGIS[^\\/]*[\\/]", "QGIS"),
    (r"libbitsandbytes|bitsandbytes\s+CUDA\s+binary", r"[\\/]bitsandbytes[\\/]", "bitsandbytes"),
    (r"(?!)", r"[\\/]xformers[\\/]", "xFormers"),
    (r"^ctranslate2\.dll$", r"[\\/]ctranslate2[\\/]", "CTranslate2"),
)
_OWNER_PATTERNS = [(re.compile(words, _I), re.compile(folder, _I), owner) for words, folder, owner in _OWNERS]


def owner_of(dll: Optional[str], dll_path: Optional[str], text: str) -> Optional[str]:
    """The package or program a failed DLL belongs to, when the text shows one that is not PyTorch: its name, its
    folder, or the words of that package's own loader ("Unable to load DLL 'onnxruntime'", "importing libtriton").
    A folder that a traceback's frames only pass through says nothing. None for PyTorch's, and when nothing shows
    whose."""
    name, path = (dll or "").lower(), dll_path or ""
    if name in _TORCH_DLLS or _TORCH_LIB.search(path):
        return None
    for words, folder, owner in _OWNER_PATTERNS:
        if words.search(name) or folder.search(path):
            return owner
    from app.probes.dll_facts import index_owner

    if found := index_owner(dll, dll_path):  # the folder the path shows, or the one package the index names
        return found
    for words, _folder, owner in _OWNER_PATTERNS:
        if words.search(text):
            return owner
    return None


# programs that run on PyTorch, by the names their users paste
_TORCH_APPS = re.compile(r"ComfyUI|stable[\s_-]?diffusion|\bA1111\b|\bForge\b|Fooocus|InvokeAI|kohya|"
                         r"text-generation-webui|\bultralytics\b|\btransformers\b|\bdiffusers\b", _I)


def names_torch(text: str, dll: Optional[str], dll_path: Optional[str]) -> bool:
    """Whether the text names PyTorch (its words, its files, its folder) or a program that runs on it."""
    return bool((dll or "").lower() in _TORCH_DLLS or _TORCH_LIB.search(dll_path or "") or _TORCH_WORDS.search(text)
                or _TORCH_APPS.search(text))


_TORCH_DLLS = {"c10.dll", "c10_cuda.dll", "torch.dll", "torch_cpu.dll", "torch_cuda.dll", "torch_python.dll",
               "torch_global_deps.dll", "fbgemm.dll", "asmjit.dll", "shm.dll", "caffe2_nvrtc.dll", "uv.dll",
               "libiomp5md.dll", "libiompstubs5md.dll", "cupti64_2023.1.1.dll"}
