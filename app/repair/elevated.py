"""The one elevated helper: `python -m app elevated-step JOBFILE` (hidden; in the frozen app, the app's own .exe).

The unelevated app writes a job into the transaction folder and starts the helper through System.run_elevated
(ShellExecuteExW "runas"); the helper performs only that job, step by step, and after EACH step writes
JOBFILE.result.json atomically, so a crash or a kill still leaves what was done:

    job:    {"steps": [{"op": "restore-point", "description": "...", "kind": 0},
                       {"op": "run", "argv": ["C:\\...\\vc_redist.x64.exe", "/install", ...]},
                       {"op": "set-value", "key": "HKLM\\...", "name": "...", "value": {"type", "data"} | null}]}
    result: {"results": [{"op", "ok", "code", "detail"}, ...]}

A restore point that Windows does not allow is reported (ok false, the reason) and the next steps still run; a
failed set-value stops the job. The helper's exit code is the last `run` step's exit code, else 0 when every
step was ok, else 1. The Windows calls themselves are the System's (set_machine_value, create_restore_point).

Not elevated when it need not be: an offline image has no elevation, so its machine values are written directly.
"""

from __future__ import annotations

import json
import ntpath
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from app.cancel import CancelToken
from app.system.base import RegistryValue, System
from app.system.files import write_bytes

HELPER_TIMEOUT_S = 1800.0
BOOTSTRAP = ("import sys; sys.path.insert(0, sys.argv[1]); from app.main import main; "
             "raise SystemExit(main(sys.argv[2:]))")


def app_argv(*arguments: str) -> list[str]:
    """This app's own command line with `arguments`. Frozen: the app's .exe. Else this Python with a bootstrap
    that puts the folder holding the `app` package on sys.path (`-m app` would depend on the working folder,
    which ShellExecuteEx sets to the program's own, and an embeddable Python's ._pth ignores PYTHONPATH)."""
    exe = os.path.abspath(sys.executable)
    if getattr(sys, "frozen", False):
        return [exe, *arguments]
    root = str(Path(__file__).resolve().parent.parent.parent)
    return [exe, "-c", BOOTSTRAP, root, *arguments]


def helper_argv(job: str) -> list[str]:
    """The elevated helper's command line."""
    return app_argv("elevated-step", job)


def value_json(value: Optional[RegistryValue]) -> Optional[dict]:
    if value is None:
        return None
    if isinstance(value.data, bytes):
        raise ValueError("binary registry values are not written by the elevated helper")
    return {"type": value.type, "data": value.data}


def value_of(data: Optional[dict]) -> Optional[RegistryValue]:
    return None if data is None else RegistryValue(data["type"], data["data"])


def run_job(system: System, folder: Path, steps: list[dict], timeout: float = HELPER_TIMEOUT_S,
            cancel: Optional[CancelToken] = None) -> tuple[int, list[dict]]:
    """Write the job into `folder`, run the helper elevated, and return (its exit code, the step results).
    ElevationDeclined and the other run_elevated errors come out as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    number = len([p for p in folder.glob("elevated-*.json") if not p.name.endswith(".result.json")]) + 1
    while (folder / f"elevated-{number}.json").exists() or (folder / f"elevated-{number}.json.result.json").exists():
        number += 1
    job = folder / f"elevated-{number}.json"
    write_bytes(job, json.dumps({"steps": steps}, ensure_ascii=False, indent=1).encode("utf-8"))
    code = system.run_elevated(helper_argv(system.windows_path(job)), timeout, cancel)
    return code, read_results(job)


def read_results(job: Path) -> list[dict]:
    result = Path(str(job) + ".result.json")
    try:
        return list(json.loads(result.read_text(encoding="utf-8"))["results"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def write_machine_value(system: System, folder: Path, key: str, name: str, value: Optional[RegistryValue]) -> None:
    """One machine-wide value: directly where there is no elevation (an image), else through the helper."""
    if not system.elevates_machine_changes:
        system.set_machine_value(key, name, value)
        return
    code, results = run_job(system, folder, [{"op": "set-value", "key": key, "name": name,
                                              "value": value_json(value)}])
    if not results or not results[-1].get("ok"):
        detail = results[-1].get("detail") if results else f"the helper ended with code {code} and no result"
        raise OSError(f"could not change {key}\\{name}: {detail}")


# -- the elevated side ---------------------------------------------------------------------------------------
def perform(system: System, job: Path) -> int:
    """Run the job's steps in order, writing the results after each one; returns the helper's exit code."""
    steps = json.loads(job.read_text(encoding="utf-8"))["steps"]
    results: list[dict] = []
    exit_code: Optional[int] = None
    for step in steps:
        op = step.get("op")
        try:
            if op == "restore-point":
                ok, detail = system.create_restore_point(str(step.get("description") or "Torch DLL Doctor"),
                                                         int(step.get("kind", 0)))
                result = {"op": op, "ok": ok, "code": None, "detail": detail}
            elif op == "run":
                argv = [str(a) for a in step["argv"]]
                if not ntpath.isabs(argv[0]) or not argv[0].lower().endswith(".exe"):
                    raise ValueError(f"only a program given by its absolute .exe path is run: {argv[0]!r}")
                completed = subprocess.run(argv, cwd=os.path.dirname(argv[0]) or None)
                exit_code = completed.returncode & 0xFFFFFFFF
                result = {"op": op, "ok": True, "code": exit_code, "detail": ""}
            elif op == "set-value":
                system.set_machine_value(step["key"], step["name"], value_of(step.get("value")))
                result = {"op": op, "ok": True, "code": None, "detail": ""}
            else:
                raise ValueError(f"unknown step {op!r}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            result = {"op": op, "ok": False, "code": None, "detail": f"{exc.__class__.__name__}: {exc}"}
        results.append(result)
        write_bytes(Path(str(job) + ".result.json"),
                    json.dumps({"results": results}, ensure_ascii=False).encode("utf-8"))
        if op in ("run", "set-value") and not result["ok"]:
            break
    if exit_code is not None:
        return exit_code
    return 0 if all(r["ok"] or r["op"] == "restore-point" for r in results) else 1
