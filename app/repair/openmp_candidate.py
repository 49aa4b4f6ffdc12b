"""May this file be placed in a torch\\lib folder as libomp140.x86_64.dll? (repair `place-libomp140`)

torch 2.4.0's fbgemm.dll and torch_cpu.dll import libomp140.x86_64.dll *by number* (docs/knowledge.md, "The torch
2.4.0 regression"), so a stand-in must be a 64-bit DLL that has, at every number they ask for, the function
Microsoft's libomp140 has there; and it must be a working OpenMP runtime, not Intel's single-threaded stub
(docs/knowledge.md, "Where libomp140.x86_64.dll comes from").

How the stub is recognised (measured on the torch 2.4.0 wheel's libiomp5md.dll and libiompstubs5md.dll):
both are x64, both carry version 5.0.2024.320 and the FileDescription "Intel(R) OpenMP* Runtime Library",
and both export omp_get_max_threads & co. at the very same numbers (703/706/707/710/717), so neither the
version nor the imported functions tell them apart. Two marks do, and neither changes when the file is
renamed:
- the name the export table gives the DLL itself: "libiompstubs5md.dll" (the real one says "libiomp5md.dll");
- the stub exports Intel/LLVM's user API (kmp_set_blocktime, kmpc_malloc, ...) but none of the `__kmpc_*`
  entry points that compiled parallel code calls (0 of them against 649 in the real runtime); LLVM builds the
  stub from the same export list with every `__kmpc_*` line under `%ifndef stub`. `__kmpc_fork_call`, the
  function that starts a parallel region, is the one we test for.
(The version resource's InternalName/OriginalFilename also say libiompstubs5md.dll, but app.engine.pe does
not read those strings, and the export table's own name carries the same information.)
Microsoft's older vcomp140.dll has neither the kmp_ API nor `__kmpc_fork_call`: it is not taken for a stub,
and it is refused because it lacks the numbered functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Union

from app.engine.pe import CPU_NAMES, ExportTable, PEError, PEInfo, read_pe
from app.i18n import words
from app.inventory.machine import LIBOMP140

Wanted = Union[int, str]  # a function asked for by number (ordinal) or by name

X64 = 0x8664

# The names at the numbers in Microsoft's libomp140.x86_64.dll, which uses the LLVM/Intel OpenMP numbering.
# Source: docs/knowledge.md, "The torch 2.4.0 regression" (these are the five numbers torch 2.4.0 asks
# for); the same numbers and names are in the real libiomp5md.dll of the torch 2.4.0 wheel and in LLVM's
# openmp/runtime/src/dllexports. For a number not listed here, its existence is all we can check.
LIBOMP140_NAMES: Mapping[int, str] = {
    703: "omp_get_max_threads",
    706: "omp_get_num_threads",
    707: "omp_get_thread_num",
    710: "omp_in_parallel",
    717: "omp_set_num_threads",
}

# The stub's own name in its export table ("libiompstubs5md.dll"; the mark also covers other libiompstubs* names).
STUB_NAME_MARK = "ompstubs"
# Intel/LLVM user API that the stub keeps, and the entry point it lacks (see the module docstring).
KMP_USER_API = ("kmp_set_blocktime", "kmp_get_blocktime", "kmp_set_stacksize", "kmpc_malloc", "kmp_malloc")
PARALLEL_ENTRY = "__kmpc_fork_call"

UNREADABLE = "unreadable"
NOT_A_DLL = "not-a-dll"
WRONG_ARCHITECTURE = "wrong-architecture"
STUB_RUNTIME = "stub-runtime"
MISSING_FUNCTION = "missing-function"
WRONG_FUNCTION = "wrong-function"
CODES = (UNREADABLE, NOT_A_DLL, WRONG_ARCHITECTURE, STUB_RUNTIME, MISSING_FUNCTION, WRONG_FUNCTION)


@dataclass(frozen=True)
class FunctionGap:
    """One function the importers ask for that the candidate does not have as they need it."""

    wanted: Wanted  # the number (ordinal) or name asked for
    name: Optional[str]  # the name that belongs there (from LIBOMP140_NAMES, or the imported name); None: unknown
    found: Optional[str] = None  # wrong-function only: the name the candidate has at that number (None: no name)
    importers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """Why the candidate may not be placed: a stable `code` and the values for its words.

    values: file (the candidate's file name), target (libomp140.x86_64.dll), and per code: detail (unreadable,
    not-a-dll; pe.py's or the OS's own words), detail_key (not-a-dll: words key used instead of detail),
    cpu (wrong-architecture), internal_name (stub-runtime), functions (missing-/wrong-function:
    a tuple of FunctionGap)."""

    code: str
    values: Mapping[str, object] = field(default_factory=dict, hash=False)

    @property
    def functions(self) -> tuple[FunctionGap, ...]:
        return tuple(self.values.get("functions", ()))  # type: ignore[arg-type]


@dataclass(frozen=True)
class CandidateCheck:
    ok: bool
    reasons: list[Refusal]
    # What the importers in torch\lib ask for (needed_functions), so a caller can show what was checked.
    needed: dict[Wanted, list[str]] = field(default_factory=dict, hash=False)
    # Needed functions the candidate has only as a forwarder ("otherdll.function"); see _check_functions.
    forwarded: dict[Wanted, str] = field(default_factory=dict, hash=False)


def _is_dll_file(path: Path) -> bool:
    return path.suffix.lower() == ".dll" and path.is_file()


def _key(wanted: Wanted) -> tuple[int, int, str]:
    return (0, wanted, "") if isinstance(wanted, int) else (1, 0, wanted)


def needed_functions(torch_lib: Path) -> dict[Wanted, list[str]]:
    """What the DLLs in this torch\\lib ask of libomp140.x86_64.dll: number or name -> importers' file names.

    Reads the import tables (normal and delay-load) of every *.dll in the folder; a DLL that cannot be read
    is skipped (the diagnosis reports it elsewhere). The DLL name is matched without regard to case."""
    found: dict[Wanted, set[str]] = {}
    try:
        entries = sorted(Path(torch_lib).iterdir(), key=lambda p: p.name.lower())
    except OSError:
        return {}
    for path in entries:
        if path.name.lower() == LIBOMP140 or not _is_dll_file(path):
            continue
        try:
            info = read_pe(path, with_exports=False)
        except (OSError, PEError):
            continue
        for imported in info.imports:
            if imported.name.lower() != LIBOMP140:
                continue
            for function in imported.functions:
                wanted: Wanted = function.name if function.name is not None else function.ordinal  # type: ignore
                found.setdefault(wanted, set()).add(path.name)
    return {w: sorted(found[w], key=str.lower) for w in sorted(found, key=_key)}


def is_stub_runtime(exports: Optional[ExportTable]) -> bool:
    """Intel's/LLVM's single-threaded stub, whatever the file is called (see the module docstring)."""
    if exports is None:
        return False
    if STUB_NAME_MARK in exports.dll_name.lower():
        return True
    return any(n in exports.names for n in KMP_USER_API) and PARALLEL_ENTRY not in exports.names


def check_candidate(candidate: Path, torch_lib: Path) -> CandidateCheck:
    """Check that `candidate` may be placed in `torch_lib` as libomp140.x86_64.dll.

    An unreadable file or a non-DLL gets that one refusal; otherwise every problem found is listed
    (wrong architecture, stub, missing and mismatched functions). When no DLL in torch_lib imports
    libomp140 there is nothing to match, and only the file itself is checked."""
    candidate = Path(candidate)
    base = {"file": candidate.name, "target": LIBOMP140}
    try:
        info = read_pe(candidate)
    except PEError as exc:
        return CandidateCheck(False, [Refusal(NOT_A_DLL, {**base, "detail": str(exc)})])
    except OSError as exc:
        return CandidateCheck(False, [Refusal(UNREADABLE, {**base, "detail": exc.strerror or str(exc)})])
    if not info.is_dll:
        return CandidateCheck(False, [Refusal(NOT_A_DLL, {**base, "detail_key": "repair.candidate.detail.program"})])
    needed = needed_functions(torch_lib)
    reasons: list[Refusal] = []
    if info.cpu_type != X64 or not info.is_pe32_plus:
        cpu = info.cpu_name if info.cpu_type != X64 else CPU_NAMES[0x14C]  # x64 field, 32-bit header: not x64
        reasons.append(Refusal(WRONG_ARCHITECTURE, {**base, "cpu": cpu}))
    if is_stub_runtime(info.exports):
        internal = info.exports.dll_name if info.exports and info.exports.dll_name else candidate.name
        reasons.append(Refusal(STUB_RUNTIME, {**base, "internal_name": internal}))
    missing, wrong, forwarded = _check_functions(info, needed)
    if missing:
        reasons.append(Refusal(MISSING_FUNCTION, {**base, "functions": tuple(missing)}))
    if wrong:
        reasons.append(Refusal(WRONG_FUNCTION, {**base, "functions": tuple(wrong)}))
    return CandidateCheck(not reasons, reasons, needed, forwarded)


def _check_functions(info: PEInfo, needed: dict[Wanted, list[str]]):
    """(missing, wrong, forwarded) for the functions the importers need.

    Forwarders: an export that forwards to another DLL ("libiomp5md.omp_get_max_threads") counts as present.
    The loader follows it when it binds the import; whether that other DLL is within reach is a load-time
    question this file alone cannot answer. Intel's, LLVM's and Microsoft's runtimes have no forwarders
    (0 in torch 2.4.0's libiomp5md.dll), so a forwarder is unusual: it is reported in `forwarded`, not refused."""
    exports = info.exports
    missing: list[FunctionGap] = []
    wrong: list[FunctionGap] = []
    forwarded: dict[Wanted, str] = {}
    for wanted, importers in needed.items():
        names = tuple(importers)
        if isinstance(wanted, str):
            ordinal = exports.names.get(wanted) if exports else None
            if ordinal is None:
                missing.append(FunctionGap(wanted, wanted, importers=names))
        else:
            expected = LIBOMP140_NAMES.get(wanted)
            ordinal = wanted if exports and wanted in exports.ordinals else None
            if ordinal is None:
                missing.append(FunctionGap(wanted, expected, importers=names))
            elif expected is not None:
                have = exports.name_of(wanted) if exports else None
                if have != expected:
                    wrong.append(FunctionGap(wanted, expected, have, names))
        if ordinal is not None and exports is not None and ordinal in exports.forwarders:
            forwarded[wanted] = exports.forwarders[ordinal]
    return missing, wrong, forwarded


def _function_words(code: str, gap: FunctionGap, lang: str) -> str:
    if code == WRONG_FUNCTION:
        if gap.found is None:
            return words("repair.candidate.function.mismatch_unnamed", lang, number=gap.wanted, name=gap.name)
        return words("repair.candidate.function.mismatch", lang, number=gap.wanted, name=gap.name, found=gap.found)
    if isinstance(gap.wanted, str):
        return words("repair.candidate.function.name", lang, name=gap.wanted)
    if gap.name is None:
        return words("repair.candidate.function.number_only", lang, number=gap.wanted)
    return words("repair.candidate.function.number", lang, number=gap.wanted, name=gap.name)


def refusal_text(refusal: Refusal, lang: str) -> str:
    """The refusal in plain words, in `lang` (en or zh_CN), from resources/ui_text.json repair.candidate.<code>."""
    values: dict[str, object] = {}
    for key, value in refusal.values.items():
        if key == "functions":
            gaps: tuple[FunctionGap, ...] = tuple(value)  # type: ignore[call-overload]
            separator = words("repair.candidate.list_separator", lang)
            values[key] = separator.join(_function_words(refusal.code, g, lang) for g in gaps)
        elif key == "detail_key":
            values["detail"] = words(str(value), lang)
        else:
            values[key] = value
    return words(f"repair.candidate.{refusal.code}", lang, **values)
