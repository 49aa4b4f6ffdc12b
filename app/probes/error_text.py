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
character, so match positions stay valid in the original text (paths are cut from the original).
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from functools import cache
from typing import Optional, Union

from app.i18n import supported
from app.resources import resources_folder

MODULE_NOT_FOUND = "module-not-found"
PROCEDURE_NOT_FOUND = "procedure-not-found"
BAD_IMAGE = "bad-image"
ACCESS_DENIED = "access-denied"
OPENMP_CONFLICT = "openmp-conflict"
DLL_INIT_FAILED = "dll-init-failed"
UNKNOWN = "unknown"

#: Windows error code -> kind.
CODE_KINDS = {
    126: MODULE_NOT_FOUND,  # ERROR_MOD_NOT_FOUND
    127: PROCEDURE_NOT_FOUND,  # ERROR_PROC_NOT_FOUND
    193: BAD_IMAGE,  # ERROR_BAD_EXE_FORMAT
    5: ACCESS_DENIED,  # ERROR_ACCESS_DENIED
    182: OPENMP_CONFLICT,  # ERROR_INVALID_ORDINAL: conflicting OpenMP packages in conda
    1114: DLL_INIT_FAILED,  # ERROR_DLL_INIT_FAILED
}
KIND_CODES = {kind: code for code, kind in CODE_KINDS.items()}
KINDS = (*CODE_KINDS.values(), UNKNOWN)
FIELDS = ("title", "explanation", "action")
#: Tried in this order for each field; the first that exists and whose placeholders are all known is used.
_VARIANT_SUFFIXES = ("", "_no_symbol", "_no_dll", "_no_dll_no_symbol")

_HRESULT_FACILITY_WIN32 = 0x80070000


@dataclass(frozen=True)
class ErrorCause:
    kind: str  # one of KINDS
    winerror: Optional[int] = None  # the Windows error code (126, 127, 193, 5, 182, 1114...)
    hresult: Optional[str] = None  # "0x8007007E" when the input had an HRESULT
    dll: Optional[str] = None  # file name only: "fbgemm.dll"
    dll_path: Optional[str] = None  # the full path, when the input gave one
    symbol: Optional[str] = None  # the function named in an entry-point message; "#703" for an ordinal
    language: Optional[str] = None  # "en" / "zh_CN": language of the pasted system message, when recognised

    def text(self, lang: str) -> dict[str, str]:
        """{"title", "explanation", "action"} in `lang` ("en" or "zh_CN"; anything else gives "en"),
        with {dll} and {symbol} filled in."""
        lang = supported(lang)
        texts = catalogue().get(self.kind) or catalogue()[UNKNOWN]
        entry = texts[lang]
        values = {"dll": self.dll, "symbol": self.symbol}
        return {name: _fill(entry, name, values) for name in FIELDS}


@cache
def catalogue() -> dict[str, dict[str, dict[str, str]]]:
    """resources/error_causes.json: {kind: {lang: {field or field_variant: text}}}."""
    return json.loads((resources_folder() / "error_causes.json").read_text(encoding="utf-8"))


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _fill(entry: dict[str, str], name: str, values: dict[str, Optional[str]]) -> str:
    for suffix in _VARIANT_SUFFIXES:
        template = entry.get(name + suffix)
        if template is not None and all(values.get(p) is not None for p in placeholders(template)):
            return template.format_map(values)
    # The catalogue's tests make this unreachable; if it happens anyway, show a dash rather than crash.
    return entry[name].format_map(_Dashes((k, v) for k, v in values.items() if v is not None))


class _Dashes(dict):
    def __missing__(self, key: str) -> str:
        return "-"


# --- reading the input --------------------------------------------------------------------------------------

# One character for one character, so that a match's span is valid in the original text too.
_PUNCTUATION = str.maketrans({
    "。": ".", "．": ".", "，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "［": "[", "］": "]",
    "“": '"', "”": '"', "„": '"', "＂": '"', "‘": "'", "’": "'", "＇": "'", "＃": "#", "　": " ", "\u00a0": " ",
    **{chr(0xFF10 + i): str(i) for i in range(10)},  # full-width digits
})

_I = re.IGNORECASE
_EXT = r"(?:dll|pyd|exe|sys|drv|ocx|cpl|so)"
# A DLL name or path ending in a known extension, else one word (a trailing full stop is cut later).
_DLL_REF = rf'(?P<dll>[^\n"<>|*?]*?\.{_EXT}(?!\w)|[^\s"<>|*?]+)'
_WINERROR = re.compile(r"\bwin\s*error\s*[:=]?\s*(-?\d{1,12})(?!\d)", _I)
_ERROR_CODE = re.compile(r"(?:\berror(?:\s*code)?|错误(?:代码|码)?)\s*[:=]?\s*(-?\d{1,12})(?![\w.])", _I)
_HRESULT_HEX = re.compile(r"(?<!\w)0x([89a-f][0-9a-f]{7})(?!\w)", _I)  # failure HRESULTs have the top bit set
_HRESULT_DEC = re.compile(r"(?<![\w.\-])(-?\d{10})(?![\w.])")
_ERROR_LOADING = re.compile(r"\berr?or\s+loading\s+(?P<q>[\"'])(?P<path>[^\n]+?)(?P=q)", _I)
_CTYPES_NOT_FOUND = re.compile(r"\bcould\s+not\s+find\s+module\s+(?P<q>[\"'])(?P<path>[^\n]+?)(?P=q)", _I)
_OMP_15 = re.compile(r"(?:\bOMP\s*:\s*Error\s*#\s*15\b|\bError\s*#\s*15\s*:\s*(?=Initializing))\s*:?\s*"
                     r"(?:Initializing\s+(?P<dll>[^\s,]+))?", _I)
_OMP_ALREADY = re.compile(r"\bbut\s+found\s+(?P<dll>[^\s,]+)\s+already\s+initiali[sz]ed", _I)


def _en(phrase: str) -> str:
    """An English phrase as a regex: words separated by any whitespace (wrapped lines), whole words."""
    return r"\b" + r"\s+".join(re.escape(word) for word in phrase.split()) + r"\b"


def _zh(phrase: str) -> str:
    """A Chinese phrase as a regex: whitespace (or none) allowed between any two characters."""
    return r"\s*".join(re.escape(ch) for ch in phrase if not ch.isspace())


# "... could not be located in the dynamic link library Y." / "... 于动态链接库 Y 上。" (Y: a name or a full path)
_EN_IN_LIBRARY = _en("could not be located in") + r"\s+(?:the\s+)?" + _en("dynamic link library") + r"\s+" + _DLL_REF
_ZH_IN_LIBRARY = _zh("于动态链接库") + rf"\s*(?P<dll>[^\n]+?\.{_EXT}(?!\w)|[^\n]+?)\s*上"

# Wine's short messages are common phrases too ("Module not found: Error: Can't resolve...", "Access denied
# for user..."), so they count only as a whole sentence: followed by a full stop or the end of the line.
_END = r"(?=[ \t]*(?:\.|\r?\n|$))"

# (kind, language, pattern). Windows' own wording, and Wine's (measured with FormatMessageW under Wine 8,
# English and zh_CN locales), which is what users of the Windows lab see.
_MESSAGES: list[tuple[str, str, re.Pattern[str]]] = [
    (kind, lang, re.compile(pattern, _I)) for kind, lang, pattern in [
        (PROCEDURE_NOT_FOUND, "en", _en("procedure entry point") + r"\s+(?P<symbol>[^\n]+?)\s+" + _EN_IN_LIBRARY),
        (PROCEDURE_NOT_FOUND, "en", r"\bthe\s+ordinal\s+(?P<ordinal>\d+)\s+" + _EN_IN_LIBRARY),
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("无法定位程序输入点") + r"\s*(?P<symbol>[^\n]+?)\s*" + _ZH_IN_LIBRARY),
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("无法定位序数") + r"\s*(?P<ordinal>\d+)\s*" + _ZH_IN_LIBRARY),
        (MODULE_NOT_FOUND, "en", _en("code execution cannot proceed because") + r"\s+(?P<dll>[^\n]+?)\s+" +
         _en("was not found")),
        (MODULE_NOT_FOUND, "en", r"\bprogram\s+can'?t\s+start\s+because\s+(?P<dll>[^\n]+?)\s+is\s+missing"),
        (MODULE_NOT_FOUND, "zh_CN", _zh("由于找不到") + r"\s*(?P<dll>[^\n]+?)\s*,\s*" + _zh("无法继续执行代码")),
        (MODULE_NOT_FOUND, "zh_CN", _zh("计算机中丢失") + r"\s*" + _DLL_REF),
        (MODULE_NOT_FOUND, "en", _en("the specified module could not be found")),
        (MODULE_NOT_FOUND, "en", _en("module not found") + _END),  # Wine
        (MODULE_NOT_FOUND, "zh_CN", _zh("找不到指定的模块")),
        (MODULE_NOT_FOUND, "zh_CN", _zh("找不到模块") + _END),  # Wine
        (PROCEDURE_NOT_FOUND, "en", _en("the specified procedure could not be found")),
        (PROCEDURE_NOT_FOUND, "en", _en("procedure not found") + _END),  # Wine
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("找不到指定的程序")),
        (PROCEDURE_NOT_FOUND, "zh_CN", _zh("找不到过程") + _END),  # Wine
        (BAD_IMAGE, "en", _en("is not a valid Win32 application")),
        (BAD_IMAGE, "en", _en("bad EXE format for")),  # Wine
        (BAD_IMAGE, "zh_CN", _zh("不是有效的 Win32 应用程序")),
        (BAD_IMAGE, "zh_CN", _zh("的 EXE 格式无效")),  # Wine
        (ACCESS_DENIED, "en", _en("access is denied")),
        (ACCESS_DENIED, "en", _en("access denied") + _END),  # Wine
        (ACCESS_DENIED, "zh_CN", _zh("拒绝访问")),
        (ACCESS_DENIED, "zh_CN", _zh("访问被拒绝") + _END),  # Wine
        (DLL_INIT_FAILED, "en", _en("dynamic link library") + r"\s*\(\s*DLL\s*\)\s*" +
         _en("initialization routine failed")),
        (DLL_INIT_FAILED, "en", _en("DLL initialization failed") + _END),  # Wine
        (DLL_INIT_FAILED, "zh_CN", _zh("动态链接库") + r"\s*\(?\s*DLL\s*\)?\s*" + _zh("初始化例程失败")),
        (DLL_INIT_FAILED, "zh_CN", r"\bDLL\s*" + _zh("初始化失败") + _END),  # Wine
        (OPENMP_CONFLICT, "en", _en("the operating system cannot run")),
        (OPENMP_CONFLICT, "en", _en("invalid ordinal for")),  # Wine
        (OPENMP_CONFLICT, "zh_CN", _zh("操作系统无法运行")),
        (OPENMP_CONFLICT, "zh_CN", _zh("的序数词无效")),  # Wine
    ]
]


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


def _split_dll(reference: str) -> tuple[Optional[str], Optional[str]]:
    """(file name, full path or None) of a DLL named in a message; None for nothing usable."""
    reference = reference.strip().strip("\"'").rstrip(".,;:")
    if not reference:
        return None, None
    name = _file_name(reference)
    if not name:
        return None, None
    return name, reference if name != reference else None


def classify_error(error: Union[str, int]) -> ErrorCause:
    """The cause of a Windows DLL loading error given as a number or as pasted text. Never raises: input
    that says nothing recognisable gives kind "unknown"."""
    if isinstance(error, bool) or not isinstance(error, (int, str)):
        return ErrorCause(UNKNOWN)
    if isinstance(error, int):
        return _from_number(error)
    number = _parse_int(error) if len(error) < 40 else None
    if number is not None:
        return _from_number(number)
    return _from_text(error)


def _from_number(value: int) -> ErrorCause:
    code, hresult = _code_from_number(value)
    return ErrorCause(CODE_KINDS.get(code, UNKNOWN), code, hresult)


def _from_text(original: str) -> ErrorCause:
    text = original.translate(_PUNCTUATION)

    # 1. explicit numbers: [WinError N], else "error (code) N"; the last one, as the last exception of a
    #    chained traceback is the one that stopped the program
    explicit: list[int] = []
    known_explicit: list[int] = []
    for pattern in (_ERROR_CODE, _WINERROR):
        codes = [_code_from_number(int(m.group(1)))[0] for m in pattern.finditer(text)]
        explicit.extend(c for c in codes if c is not None)
        known = [c for c in codes if c in CODE_KINDS]
        known_explicit = known or known_explicit  # a known [WinError N] replaces any "error N"

    # 2. HRESULTs, hexadecimal or decimal
    hresults: list[tuple[int, str]] = []
    for m in _HRESULT_HEX.finditer(text):
        value = int(m.group(1), 16)
        code, normal = _code_from_number(value)
        hresults.append((code if code is not None else -1, normal or f"0x{value:08X}"))
    for m in _HRESULT_DEC.finditer(text):
        code, normal = _code_from_number(int(m.group(1)))
        if normal is not None and code is not None:
            hresults.append((code, normal))
    known_hresults = [(c, h) for c, h in hresults if c in CODE_KINDS]

    # 3. the wording of the messages
    clues = _message_clues(text)

    kind, code = UNKNOWN, None
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

    hresult = next((h for c, h in reversed(hresults) if c == code), hresults[-1][1] if hresults else None)

    matching = [clue for clue in clues if clue.kind == kind] or clues
    language = next((c.language for c in sorted(matching, key=lambda c: -c.at) if c.language), None)
    symbol = next((c.symbol for c in sorted(clues, key=lambda c: -c.at) if c.symbol), None)

    dll, dll_path = None, None
    loading = list(_ERROR_LOADING.finditer(text))  # torch's own words name the DLL it was loading: they win
    if loading:
        dll, dll_path = _split_dll(original[loading[-1].start("path"):loading[-1].end("path")])
    if dll is None:
        spans = [clue.dll_span for clue in sorted(matching, key=lambda c: -c.at) if clue.dll_span]
        spans += [clue.dll_span for clue in sorted(clues, key=lambda c: -c.at) if clue.dll_span]
        for start, end in spans:
            dll, dll_path = _split_dll(original[start:end])
            if dll:
                break
    return ErrorCause(kind, code, hresult, dll, dll_path, symbol, language)


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
    # Messages that are English whatever the Windows language, so no clue to the user's language:
    # Python's ctypes ("Could not find module 'x.dll' (or one of its dependencies)") and the OpenMP runtime's.
    for m in _CTYPES_NOT_FOUND.finditer(text):
        clues.append(_Clue(m.start(), MODULE_NOT_FOUND, None, m.span("path")))
    omp = list(_OMP_15.finditer(text)) or list(_OMP_ALREADY.finditer(text))  # "found X already..." if cut short
    for m in omp:
        clues.append(_Clue(m.start(), OPENMP_CONFLICT, None, m.span("dll") if m.group("dll") else None))
    return clues
