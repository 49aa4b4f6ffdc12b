"""The wizard on a Linux desktop that lacks the X11 libraries Qt 6.5+ needs (libxcb-cursor0, libxcb-icccm4,
libxcb-keysyms1, libxkbcommon-x11-0): one line saying what to install, exit 2, instead of Qt's abort and core dump.

A real X server (Xvfb) and a real loader that cannot find those libraries: the command runs in a private mount
namespace (unshare) where the folder holding them is replaced by one that holds everything else of it (links to
the real files), so for every program inside, and for Qt itself, they are simply not installed. The machine's
folders are untouched, and the namespace ends with the command. A control run shows that Qt really aborts there
without our check, and another that with the libraries in place the check says nothing and the wizard draws its
window on the X server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 and its loader: Linux only")]

REPO = Path(__file__).resolve().parents[2]
HIDDEN = ("libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0")
PACKAGES = ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxkbcommon-x11-0")

# Runs inside the namespace: SIDE shows the real folder, STAGE (a tmpfs) gets a link to each of its files but the
# hidden ones, then STAGE is mounted over the folder. The links are made before the folder is covered, since `ln`
# itself needs the libraries in it.
HIDE_SCRIPT = """set -euo pipefail
side=$1; stage=$2; folder=$3; shift 3
hidden=()
while [ "$1" != "--" ]; do hidden+=("$1"); shift; done; shift
mount --bind "$folder" "$side"
mount -t tmpfs tmpfs "$stage"
ln -s "$side"/* "$stage"/
for name in "${hidden[@]}"; do rm -f "$stage/$name" "$stage/$name".*; done
mount --bind "$stage" "$folder"
exec "$@"
"""


def _unavailable(reason: str):
    if os.environ.get("TDD_REQUIRE_WHEELS") == "1":  # CI: installed by .ci/wine_setup.sh, run as root
        pytest.fail(f"required here: {reason}")
    pytest.skip(reason)


def _xcb_plugin() -> Path:
    import PySide6

    return Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"


def _library_folder() -> Path:
    """The one folder the loader takes the hidden libraries from (Debian: /usr/lib/x86_64-linux-gnu)."""
    done = subprocess.run(["ldd", str(_xcb_plugin())], capture_output=True, text=True, timeout=30, check=True)
    found = dict(re.findall(r"^\s*(\S+) => (/\S+)", done.stdout, re.MULTILINE))
    folders = {Path(os.path.realpath(found[name])).parent for name in HIDDEN if name in found}
    if len(folders) != 1:
        _unavailable(f"the libraries to hide are in {len(folders)} folders here, not one: {sorted(folders)}")
    return folders.pop()


@pytest.fixture(scope="module")
def display():
    """A real X server (Xvfb) on a free display number."""
    if not shutil.which("Xvfb"):
        _unavailable("Xvfb is not installed (apt-get install xvfb)")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "1280x1024x24"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as stream:
        number = stream.readline().strip()
    if not number:
        server.kill()
        _unavailable("Xvfb did not start")
    yield f":{number}"
    server.terminate()
    server.wait(timeout=30)


def _desktop_env(display: str) -> dict:
    """A desktop session's environment: a DISPLAY, no platform chosen (the tests' offscreen is removed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE")}
    env["DISPLAY"] = display
    return env


def _without_libraries(tmp_path: Path, command: list[str], env: dict) -> subprocess.CompletedProcess:
    """`command` in a private mount namespace where the loader cannot find HIDDEN."""
    if not shutil.which("unshare"):
        _unavailable("unshare (util-linux) is not installed")
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        _unavailable("no private mount namespace here (unshare --mount needs root or user namespaces)")
    script = tmp_path / "hide.sh"
    script.write_text(HIDE_SCRIPT, encoding="utf-8")
    (tmp_path / "side").mkdir()
    (tmp_path / "stage").mkdir()
    return subprocess.run([*prefix, "bash", str(script), str(tmp_path / "side"), str(tmp_path / "stage"),
                           str(_library_folder()), *HIDDEN, "--", *command],
                          cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120)


def test_without_the_libraries_qt_itself_aborts_on_the_x_server(display, tmp_path):
    """The control: what the user saw before, reproduced (so the next test proves something)."""
    done = _without_libraries(tmp_path, [sys.executable, "-c", "from PySide6.QtWidgets import QApplication; "
                                         "QApplication([])"], _desktop_env(display))
    assert done.returncode in (-6, 134), done.stderr  # SIGABRT: Qt's qFatal
    assert 'Could not load the Qt platform plugin "xcb"' in done.stderr


@pytest.mark.parametrize(("lang", "start"), [("en", "No window can open here"), ("zh_CN", "这里无法打开窗口")])
def test_the_demo_without_the_libraries_says_in_one_line_what_to_install(display, tmp_path, lang, start):
    done = _without_libraries(tmp_path, [sys.executable, "-m", "app", "--demo", "--lang", lang], _desktop_env(display))
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.strip()
    assert line.startswith(start) and "Qt platform plugin" not in line
    install = line.split("apt-get install ", 1)[1]
    assert set(PACKAGES) <= set(re.findall(r"[a-z0-9.+-]+", install)), line
    assert all(name in line for name in HIDDEN) and "diagnose --demo" in line


def test_with_the_libraries_the_check_is_silent_and_the_wizard_draws_on_the_x_server(display):
    from app.ui.application import missing_xcb_libraries

    assert missing_xcb_libraries() == []  # the libraries are installed here (or this test could prove nothing)
    done = subprocess.run([sys.executable, "-m", "app", "--demo", "--first-window-exit"], cwd=REPO,
                          env=_desktop_env(display), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_debian_package_of_a_library_follows_debians_naming_rule():
    from app.ui.application import debian_package

    assert [debian_package(name) for name in HIDDEN] == list(PACKAGES)
    assert debian_package("libX11-xcb.so.1") == "libx11-xcb1" and debian_package("libxcb.so.1") == "libxcb1"
    assert debian_package("libSM.so.6") == "libsm6"


ZH_DESKTOP = r"""
import sys, time
sys.path.insert(0, {repo!r})
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication, QWizard
from app.ui.application import new_wizard
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS
from app.ui.screenshots import settle, wait_until
app = QApplication.instance() or QApplication(sys.argv)
wizard = new_wizard(demo=True)  # no --lang: the computer's language
wizard.resize(800, 600)
wizard.show()
settle()
assert wizard.session.lang == "zh_CN", wizard.session.lang
label = wizard.pages[wizard.currentId()].language_label
metrics = QFontMetrics(label.font())
assert label.width() >= metrics.horizontalAdvance(label.text().replace("&", "")), (label.width(), label.text())
assert label.height() < 2 * metrics.height(), label.height()  # one line, never "语言" above a cut "(L):"
wait_until(lambda: wizard.currentPage().isComplete())
wizard.next()
wait_until(lambda: wizard.currentId() == ENVIRONMENTS and wizard.currentPage().isComplete())
wizard.next()
wait_until(lambda: wizard.currentId() == DIAGNOSE and wizard.currentPage().isComplete(), 300)
settle()
view = wizard.pages[DIAGNOSE].checklist.view
model = view.model()
for row in range(model.rowCount()):
    index = model.index(row)
    text = model.data(index, Qt.ItemDataRole.DisplayRole)
    assert model.data(index, Qt.ItemDataRole.ToolTipRole) == text
    rect = view.visualRect(index)
    needed = QFontMetrics(view.font()).boundingRect(0, 0, rect.width() - 28, 10_000, Qt.TextFlag.TextWordWrap, text)
    assert rect.height() + 2 >= needed.height(), (text, rect.height(), needed.height())
wizard.grab().save({shot!r})
print("ok", model.rowCount())
wizard.shutdown(30_000)
"""


def test_on_a_chinese_desktop_nothing_is_cut(display, tmp_path):
    """The computer's language set to Chinese (LANG, not --lang), a real X window at the default 800x600: the
    Welcome page's language label is one line, and every row of the checks wraps rather than ending in "…" (with
    the whole text as its tooltip)."""
    env = _desktop_env(display)
    env.update(LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8", TDD_DATA_DIR=str(tmp_path / "data"))
    env.pop("LANGUAGE", None)
    script = ZH_DESKTOP.format(repo=str(REPO), shot=str(tmp_path / "diagnose-zh.png"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "ok" in done.stdout, (done.stdout[-2000:], done.stderr[-3000:])
