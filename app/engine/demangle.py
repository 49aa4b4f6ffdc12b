"""Microsoft C++ names (`?set_tracing@SavedTensorDefaultHooks@at@@SA_N_N@Z`) as a reader writes them
(`at::SavedTensorDefaultHooks::set_tracing(bool)`): the qualified name and the parameters, without the return type,
access and calling convention, which say nothing to someone whose import failed.

The common forms only: names, nested scopes, templates, operators, constructors, the basic types, pointers,
references, const/volatile, back-references. Python's standard library has no such demangler, and LLVM's
`llvm-undname` is not on a user's machine. Anything else (local statics, member pointers, arrays, ...) gives back the
name as it is written in the file: a raw name is still evidence, a wrong one is not. Bounded: a name longer than
MAX_LENGTH, or nested deeper than MAX_DEPTH, is not parsed.
"""

from __future__ import annotations

from typing import Optional

MAX_LENGTH = 4096
MAX_DEPTH = 40

BASIC_TYPES = {"C": "signed char", "D": "char", "E": "unsigned char", "F": "short", "G": "unsigned short",
               "H": "int", "I": "unsigned int", "J": "long", "K": "unsigned long", "M": "float", "N": "double",
               "O": "long double", "X": "void"}
EXTENDED_TYPES = {"D": "__int8", "E": "unsigned __int8", "F": "__int16", "G": "unsigned __int16", "H": "__int32",
                  "I": "unsigned __int32", "J": "__int64", "K": "unsigned __int64", "L": "__int128",
                  "M": "unsigned __int128", "N": "bool", "Q": "char8_t", "S": "char16_t", "U": "char32_t",
                  "W": "wchar_t"}
OPERATORS = {"2": "operator new", "3": "operator delete", "4": "operator=", "5": "operator>>", "6": "operator<<",
             "7": "operator!", "8": "operator==", "9": "operator!=", "A": "operator[]", "C": "operator->",
             "D": "operator*", "E": "operator++", "F": "operator--", "G": "operator-", "H": "operator+",
             "I": "operator&", "J": "operator->*", "K": "operator/", "L": "operator%", "M": "operator<",
             "N": "operator<=", "O": "operator>", "P": "operator>=", "Q": "operator,", "R": "operator()",
             "S": "operator~", "T": "operator^", "U": "operator|", "V": "operator&&", "W": "operator||",
             "X": "operator*=", "Y": "operator+=", "Z": "operator-="}
UNDERSCORE_OPERATORS = {"0": "operator/=", "1": "operator%=", "2": "operator>>=", "3": "operator<<=",
                        "4": "operator&=", "5": "operator|=", "6": "operator^=", "7": "`vftable'", "8": "`vbtable'",
                        "U": "operator new[]", "V": "operator delete[]"}
CV = {"A": "", "B": "const", "C": "volatile", "D": "const volatile"}
# the member function's kind letter: True when it has a `this` (its cv and ref qualifiers follow)
FUNCTION_KINDS = {**{c: True for c in "ABEFIJMNQRUV"}, **{c: False for c in "CDKLSTYZ"}}
CALLING_CONVENTIONS = frozenset("ABCDEFGHIJKLMNOPQ")


class _Unsupported(Exception):
    """A form outside the common ones: the raw name is shown."""


def demangle(name: str) -> str:
    """The readable form of a Microsoft C++ name; any other name (a C function, an unknown form) as it is."""
    if not name.startswith("?") or len(name) > MAX_LENGTH:
        return name
    try:
        return _Parser(name).symbol()
    except (_Unsupported, IndexError, ValueError, RecursionError):
        return name


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.names: list[str] = []  # name back-references 0-9
        self.params: list[str] = []  # parameter-type back-references 0-9
        self.depth = 0

    # -- reading ---------------------------------------------------------------------------------------
    def peek(self, count: int = 1) -> str:
        return self.text[self.pos:self.pos + count]

    def take(self, prefix: str) -> bool:
        if self.text.startswith(prefix, self.pos):
            self.pos += len(prefix)
            return True
        return False

    def char(self) -> str:
        if self.pos >= len(self.text):
            raise _Unsupported("the name ends early")
        self.pos += 1
        return self.text[self.pos - 1]

    def until_at(self) -> str:
        end = self.text.index("@", self.pos)
        word = self.text[self.pos:end]
        if not word:
            raise _Unsupported("an empty name")
        self.pos = end + 1
        return word

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unsupported("nested too deeply")

    def remember(self, name: str) -> None:
        if len(self.names) < 10 and name not in self.names:
            self.names.append(name)

    # -- the symbol -------------------------------------------------------------------------------------
    def symbol(self) -> str:
        self.take("?")
        special = None
        if self.take("?"):
            special = self.special_name()
            unqualified = special if special not in ("ctor", "dtor") else None
        else:
            unqualified = self.unqualified_name()
        scopes = self.scopes()
        if special in ("ctor", "dtor"):
            if not scopes:
                raise _Unsupported("a constructor outside a class")
            base = scopes[-1].split("<")[0]
            unqualified = base if special == "ctor" else "~" + base
        qualified = "::".join([*scopes, unqualified])
        if self.pos >= len(self.text):
            raise _Unsupported("no type")
        kind = self.char()
        if kind in "0123":  # a variable: its type says nothing more to the reader
            return qualified
        if kind in "67":  # a virtual table
            return qualified
        if kind not in FUNCTION_KINDS:
            raise _Unsupported(f"symbol kind {kind}")
        suffix = self.this_qualifiers() if FUNCTION_KINDS[kind] else ""
        if self.char() not in CALLING_CONVENTIONS:
            raise _Unsupported("calling convention")
        if self.take("@"):
            returned = None  # constructors and destructors
        else:
            self.take_result_qualifiers()
            returned = self.type()
        if special == "operator-conversion":
            qualified = "::".join([*scopes, f"operator {returned}"])
        params = self.parameters()
        self.throw_specification()
        if self.pos != len(self.text):
            raise _Unsupported("text left over")
        return f"{qualified}({', '.join(params)}){suffix}"

    def special_name(self) -> str:
        code = self.char()
        if code == "0":
            return "ctor"
        if code == "1":
            return "dtor"
        if code == "B":
            return "operator-conversion"
        if code == "$":
            return self.template_name(remember=True)
        found = UNDERSCORE_OPERATORS.get(self.char()) if code == "_" else OPERATORS.get(code)
        if found is None:
            raise _Unsupported("an operator outside the common ones")
        return found

    def this_qualifiers(self) -> str:
        while self.peek() in ("E", "I", "F"):  # __ptr64, __restrict, __unaligned: nothing to the reader
            self.pos += 1
        ref = " &" if self.take("G") else " &&" if self.take("H") else ""
        cv = CV.get(self.char())
        if cv is None:
            raise _Unsupported("this qualifiers")
        return (f" {cv}" if cv else "") + ref

    def take_result_qualifiers(self) -> None:
        if self.take("?") and self.char() not in CV:
            raise _Unsupported("result qualifiers")

    def throw_specification(self) -> None:
        if not (self.take("_E") or self.take("Z")):  # noexcept, or no specification
            raise _Unsupported("throw specification")

    # -- names --------------------------------------------------------------------------------------------
    def unqualified_name(self) -> str:
        if self.peek().isdigit():
            return self.names[int(self.char())]
        if self.take("?$"):
            return self.template_name(remember=True)
        if self.peek() == "?":
            raise _Unsupported("a nested or anonymous name")
        word = self.until_at()
        self.remember(word)
        return word

    def scopes(self) -> list[str]:
        """The enclosing scopes, innermost first in the text, returned outermost first."""
        found = []
        while not self.take("@"):
            if self.take("?A0x"):  # an anonymous namespace: `?A0x1234abcd@`
                self.until_at()
                self.remember("`anonymous namespace'")
                found.append("`anonymous namespace'")
                continue
            found.append(self.unqualified_name())
        return list(reversed(found))

    def template_name(self, remember: bool) -> str:
        """`name@args@`: the arguments have back-references of their own (the outer ones are kept aside)."""
        self.deeper()
        outer_names, outer_params = self.names, self.params
        self.names, self.params = [], []
        try:
            base = self.unqualified_name()
            args = []
            while not self.take("@"):
                arg = self.template_argument()
                if arg is not None:
                    args.append(arg)
        finally:
            self.names, self.params = outer_names, outer_params
            self.depth -= 1
        full = f"{base}<{', '.join(args)}>"
        if remember:
            self.remember(full)
        return full

    def template_argument(self) -> Optional[str]:
        if self.take("$$V") or self.take("$$Z") or self.take("$$$V"):
            return None  # an empty parameter pack
        if self.take("$0"):
            return str(self.number())
        if self.peek() == "$" and self.peek(3) not in ("$$Q", "$$R", "$$T", "$$C", "$$A"):
            raise _Unsupported("a template argument outside the common ones")
        return self.type()

    def number(self) -> int:
        negative = self.take("?")
        first = self.char()
        if first.isdigit():
            value = int(first) + 1
        else:
            value = 0
            while first != "@":
                if not "A" <= first <= "P":
                    raise _Unsupported("a number")
                value = value * 16 + ord(first) - ord("A")
                first = self.char()
        return -value if negative else value

    def qualified_name(self) -> str:
        first = self.unqualified_name()
        return "::".join([*self.scopes(), first])

    # -- types ------------------------------------------------------------------------------------------
    def parameters(self) -> list[str]:
        if self.take("X"):
            return []
        found = []
        while True:
            if self.take("@"):
                return found
            if self.take("Z"):
                return [*found, "..."]
            if self.peek().isdigit():
                found.append(self.params[int(self.char())])
                continue
            start = self.pos
            self.take_result_qualifiers()
            param = self.type()
            if self.pos - start > 1 and len(self.params) < 10:
                self.params.append(param)
            found.append(param)

    def type(self) -> str:
        self.deeper()
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> str:
        code = self.char()
        if code in BASIC_TYPES:
            return BASIC_TYPES[code]
        if code == "_":
            found = EXTENDED_TYPES.get(self.char())
            if found is None:
                raise _Unsupported("an extended type")
            return found
        if code in "TUV":
            return self.qualified_name()
        if code == "W":
            self.char()  # the enum's underlying type
            return self.qualified_name()
        if code in "PQRS":
            return self.pointer("*", {"P": "", "Q": " const", "R": " volatile", "S": " const volatile"}[code])
        if code == "A":
            return self.pointer("&", "")
        if code == "B":
            return self.pointer("&", " volatile")
        if code == "$":
            if self.take("$Q"):
                return self.pointer("&&", "")
            if self.take("$R"):
                return self.pointer("&&", " volatile")
            if self.take("$T"):
                return "std::nullptr_t"
            if self.take("$A6"):  # a function type, as in std::function<void(void*)>
                return self.function_type("")
            if self.take("$C"):
                cv = CV.get(self.char())
                if cv is None:
                    raise _Unsupported("qualifiers")
                inner = self.type()
                return f"{cv} {inner}" if cv else inner
        raise _Unsupported(f"type {code}")

    def function_type(self, declarator: str) -> str:
        if self.char() not in CALLING_CONVENTIONS:
            raise _Unsupported("calling convention")
        self.take_result_qualifiers()
        returned = self.type()
        params = self.parameters()
        self.throw_specification()
        return f"{returned}{declarator}({', '.join(params)})"

    def pointer(self, symbol: str, itself: str) -> str:
        if self.take("6"):  # a pointer to a function
            return self.function_type(f" ({symbol}{itself.strip()})")
        while self.peek() in ("E", "I", "F"):
            self.pos += 1
        cv = CV.get(self.char())
        if cv is None:
            raise _Unsupported("pointer qualifiers")
        pointee = self.type()
        return f"{cv + ' ' if cv else ''}{pointee}{symbol}{itself}"
