"""Replay torch's own loader, live: run the environment's python.exe on resources/replay_loader.py.

The child first imports the modules the user's program imports before torch (`diagnose --import-first`, and the
AI app's "imports_first"), keeping what they change (PyQt5 puts its own old msvcp140.dll first), then repeats
torch's `_load_dll_libraries` step by step, then imports torch, runs one parallel operation (and
one OpenMP call into each other copy of torch's OpenMP runtime that the environment's packages use, so that OMP
Error #15 shows itself), and prints one line of JSON after a marker. A Python that cannot even start, or prints no
such line, is reported as such.
"""

from __future__ import annotations

import importlib.util
import ntpath
from functools import cache
from types import ModuleType
from typing import Iterator, Optional

from app.inventory.python_path import VARIABLES, python_variables
from app.probes.app_control import replayed_block
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.error_text import classify_error
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.probes.openmp import rival_copies
from app.probes.runtime_copies import imports_first
from app.resources import known_issues, resources_folder
from app.system import user_json

SCRIPT = resources_folder() / "replay_loader.py"
TIMEOUT_S = 120
LOADED_ELSEWHERE = "torch-loaded-elsewhere"  # the live Python imported another torch than the checks read
# NTSTATUS exit codes of a process that could not start (shown as unsigned 32-bit numbers)
START_FAILURES = {
    0xC0000135: {"en": "a DLL that Python itself needs was not found", "zh_CN": "找不到 Python 自身需要的 DLL"},
    0xC000007B: {"en": "a DLL that Python itself needs is built for another kind of Windows",
                 "zh_CN": "Python 自身需要的 DLL 是为另一种 Windows 构建的"},
    0xC0000139: {"en": "a DLL that Python itself needs lacks a function", "zh_CN": "Python 自身需要的 DLL 缺少函数"},
    0xC0000142: {"en": "a DLL that Python itself needs failed to start", "zh_CN": "Python 自身需要的 DLL 无法初始化"},
}


@cache
def replay_script() -> ModuleType:
    """resources/replay_loader.py as a module, for its own output parser (one parser, beside the writer)."""
    spec = importlib.util.spec_from_file_location("tdd_replay_loader", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_replay(stdout: str) -> Optional[dict]:
    """The report the child printed after its marker (the last one), or None."""
    try:
        return replay_script().parse_output(stdout)
    except ValueError:
        return None


def last_step(stderr: str) -> Optional[dict]:
    """The step the child announced last on stderr: names the culprit when the process died."""
    marker = replay_script().STEP_MARKER
    for line in reversed(stderr.splitlines()):
        if marker in line:
            try:
                return user_json.loads(line.split(marker, 1)[1])
            except ValueError:
                return None
    return None


def run(ctx: ProbeContext) -> Iterator[Finding]:
    """Before torch, the process imports what the program that shows the error imports first (`ctx.program`, and
    its AI app's first imports in resources/ai_apps.json)."""
    env = ctx.env
    if env is None or env.torch is None:
        return
    script = ctx.system.windows_path(SCRIPT)
    child_env = dict(ctx.system.environment("process"))
    child_env.update(PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    for name in [k for k in child_env if k.upper() in ("PYTHONSTARTUP", *VARIABLES)]:
        child_env.pop(name)  # ours (a launcher may set them for this app) are not the user's programs'
    for variable in python_variables(ctx.system):  # what a program started from Explorer gets: the user's settings
        child_env[variable.name] = variable.value
    python = ctx.python or str(env.python)
    try:
        users = [ctx.display(rival.other.path) for rival in rival_copies(ctx)]
    except OSError:  # an unreadable copy: the openmp probe reports it; the replay still runs torch's own
        users = []
    modules = imports_first(ctx)
    argv = [python, "-B", script, *[arg for user in users for arg in ("--openmp-user", user)],
            *[arg for module in modules for arg in ("--import-first", module)]]
    try:
        result = ctx.system.run(argv, timeout=TIMEOUT_S, env=child_env, cwd=env.exec_prefix,
                                cancel=ctx.cancel)
    except TimeoutError as exc:  # it started, but the answer never came: unknown, not "cannot start"
        yield ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "error": str(exc),
                                                 "seconds": TIMEOUT_S}, variant="timeout")
        return
    except OSError as exc:
        yield ctx.finding("import-failed", BLOCKER, {"python": python, "message": exc.strerror or str(exc)},
                          variant="no-python")
        return
    data = parse_replay(result.stdout)
    if data is None:
        yield _no_report(ctx, python, result.returncode & 0xFFFFFFFF, result.stderr)
        return
    if data.get("status") == "internal_error":
        yield _script_failed(ctx, str(data.get("internal_error")))
        return
    if data.get("status") in ("torch_missing", "torch_not_a_package"):
        yield ctx.finding("import-failed", BLOCKER, {"python": python, "torch": ctx.display(env.torch.folder),
                                                     "status": data.get("status")}, variant="not-found")
        return
    elsewhere = _loaded_elsewhere(ctx, data)
    if elsewhere is not None:
        yield elsewhere
    imported = data.get("import") or {}
    parallel = data.get("parallel") or {}
    if imported.get("ok") and parallel.get("attempted") and not parallel.get("finished"):
        yield _died_in_parallel(ctx, python, data, result.returncode & 0xFFFFFFFF, result.stderr)
    failures = [d for d in data.get("dlls") or [] if not d.get("loaded")]
    loaded = {"loaded": data.get("loaded_at_end") or [], "runtime_copies": runtime_copies(ctx, data),
              **({"imported_first": data["imported_first"]} if data.get("imported_first") else {})}
    if imported.get("ok"):
        yield ctx.finding("import-ok", INFO, {"version": imported.get("version"), **loaded,
                                              "replay": _summary(data)})
        return
    message = str(imported.get("message") or "")
    cause = classify_error(message) if message else None
    first = data.get("first_failure") or {}
    dll = (cause.dll if cause and cause.dll else None) or first.get("name")
    winerror = imported.get("winerror") or first.get("winerror")
    blocked = replayed_block(ctx, winerror, dll, message)  # WinError 4551: App Control, its own cause
    if blocked is not None:
        yield blocked
    yield ctx.finding("import-failed", BLOCKER, {
        "dll": dll,
        "winerror": winerror,
        "message": message or imported.get("error_type"), "cause": cause.kind if cause else None,
        "failed_dlls": [{"dll": d.get("name"), "winerror": d.get("retry_error") or d.get("error")} for d in failures],
        **loaded, "replay": _summary(data)})


def _loaded_elsewhere(ctx: ProbeContext, data: dict) -> Optional[Finding]:
    """The real Python found another torch than the one the checks read (the model of sys.path was wrong, or
    something it cannot read, such as a sitecustomize, decided): the checks are then about the wrong copy."""
    found = data.get("torch_dir")
    predicted = ctx.display(ctx.env.torch.folder)
    if not found or not predicted or ntpath.normcase(ntpath.normpath(str(found))) == ntpath.normcase(predicted):
        return None
    return ctx.finding(LOADED_ELSEWHERE, WARNING, {"found": str(found), "predicted": predicted})


def runtime_copies(ctx: ProbeContext, data: dict) -> list[dict]:
    """Which copy of each runtime DLL the real process loaded (the evidence Process Monitor would give), and
    whether the static model predicted that same copy."""
    watched = set(known_issues()["vc_runtime_dlls"]) | set(known_issues()["openmp_runtimes"])
    predicted = {}
    try:
        for node in ctx.graph().walk():
            if node.path is not None and node.name.lower() in watched:
                predicted.setdefault(node.name.lower(), ctx.display(node.path))
    except Exception:  # noqa: BLE001 - the static graph is another probe's business; its failure is reported there
        predicted = {}
    copies = []
    for path in data.get("loaded_at_end") or []:
        path = str(path)
        name = ntpath.basename(path).lower()
        if name in watched:
            expected = predicted.get(name)
            host = ctx.system.host_path(path)
            info = ctx.cache.get(host) if host is not None else None
            version = info.file_version if info is not None and not isinstance(info, str) else None
            copies.append({"dll": ntpath.basename(path), "path": path, "version": version,
                           "predicted": expected,
                           "agrees": None if expected is None else ntpath.normcase(expected) == ntpath.normcase(path)})
    return sorted(copies, key=lambda c: c["dll"].lower())


def openmp_errors(stderr: str) -> list[str]:
    """The OpenMP runtime's own lines ("OMP: Error #15: ...", "OMP: Hint ...") from a process it ended."""
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("OMP: ")]


def _died_in_parallel(ctx: ProbeContext, python: str, data: dict, code: int, stderr: str) -> Finding:
    """torch imported, then the process died in its first parallel operation (or when another copy of the
    OpenMP runtime started up): OMP Error #15 is two runtimes in one process."""
    step = last_step(stderr) or {}
    lines = openmp_errors(stderr)
    users = [u.get("path") for u in (data.get("parallel") or {}).get("openmp_users") or []]
    torch_copies = [p for p in data.get("loaded_at_end") or []
                    if ntpath.basename(str(p)).lower() in {n.lower() for n in known_issues()["openmp_runtimes"]}]
    evidence = {"python": python, "message": lines[0] if lines else (stderr.strip().splitlines() or ["-"])[-1],
                "omp_output": lines, "exit_code": code, "last_step": step, "openmp_users": users,
                "copies": list(dict.fromkeys([*torch_copies, *([step["path"]] if step.get("path") else [])])),
                "stderr": stderr[-2000:]}
    if any(line.startswith("OMP: Error #15") for line in lines):
        # set aside the other copy where the static check finds one it can set aside (the finding names it, so
        # the repair plans from this finding alone); else only a fresh environment
        found = rival_copies(ctx)  # reads and hashes each copy: once
        rivals = [rival for rival in found if not rival.same_build] or found
        if rivals:
            return ctx.finding("openmp-conflict", BLOCKER, {
                **evidence, "dll": rivals[0].torch_copy.path.name, "torch_copy": rivals[0].torch_copy.evidence(ctx),
                "other_copy": rivals[0].other.evidence(ctx)}, ["remove-duplicate-openmp", "start-fresh"],
                variant="replayed")
        return ctx.finding("openmp-conflict", BLOCKER, {**evidence, "dll": "libiomp5md.dll"}, ["start-fresh"],
                           variant="replayed")
    return ctx.finding("import-failed", BLOCKER, {**evidence, "dll": ntpath.basename(step["path"])
                                                  if step.get("path") else None}, variant="parallel")


def _no_report(ctx: ProbeContext, python: str, code: int, stderr: str) -> Finding:
    """The child printed no report: it never started, it died while loading PyTorch, or our script failed."""
    step = last_step(stderr)
    lines = stderr.strip().splitlines()
    message = START_FAILURES.get(code) or (lines or [f"exit code {code:#x}"])[-1]
    evidence = {"python": python, "message": message, "exit_code": code, "last_step": step, "stderr": stderr[-2000:]}
    if step is not None and step.get("step") in ("load", "import", "import_first"):  # died inside a DLL or an import
        return ctx.finding("import-failed", BLOCKER, {**evidence, "dll": step.get("name") or "torch"},
                           variant="crashed")
    if step is not None or SCRIPT.name in stderr:  # Python ran our script, and the script itself failed
        return _script_failed(ctx, message)
    if code == 0 and not lines:  # it ended as a program that succeeded, and said nothing: no answer, no failure
        return ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "error": "no report",
                                                  "python": python, "exit_code": code}, variant="no-report")
    return ctx.finding("import-failed", BLOCKER, evidence, variant="no-python")


def _script_failed(ctx: ProbeContext, error: str) -> Finding:
    return ctx.finding("check-failed", INFO, {"check": PROBE.name, "probe": PROBE.id, "error": error},
                       variant="script")


def _summary(data: dict) -> dict:
    keep = ("status", "python_version", "bits", "exec_prefix", "torch_dir", "imported_first", "dll_paths", "vc_check",
            "path_patched",
            "first_failure", "parallel", "elapsed_s", "internal_error")
    return {key: data.get(key) for key in keep}


PROBE = Probe("replay", ENVIRONMENT, run, needs_live=True)

