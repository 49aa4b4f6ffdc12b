"""What a finding's evidence holds, typed, for the codes whose evidence other layers read (the repairs, the guides,
the wizard).

A finding keeps its evidence as the dict the JSON document and the report show (docs/design.md). A reader outside
the probes never picks keys out of it by name: it asks for the code's evidence type, `VcRuntimeCopy.of(finding)`,
and reads attributes. `of` refuses a finding of another code (a reader wired to the wrong finding fails at once,
not with "-" in the words), and a key that is absent or None is the field's default.

The types are the contract between the probe that writes a finding and whoever reads it: a finding whose code has
a type must carry the type's `REQUIRED` keys (checked when it is made: `missing_keys`), and every field is a key
some probe writes (tests/unit/test_evidence_types.py). A new code that another layer reads gets a type here and one
line in `TYPES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Optional, TypeVar

E = TypeVar("E", bound="Evidence")


@dataclass(frozen=True)
class Evidence:
    CODES: ClassVar[tuple[str, ...]] = ()
    REQUIRED: ClassVar[tuple[str, ...]] = ()  # written by every probe that makes one of CODES

    @classmethod
    def of(cls: type[E], finding: Any) -> E:
        """The evidence of `finding`, typed. TypeError for a finding of a code this type is not for."""
        if finding.code not in cls.CODES:
            raise TypeError(f"a {finding.code} finding has no {cls.__name__} evidence (that is {', '.join(cls.CODES)})")
        evidence = finding.evidence
        return cls(**{f.name: evidence[f.name] for f in fields(cls) if evidence.get(f.name) is not None})

    @classmethod
    def missing_keys(cls, evidence: dict) -> list[str]:
        return [name for name in cls.REQUIRED if evidence.get(name) is None]


# -- the repairs ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VcRuntimeCopy(Evidence):
    """vc-runtime-too-old: the runtime found (`found`) is older than torch needs (`needed`); for a copy beside
    python.exe (@copy-*), where it is, what would be loaded next, what would be set aside and who put it there."""

    CODES = ("vc-runtime-too-old",)
    REQUIRED = ("needed", "found")
    needed: str = "-"
    found: str = "-"
    path: Optional[str] = None
    folder: Optional[str] = None
    system_ok: Optional[bool] = None
    system_version: Optional[str] = None
    set_aside: list = field(default_factory=list)
    owner: dict = field(default_factory=dict)
    prefix: Optional[str] = None
    python: Optional[str] = None


@dataclass(frozen=True)
class OpenMPConflict(Evidence):
    """openmp-conflict: torch's OpenMP runtime and another copy in the same process (each a dict: path, version,
    sha256, ...)."""

    CODES = ("openmp-conflict",)
    other_copy: dict = field(default_factory=dict)
    torch_copy: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CompanionMismatch(Evidence):
    """companion-mismatch: a package made for another torch (torchvision, xformers...), and the version that fits."""

    CODES = ("companion-mismatch",)
    REQUIRED = ("package",)
    package: str = "-"
    version: Optional[str] = None
    fits: Optional[str] = None
    extensions: list = field(default_factory=list)
    built_for: Optional[str] = None
    release: Optional[str] = None
    variant: Optional[str] = None


@dataclass(frozen=True)
class TorchShadowed(Evidence):
    """torch-shadowed: another torch that `import torch` gets first; where its folder entered sys.path (`origin`,
    `entry`, `added_by`: a .pth file, PYTHONPATH, a registry key)."""

    CODES = ("torch-shadowed",)
    origin: Optional[str] = None
    entry: Optional[str] = None
    added_by: Optional[str] = None
    folder: Optional[str] = None
    version: Optional[str] = None
    other_folder: Optional[str] = None
    other_version: Optional[str] = None
    variable: Optional[str] = None  # PYTHONPATH, where the folder came from it: what unsetting it would remove
    program_list: Optional[str] = None


@dataclass(frozen=True)
class RegistryPythonPath(Evidence):
    """python-registry-path: a PythonPath subkey another program's installer left, and the programs it names."""

    CODES = ("python-registry-path",)
    key: Optional[str] = None
    program_list: Optional[str] = None


@dataclass(frozen=True)
class SettingVariable(Evidence):
    """A variable of the user's or the computer's settings that changes how Python or torch starts."""

    CODES = ("unsafe-env-var", "irrelevant-env-var", "env-var-malformed", "python-home-set", "python-path-set")
    REQUIRED = ("variable",)
    variable: str = "-"
    value: Optional[str] = None
    program: Optional[str] = None
    programs: list = field(default_factory=list)


@dataclass(frozen=True)
class PathEntry(Evidence):
    """An entry of the PATH setting that names no folder, or names one a second time."""

    CODES = ("path-dead-entry", "path-duplicate-entry")
    REQUIRED = ("entry",)
    entry: str = ""


@dataclass(frozen=True)
class DamagedFile(Evidence):
    """A DLL whose size is right but whose contents are not a DLL for this Windows."""

    CODES = ("dll-damaged", "wrong-architecture")
    path: Optional[str] = None


@dataclass(frozen=True)
class TakenBySecurity(Evidence):
    """torch-files-missing: where Windows Security's log names files it took (@security), the newest such action:
    the file, its date, the threat's name, the action in both languages; and torch's folder."""

    CODES = ("torch-files-missing",)
    folder: Optional[str] = None
    security_file: Optional[str] = None
    security_date: Optional[str] = None
    security_threat: Optional[str] = None
    security_action: dict = field(default_factory=dict)


# -- what the checks could see, and what PyTorch's own process loaded ------------------------------------------------
@dataclass(frozen=True)
class UnfinishedCheck(Evidence):
    """A check that could not see what it checks: its name (`check`, a string or {language: name})."""

    CODES = ("check-failed", "torch-loaded-elsewhere")
    check: Any = None


@dataclass(frozen=True)
class Replayed(Evidence):
    """The live replay's answer: the DLLs its process had loaded, and the runtime copies that won."""

    CODES = ("import-ok", "import-failed")
    loaded: list = field(default_factory=list)
    runtime_copies: list = field(default_factory=list)


@dataclass(frozen=True)
class RuntimeCopyInPackage(Evidence):
    """runtime-copy-too-old: an old Visual C++ runtime inside another package, which loads it before torch."""

    CODES = ("runtime-copy-too-old",)
    package: Optional[str] = None
    import_name: Optional[str] = None
    place: Optional[str] = None
    instead: Optional[dict] = None  # {"en": ..., "zh_CN": ...}: where no newer build of the package exists
    links: list = field(default_factory=list)


# -- the guides -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuDriver(Evidence):
    """NVIDIA's driver: missing, or older than this CUDA build needs."""

    CODES = ("gpu-driver-missing", "gpu-driver-too-old")
    cuda: Optional[str] = None
    needed: Optional[str] = None
    driver: Optional[str] = None


@dataclass(frozen=True)
class GpuTooNew(Evidence):
    """A graphics card newer than torch's CUDA build: the CUDA version and PyTorch's build name it needs."""

    CODES = ("gpu-too-new",)
    needed: Optional[str] = None
    variant: Optional[str] = None


@dataclass(frozen=True)
class MissingDll(Evidence):
    """missing-dll: the DLL, and where a pip package brings it (@package), the package and the pin to install."""

    CODES = ("missing-dll",)
    dll: Optional[str] = None
    owner: Optional[str] = None
    pin: Optional[str] = None  # "intel-sycl-rt==2025.*"


@dataclass(frozen=True)
class ZludaStandIns(Evidence):
    CODES = ("zluda-stand-ins",)
    dll_list: Optional[str] = None


@dataclass(frozen=True)
class WrongTorchBuild(Evidence):
    """A torch built for another Python version, or for the other ABI (normal / free-threaded)."""

    CODES = ("torch-wrong-python", "torch-wrong-abi")
    torch: Optional[str] = None
    minor: Optional[str] = None
    abi: Optional[str] = None
    other_python: Optional[str] = None
    free_threaded_builds: list = field(default_factory=list)
    checked: Optional[str] = None


@dataclass(frozen=True)
class FolderBrackets(Evidence):
    """`[` or `]` in the names of the folders torch lies in."""

    CODES = ("torch-folder-brackets",)
    names: list = field(default_factory=list)


@dataclass(frozen=True)
class Numpy2(Evidence):
    """NumPy 2 beside a torch, or packages, made for NumPy 1."""

    CODES = ("numpy-2-too-new",)
    torch_made_for_numpy_1: bool = False
    packages: list = field(default_factory=list)


TYPES: tuple[type[Evidence], ...] = (
    VcRuntimeCopy, OpenMPConflict, CompanionMismatch, TorchShadowed, RegistryPythonPath, SettingVariable, PathEntry,
    DamagedFile, TakenBySecurity, UnfinishedCheck, Replayed, RuntimeCopyInPackage, GpuDriver, GpuTooNew, MissingDll,
    ZludaStandIns, WrongTorchBuild, FolderBrackets, Numpy2)
BY_CODE: dict[str, type[Evidence]] = {code: kind for kind in TYPES for code in kind.CODES}


def named_variable(finding: Any) -> Optional[str]:
    """The variable of the user's or the computer's settings that a finding names (None: it names none)."""
    if finding.code in SettingVariable.CODES:
        return SettingVariable.of(finding).variable
    if finding.code in TorchShadowed.CODES:
        return TorchShadowed.of(finding).variable
    return None


def missing_keys(code: str, evidence: dict) -> list[str]:
    """The keys a finding of `code` must carry and does not ([] for a code without a type)."""
    kind = BY_CODE.get(code)
    return kind.missing_keys(evidence) if kind is not None else []
