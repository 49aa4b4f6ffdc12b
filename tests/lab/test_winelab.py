"""The Windows lab itself: real Windows CPython and real torch 2.4.0 wheels under Wine.

These tests reproduce, on Linux, the facts the product is built on (docs/knowledge.md, "The Windows lab
on Linux"). They skip when Wine or the downloads are unavailable, unless ``TDD_REQUIRE_WINE=1``.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers.lab import chinese_windows
from tests.winelab import LAB_USER, from_windows_path, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.slow]





def test_path_mapping():
    assert to_windows_path("/srv/x y/a.dll") == "Z:\\srv\\x y\\a.dll"
    assert str(from_windows_path("Z:\\srv\\x y\\a.dll")) == "/srv/x y/a.dll"
    assert str(from_windows_path("\\\\?\\Z:\\work")) == "/work"
    assert str(from_windows_path("C:\\windows\\system32", prefix="/p")) == "/p/drive_c/windows/system32"


def test_windows_python_is_64_bit_cpython_312(lab):
    code = (
        "import sys, struct, platform\n"
        "print(sys.version)\n"
        "print(sys.platform, platform.system(), platform.architecture()[0], struct.calcsize('P') * 8)\n"
        "print(sys.executable)\n"
        "print('\\u627e\\u4e0d\\u5230')\n"
    )
    proc = lab.run_python(["-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr
    version, arch, exe, text = proc.stdout.splitlines()
    assert version.startswith("3.12.") and "64 bit (AMD64)" in version
    assert arch.split() == ["win32", "Windows", "64bit", "64"]
    assert exe == to_windows_path(lab.python_dir / "python.exe")
    assert text == "找不到"  # UTF-8 end to end


def test_the_lab_user_has_a_name_the_ansi_code_page_cannot_write(lab):
    """Every lab scenario runs as LAB_USER (张伟): its profile, %TEMP% and %LOCALAPPDATA% (the journal) are spelled in
    characters that code page 1252 lacks, so only Windows' Unicode calls reach them, as for a Chinese name on an
    English Windows."""
    code = ("import ctypes, os, tempfile\n"
            "print(ctypes.windll.kernel32.GetACP())\n"
            "for p in (os.path.expanduser('~'), tempfile.gettempdir(), os.environ['LOCALAPPDATA']):\n"
            "    os.makedirs(p, exist_ok=True); open(os.path.join(p, 'tdd-probe.txt'), 'w').close(); print(p)\n")
    proc = lab.run_python(["-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr
    code_page, home, temp, local = proc.stdout.splitlines()
    assert code_page == "1252" and LAB_USER == "张伟"
    with pytest.raises(UnicodeEncodeError):
        LAB_USER.encode("cp1252")
    assert home == f"C:\\users\\{LAB_USER}" and lab.user_folder().is_dir()
    assert temp.startswith(home) and local.startswith(home)
    assert (from_windows_path(local, prefix=lab.prefix) / "tdd-probe.txt").is_file()


def test_stdin_and_exit_code(lab):
    proc = lab.run_python(["-c", "import sys; sys.stderr.write(sys.stdin.read().upper()); sys.exit(3)"],
                          input="héllo")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "", "HÉLLO")


def test_timeout_kills_the_program(lab):
    with pytest.raises(subprocess.TimeoutExpired):
        lab.run_python(["-c", "import time; print('started', flush=True); time.sleep(60)"], timeout=5)


def test_envs_are_separate_installs(lab, seed_env, fixed_env):
    lib = "Lib/site-packages/torch/lib/"
    assert (seed_env / "python.exe").is_file() and (fixed_env / "python.exe").is_file()
    assert not (seed_env / lib / "libomp140.x86_64.dll").exists()
    placed = (fixed_env / lib / "libomp140.x86_64.dll").read_bytes()
    assert placed == (fixed_env / lib / "libiomp5md.dll").read_bytes()
    # the base tree is shared by hard links, the placed copy is not
    assert os.path.samefile(seed_env / lib / "torch_cpu.dll", fixed_env / lib / "torch_cpu.dll")
    code = "import sys; print(sys.prefix); print([p for p in sys.path if p.endswith('site-packages')])"
    proc = lab.run_python(["-c", code], torch_env=seed_env)
    assert proc.returncode == 0, proc.stderr
    prefix, paths = proc.stdout.splitlines()
    assert prefix == to_windows_path(seed_env)
    assert eval(paths) == [to_windows_path(seed_env / "Lib" / "site-packages")]


def test_torch_240_without_libomp140_fails_on_fbgemm(lab, seed_env):
    proc = lab.run_python(["-c", "import torch"], torch_env=seed_env)
    assert proc.returncode == 1
    assert "OSError: [WinError 126]" in proc.stderr
    # Wine words it "Module not found."; Windows says "The specified module could not be found."
    fbgemm = to_windows_path(seed_env / "Lib" / "site-packages" / "torch" / "lib" / "fbgemm.dll")
    assert f'Error loading "{fbgemm}" or one of its dependencies.' in proc.stderr


def test_torch_240_with_libomp140_copy_works(lab, fixed_env):
    code = (
        "import torch\n"
        "print(torch.__version__)\n"
        "print((torch.ones(2, 2) @ torch.ones(2, 2)).tolist())\n"
    )
    proc = lab.run_python(["-c", code], torch_env=fixed_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["2.4.0+cpu", "[[2.0, 2.0], [2.0, 2.0]]"]


def test_missing_msvcp140_fails_on_c10(lab, fixed_env):
    proc = lab.run_python(["-c", "import torch"], torch_env=fixed_env, env={"WINEDLLOVERRIDES": "msvcp140=d"})
    assert proc.returncode == 1
    # torch's own VC++ check fails first and only prints (stdout) a hint, then LoadLibraryExW fails on c10.dll
    assert "Microsoft Visual C++ Redistributable is not installed" in proc.stdout
    assert "OSError: [WinError 126]" in proc.stderr
    assert "\\torch\\lib\\c10.dll\" or one of its dependencies." in proc.stderr


def test_chinese_locale_gives_chinese_error_text(lab, seed_env):
    # A Chinese Windows (lab.chinese_windows): code page 936 and Wine's own Chinese text "找不到模块。" (Windows:
    # "找不到指定的模块。"), for a user whose profile is C:\users\张伟.
    code = "import locale; print(locale.getencoding()); import torch"
    proc = lab.run_python(["-c", code], torch_env=seed_env, env=chinese_windows(lab))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["cp936"]
    assert "OSError: [WinError 126] 找不到模块。 Error loading" in proc.stderr
    assert "\\torch\\lib\\fbgemm.dll\" or one of its dependencies." in proc.stderr


def test_the_windows_only_tests_pass_in_windows_python(lab):
    """tests/windows/test_on_windows.py is what the GitHub Windows runner adds to the suite; here the lab's Windows
    CPython (with PySide6 and pytest) runs it under Wine, so a file that would only ever run on Windows is proved
    here."""
    from tests.winelab import REPO_ROOT, to_windows_path

    result = lab.run_python(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                             to_windows_path(REPO_ROOT / "tests" / "windows" / "test_on_windows.py")],
                            torch_env=lab.app_python(), cwd=REPO_ROOT, timeout=900,
                            env={"QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, (result.stdout[-4000:], result.stderr[-3000:])
    # every test of the file but the Restart Manager's two (Wine's is a stub; they run on the Windows runner), the
    # Store Python's (the lab has none), the trust store's (Wine's SSL policy accepts any root) and Microsoft's real
    # installer's two (the internet)
    assert "13 passed, 6 skipped" in result.stdout, result.stdout[-3000:]
