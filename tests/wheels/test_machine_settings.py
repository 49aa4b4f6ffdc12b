"""Machine-wide settings on offline images: `enable-long-paths` writes LongPathsEnabled into registry.json directly
(an image has no elevation), journalled with the value before; undo puts registry.json back as it was. An undo
writes only a value this app writes (the journal is the user's to change), and the reg.exe command line that writes
a value elevated on a live Windows (tests/lab/test_live_machine_settings.py runs it under Wine)."""

from __future__ import annotations

import json

import pytest

from app.main import main
from app.repair.changes.machine_values import allowed
from app.repair.journal import Journal, _line
from app.system.base import RegistryValue
from app.system.offline import OfflineImage
from tests.helpers.images import VENV

PYTHON = VENV + r"\Scripts\python.exe"
FS = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
MM = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management"
ENVIRONMENT = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TDD_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("before", [0, None])
def test_enable_long_paths_in_an_image_and_undo(torch_image, capsys, before):
    image = torch_image()
    if before is not None:
        image.registry.setdefault(FS, {})["LongPathsEnabled"] = {"type": "REG_DWORD", "data": before}
    image.save()
    original = (image.root / "registry.json").read_bytes()
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "enable-long-paths"]

    assert main([*argv, "--plan"]) == 0
    assert "LongPathsEnabled" in capsys.readouterr().out
    main([*argv, "--yes"])
    capsys.readouterr()
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") == RegistryValue("REG_DWORD", 1)
    (transaction,) = Journal().transactions()
    (step,) = transaction.steps()
    assert step.applied and step.intent["op"] == "machine-value"
    assert step.intent["before"] == (None if before is None else {"type": "REG_DWORD", "data": before})
    assert main([*argv, "--plan"]) == 1  # nothing left to do
    capsys.readouterr()

    main(["undo", "--last"])
    assert "Undone" in capsys.readouterr().out
    after = OfflineImage(image.root)
    assert after.registry_value(FS, "LongPathsEnabled") == (None if before is None else
                                                            RegistryValue("REG_DWORD", before))
    def meaning(data: bytes) -> dict:  # a key left empty by the undo holds what an absent key holds: no values
        return {k: v for k, v in json.loads(data).items() if v}

    assert meaning((image.root / "registry.json").read_bytes()) == meaning(original)


def test_an_undo_never_writes_a_before_value_this_app_does_not_write(torch_image, capsys):
    """Any program of the user can edit the journal; an undo writes its "before" with administrator rights. A
    before-value outside what Windows itself gives (0, 1, absent) stops the undo, and nothing is written."""
    image = torch_image()
    image.save()
    argv = ["repair", "--root", str(image.root), "--env", PYTHON, "--action", "enable-long-paths"]
    main([*argv, "--yes"])  # done (the image has another problem left: exit 1)
    capsys.readouterr()
    (transaction,) = Journal().transactions()
    journal = transaction.folder / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    for record in lines:
        record.pop("crc")  # a program that edits it can write a CRC as well as the journal does
        if record.get("op") == "machine-value":
            record["before"] = {"type": "REG_DWORD", "data": 7}
    journal.write_bytes(b"".join(_line(r) for r in lines))

    assert main(["undo", "--last"]) == 1
    out = capsys.readouterr()
    assert "not a value this app ever writes" in out.out + out.err
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") == RegistryValue("REG_DWORD", 1)


@pytest.mark.parametrize("key, name, value, ok", [
    (FS, "LongPathsEnabled", {"type": "REG_DWORD", "data": 1}, True),
    (FS, "LongPathsEnabled", None, True),
    ("HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\FileSystem", "longpathsenabled",
     {"type": "REG_DWORD", "data": 0}, True),
    (FS, "LongPathsEnabled", {"type": "REG_DWORD", "data": 2}, False),
    (FS, "LongPathsEnabled", {"type": "REG_DWORD", "data": True}, False),
    (FS, "LongPathsEnabled", {"type": "REG_SZ", "data": "1"}, False),
    (FS, "NtfsDisable8dot3NameCreation", {"type": "REG_DWORD", "data": 1}, False),
    (MM, "PagingFiles", {"type": "REG_MULTI_SZ", "data": ["?:\\pagefile.sys"]}, True),
    (MM, "PagingFiles", {"type": "REG_MULTI_SZ", "data": ["C:\\pagefile.sys 16384 32768", "D:\\pagefile.sys"]}, True),
    (MM, "PagingFiles", {"type": "REG_MULTI_SZ", "data": []}, True),
    (MM, "PagingFiles", None, False),
    (MM, "PagingFiles", {"type": "REG_MULTI_SZ", "data": ["C:\\Users\\me\\evil.sys 1 1"]}, False),
    (MM, "PagingFiles", {"type": "REG_MULTI_SZ", "data": ["C:\\pagefile.sys 1 1 & calc"]}, False),
    (ENVIRONMENT, "Path", {"type": "REG_EXPAND_SZ", "data": "C:\\Users\\me\\evil;%SystemRoot%"}, False),
])
def test_the_values_an_undo_may_write(key, name, value, ok):
    assert allowed(key, name, value) is ok


def test_reg_exe_command_lines_write_exactly_the_value():
    from app.system.elevation import installer_command, reg_argv

    folder = "C:\\Windows\\System32"
    argv = reg_argv(folder, FS, "LongPathsEnabled", RegistryValue("REG_DWORD", 1))
    assert argv == ["C:\\Windows\\System32\\reg.exe", "add", FS, "/v", "LongPathsEnabled", "/t", "REG_DWORD",
                    "/d", "1", "/f", "/reg:64"]
    argv = reg_argv(folder, "HKEY_LOCAL_MACHINE\\" + MM[5:], "PagingFiles",
                    RegistryValue("REG_MULTI_SZ", ["C:\\pagefile.sys 0 0", "?:\\pagefile.sys"]))
    assert argv[2] == MM and argv[7:11] == ["/s", "|", "/d", "C:\\pagefile.sys 0 0|?:\\pagefile.sys"]
    program, parameters = installer_command(argv)
    assert program.endswith("reg.exe") and '"C:\\pagefile.sys 0 0|?:\\pagefile.sys"' in parameters
    assert reg_argv(folder, FS, "LongPathsEnabled", None)[1:] == ["delete", FS, "/v", "LongPathsEnabled", "/f",
                                                                  "/reg:64"]
    with pytest.raises(ValueError):
        reg_argv(folder, "HKCU\\Environment", "X", RegistryValue("REG_SZ", "1"))
    with pytest.raises(ValueError):
        reg_argv(folder, MM, "PagingFiles", RegistryValue("REG_MULTI_SZ", ["a|b"]))


class _SaysNo(OfflineImage):
    """A computer whose user answers No at Windows' permission prompt (LiveWindows.set_machine_value raises
    ElevationDeclined when ShellExecuteEx fails with ERROR_CANCELLED; tests/lab/test_live_machine_settings.py
    answers No through ShellExecuteEx itself)."""

    def set_machine_value(self, key, name, value) -> None:
        from app.system.base import ElevationDeclined

        raise ElevationDeclined("administrator rights were not given to reg.exe")


def test_no_at_the_permission_prompt_of_an_undo_is_recorded_and_said_and_the_undo_can_be_asked_again(torch_image,
                                                                                                    capsys):
    from app.failures import failure_text
    from app.repair.changes import RollbackStopped
    from app.repair.journal import ROLLBACK_STOPPED

    image = torch_image()
    image.save()
    main(["repair", "--root", str(image.root), "--env", PYTHON, "--action", "enable-long-paths", "--yes"])
    capsys.readouterr()
    (transaction,) = Journal().transactions()
    with pytest.raises(RollbackStopped) as stopped:
        transaction.rollback(_SaysNo(image.root))
    assert stopped.value.code == "declined"
    again = Journal().get(transaction.id)
    assert again.state == ROLLBACK_STOPPED  # recorded: never found "interrupted" like a crash at the next start
    assert not again.stop_is_final  # the first page offers the rollback again: Yes may be answered next time
    en, zh = failure_text(stopped.value, "en"), failure_text(stopped.value, "zh_CN")
    assert "LongPathsEnabled" in en and "answer Yes" in en and "ElevationDeclined" not in en
    assert "LongPathsEnabled" in zh and "没有获得允许" in zh
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") == RegistryValue("REG_DWORD", 1)
    assert main(["undo", "--last"]) == 0  # asked again, and answered Yes this time
    assert OfflineImage(image.root).registry_value(FS, "LongPathsEnabled") is None


def test_no_at_the_permission_prompt_of_a_repair_is_said_in_plain_words():
    from app.failures import failure_text
    from app.system.base import ElevationDeclined

    error = ElevationDeclined("administrator rights were not given to reg.exe")
    assert failure_text(error, "en").startswith("Windows asked for permission and it was not given")
    assert "没有获得允许" in failure_text(error, "zh_CN")
