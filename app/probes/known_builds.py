"""Known-bad torch builds (resources/known_issues.json), and Python versions this torch was not made for."""

from __future__ import annotations

from typing import Iterator

from app.engine.graph import OK
from app.engine.versions import matches
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.resources import known_issues


def run(ctx: ProbeContext) -> Iterator[Finding]:
    torch = ctx.env.torch if ctx.env else None
    if torch is None:
        return
    for build in known_issues()["builds"]:
        if not matches(torch.release, build["torch"]):
            continue
        # what this copy shows, not its version number: a rebuilt or repaired 2.4.0 may not need the file at all
        statuses = ctx.graph().statuses()
        needed = [n for n in statuses if n.name.lower() == build["missing_dll"].lower()
                  and any(e.kind == "import" for e in n.incoming)]
        if not needed:
            severity, variant = INFO, "not-affected"
        elif any(statuses[n] != OK for n in needed):
            severity, variant = BLOCKER, "blocker"
        else:
            severity, variant = WARNING, "warning"  # worked around: the file is there and loads
        yield ctx.finding("torch-known-bad-build", severity, {
            "torch": torch.version, "fixed_in": build["fixed_in"], "summary": build["summary"], "issue": build["id"],
            "missing_dll": build["missing_dll"], "links": build["links"]},
            ["upgrade-torch"] + (["place-libomp140"] if severity == BLOCKER else []) if severity != INFO else [],
            variant=variant)


def python_support(ctx: ProbeContext) -> Iterator[Finding]:
    env = ctx.env
    if env is None:
        return
    if env.is_64bit is False:
        yield ctx.finding("python-32bit", BLOCKER, {"python": ctx.python}, ["install-64bit-python"])
    if env.torch is None or not env.python_version:
        return
    data = known_issues()
    minor = ".".join(env.python_version.split(".")[:2])
    window = data["python_wheels"].get(minor)
    if window is None or not matches(env.torch.release, "<=" + data["python_wheels_latest_torch"]):
        return  # a Python or torch newer than our table: no opinion
    if not matches(env.torch.release, ",".join(window)):
        supported = [m for m, w in data["python_wheels"].items() if matches(env.torch.release, ",".join(w))]
        yield ctx.finding("python-version-unsupported", BLOCKER, {
            "torch": env.torch.version, "python_version": env.python_version, "supported": supported})


PROBE = Probe("known-builds", ENVIRONMENT, run)
PYTHON_PROBE = Probe("python", ENVIRONMENT, python_support)
