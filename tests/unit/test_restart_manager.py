"""The Restart Manager as Microsoft documents it (docs/facts.md, "Who holds a file"), where neither Linux nor Wine
can show it (Wine's rstrtmgr answers "nobody"): app/system/restart_manager.py `ask` against a stand-in of
rstrtmgr.dll that answers as the documentation says. On a real PC, tests/windows/test_on_windows.py asks Windows'
own."""

from __future__ import annotations

import pytest

from app.system.restart_manager import BATCH, ERROR_MORE_DATA, ask

ERROR_ACCESS_DENIED, ERROR_INVALID_HANDLE = 5, 6


class DocumentedRestartManager:
    """rstrtmgr.dll's four calls as Microsoft Learn describes them (RmStartSession, RmRegisterResources, RmGetList,
    RmEndSession): resources add up over calls; RmGetList answers ERROR_MORE_DATA with the count it needs when
    the caller's array is too small (and the list may grow between two calls); a session must be ended."""

    def __init__(self, holders_by_call: list[list[tuple[int, str]]], refuse: dict[str, int] | None = None):
        self.holders_by_call = holders_by_call  # what RmGetList sees at each call (the list can change)
        self.refuse = refuse or {}
        self.registered: list[str] = []
        self.register_calls = 0
        self.get_list_calls = 0
        self.open_sessions: set[int] = set()

    def RmStartSession(self, session, flags, key):  # noqa: N802 - Windows' names
        if "start" in self.refuse:
            return self.refuse["start"]
        session._obj.value = 7
        self.open_sessions.add(7)
        return 0

    def RmRegisterResources(self, session, count, files, *rest):  # noqa: N802
        if session.value not in self.open_sessions:
            return ERROR_INVALID_HANDLE
        self.register_calls += 1
        if "register" in self.refuse:
            return self.refuse["register"]
        self.registered.extend(files[i] for i in range(count))
        return 0

    def RmGetList(self, session, needed, count, infos, reasons):  # noqa: N802
        if session.value not in self.open_sessions:
            return ERROR_INVALID_HANDLE
        if "get" in self.refuse:
            return self.refuse["get"]
        seen = self.holders_by_call[min(self.get_list_calls, len(self.holders_by_call) - 1)]
        self.get_list_calls += 1
        needed._obj.value = len(seen)
        if count._obj.value < len(seen):
            return ERROR_MORE_DATA
        for i, (pid, name) in enumerate(seen):
            infos[i].Process.dwProcessId = pid
            infos[i].strAppName = name
        count._obj.value = len(seen)
        return 0

    def RmEndSession(self, session):  # noqa: N802
        self.open_sessions.discard(session.value)
        return 0


def test_the_list_is_asked_for_again_with_the_size_it_needs_and_names_every_holder():
    rm = DocumentedRestartManager([[(4120, "ComfyUI"), (5120, "python.exe"), (6120, "Python")]])
    found = ask(rm, [r"C:\ComfyUI\venv\Lib\site-packages\torch\lib\c10.dll"])
    assert found == [{"pid": 4120, "name": "ComfyUI"}, {"pid": 5120, "name": "python.exe"},
                     {"pid": 6120, "name": "Python"}]
    assert rm.get_list_calls == 2 and not rm.open_sessions


def test_a_list_that_grows_between_two_calls_is_asked_for_again():
    rm = DocumentedRestartManager([[(1, "a"), (2, "b")], [(1, "a"), (2, "b"), (3, "c")], [(1, "a"), (2, "b"),
                                                                                           (3, "c")]])
    found = ask(rm, [r"C:\x.dll"])
    assert [h["pid"] for h in found] == [1, 2, 3] and rm.get_list_calls == 3 and not rm.open_sessions


def test_nobody_holding_is_an_empty_answer_not_none():
    rm = DocumentedRestartManager([[]])
    assert ask(rm, [r"C:\x.dll"]) == [] and not rm.open_sessions


def test_every_file_is_registered_in_batches_none_dropped():
    """A torch folder set aside is asked about with every DLL below it: all are registered, however many."""
    files = [rf"C:\venv\Lib\site-packages\torch\lib\f{i}.dll" for i in range(2 * BATCH + 452)]
    rm = DocumentedRestartManager([[]])
    assert ask(rm, files) == []
    assert rm.registered == files and rm.register_calls == 3


@pytest.mark.parametrize("where", ["start", "register", "get"])
def test_a_refusal_is_no_answer_so_the_caller_looks_itself_and_the_session_is_ended(where):
    rm = DocumentedRestartManager([[(1, "a")]], refuse={where: ERROR_ACCESS_DENIED})
    assert ask(rm, [r"C:\x.dll"]) is None
    assert not rm.open_sessions


def test_a_holder_without_a_name_is_named_as_unknown():
    rm = DocumentedRestartManager([[(99, "")]])
    assert ask(rm, [r"C:\x.dll"]) == [{"pid": 99, "name": "?"}]

