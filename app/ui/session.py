"""What the user is doing in the wizard: the computer looked at, the environment chosen, what was found, the
repairs chosen and done. Plain Python, no Qt: pages read and write it, workers are handed what they need.

The functions below are the work the wizard's workers run; each takes a CancelToken where it can stop early."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.failures import local_time
from app.i18n import language_for  # noqa: F401 - the wizard asks the session for it
from app.inventory.discovery import DEFAULT_SEARCH, EVERYWHERE, DiscoveryReport, discover
from app.inventory.environment import PythonEnvironment, inspect_environment
from app.inventory.runtime_copies import SITE_PACKAGES, apps_importing_first
from app.probes.base import Program
from app.probes.causes import RUNTIME_COPY, Problem
from app.probes.evidence import RuntimeCopyInPackage
from app.probes.finding import BLOCKER, WARNING
from app.probes.runner import Diagnosis, ProbeEvent, run_diagnosis
from app.probes.runtime_copies import FIRST_IMPORT_VARIANTS
from app.repair.guides import START_FRESH, Guide, fresh_start_fits, guide_of
from app.repair.journal import Journal, Transaction
from app.repair.names import repair_name
from app.repair.plan import Plan, PlanRefused
from app.repair.run import RepairOutcome, plan_repair
from app.report.document import diagnosis_report, render_report, report_format
from app.system.base import System
from app.system.identity import machine_of, system_for
from app.system.offline import OfflineImage
from app.system.typed_path import resolve_typed_path

LIVE, IMAGE, DEMO = "live", "image", "demo"


@dataclass
class RepairOption:
    """One repair the user may pick for one problem: its plan, or why it cannot be done here."""

    problem: Problem
    action: str
    plan: Optional[Plan] = None
    refused: list[dict[str, str]] = field(default_factory=list)

    @property
    def possible(self) -> bool:
        return self.plan is not None

    @property
    def guide(self) -> Optional[Guide]:
        """The steps for the user, when this is a guided repair (it changes nothing)."""
        return guide_of(self.plan)


@dataclass
class Session:
    system: Optional[System] = None
    source: str = LIVE  # live, image (a copied Windows drive) or demo
    root: Optional[str] = None  # the image's folder
    lang: str = "en"
    journal: Journal = field(default_factory=Journal)
    environments: list[PythonEnvironment] = field(default_factory=list)
    env: Optional[PythonEnvironment] = None
    program: Program = field(default_factory=Program)  # the program that shows the error, if the user said
    pasted_error: str = ""
    diagnosis: Optional[Diagnosis] = None
    options: list[RepairOption] = field(default_factory=list)
    chosen: list[RepairOption] = field(default_factory=list)  # the repairs that change something, run in turn
    guided: list[RepairOption] = field(default_factory=list)  # the steps the user will follow (Plan, Finish)
    outcomes: list[RepairOutcome] = field(default_factory=list)
    undone: list[RepairOutcome] = field(default_factory=list)  # repairs of this session undone since
    first: Optional[Diagnosis] = None  # what the first check of the chosen environment found, before any repair
    after: Optional[Diagnosis] = None  # the Verify page's diagnosis (after the repairs, or after their undo)
    _scratch: Optional[tempfile.TemporaryDirectory] = None
    owner_window: int = 0  # the wizard's window (HWND on Windows): Windows' permission prompt belongs to it
    changes: int = 0  # how many times this session changed the computer (a repair, an undo, a rollback)
    only: bool = False  # the user named the environment (--env): nothing else is searched

    def use(self, system: System, source: str, root: Optional[str] = None) -> None:
        """Look at another computer (this one, a copied drive, or the demo): everything found so far goes."""
        self.system, self.source, self.root = system, source, root
        system.owner_window = self.owner_window
        self.environments, self.env, self.diagnosis, self.program = [], None, None, Program()
        self.options, self.chosen, self.guided, self.outcomes, self.after = [], [], [], [], None
        self.undone, self.first, self.changes, self.only = [], None, 0, False

    # -- the one way the session changes: pages and models call these, nothing writes a field from outside ------
    def set_language(self, lang: str) -> None:
        self.lang = lang

    def set_program(self, program: Program) -> None:
        """The program that shows the error (what it imports before torch), for the next diagnosis."""
        self.program = program

    def set_pasted_error(self, text: str) -> None:
        self.pasted_error = text

    def clear_environments(self) -> None:
        self.environments = []

    def add_environment(self, env: PythonEnvironment) -> None:
        self.environments.append(env)

    def choose_environment(self, env: Optional[PythonEnvironment], *, only: bool = False) -> None:
        """The environment the wizard looks at; another one than before forgets the program (what another program
        imports first says nothing about this one). `only`: the one the user named, nothing else is searched."""
        if env is not self.env:
            self.program = Program()
        self.env = env
        if only and env is not None:
            self.only = True
            self.environments = [env]

    def set_diagnosis(self, diagnosis: Optional[Diagnosis]) -> None:
        """What the checks found (None while they run again); the first of them, before any repair, is kept for
        the report."""
        self.diagnosis = diagnosis
        if diagnosis is not None and not self.outcomes and not self.undone:
            self.first = diagnosis

    def take_repair_diagnosis(self, after: Diagnosis) -> None:
        """The checks after a repair or its rollback: what is found now, in the environment as it is now."""
        self.diagnosis = after
        if after.environments:
            self.env = after.environments[0]

    def set_options(self, options: list[RepairOption], chosen: list[RepairOption]) -> None:
        """The repairs offered, and those chosen (split into the ones that change something and the guided)."""
        self.options = options
        self.choose_repairs(chosen)

    def choose_repairs(self, chosen: list[RepairOption]) -> None:
        self.chosen, self.guided = split_chosen(chosen)

    def add_outcome(self, outcome: RepairOutcome) -> None:
        self.outcomes.append(outcome)
        self.changed_the_computer()

    def changed_the_computer(self) -> None:
        """Files or settings were changed (or put back) by this session: what was read before is out of date. The
        computer is looked at afresh (its settings, its folders; the change itself had every file read again:
        app/repair/run.py), the environments are found again (the one the user named, read again), and checks
        begun before are not taken (`changes`)."""
        self.changes += 1
        if self.system is None:
            return
        self.system = system_for(machine_of(self.system), self.owner_window)
        if self.only and self.env is not None:  # nothing else is searched: it alone is read again
            self.env = inspect_environment(self.system, self.env.python) or self.env
            self.environments = [self.env]
        else:
            self.environments = []

    def forget_outcomes(self, transaction_ids: set[str]) -> None:
        """Repairs undone since: no longer this session's changes (the report still says they were made, and
        undone)."""
        self.undone += [o for o in self.outcomes if o.transaction.id in transaction_ids]
        self.outcomes = [o for o in self.outcomes if o.transaction.id not in transaction_ids]
        self.changed_the_computer()

    def set_verified(self, after: Optional[Diagnosis]) -> None:
        """The Verify page's diagnosis (None while it runs)."""
        self.after = after

    def use_scratch(self) -> Path:
        """A scratch folder that lives as long as the session (the demo computer is built in it); with no data
        folder of the user's own chosen (TDD_DATA_DIR), repairs are journalled there too, away from real ones."""
        self.close()
        self._scratch = tempfile.TemporaryDirectory(prefix="tdd-demo-")
        scratch = Path(self._scratch.name)
        if not os.environ.get("TDD_DATA_DIR"):
            self.journal = Journal(scratch / "data")
        return scratch

    def set_owner_window(self, handle: int) -> None:
        """The window Windows' permission prompt is owned by, so that it comes to the front over the wizard instead
        of flashing in the taskbar (from the GUI thread, once the window exists)."""
        self.owner_window = handle
        if self.system is not None:
            self.system.owner_window = handle

    def has_something_to_offer(self) -> bool:
        """The wizard's one question for its page order: is there a repair, or guided steps, to show on the plan
        page? (Every problem that stops PyTorch has at least the fresh start.)"""
        return any(offered_actions(p) for p in self.problems())

    @property
    def transactions(self) -> list[Transaction]:
        return [outcome.transaction for outcome in self.outcomes]

    def problems(self, diagnosis: Optional[Diagnosis] = None) -> list[Problem]:
        diagnosis = diagnosis or self.diagnosis
        return sorted(diagnosis.problems, key=lambda p: p.sort_key) if diagnosis else []

    def blockers(self, diagnosis: Optional[Diagnosis] = None) -> list[Problem]:
        return [p for p in self.problems(diagnosis) if p.severity == BLOCKER]

    def report_text(self, fmt: str, diagnosis: Optional[Diagnosis] = None) -> str:
        """The report as text, HTML or JSON (`fmt`), user names redacted, with the end of this session's log."""
        document, trees = diagnosis_report(diagnosis or self.after or self.diagnosis, self.system, lang=self.lang,
                                           source=self.source, source_root=self.root)
        from app.report.log import log_tail

        tail = log_tail()
        if tail:  # what went wrong in this session, for whoever helps (written redacted)
            document["log"] = tail
        if self.outcomes or self.undone:  # the session's own story: before, each repair, each undo
            document["session"] = self.history()
        return render_report(document, trees, self.lang, fmt)

    def history(self) -> dict:
        """What the first check found, and each repair of this session: made, or undone since (newest last)."""
        before = [p.lead.text(self.lang).title for p in self.blockers(self.first)] if self.first else []
        made = [(o, "made") for o in self.outcomes] + [(o, "undone") for o in self.undone]
        made.sort(key=lambda pair: str(pair[0].transaction.begin.get("created") or ""))
        return {"before": before, "repairs": [
            {"id": o.transaction.id, "action": o.transaction.begin.get("action", ""), "state": state,
             "name": repair_name(o.transaction.begin.get("action", ""), self.lang),
             "when": local_time(o.transaction.begin.get("created"))} for o, state in made]}

    def report(self, path: str, diagnosis: Optional[Diagnosis] = None) -> None:
        """Write the report (text, HTML or JSON by the file's name)."""
        Path(path).write_text(self.report_text(report_format(path), diagnosis), encoding="utf-8")

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


def this_computer() -> tuple[Optional[System], str]:
    """The live Windows system, or None off Windows (the wizard then offers a copied drive or the demo)."""
    if os.name != "nt":
        return None, LIVE
    from app.system.live import LiveWindows

    return LiveWindows(), LIVE


def open_demo(session: Session) -> OfflineImage:
    """Build the demo computer in a scratch folder that lives as long as the session; with no data folder of
    the user's own chosen (TDD_DATA_DIR), its repairs are journalled there too, away from real ones."""
    from app.demo.computer import build_demo_image

    scratch = session.use_scratch()
    return OfflineImage(build_demo_image(scratch / "demo"))


def find_environments(system: System, token: CancelToken, found: Callable[[PythonEnvironment], None], *,
                      everywhere: bool = False, folders: tuple[Path, ...] = ()) -> DiscoveryReport:
    """Stream each environment as discovery finds it. `everywhere` looks deeper and longer. The report says
    whether the time ran out before every place was looked in."""
    depth, budget = EVERYWHERE if everywhere else DEFAULT_SEARCH
    report = DiscoveryReport()
    for env in discover(system, folders=folders, max_depth=depth, budget_s=budget, cancel=token, report=report):
        found(env)
    return report


def choose_environment(system: System, location: str) -> Optional[PythonEnvironment]:
    """The environment at a path as typed: a folder or python.exe on this computer, or a Windows path inside a
    copied drive (the command line's rule too: app/system/typed_path.py)."""
    path = resolve_typed_path(system, location)
    return inspect_environment(system, path) if path is not None else None


def environment_at(system: System, folder: Path) -> Optional[PythonEnvironment]:
    """The environment of a folder the user picked: the folder itself, or one found below it."""
    env = inspect_environment(system, folder)
    if env is not None:
        return env
    return next(iter(discover(system, folders=[folder], drives=[], budget_s=30.0)), None)


def diagnose(system: System, env: PythonEnvironment, program: Program, token: CancelToken,
             on_event: Callable[[ProbeEvent], None]) -> Diagnosis:
    """The checks, run as `program` starts (what it imports before torch)."""
    return run_diagnosis(system, [env], cancel=token, on_event=on_event, program=program)


def program_choices(problem: Problem) -> list[Program]:
    """For an old runtime copy inside a package (runtime-copy-too-old), the programs the user may say show the
    error: the known AI apps that import that package before torch, then any program that does; none for
    another problem, or once the user has said."""
    if problem.lead.code != RUNTIME_COPY or problem.lead.variant in FIRST_IMPORT_VARIANTS:
        return []
    copy = RuntimeCopyInPackage.of(problem.lead)
    module = copy.import_name
    if not module or copy.place != SITE_PACKAGES:
        return []
    apps = [Program(name) for name in apps_importing_first(module)]
    return [*apps, Program(None, (module,))]


def offered_actions(problem: Problem) -> list[str]:
    """The repairs (or guided steps) the plan page offers for a problem: its own, else the fresh start where it
    stops PyTorch; none for information or a problem the live check contradicted."""
    if problem.severity not in (BLOCKER, WARNING) or problem.contradicted:
        return []
    return list(problem.repairs) or ([START_FRESH] if fresh_start_fits(problem) else [])


def repair_options(system: System, env: PythonEnvironment, diagnosis: Diagnosis) -> list[RepairOption]:
    """Every repair of every problem, planned (nothing changes): a plan, or the reasons it cannot be done. A problem
    that stops PyTorch and names no repair at all gets the fresh start's steps."""
    options = []
    for problem in sorted(diagnosis.problems, key=lambda p: p.sort_key):
        for action in offered_actions(problem):
            option = RepairOption(problem, action)
            try:
                option.plan, _ = plan_repair(system, env, action, None, diagnosis)
            except PlanRefused as refused:
                option.refused = refused.reasons
            options.append(option)
    return options


def recommended(options: list[RepairOption]) -> list[RepairOption]:
    """Per problem that stops PyTorch, the first repair that can be done here (the catalogue orders them); where
    none can, its first guided steps. Guided options go to `Session.guided`, the rest to `Session.chosen`."""
    chosen, seen = [], set()
    for automatic in (True, False):
        for option in options:
            key = id(option.problem)
            if (option.possible and (option.guide is None) == automatic and option.problem.severity == BLOCKER
                    and key not in seen):
                seen.add(key)
                chosen.append(option)
    return sorted(chosen, key=options.index)


def split_chosen(chosen: list[RepairOption]) -> tuple[list[RepairOption], list[RepairOption]]:
    """The repairs to run, and the guided steps to show (they change nothing)."""
    return [o for o in chosen if o.guide is None], [o for o in chosen if o.guide is not None]


def guides_left(session: Session) -> list[RepairOption]:
    """The guided steps the user chose whose problem is still there after the repairs (all of them before)."""
    if session.after is None:
        return list(session.guided)
    left = {(p.environment, p.lead.code) for p in session.problems(session.after)}
    return [o for o in session.guided if (o.problem.environment, o.problem.lead.code) in left]

