"""The Repair page off the happy path, clicked as a user would (pytest-qt, a real window offscreen): Stop after a
change was made, closing the window during a repair and during its rollback, and a double-click on "Repair now";
its log of what each repair changed, Finish's question before an undo, and the Repair page after that undo."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWizard

from app.repair.journal import Journal
from app.repair.run_model import RepairState
from app.ui.pages.base import REPAIR
from tests.helpers.files import hashes
from tests.helpers.images import TORCH_LIB
from tests.helpers.wizard import WAIT_MS, forward, ready, to_plan, undo_on_finish

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py


def paused(monkeypatch, tmp_path: Path, point: str) -> tuple[Path, Path]:
    go = tmp_path / f"go-{point.replace(':', '-')}"
    monkeypatch.setenv("TDD_PAUSE_AT", point)
    monkeypatch.setenv("TDD_PAUSE_FILE", str(go))
    return go, Path(str(go) + ".reached")


def test_stop_after_the_file_was_placed_rolls_it_back_and_says_so(torch_image, open_wizard, qtbot, monkeypatch,
                                                                  tmp_path):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    wizard = open_wizard(root=str(image.root))
    to_plan(qtbot, wizard)
    go, reached = paused(monkeypatch, tmp_path, "applied:1")
    forward(qtbot, wizard, REPAIR)
    qtbot.waitUntil(reached.exists, timeout=WAIT_MS)
    repair = wizard.pages[REPAIR]
    assert (lib / "libomp140.x86_64.dll").exists() and repair.stop.isEnabled()
    qtbot.mouseClick(repair.stop, Qt.MouseButton.LeftButton)
    go.write_text("go")
    qtbot.waitUntil(lambda: repair.state == RepairState.ROLLED_BACK, timeout=WAIT_MS)
    assert hashes(lib) == before
    assert "put back as it was" in repair.status.text() and repair.isComplete()
    (transaction,) = Journal().transactions()
    assert transaction.state == "rolled-back"


def test_closing_the_window_during_a_repair_and_again_during_its_rollback_waits_for_it(torch_image, open_wizard,
                                                                                      qtbot, monkeypatch, tmp_path):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    wizard = open_wizard(root=str(image.root))
    to_plan(qtbot, wizard)
    go, reached = paused(monkeypatch, tmp_path, "change:1")
    forward(qtbot, wizard, REPAIR)
    qtbot.waitUntil(reached.exists, timeout=WAIT_MS)
    repair = wizard.pages[REPAIR]
    wizard.close()  # the window's X
    qtbot.wait(50)
    assert wizard.isVisible() and repair.run.busy
    assert "closes by itself" in repair.status.text()
    go2, reached2 = paused(monkeypatch, tmp_path, "restore:1")  # hold the rollback itself half way
    go.write_text("go")
    qtbot.waitUntil(reached2.exists, timeout=WAIT_MS)
    wizard.close()
    qtbot.keyClick(wizard, Qt.Key.Key_Escape)  # again, and Esc: nothing closes a window that is putting back
    qtbot.wait(50)
    assert wizard.isVisible() and repair.run.busy
    go2.write_text("go")
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=WAIT_MS)  # closed by itself once put back
    assert hashes(lib) == before
    (transaction,) = Journal().transactions()
    assert transaction.state == "rolled-back"


def test_a_double_click_on_repair_now_repairs_once(torch_image, open_wizard, qtbot):
    image = torch_image()
    wizard = open_wizard(root=str(image.root))
    to_plan(qtbot, wizard)
    commit = wizard.button(QWizard.WizardButton.CommitButton)
    qtbot.mouseDClick(commit, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(commit, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.pages[REPAIR].state == RepairState.DONE, timeout=WAIT_MS)
    time.sleep(0.2)
    assert len(list(Journal().transactions())) == 1
    assert wizard.currentId() == REPAIR


@pytest.fixture(autouse=True)
def no_pause_left(monkeypatch):
    yield
    monkeypatch.delenv("TDD_PAUSE_AT", raising=False)


def test_a_rollback_that_stopped_on_a_changed_file_offers_keep_not_a_button_that_can_only_fail(torch_image,
                                                                                              open_wizard, qtbot):
    from app.main import main
    from app.ui.pages.base import WELCOME

    image = torch_image()
    argv = ["--root", str(image.root), "--env", r"C:\Users\alice\ComfyUI\venv", "--yes"]
    assert main(["repair", *argv, "--action", "place-libomp140"]) == 0
    (image.host(TORCH_LIB) / "libomp140.x86_64.dll").write_bytes(b"MZ the user's own copy")
    assert main(["undo", "--last"]) == 1  # stops rather than overwrite it
    wizard = open_wizard(root=str(image.root))
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(welcome.unfinished.isVisible, timeout=WAIT_MS)  # the journal is read in a worker
    text = welcome.unfinished_text.text()
    assert "could not put everything back" in text and "was changed after the repair" in text
    assert "changed-since" not in text and "T0" not in text and "place-libomp140" not in text  # no codes, no ISO
    assert welcome.keep.isVisible() and not welcome.rollback.isVisible()
    qtbot.mouseClick(welcome.keep, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not welcome.unfinished.isVisible(), timeout=WAIT_MS)
    assert Journal().unfinished() == [] and next(Journal().transactions()).state == "kept"
    assert (image.host(TORCH_LIB) / "libomp140.x86_64.dll").read_bytes() == b"MZ the user's own copy"
    again = open_wizard(root=str(image.root))
    qtbot.waitUntil(lambda: not again.pages[WELCOME].reading.running, timeout=WAIT_MS)
    assert not again.pages[WELCOME].unfinished.isVisible()  # not offered at every start


def test_the_welcome_page_of_a_second_window_never_offers_to_roll_back_a_running_repair(torch_image, open_wizard,
                                                                                         qtbot, data_dir, tmp_path):
    from app.ui.pages.base import WELCOME
    from tests.helpers.repair_process import start_paused

    image = torch_image()
    repair, go = start_paused(image, data_dir, "change:1", tmp_path)
    try:
        wizard = open_wizard(root=str(image.root))
        welcome = wizard.pages[WELCOME]
        qtbot.waitUntil(lambda: "running in another window" in welcome.unfinished_text.text(), timeout=WAIT_MS)
        assert not welcome.rollback.isVisible() or not welcome.rollback.isEnabled()
    finally:
        go.write_text("go")
        repair.communicate(timeout=120)
    assert repair.returncode == 0 and next(Journal().transactions()).state == "done"


def test_keep_that_cannot_be_recorded_says_so_and_can_be_pressed_again(torch_image, open_wizard, qtbot,
                                                                       monkeypatch):
    from app.main import main
    from app.repair.journal import Transaction
    from app.ui.pages.base import WELCOME

    image = torch_image()
    argv = ["--root", str(image.root), "--env", r"C:\Users\alice\ComfyUI\venv", "--yes"]
    assert main(["repair", *argv, "--action", "place-libomp140"]) == 0
    (image.host(TORCH_LIB) / "libomp140.x86_64.dll").write_bytes(b"MZ the user's own copy")
    assert main(["undo", "--last"]) == 1  # stops rather than overwrite it

    def refused(self):
        raise PermissionError(13, "Access is denied", str(self.folder))

    monkeypatch.setattr(Transaction, "keep", refused)
    wizard = open_wizard(root=str(image.root))
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(welcome.keep.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(welcome.keep, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.failure_box is not None and wizard.failure_box.isVisible(), timeout=WAIT_MS)
    assert "could not be recorded" in wizard.failure_box.text()
    assert welcome.keep.isVisible() and welcome.keep.isEnabled()  # pressed again once the cause is fixed
    assert Journal().unfinished() != []
    wizard.failure_box.close()


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_stop_then_an_installer_still_running_is_said_and_never_called_put_back(torch_image, open_wizard, qtbot,
                                                                                monkeypatch, tmp_path, lang):
    """Stop, and the app's wait for Microsoft's installer ends before the installer (the real installer runs in
    tests/lab/test_live_vc_runtime.py): the page says the installer still runs, shows why, and offers no Retry."""
    repair, lib, before = _installer_still_running(torch_image, open_wizard, qtbot, monkeypatch, tmp_path, lang,
                                                   stop=True)
    qtbot.waitUntil(lambda: repair.state == RepairState.ROLLED_BACK, timeout=WAIT_MS)
    assert hashes(lib) == before and repair.isComplete()
    status, row, error = repair.status.text(), repair.rows[0]["state"].text(), repair.error_text.text()
    if lang == "en":
        assert "Microsoft's installer is still running" in status and "put back as it was" not in status
        assert row == "not finished: Microsoft's installer is still running"
        assert "It was not stopped" in error
    else:
        assert "仍在运行" in status and "仍在运行" in row and "没有被停止" in error
    assert repair.error.isVisible()


def test_the_wait_running_out_offers_skip_and_roll_back_never_retry(torch_image, open_wizard, qtbot, monkeypatch,
                                                                   tmp_path):
    """No Stop: the wait for Microsoft's installer ran out. Retry would start a second installer that only waits
    for the first, so it is not offered; Skip goes on and the row keeps saying the installer still runs."""
    repair, lib, before = _installer_still_running(torch_image, open_wizard, qtbot, monkeypatch, tmp_path, "en",
                                                   stop=False)
    qtbot.waitUntil(lambda: repair.state == RepairState.INSTALLER_RUNNING, timeout=WAIT_MS)
    assert hashes(lib) == before
    assert repair.error.isVisible() and "It was not stopped" in repair.error_text.text()
    assert not repair.retry.isVisible() and repair.skip.isVisible() and repair.roll_back.isVisible()
    qtbot.mouseClick(repair.skip, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: repair.state == RepairState.DONE, timeout=WAIT_MS)
    assert repair.rows[0]["state"].text() == "not finished: Microsoft's installer is still running"


def _installer_still_running(torch_image, open_wizard, qtbot, monkeypatch, tmp_path, lang, stop):
    import app.repair.run as run_module
    from tests.helpers.faults import InstallerStillRunningAfter

    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    real = run_module.action_for
    monkeypatch.setattr(run_module, "action_for", lambda name: InstallerStillRunningAfter(real(name)))
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    go, reached = paused(monkeypatch, tmp_path, "applied:1")
    forward(qtbot, wizard, REPAIR)
    qtbot.waitUntil(reached.exists, timeout=WAIT_MS)
    repair = wizard.pages[REPAIR]
    if stop:
        qtbot.mouseClick(repair.stop, Qt.MouseButton.LeftButton)
    go.write_text("go")
    return repair, lib, before


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_a_check_afterwards_that_could_not_finish_is_said_never_loads_now(torch_image, open_wizard, qtbot,
                                                                           monkeypatch, lang):
    from app.probes import runner as runner_module
    from app.probes.base import ENVIRONMENT, Probe
    from app.probes.every_probe import ALL_PROBES
    from app.ui.pages.base import VERIFY
    from tests.helpers.faults import blind_once_the_runtime_is_placed

    image = torch_image()
    lib = image.host(TORCH_LIB)
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    monkeypatch.setattr(runner_module, "ALL_PROBES", (*ALL_PROBES, Probe("gpu", ENVIRONMENT,
                                                                          blind_once_the_runtime_is_placed)))
    forward(qtbot, wizard, REPAIR)
    ready(qtbot, wizard)
    assert (lib / "libomp140.x86_64.dll").exists()
    repair = wizard.pages[REPAIR]
    assert repair.run.model.states == [RepairState.UNCHECKED]
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    verify = wizard.pages[VERIFY]
    assert not wizard.session.after.complete and wizard.session.blockers(wizard.session.after) == []
    headline = verify.headline.text()
    if lang == "en":
        assert headline.startswith("Some checks could not finish") and "should load now" not in headline
        assert "Not finished: the NVIDIA driver." in verify.next_steps.text()
    else:
        assert headline.startswith("有些检查没能完成")


def _repaired_and_verified(torch_image, open_wizard, qtbot, lang: str = "en"):
    """A real repair of torch 2.4.0 on a copied drive (the missing OpenMP runtime placed), checked, then Finish."""
    from app.ui.pages.base import FINISH, VERIFY

    image = torch_image()
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    forward(qtbot, wizard, REPAIR)
    qtbot.waitUntil(lambda: wizard.pages[REPAIR].state == RepairState.DONE, timeout=WAIT_MS)
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    forward(qtbot, wizard, FINISH)
    return image, wizard, wizard.pages[FINISH]


PLACED = TORCH_LIB + r"\libomp140.x86_64.dll"


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_repair_log_says_what_each_repair_changed_with_the_journal_id_after(torch_image, open_wizard, qtbot,
                                                                                lang):
    image = torch_image()
    wizard = open_wizard(root=str(image.root), lang=lang)
    to_plan(qtbot, wizard)
    forward(qtbot, wizard, REPAIR)
    repair = wizard.pages[REPAIR]
    qtbot.waitUntil(lambda: repair.state == RepairState.DONE, timeout=WAIT_MS)
    (transaction,) = Journal().transactions()
    log = repair.log.toPlainText()
    placed = {"en": f"Placed {PLACED}", "zh_CN": f"放入了 {PLACED}"}[lang]
    assert placed in log and transaction.id in log
    assert log.index(placed) < log.index(transaction.id)  # what was done first, the journal's id in the details
    assert repair.rows[0]["name"].text() in log


def test_undo_on_finish_asks_first_and_says_what_changes_back(torch_image, open_wizard, qtbot):
    image, wizard, finish = _repaired_and_verified(torch_image, open_wizard, qtbot)
    lib = image.host(TORCH_LIB)
    qtbot.mouseClick(finish.undo, Qt.MouseButton.LeftButton)
    box = finish.confirm
    assert box is not None and box.isVisible()
    from app.ui.pages.base import without_break_hints

    asked = without_break_hints(box.text())  # a path in it breaks between folders only
    assert f"{PLACED} is removed" in asked and "Add the missing OpenMP runtime" in asked
    assert (lib / "libomp140.x86_64.dll").exists() and next(Journal().transactions()).state == "done"
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.No), Qt.MouseButton.LeftButton)  # Keep them
    qtbot.wait(200)
    assert (lib / "libomp140.x86_64.dll").exists() and next(Journal().transactions()).state == "done"
    assert finish.undo.isVisible() and finish.result.text() == ""
    undo_on_finish(qtbot, finish)
    qtbot.waitUntil(lambda: finish.undo.isHidden(), timeout=WAIT_MS)
    assert not (lib / "libomp140.x86_64.dll").exists() and next(Journal().transactions()).state == "rolled-back"


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_back_to_the_repair_page_after_undo_on_finish_says_undone_never_done(torch_image, open_wizard, qtbot, lang):
    from app.ui.pages.base import VERIFY

    image, wizard, finish = _repaired_and_verified(torch_image, open_wizard, qtbot, lang)
    repair = wizard.pages[REPAIR]
    done_words = repair.status.text()
    undo_on_finish(qtbot, finish)
    qtbot.waitUntil(lambda: finish.undo.isHidden(), timeout=WAIT_MS)
    for page_id in (VERIFY, REPAIR):  # Back twice
        qtbot.mouseClick(wizard.button(QWizard.WizardButton.BackButton), Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda at=page_id: wizard.currentId() == at, timeout=WAIT_MS)
    assert repair.state == RepairState.UNDONE and repair.status.text() != done_words
    status, row, log = repair.status.text(), repair.rows[0]["state"].text(), repair.log.toPlainText()
    if lang == "en":
        assert "undone" in status and "All chosen repairs are done" not in status
        assert row.startswith("undone")
        assert f"{PLACED} is removed" in log
    else:
        assert "撤销" in status and "撤销" in row and f"删除 {PLACED}" in log
    assert not repair.stop.isEnabled() and repair.isComplete()
    shots = os.environ.get("TDD_SCREENSHOT_DIR")
    if shots:  # what the person sees, for a look by eye
        repair.show_log.setChecked(True)
        wizard.grab().save(str(Path(shots) / f"repair-after-undo-{lang}.png"))
