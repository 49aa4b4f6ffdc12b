"""The Microsoft C++ demangler (app/engine/demangle.py) on names read from the real torchvision / torchaudio wheels'
import tables: the forms torch's companions use, readable, and the raw name for anything else."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from app.engine.demangle import MAX_DEPTH, MAX_LENGTH, demangle
from app.engine.pe import read_pe
from tests import realfiles
from tests.helpers.images import real

TORCH_DLLS = ("c10.dll", "torch_cpu.dll", "torch_python.dll")

# name as torchvision 0.20.1 / torchaudio 2.5.1 import it -> as a reader writes it
REAL_NAMES = [
    # what 0.20.1's _C.pyd lacks beside torch 2.4.1: a static member function, bool in and out
    ("?set_tracing@SavedTensorDefaultHooks@at@@SA_N_N@Z", "at::SavedTensorDefaultHooks::set_tracing(bool)"),
    # private static, returning a reference: the scope names come back by number (`U12@`)
    ("?getInstance@UndefinedTensorImpl@c10@@CAAEAU12@XZ", "c10::UndefinedTensorImpl::getInstance()"),
    # a template member function of a const object
    ("??$data_ptr@UHalf@c10@@@TensorBase@at@@QEBAPEAUHalf@c10@@XZ", "at::TensorBase::data_ptr<c10::Half>() const"),
    ("??$data_ptr@_J@TensorBase@at@@QEBAPEA_JXZ", "at::TensorBase::data_ptr<__int64>() const"),
    # an operator with an lvalue ref-qualifier; a const reference parameter
    ("??4Tensor@at@@QEGAAAEAV01@AEBV01@@Z", "at::Tensor::operator=(const at::Tensor&) &"),
    ("??8Device@c10@@QEBA_NAEBU01@@Z", "c10::Device::operator==(const c10::Device&) const"),
    # a move constructor (rvalue reference), a copy constructor
    ("??0IValue@c10@@QEAA@$$QEAU01@@Z", "c10::IValue::IValue(c10::IValue&&)"),
    ("??0ValueError@c10@@QEAA@AEBV01@@Z", "c10::ValueError::ValueError(const c10::ValueError&)"),
    # the destructor of a class template
    ("??1?$type_caster@VTensor@at@@X@detail@pybind11@@QEAA@XZ",
     "pybind11::detail::type_caster<at::Tensor, void>::~type_caster()"),
    # std::basic_string: template arguments have back-references of their own (`V?$allocator@D@2@`: 2 is std)
    ("??0ValueError@c10@@QEAA@USourceLocation@1@V?$basic_string@DU?$char_traits@D@std@@V?$allocator@D@2@@std@@@Z",
     "c10::ValueError::ValueError(c10::SourceLocation, "
     "std::basic_string<char, std::char_traits<char>, std::allocator<char>>)"),
    # a free operator in a namespace, an enum parameter
    ("??6c10@@YAAEAV?$basic_ostream@DU?$char_traits@D@std@@@std@@AEAV12@W4DeviceType@0@@Z",
     "c10::operator<<(std::basic_ostream<char, std::char_traits<char>>&, c10::DeviceType)"),
    # a function type inside std::function, a pointer to a function, parameter back-references (`6`)
    ("?deleter@TensorMaker@at@@QEAAAEAV12@V?$function@$$A6AXPEAX@Z@std@@@Z",
     "at::TensorMaker::deleter(std::function<void(void*)>)"),
    ("??0KernelFunction@c10@@AEAA@V?$unique_ptr@UOperatorKernel@c10@@U?$default_delete@UOperatorKernel@c10@@@std@@@"
     "std@@P6AXPEAUOperatorKernel@1@AEBVOperatorHandle@1@VDispatchKeySet@1@PEAV?$vector@UIValue@c10@@V?$allocator@"
     "UIValue@c10@@@std@@@3@@ZPEAX6@Z",
     "c10::KernelFunction::KernelFunction(std::unique_ptr<c10::OperatorKernel, "
     "std::default_delete<c10::OperatorKernel>>, void (*)(c10::OperatorKernel*, const c10::OperatorHandle&, "
     "c10::DispatchKeySet, std::vector<c10::IValue, std::allocator<c10::IValue>>*), void*, void*)"),
    # template integer arguments (`$0M@` is 12, `$00@` is 1)
    ("?containedTypes@?$SingleElementType@$0M@UAwaitType@c10@@@c10@@UEBA?AV?$ArrayRef@V?$SingletonOrSharedTypePtr@"
     "UType@c10@@@Type@c10@@@2@XZ", "c10::SingleElementType<12, c10::AwaitType>::containedTypes() const"),
    ("?def@Library@torch@@QEGAAAEAV12@V?$SelectiveStr@$00@detail@2@AEBV?$vector@W4Tag@at@@V?$allocator@W4Tag@at@@@"
     "std@@@std@@@Z",
     "torch::Library::def(torch::detail::SelectiveStr<1>, const std::vector<at::Tag, std::allocator<at::Tag>>&) &"),
    # a variable: its name
    ("?_singleton@UndefinedTensorImpl@c10@@0U12@A", "c10::UndefinedTensorImpl::_singleton"),
]


@pytest.mark.parametrize(("raw", "readable"), REAL_NAMES, ids=[r for r, _ in REAL_NAMES])
def test_real_names_of_the_companions_read_as_cpp(raw, readable):
    assert demangle(raw) == readable


@pytest.mark.parametrize("raw", [
    "?s@?1??singleton@Dispatcher@c10@@SAAEAV23@XZ@4AEAV23@EA",  # a local static: outside the common forms
    "?$TSS0@?1??singleton@Dispatcher@c10@@SAAEAV23@XZ@4HA",
    "THPVariable_Wrap",  # a C name: not mangled at all
    "?set_tracing@SavedTensorDefaultHooks@at@@SA_N_N",  # cut short (a pasted error)
    "?set_tracing@SavedTensorDefaultHooks@at@@SA_N_N@ZZZ",  # text left over
    "?f@@YAXPEAHQ@Z",  # a member pointer's letters where a type belongs
    "?@@YAXXZ",  # an empty name
    "?f@@YAX" + "PEA" * (MAX_DEPTH + 5) + "H@Z",  # nested deeper than the bound
    "?" + "a" * MAX_LENGTH + "@@YAXXZ",  # longer than the bound
])
def test_anything_outside_the_common_forms_is_shown_as_written(raw):
    assert demangle(raw) == raw


def test_deep_but_bounded_nesting_still_reads():
    assert demangle("?f@@YAXPEAPEAPEAH@Z") == "f(int***)"


def _imported_names(requirement: str) -> list[str]:
    root = real(realfiles.extract, requirement, "*")
    names = set()
    for pyd in sorted(root.rglob("*.pyd")):
        for imported in read_pe(pyd).imports:
            if imported.name.lower() in TORCH_DLLS:
                names |= {f.name for f in imported.functions if f.name}
    return sorted(names)


@pytest.mark.wheels
def test_every_function_torchvision_and_torchaudio_import_from_torch_reads_but_local_statics():
    names = sorted(set(_imported_names("torchvision==0.20.1")) | set(_imported_names("torchaudio==2.5.1")))
    raw = [n for n in names if demangle(n) == n]
    assert len(names) > 400  # 456 on these wheels
    assert all("?1??" in n for n in raw), raw  # only the function-local statics stay raw
    assert len(raw) <= 2
    for name in names:
        readable = demangle(name)
        assert "@" not in readable or readable == name


def _llvm_form_of(undname: str) -> str:
    """LLVM's answer reduced to ours: no access, return type, calling convention, class/struct; spaces and the
    place of `const` ignored (we write `const T&`, LLVM `T const &`)."""
    text = undname[undname.index("__cdecl ") + len("__cdecl "):]
    text = re.sub(r"\b(class|struct|union|enum) |__ptr64|__cdecl|\(void\)", lambda m: "()" if "void" in m[0] else "",
                  text)
    return re.sub(r"\s+|\bconst\b", "", text)


@pytest.mark.wheels
@pytest.mark.skipif(shutil.which("llvm-undname") is None, reason="LLVM's llvm-undname is not installed here")
def test_functions_read_the_same_as_llvm_undname_says():
    names = [n for n in _imported_names("torchvision==0.20.1") + _imported_names("torchaudio==2.5.1")
             if demangle(n) != n]
    answers = subprocess.run(["llvm-undname"], input="\n".join(names), capture_output=True, text=True,
                             timeout=60).stdout.split("\n")
    pairs = dict(zip(answers[0::3], answers[1::3]))
    compared = 0
    for name in names:
        theirs = pairs.get(name, "")
        if "__cdecl " not in theirs or name.startswith(("??0?$", "??1?$")):
            continue  # variables (we give the name only); template class constructors (LLVM repeats the arguments)
        ours = re.sub(r"\s+|\bconst\b", "", demangle(name))
        assert ours == _llvm_form_of(theirs), (name, theirs)
        assert demangle(name).count("const") == theirs[theirs.index("__cdecl "):].count("const"), name
        compared += 1
    assert compared > 300
