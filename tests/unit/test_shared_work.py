"""What one diagnosis does once and shares: an environment's folders, listed once for all its checks and dropped
when they end; the question "which of these functions does this DLL not export as its own", answered once per
importer's list; the probe threads, where a check that runs a program never waits behind the others; the
dependency trees, drawn only when a report shows them. And what the wizard found is found again after it changed
the computer."""

from __future__ import annotations

import os
import threading
from collections import Counter

from app.cancel import CancelToken
from app.demo.pe_writer import Export, Import, build_pe
from app.engine.pe import ImportedFunction, read_pe
from app.inventory.integrity import RecordFolders, check_torch_files
from app.inventory.runtime_copies import list_runtime_copies
from app.probes.base import ENVIRONMENT, MACHINE, Probe
from app.probes.finding import INFO
from app.report.document import diagnosis_report, render_report, text_report
from app.system.folders import Listings, child
from app.system.offline import OfflineImage
from app.ui.session import IMAGE, Session, choose_environment, find_environments
from tests.helpers.diagnosis import diagnose
from tests.helpers.pe_machine import LIB, SITE, VENV, torch


def test_an_environments_folders_are_listed_once_for_its_checks(machine, monkeypatch):
    """The install-record check and the runtime-copy search both walk site-packages: each folder is listed once."""
    machine.write(SITE + r"\PyQt5\Qt5\bin\msvcp140.dll", build_pe(dll_name="msvcp140.dll"))
    listed: Counter = Counter()
    scandir = os.scandir

    def counted(folder):
        listed[os.fspath(folder)] += 1
        return scandir(folder)

    env = next(e for e in diagnose(machine).environments if e.torch)
    monkeypatch.setattr(os, "scandir", counted)
    listings = Listings()
    list_runtime_copies(env, listings=listings)
    assert any(p.endswith("bin") for p in listed) and len(listings) == len(listed)
    walked = Counter(listed)
    check_torch_files(env, listings=listings)
    torch_lib = str(machine.host(LIB))
    assert listed == walked and torch_lib in listed  # the check listed nothing the walk had listed
    assert max(listed.values()) == 1


def test_the_listings_are_one_per_environment_and_dropped_when_its_checks_end(machine):
    kept = []

    def look(ctx):
        ctx.listings.named(str(ctx.env.site_packages))
        kept.append(ctx.listings)
        return iter(())

    probes = [Probe("first", ENVIRONMENT, look), Probe("second", ENVIRONMENT, look)]
    result = diagnose(machine, probes=probes)
    assert result.complete and len(kept) == 2 and kept[0] is kept[1]
    assert len(kept[0]) == 0  # dropped: a torch's listing holds megabytes, and the diagnosis holds every context


def waiting_for(event: threading.Event):
    """A check that waits (up to 10 s) for `event`, and says whether it came."""
    def run(ctx):
        waited = event.wait(10)
        return iter([ctx.finding("check-skipped", INFO, {"probe": "waiting", "check": {}, "waited": waited})])
    return run


def setting(event: threading.Event):
    """A check that sets `event`."""
    def run(ctx):
        event.set()
        return iter(())
    return run


def test_a_check_that_runs_a_program_never_waits_behind_the_others(machine):
    """One thread for the checks that work in this process: the live import still starts at once, on its own."""
    started = threading.Event()
    probes = [Probe("busy", MACHINE, waiting_for(started)), Probe("busy-2", MACHINE, waiting_for(started)),
              Probe("program", MACHINE, setting(started), needs_live=True)]
    result = diagnose(machine, probes=probes, live=True, workers=1)
    assert [f.evidence["waited"] for f in result.findings] == [True, True]


def test_a_dll_is_asked_once_per_importers_list_which_functions_it_does_not_export_as_its_own(tmp_path):
    dll = tmp_path / "b.dll"
    dll.write_bytes(build_pe(dll_name="b.dll", exports=[Export(1, "own"), Export(2, "passed", "c.forwarded")]))
    importer = tmp_path / "a.dll"
    importer.write_bytes(build_pe(dll_name="a.dll", imports=[Import("b.dll", ("own", "passed", "absent", 1, 9))]))
    (functions,) = [i.functions for i in read_pe(importer).imports]
    exports = read_pe(dll).exports
    answer = exports.not_plain(functions)
    assert answer == (ImportedFunction(name="passed"), ImportedFunction(name="absent"), ImportedFunction(ordinal=9))
    assert exports.not_plain(functions) is answer  # the same list: answered from memory
    again = tuple(functions)[:1]
    assert exports.not_plain(again) == ()  # another list is asked on its own


def test_names_that_differ_only_in_case_resolve_to_the_first_sorted_everywhere(tmp_path):
    """A copy made on Linux may hold `A.dll` and `a.dll`; Windows would hold one. Every lookup takes the same."""
    for name in ("a.dll", "A.dll"):
        (tmp_path / name).write_bytes(name.encode())
    assert RecordFolders(tmp_path).find("a.DLL")[0].name == child(tmp_path, "a.dll").name == "A.dll"


def test_the_dependency_trees_are_drawn_only_when_a_report_shows_them(machine, monkeypatch):
    import app.report.document as document_module

    drawn = []
    draw = document_module.render_tree
    monkeypatch.setattr(document_module, "render_tree", lambda *a, **k: drawn.append(a) or draw(*a, **k))
    system = OfflineImage(machine.root)
    result = diagnose(machine)
    document, trees = diagnosis_report(result, system, lang="en", source="image")
    render_report(document, trees, "en", "json")
    assert drawn == []
    (python,) = trees
    assert r"\Users\<user>\ComfyUI" in python  # the key is redacted as a path, as the document's are
    text = text_report(document, trees, "en")
    assert len(drawn) == 1 and trees[python] in text and "alice" not in trees[python]
    assert "torch_cpu.dll" in trees[python]


def test_a_slow_check_gets_a_second_thread_for_the_rest(machine, monkeypatch):
    """One thread works through the checks; while one of them is slow (a folder on a network drive), the ones
    waiting behind it get another thread."""
    import app.probes.runner as runner

    monkeypatch.setattr(runner, "SLOW_PROBE_S", 0.2)
    behind = threading.Event()
    probes = [Probe("slow", MACHINE, waiting_for(behind)), Probe("quick", MACHINE, setting(behind))]
    result = diagnose(machine, probes=probes, workers=1)
    assert [f.evidence["waited"] for f in result.findings] == [True]


def test_the_runtime_search_reads_both_of_two_names_that_differ_only_in_case(tmp_path):
    """Lookups take one of them, as Windows does; a search for every runtime copy loses neither, nor what is in
    either of two such folders."""
    from app.inventory.runtime_copies import CopyListing, _Walk, runtime_dll_names

    for name in ("msvcp140.dll", "MSVCP140.dll", "bin/vcruntime140.dll", "BIN/vcruntime140.dll"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(build_pe(dll_name="x.dll"))
    listings = Listings()
    walk = _Walk(runtime_dll_names(), float("inf"), 10_000, 14, None, CopyListing(), listings)
    found = sorted(str(p.relative_to(tmp_path)) for p in walk.files(tmp_path, frozenset()))
    assert found == ["BIN/vcruntime140.dll", "MSVCP140.dll", "bin/vcruntime140.dll", "msvcp140.dll"]
    assert len(listings.named(str(tmp_path))) == 2  # lookups still see one of each name


def found(session) -> list:
    find_environments(session.system, CancelToken(), session.add_environment)
    return [e for e in session.environments if e.torch]


def test_after_a_change_the_wizard_reads_the_computer_and_finds_its_environments_again(machine):
    """What the wizard found before it changed the computer (a repair, an undo, a rollback on Welcome) is searched
    again: a torch put back by pip at its version before, a variable put back in the user's settings."""
    session = Session()
    session.use(OfflineImage(machine.root), IMAGE, str(machine.root))
    (before,) = found(session)
    assert before.torch.version == "2.4.1+cpu"
    torch(machine, "2.4.0+cpu")
    machine.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    session.changed_the_computer()
    assert session.environments == []
    assert session.system.environment("user")["KMP_DUPLICATE_LIB_OK"] == "TRUE"
    (after,) = found(session)
    assert after.torch.version == "2.4.0+cpu"


def test_after_a_change_the_environment_the_user_named_is_read_again_and_nothing_else_is_searched(machine):
    session = Session()
    session.use(OfflineImage(machine.root), IMAGE, str(machine.root))
    session.choose_environment(choose_environment(session.system, VENV), only=True)
    torch(machine, "2.4.0+cpu")
    session.changed_the_computer()
    assert [e.torch.version for e in session.environments] == ["2.4.0+cpu"] and session.env is session.environments[0]
