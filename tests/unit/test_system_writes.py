"""The write side of System on an offline image: the user's registry values and variables, and file changes.

Each change is read back twice: through the same OfflineImage (its memory) and through a new OfflineImage of
the same folder (the files on disk).
"""

from __future__ import annotations

import json
import os

import pytest

from app.demo.image_builder import ImageBuilder
from app.system.base import NeedsElevation, RegistryValue
from app.system.offline import ImageFileDamaged, OfflineImage

TEST_KEY = r"HKCU\Software\TorchDllDoctorTest"
VC_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\x64"
ALL_TYPES = {
    "Text": RegistryValue("REG_SZ", "plain words, 中文"),
    "Expandable": RegistryValue("REG_EXPAND_SZ", r"%USERPROFILE%\bin"),
    "Lines": RegistryValue("REG_MULTI_SZ", ["one", "two", r"C:\three"]),
    "Small": RegistryValue("REG_DWORD", 0xFFFFFFFF),
    "Big": RegistryValue("REG_QWORD", 1 << 40),
    "Blob": RegistryValue("REG_BINARY", bytes(range(256))),
    "": RegistryValue("REG_SZ", "the default value"),
}


@pytest.fixture
def image(tmp_path):
    builder = ImageBuilder(tmp_path / "image")
    builder.vc_runtime("x64", "14.44.35211")
    builder.set_value(r"HKCU\Environment", "Path", "REG_EXPAND_SZ", r"%USERPROFILE%\tools")
    builder.set_value(r"HKCU\Environment", "TEMP", "REG_EXPAND_SZ", r"%USERPROFILE%\AppData\Local\Temp")
    builder.set_value(r"HKCU\Control Panel\International", "LocaleName", "REG_SZ", "en-US")
    builder.set_variable("user", "TEMP", r"C:\Users\alice\AppData\Local\Temp")
    builder.mkdir(r"C:\Windows\SysWOW64")
    return builder


def reopened(builder: ImageBuilder) -> OfflineImage:
    return OfflineImage(builder.root)


def registry_file(builder: ImageBuilder) -> dict:
    return json.loads((builder.root / "registry.json").read_text(encoding="utf-8"))


def environment_file(builder: ImageBuilder) -> dict:
    return json.loads((builder.root / "environment.json").read_text(encoding="utf-8"))


# -- user variables ------------------------------------------------------------------------------------------
def test_a_new_user_variable_is_written_to_disk_and_seen_at_once(image):
    system = OfflineImage(image.root)
    system.set_user_variable("TDD_TEST_VAR", "hello")
    for seen in (system, reopened(image)):
        assert seen.environment("user")["TDD_TEST_VAR"] == "hello"
        assert seen.variable("tdd_test_var") == "hello"
        assert seen.registry_value(r"HKCU\Environment", "TDD_TEST_VAR") == RegistryValue("REG_SZ", "hello")
    document = environment_file(image)
    assert document["user"]["USERNAME"] == "alice" and document["system"] == image.env["system"]
    assert document["windows_version"] == "10.0.22631"


def test_a_value_with_percent_is_expandable_and_an_existing_variable_keeps_its_name_and_type(image):
    system = OfflineImage(image.root)
    system.set_user_variable("TDD_TEST_VAR", r"%USERPROFILE%\x")
    assert reopened(image).registry_value(r"HKCU\Environment", "TDD_TEST_VAR").type == "REG_EXPAND_SZ"
    assert system.expand(system.variable("TDD_TEST_VAR")) == r"C:\Users\alice\x"

    system.set_user_variable("temp", r"D:\Temp")  # no % any more: still REG_EXPAND_SZ, still spelled TEMP
    for seen in (system, reopened(image)):
        assert seen.registry_value(r"HKCU\Environment", "TEMP") == RegistryValue("REG_EXPAND_SZ", r"D:\Temp")
        assert "TEMP" in seen.environment("user") and "temp" not in seen.environment("user")
        assert "TEMP" in seen.registry_values(r"HKCU\Environment")
        assert seen.variable("TEMP") == r"D:\Temp"


def test_a_new_variable_takes_the_type_asked_for_and_an_existing_one_keeps_its_own(image):
    system = OfflineImage(image.root)
    system.set_user_variable("TDD_TEST_VAR", "50%", "REG_SZ")  # an undo bringing back a REG_SZ holding a %
    system.set_user_variable("TDD_PLAIN", "plain", "REG_EXPAND_SZ")
    system.set_user_variable("TEMP", r"D:\Temp", "REG_SZ")  # TEMP is there, REG_EXPAND_SZ: it stays so
    for seen in (system, reopened(image)):
        assert seen.registry_value(r"HKCU\Environment", "TDD_TEST_VAR") == RegistryValue("REG_SZ", "50%")
        assert seen.registry_value(r"HKCU\Environment", "TDD_PLAIN") == RegistryValue("REG_EXPAND_SZ", "plain")
        assert seen.registry_value(r"HKCU\Environment", "TEMP") == RegistryValue("REG_EXPAND_SZ", r"D:\Temp")


def test_deleting_a_user_variable_removes_it_from_both_files(image):
    system = OfflineImage(image.root)
    system.set_user_variable("temp", None)
    for seen in (system, reopened(image)):
        assert "TEMP" not in {name.upper() for name in seen.environment("user")}
        assert seen.variable("TEMP") is None
        assert seen.registry_value(r"HKCU\Environment", "TEMP") is None
        assert seen.registry_value(r"HKCU\Environment", "Path") is not None
    system.set_user_variable("TEMP", None)  # already gone: nothing happens
    system.set_user_variable("NEVER_SET", None)
    assert "NEVER_SET" not in environment_file(image)["user"]


def test_an_image_without_data_files_gets_them_created(tmp_path):
    (tmp_path / "bare").mkdir()
    system = OfflineImage(tmp_path / "bare")
    system.set_user_variable("NEVER_SET", None)
    assert not (tmp_path / "bare" / "environment.json").exists()
    system.set_user_variable("TDD_TEST_VAR", "1")
    system.set_registry_value(TEST_KEY, "Count", RegistryValue("REG_DWORD", 3))
    assert json.loads((tmp_path / "bare" / "environment.json").read_text()) == {"user": {"TDD_TEST_VAR": "1"}}
    again = OfflineImage(tmp_path / "bare")
    assert again.variable("TDD_TEST_VAR") == "1"
    assert again.registry_values(TEST_KEY) == {"Count": RegistryValue("REG_DWORD", 3)}
    assert again.registry_subkeys(r"HKCU\Software") == ["TorchDllDoctorTest"]
    assert system.registry_subkeys(r"HKCU\Software") == ["TorchDllDoctorTest"]


def test_a_variable_without_a_user_registry_is_written_to_environment_json_only(tmp_path):
    builder = ImageBuilder(tmp_path / "image")
    system = OfflineImage(builder.root)
    system.set_user_variable("PATH", r"C:\tools")
    assert reopened(builder).environment("user")["PATH"] == r"C:\tools"
    assert registry_file(builder) == {}


@pytest.mark.parametrize("name, value", [("", "x"), ("A=B", "x"), ("A\0B", "x"), ("OK", "a\0b")])
def test_impossible_variables_are_refused(image, name, value):
    before = environment_file(image)
    with pytest.raises(ValueError):
        OfflineImage(image.root).set_user_variable(name, value)
    assert environment_file(image) == before


# -- registry values -----------------------------------------------------------------------------------------
def test_every_value_type_round_trips_and_deletes(image):
    system = OfflineImage(image.root)
    for name, value in ALL_TYPES.items():
        system.set_registry_value(TEST_KEY, name, value)
    for seen in (system, reopened(image)):
        assert seen.registry_values(TEST_KEY) == ALL_TYPES
        assert "TorchDllDoctorTest" in seen.registry_subkeys(r"HKCU\Software")
    stored = registry_file(image)[TEST_KEY]
    assert stored["Blob"] == {"type": "REG_BINARY", "data": bytes(range(256)).hex()}
    assert stored["Lines"] == {"type": "REG_MULTI_SZ", "data": ["one", "two", r"C:\three"]}

    for name in ALL_TYPES:
        system.set_registry_value(TEST_KEY, name.lower(), None)  # value names ignore case, as on Windows
    for seen in (system, reopened(image)):
        assert seen.registry_values(TEST_KEY) == {}
    system.set_registry_value(TEST_KEY, "Small", None)  # already gone: nothing happens
    system.set_registry_value(TEST_KEY + r"\NoSuchKey", "x", None)
    assert not any(key.lower().endswith("nosuchkey") for key in registry_file(image))


def test_keys_and_names_match_whatever_their_case_and_keep_their_spelling(image):
    system = OfflineImage(image.root)
    system.set_registry_value(r"hkcu\control panel\INTERNATIONAL", "localename", RegistryValue("REG_SZ", "zh-CN"))
    document = registry_file(image)
    assert document[r"HKCU\Control Panel\International"] == {"LocaleName": {"type": "REG_SZ", "data": "zh-CN"}}
    assert not [key for key in document if key.startswith("hkcu")]
    assert reopened(image).ui_language == "zh-CN" and system.ui_language == "zh-CN"


def test_a_key_spelled_twice_in_the_file_ends_with_one_value(image):
    document = registry_file(image)
    document[TEST_KEY] = {"Mode": {"type": "REG_SZ", "data": "old"}}
    document[TEST_KEY.upper()] = {"MODE": {"type": "REG_SZ", "data": "older"}, "Other": {"type": "REG_DWORD",
                                                                                        "data": 7}}
    (image.root / "registry.json").write_text(json.dumps(document), encoding="utf-8")
    system = OfflineImage(image.root)
    system.set_registry_value(TEST_KEY, "mode", RegistryValue("REG_SZ", "new"))
    for seen in (system, reopened(image)):
        assert seen.registry_values(TEST_KEY) == {"Mode": RegistryValue("REG_SZ", "new"),
                                                  "Other": RegistryValue("REG_DWORD", 7)}
    system.set_registry_value(TEST_KEY, "MODE", None)
    for seen in (system, reopened(image)):
        assert seen.registry_values(TEST_KEY) == {"Other": RegistryValue("REG_DWORD", 7)}


def test_the_other_entries_of_registry_json_are_kept(image):
    document = registry_file(image)
    document[r"HKCU\Software\Odd"] = {"Damaged": {"type": "REG_WEIRD", "data": [1]}, "Fine": {"type": "REG_SZ",
                                                                                            "data": "x"}}
    (image.root / "registry.json").write_text(json.dumps(document), encoding="utf-8")
    system = OfflineImage(image.root)
    system.set_registry_value(TEST_KEY, "Count", RegistryValue("REG_DWORD", 1))
    system.set_registry_value(TEST_KEY, "Count", None)
    after = registry_file(image)
    assert after.pop(TEST_KEY) == {}  # the key stays, empty, as on Windows
    assert after == document  # every other key and value as it was, even the one we cannot read


def test_hklm_and_other_machine_wide_hives_need_elevation(image):
    system = OfflineImage(image.root)
    before = (image.root / "registry.json").read_bytes()
    for key in (VC_KEY, r"HKEY_LOCAL_MACHINE\SOFTWARE\Test", r"hklm\SOFTWARE\WOW6432Node\Test", r"HKU\.DEFAULT\x"):
        with pytest.raises(NeedsElevation):
            system.set_registry_value(key, "Installed", RegistryValue("REG_DWORD", 0))
        with pytest.raises(NeedsElevation):
            system.set_registry_value(key, "Installed", None)
    assert issubclass(NeedsElevation, PermissionError)
    assert (image.root / "registry.json").read_bytes() == before
    assert system.registry_value(VC_KEY, "Installed") == RegistryValue("REG_DWORD", 1)


@pytest.mark.parametrize("key, name, value", [
    (r"HKXX\Software\Test", "x", RegistryValue("REG_SZ", "x")),
    (r"HKCU", "x", RegistryValue("REG_SZ", "x")),
    (r"HKCU\Software\\Test", "x", RegistryValue("REG_SZ", "x")),
    (TEST_KEY, "x", RegistryValue("REG_DWORD", -1)),
    (TEST_KEY, "x", RegistryValue("REG_DWORD", 1 << 32)),
    (TEST_KEY, "x", RegistryValue("REG_DWORD", True)),
    (TEST_KEY, "x", RegistryValue("REG_QWORD", 1 << 64)),
    (TEST_KEY, "x", RegistryValue("REG_SZ", b"bytes")),
    (TEST_KEY, "x", RegistryValue("REG_BINARY", "00ff")),
    (TEST_KEY, "x", RegistryValue("REG_MULTI_SZ", ["a", ""])),
    (TEST_KEY, "x", RegistryValue("REG_MULTI_SZ", "a")),
    (TEST_KEY, "x", RegistryValue("REG_NONE", None)),
    (TEST_KEY, "a\0b", RegistryValue("REG_SZ", "x")),
])
def test_values_that_cannot_round_trip_are_refused(image, key, name, value):
    before = (image.root / "registry.json").read_bytes()
    with pytest.raises(ValueError):
        OfflineImage(image.root).set_registry_value(key, name, value)
    assert (image.root / "registry.json").read_bytes() == before


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", "\udcff"])
def test_a_damaged_registry_json_is_not_overwritten(image, damage):
    path = image.root / "registry.json"
    path.write_bytes(damage.encode("utf-8", "surrogateescape"))
    system = OfflineImage(image.root)
    assert system.problems  # noted on reading...
    with pytest.raises(ImageFileDamaged, match="registry.json"):  # ...and refused on writing
        system.set_registry_value(TEST_KEY, "Count", RegistryValue("REG_DWORD", 1))
    with pytest.raises(OSError):
        system.set_registry_value(TEST_KEY, "Count", None)
    assert path.read_bytes() == damage.encode("utf-8", "surrogateescape")


def test_a_damaged_environment_json_is_not_overwritten(image):
    path = image.root / "environment.json"
    path.write_text('{"user": {"PATH": "C:\\\\x"', encoding="utf-8")
    registry_before = (image.root / "registry.json").read_bytes()
    with pytest.raises(ImageFileDamaged, match="environment.json"):
        OfflineImage(image.root).set_user_variable("TEMP", "x")
    assert path.read_text(encoding="utf-8") == '{"user": {"PATH": "C:\\\\x"'
    assert (image.root / "registry.json").read_bytes() == registry_before  # nothing half done

    path.write_text('{"user": ["not", "a", "table"]}', encoding="utf-8")
    with pytest.raises(ImageFileDamaged, match="user table"):
        OfflineImage(image.root).set_user_variable("TEMP", None)
    assert json.loads(path.read_text(encoding="utf-8")) == {"user": ["not", "a", "table"]}


def test_a_registry_key_without_a_table_is_not_overwritten(image):
    document = registry_file(image)
    document[TEST_KEY] = "not a table"
    (image.root / "registry.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ImageFileDamaged, match="no value table"):
        OfflineImage(image.root).set_registry_value(TEST_KEY, "Count", RegistryValue("REG_DWORD", 1))
    assert registry_file(image) == document


def test_no_temporary_file_is_left_behind(image):
    system = OfflineImage(image.root)
    system.set_user_variable("TDD_TEST_VAR", "1")
    system.set_registry_value(TEST_KEY, "Count", RegistryValue("REG_DWORD", 1))
    assert sorted(p.name for p in image.root.iterdir() if p.is_file()) == ["environment.json", "registry.json"]


# -- files -------------------------------------------------------------------------------------------------
def test_files_change_inside_the_image(image, tmp_path):
    system = OfflineImage(image.root)
    lib = image.mkdir(r"C:\Users\alice\venv\Lib\site-packages\torch\lib")
    system.write_file(lib / "libomp140.x86_64.dll", b"MZ new")
    assert system.host_path(r"C:\USERS\alice\venv\lib\site-packages\torch\lib\LIBOMP140.X86_64.DLL").read_bytes() \
        == b"MZ new"
    source = tmp_path / "downloaded.dll"
    source.write_bytes(b"MZ" + bytes(3 << 20))
    seen = []
    system.copy_file(source, lib / "copy.dll", progress=lambda done, total: seen.append((done, total)))
    assert (lib / "copy.dll").read_bytes() == source.read_bytes() and seen[-1] == (source.stat().st_size,) * 2
    system.rename_file(lib / "copy.dll", lib / "renamed.dll")
    assert not (lib / "copy.dll").exists()
    assert system.host_path(r"C:\Users\alice\venv\Lib\site-packages\torch\lib\RENAMED.dll").is_file()
    system.delete_file(lib / "renamed.dll")
    assert not system.host_path(r"C:\Users\alice\venv\Lib\site-packages\torch\lib\renamed.dll").exists()
    system.write_file(image.root / "Program Files" / "New" / "a.txt", b"made with its folders")
    assert system.folder(r"C:\program files\new") is not None


def test_files_outside_the_image_are_refused(image, tmp_path):
    system = OfflineImage(image.root)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    inside = image.write(r"C:\Users\alice\inside.txt", b"inside")
    (image.root / "Users" / "alice" / "escape").symlink_to(tmp_path)
    for target in (outside, image.root / ".." / "outside.txt", image.root / "Users" / "alice" / "escape" / "x.txt",
                   image.root, image.root / "registry.json"):
        with pytest.raises(ValueError, match="outside the offline image|own data|not a file"):
            system.write_file(target, b"x")
        with pytest.raises(ValueError):
            system.copy_file(inside, target)
    with pytest.raises(ValueError):
        system.delete_file(outside)
    with pytest.raises(ValueError):
        system.rename_file(outside, image.root / "Users" / "alice" / "moved.txt")
    with pytest.raises(ValueError):
        system.rename_file(inside, outside)
    assert outside.read_bytes() == b"keep" and inside.read_bytes() == b"inside"
    assert not (tmp_path / "x.txt").exists()


def test_system32_and_syswow64_are_never_written(image, tmp_path):
    system = OfflineImage(image.root)
    kernel32 = image.write(r"C:\Windows\System32\kernel32.dll", b"MZ real")
    source = tmp_path / "vcruntime140.dll"
    source.write_bytes(b"MZ")
    folders = [image.root / "Windows" / "System32", image.root / "windows" / "SYSTEM32",
               image.root / "Windows" / "SysWOW64", image.root / "Windows" / "System32" / "drivers",
               image.root / "Windows" / "Sysnative"]
    for folder in folders:
        with pytest.raises(PermissionError, match="never writes to System32") as raised:
            system.write_file(folder / "vcruntime140.dll", b"MZ")
        assert not isinstance(raised.value, NeedsElevation)
        with pytest.raises(PermissionError):
            system.copy_file(source, folder / "vcruntime140.dll")
    with pytest.raises(PermissionError):
        system.delete_file(kernel32)
    with pytest.raises(PermissionError):
        system.rename_file(kernel32, image.root / "Windows" / "kernel32.dll")
    with pytest.raises(PermissionError):
        system.write_file(image.root / "Windows" / "System32", b"the folder itself")
    image.mkdir(r"C:\Users\alice\link")
    os.rmdir(image.root / "Users" / "alice" / "link")
    (image.root / "Users" / "alice" / "link").symlink_to(image.root / "Windows" / "System32")
    with pytest.raises(PermissionError):
        system.write_file(image.root / "Users" / "alice" / "link" / "x.dll", b"MZ")
    assert kernel32.read_bytes() == b"MZ real"
    assert sorted(p.name for p in (image.root / "Windows" / "System32").iterdir()) == ["Wbem", "kernel32.dll"]
    system.write_file(image.root / "Windows" / "System32x.txt", b"a neighbour is fine")
