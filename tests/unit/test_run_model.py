"""The repair run's one state machine (app/repair/run_model.py), without Qt or threads: every (state, event) of a run
of two repairs as a table, each event a state does not allow refused with nothing changed, and the words and looks
of every state in both languages."""

from __future__ import annotations

import pytest

from app.i18n import LANGUAGES
from app.repair.run_model import (
    CHANGED,
    LOOKS,
    RUN_STATES,
    Applied,
    Failed,
    Progressed,
    Refused,
    RepairState,
    Retry,
    RolledBack,
    RunModel,
    Skip,
    Started,
    Stop,
    Undone,
)

S = RepairState
EVENTS = {
    "started": Started(),
    "progress": Progressed(S.DOWNLOADING),
    "applied-fixed": Applied(S.FIXED),
    "applied-restart-needed": Applied(S.RESTART_NEEDED, restart_needed=True),
    "applied-unchecked": Applied(S.UNCHECKED),
    "applied-still-blocked": Applied(S.STILL_BLOCKED),
    "failed": Failed(),
    "failed-not-rolled-back": Failed(rolled_back=False),
    "failed-installer-running": Failed(installer_running=True),
    "failed-cancelled": Failed(cancelled=True),
    "retry": Retry(),
    "skip": Skip(),
    "stop": Stop(),
    "rolled-back": RolledBack(frozenset({0})),
    "rollback-stopped": RolledBack(frozenset(), complete=False),
    "undone-first": Undone(frozenset({0})),
    "undone-both": Undone(frozenset({0, 1})),
}
APPLIED = ("applied-fixed", "applied-restart-needed", "applied-unchecked", "applied-still-blocked")
FAILED = ("failed", "failed-not-rolled-back", "failed-installer-running", "failed-cancelled")

# how each run state is reached, from a run of two repairs that has not begun
PATHS = {
    S.WAITING: [],
    S.RUNNING: ["started"],
    S.STOPPING: ["started", "stop"],
    S.FAILED: ["started", "failed"],
    S.INSTALLER_RUNNING: ["started", "failed-installer-running"],
    S.ROLLING_BACK: ["started", "applied-fixed", "failed", "stop"],
    S.DONE: ["started", "applied-fixed", "applied-fixed"],
    S.ROLLED_BACK: ["started", "applied-fixed", "failed", "stop", "rolled-back"],
    S.NOT_ROLLED_BACK: ["started", "applied-fixed", "failed-not-rolled-back"],
    S.UNDONE: ["started", "applied-fixed", "applied-fixed", "undone-both"],
}

# (state, event) -> the run's next state; every pair not here is refused
TABLE = {
    (S.WAITING, "started"): S.RUNNING,
    (S.RUNNING, "progress"): S.RUNNING,
    **{(S.RUNNING, name): S.RUNNING for name in APPLIED},  # the second repair's turn
    (S.RUNNING, "failed"): S.FAILED,
    (S.RUNNING, "failed-not-rolled-back"): S.NOT_ROLLED_BACK,
    (S.RUNNING, "failed-installer-running"): S.INSTALLER_RUNNING,
    (S.RUNNING, "failed-cancelled"): S.ROLLING_BACK,
    (S.RUNNING, "stop"): S.STOPPING,
    (S.STOPPING, "progress"): S.STOPPING,
    **{(S.STOPPING, name): S.ROLLING_BACK for name in APPLIED + FAILED},
    (S.FAILED, "retry"): S.RUNNING,
    (S.FAILED, "skip"): S.RUNNING,
    (S.FAILED, "stop"): S.ROLLING_BACK,
    (S.INSTALLER_RUNNING, "skip"): S.RUNNING,
    (S.INSTALLER_RUNNING, "stop"): S.ROLLING_BACK,
    (S.ROLLING_BACK, "rolled-back"): S.ROLLED_BACK,
    (S.ROLLING_BACK, "rollback-stopped"): S.NOT_ROLLED_BACK,
    (S.DONE, "stop"): S.ROLLING_BACK,
    (S.DONE, "undone-first"): S.DONE,  # the second repair's changes stay
    (S.DONE, "undone-both"): S.UNDONE,
    (S.NOT_ROLLED_BACK, "undone-first"): S.NOT_ROLLED_BACK,  # what could not be put back is still changed
}


def model_in(state: RepairState) -> RunModel:
    model = RunModel(2)
    for name in PATHS[state]:
        model.handle(EVENTS[name])
    assert model.state == state
    return model


def test_the_paths_reach_every_state_of_a_run():
    assert set(PATHS) == RUN_STATES


@pytest.mark.parametrize("state", sorted(RUN_STATES), ids=lambda s: s.value)
@pytest.mark.parametrize("event", sorted(EVENTS))
def test_every_state_and_event(state, event):
    model = model_in(state)
    expected = TABLE.get((state, event))
    if expected is None:
        before = (model.state, list(model.states), model.current)
        assert not model.allows(EVENTS[event])
        with pytest.raises(Refused):
            model.handle(EVENTS[event])
        assert (model.state, list(model.states), model.current) == before  # a refused event changes nothing
    else:
        assert model.handle(EVENTS[event]) == expected


def test_stop_after_the_first_repair_finished_rolls_it_back_and_says_so():
    model = model_in(S.RUNNING)
    model.handle(Applied(S.FIXED))
    model.handle(Progressed(S.VERIFYING))
    assert model.states == [S.FIXED, S.VERIFYING] and model.current == 1
    model.handle(Stop())
    model.handle(Progressed(S.APPLYING))  # a step the stopped repair still reports: its row keeps saying Stop
    assert model.states == [S.FIXED, S.PUTTING_BACK]
    model.handle(Failed(cancelled=True))
    assert model.states == [S.ROLLING_BACK, S.ROLLED_BACK]
    model.handle(RolledBack(frozenset({0})))
    assert model.state == S.ROLLED_BACK and model.states == [S.ROLLED_BACK, S.ROLLED_BACK] and model.ended


def test_a_rollback_that_stopped_is_never_called_success():
    model = model_in(S.ROLLING_BACK)
    model.handle(RolledBack(frozenset(), complete=False))
    assert model.state == S.NOT_ROLLED_BACK and model.states == [S.NOT_ROLLED_BACK, S.ROLLED_BACK]
    assert "not everything could be put back" in model.status_words("en") and model.says_failure


def test_an_installer_still_running_is_skipped_never_retried_and_its_row_keeps_saying_so():
    model = model_in(S.INSTALLER_RUNNING)
    assert not model.can_retry and model.asks and model.says_failure
    model.handle(Skip())
    assert model.states == [S.INSTALLER_RUNNING, S.APPLYING]
    stopped = model_in(S.STOPPING)
    stopped.handle(Failed(installer_running=True))
    stopped.handle(RolledBack())
    assert stopped.state == S.ROLLED_BACK and stopped.says_failure
    assert "installer is still running" in stopped.status_words("en")


def test_an_undo_afterwards_says_undone_on_the_run_and_each_row():
    model = model_in(S.DONE)
    model.handle(Undone(frozenset({1})))
    assert model.state == S.DONE and model.states == [S.FIXED, S.UNDONE]
    model.handle(Undone(frozenset({0})))
    assert model.state == S.UNDONE and model.ended and not model.busy
    for lang in LANGUAGES:
        assert model.row_words(0, lang) == model.row_words(1, lang) != model_in(S.DONE).row_words(0, lang)
        assert model.status_words(lang) != model_in(S.DONE).status_words(lang)
    assert "undone" in model.status_words("en") and "All chosen repairs are done" not in model.status_words("en")
    with pytest.raises(Refused):
        model.handle(Undone(frozenset({0})))  # nothing left that an undo could put back


def test_a_run_of_no_repairs_is_done_at_once():
    model = RunModel(0)
    assert model.handle(Started()) == S.DONE


def test_no_outcome_but_a_finished_one_and_no_step_but_one_at_work():
    with pytest.raises(Refused):
        model_in(S.RUNNING).handle(Applied(S.FAILED))
    with pytest.raises(Refused):
        model_in(S.RUNNING).handle(Progressed(S.DONE))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_state_says_something_in_both_languages_and_has_a_look(lang):
    row_states = [state for state in S if state not in (S.RUNNING, S.STOPPING, S.DONE)]
    said = {}
    for state in row_states:
        model = RunModel(1, states=[state])
        said[state] = model.row_words(0, lang)
        assert state in LOOKS and LOOKS[state].full == (state in CHANGED)
    assert all(said.values()) and len(set(said.values())) == len(said)  # no two states say the same
    statuses = {state: model_in(state).status_words(lang) for state in RUN_STATES}
    quiet = {state for state, words in statuses.items() if not words}
    assert quiet == {S.WAITING, S.FAILED, S.INSTALLER_RUNNING}  # the failure's own words speak there
    assert "{" not in "".join(statuses.values()) + "".join(said.values())


def test_the_words_of_the_variants_in_both_languages():
    model = RunModel(1, runs_installer=True)
    model.handle(Started())
    assert "Microsoft's installer" in model.status_words("en") and "微软" in model.status_words("zh_CN")
    model.closing = True
    model.handle(Stop())
    assert "closes by itself" in model.status_words("en") and "自动关闭" in model.status_words("zh_CN")
    model.handle(Failed(cancelled=True))
    model.left_installed.append("x64 14.44.35211.0")
    model.left_needs_restart = True
    model.handle(RolledBack())
    for lang in LANGUAGES:
        assert "x64 14.44.35211.0" in model.status_words(lang)
    assert "restart" in model.status_words("en")
    done = RunModel(1)
    done.handle(Started())
    done.handle(Applied(S.RESTART_NEEDED, restart_needed=True))
    assert "needs a restart" in done.status_words("en") and "重启" in done.status_words("zh_CN")
