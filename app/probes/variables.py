"""Environment variables: a PYTORCH_CUDA_ALLOC_CONF torch cannot parse, and Apple-only MPS settings."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from app.probes.base import MACHINE, Probe, ProbeContext
from app.probes.finding import INFO, WARNING, Finding
from app.resources import known_issues

ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
_BOOL = {"true", "false"}
ALLOC_KEYS = {
    "max_split_size_mb": lambda v: v.isdigit() and int(v) > 20,
    "roundup_power2_divisions": lambda v: bool(re.fullmatch(r"\d+|\[(\s*[\w>]+\s*:\s*\d+\s*,?)+\]", v)),
    "garbage_collection_threshold": lambda v: _float_between(v, 0.0, 1.0),
    "expandable_segments": lambda v: v.lower() in _BOOL,
    "backend": lambda v: v in ("native", "cudaMallocAsync"),
    "release_lock_on_cudamalloc": lambda v: v.lower() in _BOOL,
    "pinned_use_cuda_host_register": lambda v: v.lower() in _BOOL,
    "pinned_num_register_threads": lambda v: v.isdigit() and int(v) >= 1,
}


def _float_between(value: str, low: float, high: float) -> bool:
    try:
        return low < float(value) < high
    except ValueError:
        return False


def _outside_brackets(value: str) -> list[str]:
    """`value` cut at each comma that a "]" follows before any "[" does (inside a list), in one pass from the end:
    a pattern that looks ahead from every comma is quadratic in a long value."""
    cuts, inside = [], False
    for at in range(len(value) - 1, -1, -1):
        if value[at] in "[]":
            inside = value[at] == "]"
        elif value[at] == "," and not inside:
            cuts.append(at)
    bounds = [-1, *reversed(cuts), len(value)]
    return [value[start + 1:end] for start, end in zip(bounds, bounds[1:])]


def alloc_conf_problem(value: str) -> Optional[dict[str, str]]:
    """Why torch would reject this PYTORCH_CUDA_ALLOC_CONF, in both languages; None when it is fine."""
    for item in [part for part in _outside_brackets(value) if part.strip()]:
        key, sep, setting = item.partition(":")
        key, setting = key.strip(), setting.strip()
        if not sep:
            return {"en": f"\"{item.strip()}\" has no value (write key:value)",
                    "zh_CN": f"“{item.strip()}”没有值（应写成 键:值）"}
        check = ALLOC_KEYS.get(key)
        if check is None:
            return {"en": f"\"{key}\" is not a setting PyTorch knows", "zh_CN": f"“{key}”不是 PyTorch 认识的设置"}
        if not check(setting):
            return {"en": f"\"{setting}\" is not a valid value for {key}",
                    "zh_CN": f"“{setting}”不是 {key} 的有效值"}
    return None


def variable_repairs(ctx: ProbeContext, name: str) -> list[str]:
    """The repair of a variable by where it is set: the user's own settings (`unset-env-var`), the computer's
    (guided `unset-machine-variable`: it needs an administrator), else only the program's own start (nothing
    kept to remove)."""
    def set_in(scope: str) -> bool:
        return any(k.lower() == name.lower() for k in ctx.system.environment(scope))

    if set_in("user"):
        return ["unset-env-var"]
    if set_in("system"):
        return ["unset-machine-variable"]
    return []


def run(ctx: ProbeContext) -> Iterator[Finding]:
    irrelevant = {name.upper() for name in known_issues()["irrelevant_variables"]}
    for name, value in sorted(ctx.machine.variables.items()):
        if name.upper() in irrelevant:
            yield ctx.finding("irrelevant-env-var", INFO, {"variable": name, "value": value},
                              variable_repairs(ctx, name))
        elif name.upper() == ALLOC_CONF:
            problem = alloc_conf_problem(value)
            if problem:
                yield ctx.finding("env-var-malformed", WARNING, {"variable": name, "value": value, "problem": problem},
                                  variable_repairs(ctx, name))


PROBE = Probe("variables", MACHINE, run)
