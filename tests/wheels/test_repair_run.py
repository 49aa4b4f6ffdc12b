"""The repair run without Qt (app/ui/repair_run.py): its work runs on real threads, its handlers in the test's thread
as the GUI thread would; real repairs on images built from the real torch wheels' DLLs. Stop after a change was
applied, a late result of a worker that is no longer current, a rollback that stopped (never called success)."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest

from app.cancel import CancelToken
from app.i18n import LANGUAGES
from app.repair.journal import Journal
from app.repair.run_model import RepairState
from app.system.offline import OfflineImage
from app.ui.repair_run import RepairRun, undo_transactions
from app.ui.session import Session, diagnose, recommended, repair_options
from tests.helpers.faults import InstallerStillRunningAfter
from tests.helpers.images import TORCH_LIB, VENV, tree_hashes

LIBOMP = TORCH_LIB + r"\libomp140.x86_64.dll"


pytestmark = pytest.mark.usefixtures("data_dir")  # tests/conftest.py


class Handle:
    def __init__(self, events: queue.Queue, yielded) -> None:
        self.token = CancelToken()
        self.done = False
        self._events, self._yielded = events, yielded

    def emit(self, item: object) -> None:
        self._events.put((self._yielded, item))

    def cancel(self) -> None:
        self.token.cancel()


class Threads:
    """WorkerPool.start's shape on plain threads; `pump` runs the handlers here, as the GUI thread's loop would."""

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        self.started = 0

    def __call__(self, work, *, yielded=None, returned=None, errored=None):
        handle = Handle(self.events, yielded)
        self.started += 1

        def run() -> None:
            try:
                result = work(handle)
            except BaseException as error:  # noqa: BLE001 - handed back, as Worker.run does
                handle.done = True
                self.events.put((errored, error))
            else:
                handle.done = True
                self.events.put((returned, result))

        threading.Thread(target=run, daemon=True).start()
        return handle

    def pump(self, until, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            handler, value = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            if handler is not None:
                handler(value)


def session_for(image) -> Session:
    session = Session(journal=Journal())
    system = OfflineImage(image.root)
    session.use(system, "image", str(image.root))
    from app.inventory.environment import inspect_environment

    session.env = inspect_environment(system, image.host(VENV + r"\Scripts\python.exe"))
    session.diagnosis = diagnose(system, session.env, session.program, CancelToken(), lambda event: None)
    session.options = repair_options(system, session.env, session.diagnosis)
    session.chosen = recommended(session.options)
    return session


def paused(monkeypatch, tmp_path: Path, point: str) -> Path:
    go = tmp_path / f"go-{point.replace(':', '-')}"
    monkeypatch.setenv("TDD_PAUSE_AT", point)
    monkeypatch.setenv("TDD_PAUSE_FILE", str(go))
    return go


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"never reached {path.name}"
        time.sleep(0.01)


@pytest.mark.parametrize("point", ["applied:1", "finish"], ids=["after-the-change", "after-the-verification"])
def test_stop_after_the_change_was_made_rolls_it_back_and_says_so(torch_image, monkeypatch, tmp_path, point):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    session = session_for(image)
    threads = Threads()
    run = RepairRun(session, threads)
    go = paused(monkeypatch, tmp_path, point)
    run.begin()
    wait_for(Path(str(go) + ".reached"))
    assert (lib / "libomp140.x86_64.dll").exists()  # the change is made: Stop must undo it, not only stop
    run.stop()
    assert run.state == RepairState.STOPPING
    go.write_text("go")
    threads.pump(lambda: not run.busy)
    assert run.state == RepairState.ROLLED_BACK and run.model.states == [RepairState.ROLLED_BACK]
    assert tree_hashes(lib) == before and session.outcomes == []
    (transaction,) = Journal().transactions()
    assert transaction.state == "rolled-back"


def test_a_rollback_that_stopped_is_said_and_never_called_success(torch_image, monkeypatch, tmp_path):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    session = session_for(image)
    threads = Threads()
    run = RepairRun(session, threads)
    run.begin()
    threads.pump(lambda: run.state == RepairState.DONE)
    users_own = b"MZ the user's own copy, put there after the repair"
    (lib / "libomp140.x86_64.dll").write_bytes(users_own)
    run.stop()  # Roll back everything, as after a later repair of the run failed
    threads.pump(lambda: not run.busy)
    assert run.state == RepairState.NOT_ROLLED_BACK and run.model.states == [RepairState.NOT_ROLLED_BACK]
    words = {}
    for lang in LANGUAGES:
        session.lang = lang
        words[lang] = run.failure_words()
    assert "changed after the repair" in words["en"] and "修改过" in words["zh_CN"]
    assert "None" not in words["en"] and "None" not in words["zh_CN"]
    assert "put back as it was" not in words["en"]
    assert (lib / "libomp140.x86_64.dll").read_bytes() == users_own  # not overwritten
    assert session.outcomes  # what is still changed stays recorded, for a later undo


def test_a_late_result_of_a_worker_that_is_no_longer_current_is_ignored(torch_image, monkeypatch, tmp_path):
    image = torch_image()
    session = session_for(image)
    threads = Threads()
    run = RepairRun(session, threads)
    go = paused(monkeypatch, tmp_path, "intent:1")
    run.begin()
    wait_for(Path(str(go) + ".reached"))
    stale = run._worker
    run._worker = object()  # as if a newer worker had been started since
    go.write_text("go")
    threads.pump(lambda: stale.done and threads.events.empty(), timeout=60)
    assert run.state == RepairState.RUNNING and run.items[0].outcome is None and session.outcomes == []


def test_closing_during_a_repair_waits_for_the_rollback_and_a_second_close_changes_nothing(torch_image, monkeypatch,
                                                                                          tmp_path):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    session = session_for(image)
    threads = Threads()
    run = RepairRun(session, threads)
    closed = []
    run.on_closed = lambda: closed.append(True)
    go = paused(monkeypatch, tmp_path, "change:1")
    run.begin()
    wait_for(Path(str(go) + ".reached"))
    assert run.close() is False and run.closing
    assert run.close() is False  # X or Esc again: still not closed
    go2 = paused(monkeypatch, tmp_path, "restore:1")  # now hold the rollback itself half way
    go.write_text("go")
    wait_for(Path(str(go2) + ".reached"))
    assert run.state == RepairState.STOPPING and run.close() is False and closed == []
    go2.write_text("go")
    threads.pump(lambda: bool(closed))
    assert run.state == RepairState.ROLLED_BACK and tree_hashes(lib) == before


def test_undo_transactions_stops_at_the_first_it_cannot_undo_and_says_which(torch_image):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    session = session_for(image)
    threads = Threads()
    run = RepairRun(session, threads)
    run.begin()
    threads.pump(lambda: run.state == RepairState.DONE)
    (transaction,) = session.transactions
    (lib / "libomp140.x86_64.dll").write_bytes(b"MZ changed since")
    result = undo_transactions([transaction])
    assert not result.complete and result.stopped.id == transaction.id and result.undone == []
    (lib / "libomp140.x86_64.dll").write_bytes((lib / "libiomp5md.dll").read_bytes())
    result = undo_transactions([Journal().get(transaction.id)])
    assert result.complete and [t.id for t in result.undone] == [transaction.id] and result.after is not None
    assert not (lib / "libomp140.x86_64.dll").exists()


@pytest.mark.parametrize("stop_first", [False, True], ids=["the-wait-ran-out", "stop-then-the-wait-ran-out"])
def test_an_installer_the_app_stopped_waiting_for_is_never_called_put_back_nor_retried(torch_image, monkeypatch,
                                                                                       tmp_path, stop_first):
    import app.repair.run as run_module

    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = tree_hashes(lib)
    session = session_for(image)
    real = run_module.action_for
    monkeypatch.setattr(run_module, "action_for", lambda name: InstallerStillRunningAfter(real(name)))
    threads = Threads()
    run = RepairRun(session, threads)
    go = paused(monkeypatch, tmp_path, "applied:1")
    run.begin()
    wait_for(Path(str(go) + ".reached"))
    if stop_first:
        run.stop()
    go.write_text("go")
    threads.pump(lambda: not run.busy)
    assert tree_hashes(lib) == before  # what the repair changed itself was put back
    assert run.model.states == [RepairState.INSTALLER_RUNNING]
    assert run.state == (RepairState.ROLLED_BACK if stop_first else RepairState.INSTALLER_RUNNING)
    assert not run.can_retry  # a second installer would only wait for the first
    run.retry()
    assert threads.started == (2 if stop_first else 1)  # (the Stop's own undo of finished repairs)
    words = {}
    for lang in LANGUAGES:
        session.lang = lang
        words[lang] = run.failure_words()
    assert "It was not stopped" in words["en"] and "Restart the computer" not in words["en"]
    assert "没有被停止" in words["zh_CN"] and "重启" not in words["zh_CN"]
