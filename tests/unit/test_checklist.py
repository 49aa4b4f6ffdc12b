"""The checklist without threads (app/probes/checklist.py): the order of the checks, the ones a copied drive
skips, and when a diagnosis is complete, as tables."""

from __future__ import annotations

import shutil

import pytest

from app.inventory.environment import inspect_environment
from app.inventory.machine import read_machine_facts
from app.probes.base import ENVIRONMENT, MACHINE, Probe, ProbeContext
from app.probes.checklist import complete, ordered, runnable
from app.probes.finding import INFO, Finding
from app.system.offline import OfflineImage
from tests.helpers.pe_machine import VENV


def _probe(name: str, scope: str, live: bool = False) -> Probe:
    return Probe(name, scope, lambda ctx: (), needs_live=live)


PROBES = [_probe("variables", MACHINE), _probe("dependencies", ENVIRONMENT), _probe("path", MACHINE),
          _probe("replay", ENVIRONMENT, live=True)]


@pytest.fixture
def contexts(machine):
    shutil.copytree(machine.host(VENV), machine.host(VENV).parent / "venv2", symlinks=True)
    system = OfflineImage(machine.root)
    facts = read_machine_facts(system)
    envs = [inspect_environment(system, machine.host(VENV).parent / name) for name in ("venv", "venv2")]
    return ProbeContext(system, facts), [ProbeContext(system, facts, env=env) for env in envs]


def _where(ctx: ProbeContext):
    return ctx.env.exec_prefix.name if ctx.env is not None else None


def test_environment_by_environment_with_the_machines_checks_among_the_firsts(contexts):
    machine, envs = contexts
    order = [(probe.id, _where(ctx)) for probe, ctx in ordered(PROBES, machine, envs)]
    assert order == [("variables", None), ("dependencies", "venv"), ("path", None), ("replay", "venv"),
                     ("dependencies", "venv2"), ("replay", "venv2")]


def test_without_an_environment_only_the_machines_checks(contexts):
    machine, _ = contexts
    assert [probe.id for probe, _ in ordered(PROBES, machine, [])] == ["variables", "path"]


@pytest.mark.parametrize("live, demo, skipped", [(True, False, 0), (False, False, 2), (False, True, 2)])
def test_a_check_that_starts_a_program_is_skipped_where_none_can_run_and_says_so(contexts, live, demo, skipped):
    machine, envs = contexts
    jobs, findings = runnable(ordered(PROBES, machine, envs), live, demo)
    assert len(findings) == skipped and len(jobs) == 6 - skipped
    assert all(f.code == "check-skipped" for f in findings)
    if findings:
        assert ("demo" in findings[0].evidence["reason"]["en"]) == demo


def _finding(code: str, environment: str = "python.exe") -> Finding:
    return Finding(code, INFO, {}, environment=environment)


@pytest.mark.parametrize("codes, ended, expected", [
    ((), True, True),
    ((), False, False),  # a check ran out of time
    (("check-failed",), True, False),
    (("torch-loaded-elsewhere",), True, False),
    (("check-skipped",), True, True),
    (("python-startup-code",), True, False),  # seen only by the live check, which did not run here
    (("python-startup-code", "import-ok"), True, True),
])
def test_complete_only_when_every_check_ended_and_saw_what_it_checks(codes, ended, expected):
    assert complete([_finding(code) for code in codes], ended) is expected
