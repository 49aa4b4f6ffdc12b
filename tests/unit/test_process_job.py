"""The job object that holds what the app starts on Windows: the limits structure is laid out as winnt.h lays out
JOBOBJECT_EXTENDED_LIMIT_INFORMATION for x64 (a wrong layout would set a limit other than KILL_ON_JOB_CLOSE); the
lab proves the job itself (tests/lab/test_live_windows.py)."""

from __future__ import annotations

import ctypes

import pytest

from app.system import process


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout")
def test_the_extended_limits_structure_has_the_x64_sdk_layout():
    limits = process._ExtendedLimits
    assert ctypes.sizeof(limits) == 144 and ctypes.sizeof(process._BasicLimits) == 64
    assert process._BasicLimits.LimitFlags.offset == 16 and process._BasicLimits.ActiveProcessLimit.offset == 40
    assert limits.IoInfo.offset == 64 and limits.ProcessMemoryLimit.offset == 112
    assert process.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE == 0x2000 and process.JOB_OBJECT_EXTENDED_LIMIT_INFORMATION == 9


def test_a_child_that_cannot_be_put_in_the_job_is_ended_not_left_suspended(monkeypatch):
    """The job cannot be made (OpenProcess denied, the resume refused): the suspended child is terminated and the
    error is the caller's, on Windows, where there is no process group to end."""
    import errno
    import os
    import types

    killed = []

    class Suspended:
        def __init__(self, argv, **kwargs):
            self.pid, self.stdout, self.stderr, self.returncode = 4242, None, None, None
            assert kwargs["creationflags"] & process.CREATE_SUSPENDED

        def kill(self):
            killed.append(self.pid)

        def communicate(self, timeout=None):
            return b"", b""

    def no_job(pid):
        raise OSError(errno.EACCES, "Access is denied")

    monkeypatch.setattr(process, "os", types.SimpleNamespace(name="nt", path=os.path, environ=os.environ))
    monkeypatch.setattr(process.subprocess, "Popen", Suspended)
    monkeypatch.setattr(process, "_WindowsJob", no_job)
    with pytest.raises(OSError) as raised:
        process.run_process(["pip.exe"], 10)
    assert raised.value.errno == errno.EACCES and killed == [4242]
