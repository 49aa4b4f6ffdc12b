"""The wizard, driven with pytest-qt as a user would drive it: clicks and keys on a real Qt window
(offscreen), on offline images with the real torch wheels' DLLs, with a real HTTPS server for downloads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QThread
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QWizard,
)

from app.repair.journal import Journal
from app.system.offline import OfflineImage
from app.ui.models import ROLE_ITEM, CheckRow
from app.ui.pages.base import DIAGNOSE, ENVIRONMENTS, FINDINGS, FINISH, PLAN, REPAIR, VERIFY, WELCOME
from app.ui.workers import WorkerPool
from tests import realfiles
from tests.helpers.files import hashes
from tests.helpers.images import SITE, TORCH_LIB, VENV, real
from tests.helpers.wizard import WAIT_MS, forward, ready, to_plan, undo_on_finish
from tests.https_server import Fault, HttpsServer

REPO = Path(__file__).resolve().parents[2]
LIBOMP = TORCH_LIB + r"\libomp140.x86_64.dll"
PIP_INI = r"C:\Users\alice\AppData\Roaming\pip\pip.ini"

pytestmark = pytest.mark.usefixtures("data_dir")  # tests/gui/conftest.py


# -- the whole way, as a user ------------------------------------------------------------------------------------
def test_broken_torch_240_is_repaired_verified_and_undone_by_clicking(torch_image, open_wizard, qtbot):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    wizard = open_wizard(root=str(image.root))
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    assert wizard.session.env.torch.version == "2.4.0+cpu"
    forward(qtbot, wizard, DIAGNOSE)
    ready(qtbot, wizard)
    checklist = wizard.pages[DIAGNOSE].checklist.model
    rows = [checklist.data(checklist.index(row)) for row in range(checklist.rowCount())]
    assert any("libomp140.x86_64.dll is missing" in row for row in rows)
    forward(qtbot, wizard, FINDINGS)
    findings = wizard.pages[FINDINGS]
    assert "1 problem stops PyTorch" in findings.headline.text()
    qtbot.mouseClick(findings.details, Qt.MouseButton.LeftButton)
    tree = findings.tree
    assert tree.isVisible() and tree.problems_only.isChecked()
    tree.search.setText("libomp140")
    qtbot.waitUntil(lambda: tree.current_item() is not None or tree.filter.rowCount() > 0)
    found = tree.filter.match(tree.filter.index(0, 0), Qt.ItemDataRole.DisplayRole, "libomp140.x86_64.dll", 1,
                              Qt.MatchFlag.MatchRecursive | Qt.MatchFlag.MatchFixedString)
    tree.view.setCurrentIndex(found[0])
    detail = tree.detail.toPlainText()
    assert "missing" in detail and "Folders searched, in order" in detail and "torch\\lib" in detail
    assert "Functions fbgemm.dll needs from it" in detail and "ordinal 703" in detail and "#703" not in detail
    assert "How it was found" in detail and "Found by" not in detail
    forward(qtbot, wizard, PLAN)
    plan = wizard.pages[PLAN]
    ready(qtbot, wizard)
    assert [o.action for o in wizard.session.chosen] == ["place-libomp140"]  # the recommended one, pre-chosen
    assert not (lib / "libomp140.x86_64.dll").exists()  # nothing changed before the commit
    shown = " ".join(label.text() for label in plan.content.findChildren(QLabel) if not label.isHidden())
    assert "libomp140.x86_64.dll" in shown and "libiomp5md.dll" in shown and "No administrator rights" in shown
    forward(qtbot, wizard, REPAIR)
    ready(qtbot, wizard)
    assert (lib / "libomp140.x86_64.dll").read_bytes() == (lib / "libiomp5md.dll").read_bytes()
    assert wizard.button(QWizard.WizardButton.BackButton).isHidden() or not wizard.button(
        QWizard.WizardButton.BackButton).isEnabled()  # no way back past the commit
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    verify = wizard.pages[VERIFY]
    assert "should load now" in verify.headline.text()
    assert wizard.session.blockers(wizard.session.after) == []
    forward(qtbot, wizard, FINISH)
    finish = wizard.pages[FINISH]
    assert "Add the missing OpenMP runtime" in finish.summary.text()
    undo_on_finish(qtbot, finish)
    qtbot.waitUntil(lambda: "Undone" in finish.result.text(), timeout=WAIT_MS)
    assert "As before the repair, PyTorch does not load" in finish.result.text()
    assert hashes(lib) == before  # byte for byte as before
    report = Path(str(image.root) + "-report.html")
    finish.save_report(str(report))
    qtbot.waitUntil(lambda: "Report saved" in finish.result.text(), timeout=WAIT_MS)  # written, not only begun
    assert "libomp140.x86_64.dll" in report.read_text(encoding="utf-8")


def test_a_healthy_environment_goes_from_findings_straight_to_finish(torch_image, open_wizard, qtbot):
    image = torch_image(torch=realfiles.TORCH_241)
    wizard = open_wizard(root=str(image.root))
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    assert "PyTorch should load" in wizard.pages[FINDINGS].headline.text()
    forward(qtbot, wizard, FINISH)
    assert PLAN not in wizard.visitedIds() and REPAIR not in wizard.visitedIds()
    assert "Nothing needed repairing" in wizard.pages[FINISH].summary.text()
    assert wizard.pages[FINISH].undo.isHidden()


# -- downloads: cancel and retry ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    with HttpsServer(tmp_path_factory.mktemp("ui-mirror")) as server:
        yield server


def intel_only_image(torch_image, mirror):
    """torch 2.4.0 without its own libiomp5md.dll, and pip.ini naming a local mirror with Intel's wheel: the only
    source left is the download."""
    from app.resources import download_catalog

    entry = download_catalog()["intel_openmp"]
    wheel = real(realfiles.download, "intel-openmp==2024.2.1")
    image = torch_image()
    image.host(TORCH_LIB + r"\libiomp5md.dll").unlink()
    image.torch_record(SITE, "2.4.0")  # a build that never had it (its record says so), not a file gone missing
    image.copy(mirror.ca, r"C:\certs\company-ca.pem")
    image.write(PIP_INI, f"[global]\nindex-url = {mirror.url('/simple')}\ncert = C:\\certs\\company-ca.pem\n")
    path = "/packages/ab/" + entry["wheel"]
    link = f'<a href="../../packages/ab/{entry["wheel"]}#sha256={entry["wheel_sha256"]}">{entry["wheel"]}</a>'
    page = f"<html><body>{link}</body></html>"
    mirror.files["/simple/intel-openmp/"] = page.encode()
    mirror.files[path] = wheel.read_bytes()
    mirror.faults.clear()
    return image, path


def to_repair(qtbot, wizard) -> None:
    to_plan(qtbot, wizard)
    assert [(o.action, o.plan.source) for o in wizard.session.chosen] == [("place-libomp140", "intel-openmp")]
    forward(qtbot, wizard, REPAIR)


def test_stop_in_the_middle_of_a_download_rolls_back_and_leaves_nothing(torch_image, mirror, open_wizard, qtbot,
                                                                         data_dir):
    image, wheel_path = intel_only_image(torch_image, mirror)
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    mirror.faults[wheel_path] = Fault(stall_at=1000, drops=100)  # the wheel's bytes stop coming: stuck mid-way
    wizard = open_wizard(root=str(image.root))
    to_repair(qtbot, wizard)
    repair = wizard.pages[REPAIR]
    qtbot.waitUntil(lambda: any(r.path == wheel_path for r in mirror.log) or repair.state != "running",
                    timeout=WAIT_MS)
    qtbot.wait(300)  # the read under way is now waiting on the silent server
    assert repair.state == "running" and not repair.isComplete()
    qtbot.mouseClick(repair.stop, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: repair.state == "rolled-back", timeout=15_000)  # not the 30 s read timeout
    assert hashes(lib) == before
    assert "put back" in repair.status.text()
    (transaction,) = Journal().transactions()
    assert transaction.state != "running" and Journal().unfinished() == []
    assert not list((transaction.folder / "downloads").glob("*")) if (transaction.folder / "downloads").exists() \
        else True


def test_a_failed_download_says_so_plainly_and_retry_completes_it(torch_image, mirror, open_wizard, qtbot):
    image, wheel_path = intel_only_image(torch_image, mirror)
    mirror.faults["/simple/intel-openmp/"] = Fault(statuses=[503] * 8)  # the index is down, past the retries
    wizard = open_wizard(root=str(image.root))
    to_repair(qtbot, wizard)
    repair = wizard.pages[REPAIR]
    qtbot.waitUntil(lambda: repair.state == "failed", timeout=WAIT_MS)
    assert repair.error.isVisible() and repair.retry.isVisible() and repair.skip.isVisible()
    text = repair.error_text.text()
    assert "503" in text or "server" in text.lower()
    assert not image.host(LIBOMP).exists()
    mirror.faults.clear()  # the mirror is back
    qtbot.mouseClick(repair.retry, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: repair.state == "done", timeout=WAIT_MS)
    assert image.host(LIBOMP).exists() and repair.isComplete()


# -- a crash, languages, keys, access ----------------------------------------------------------------------------
def test_a_repair_cut_short_by_a_crash_is_offered_for_rollback_on_the_welcome_page(torch_image, open_wizard,
                                                                                     qtbot, data_dir):
    image = torch_image()
    lib = image.host(TORCH_LIB)
    before = hashes(lib)
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; sys.exit(main(sys.argv[1:]))"
    killed = subprocess.run([sys.executable, "-c", code, "repair", "--root", str(image.root), "--env", VENV,
                             "--action", "place-libomp140", "--yes"],
                            env={**os.environ, "TDD_CRASH_AT": "change:1"}, capture_output=True, timeout=120)
    assert killed.returncode == -9 and (lib / "libomp140.x86_64.dll").exists()
    wizard = open_wizard(root=str(image.root))
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(welcome.unfinished.isVisible, timeout=WAIT_MS)  # the journal is read in a worker
    assert "did not finish" in welcome.unfinished_text.text()
    qtbot.waitUntil(lambda: wizard.pages[DIAGNOSE].checklist.state.value == "done", timeout=WAIT_MS)  # begun on
    early = wizard.session.diagnosis  # Welcome, while the crashed repair's file was still there
    qtbot.mouseClick(welcome.rollback, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "rolled back" in welcome.unfinished_text.text(), timeout=WAIT_MS)
    assert hashes(lib) == before and Journal().unfinished() == []
    # the checks begun before the rollback are out of date: Diagnose checks the computer as it is now
    wizard.next()
    qtbot.waitUntil(lambda: wizard.currentId() == ENVIRONMENTS and wizard.currentPage().isComplete(), timeout=WAIT_MS)
    wizard.next()
    qtbot.waitUntil(lambda: wizard.pages[DIAGNOSE].isComplete(), timeout=WAIT_MS)
    assert wizard.session.diagnosis is not early
    assert "openmp-runtime-missing" in [p.lead.code for p in wizard.session.problems()]


def test_a_variable_put_back_by_a_rollback_on_welcome_is_seen_by_the_checks_that_follow(torch_image, open_wizard,
                                                                                           qtbot, data_dir):
    """`unset-env-var` cut short by a crash on a copied drive, rolled back on Welcome: the variable is on the drive
    again, the environment found while Welcome was read is found again, and the checks see the variable."""
    image = torch_image(libomp=True)
    image.set_variable("user", "KMP_DUPLICATE_LIB_OK", "TRUE")
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from app.main import main; sys.exit(main(sys.argv[1:]))"
    killed = subprocess.run([sys.executable, "-c", code, "repair", "--root", str(image.root), "--env", VENV,
                             "--action", "unset-env-var", "--yes"],
                            env={**os.environ, "TDD_CRASH_AT": "change:1"}, capture_output=True, timeout=120)
    assert killed.returncode == -9 and "KMP_DUPLICATE_LIB_OK" not in OfflineImage(image.root).environment("user")
    wizard = open_wizard(root=str(image.root))
    welcome = wizard.pages[WELCOME]
    qtbot.waitUntil(lambda: welcome.unfinished.isVisible() and wizard.session.env is not None, timeout=WAIT_MS)
    found = wizard.session.env  # while Welcome is read, before the rollback
    qtbot.mouseClick(welcome.rollback, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "rolled back" in welcome.unfinished_text.text(), timeout=WAIT_MS)
    assert OfflineImage(image.root).environment("user")["KMP_DUPLICATE_LIB_OK"] == "TRUE"
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None and wizard.currentPage().isComplete(), timeout=WAIT_MS)
    assert wizard.session.env is not found
    forward(qtbot, wizard, DIAGNOSE)
    ready(qtbot, wizard)
    assert "unsafe-env-var" in [p.lead.code for p in wizard.session.problems()]


def test_switching_language_redraws_every_page_and_qts_own_buttons(open_wizard, qtbot):
    wizard = open_wizard(demo=True)
    seen = {}
    for page_id in (ENVIRONMENTS, DIAGNOSE, FINDINGS, PLAN, REPAIR, VERIFY, FINISH, None):
        page = wizard.currentPage()
        english = (page.title(), page.subTitle(), wizard.button(QWizard.WizardButton.CancelButton).text())
        wizard.set_language("zh_CN")
        chinese = (page.title(), page.subTitle(), wizard.button(QWizard.WizardButton.CancelButton).text())
        assert chinese[2] == "取消"
        for en, zh in zip(english, chinese):
            assert en != zh and any("\u4e00" <= ch <= "\u9fff" for ch in zh), (wizard.currentId(), en, zh)
        seen[wizard.currentId()] = chinese[0]
        wizard.set_language("en")
        assert page.title() == english[0]
        if page_id is not None:
            if page_id == ENVIRONMENTS:
                forward(qtbot, wizard, page_id)
                qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
            else:
                forward(qtbot, wizard, page_id)
    assert len(seen) == 8


def test_the_pasted_error_is_explained_at_once_in_the_chosen_language(open_wizard, qtbot):
    wizard = open_wizard(lang="zh_CN")
    welcome = wizard.pages[WELCOME]
    welcome.paste.setFocus()
    welcome.paste.insertPlainText("OSError: [WinError 126] 找不到指定的模块。 Error loading "  # as pasted
                                  "\"C:\\x\\torch\\lib\\fbgemm.dll\" or one of its dependencies.")
    qtbot.waitUntil(welcome.explanation.isVisible, timeout=5000)
    assert "fbgemm.dll" in welcome.explanation.text() and "这通常意味着" in welcome.explanation.text()
    welcome.language.setCurrentIndex(0)  # English, chosen in the box
    assert wizard.session.lang == "en" and "This usually means" in welcome.explanation.text()


def test_keyboard_alone_reaches_the_findings(open_wizard, qtbot):
    wizard = open_wizard(demo=True)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    for page_id in (ENVIRONMENTS, DIAGNOSE, FINDINGS):
        ready(qtbot, wizard)
        qtbot.keyClick(wizard, Qt.Key.Key_N, Qt.KeyboardModifier.AltModifier)  # "&Next >"
        qtbot.waitUntil(lambda wanted=page_id: wizard.currentId() == wanted, timeout=WAIT_MS)
    findings = wizard.pages[FINDINGS]
    qtbot.keyClick(wizard, Qt.Key.Key_T, Qt.KeyboardModifier.AltModifier)  # "Show &technical details"
    qtbot.waitUntil(findings.tree.isVisible, timeout=2000)  # a mnemonic clicks after a short animation
    qtbot.keyClick(findings.tree.search, Qt.Key.Key_L)  # type into the search field, then walk the tree by keys
    qtbot.keyClicks(findings.tree.search, "ibomp")
    findings.tree.view.setFocus()
    qtbot.keyClick(findings.tree.view, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: "libomp140" in findings.tree.detail.toPlainText(), timeout=2000)


def test_every_control_has_an_accessible_name_in_both_languages(open_wizard, qtbot):
    wizard = open_wizard(demo=True)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    for page_id in (ENVIRONMENTS, DIAGNOSE, FINDINGS, PLAN):
        forward(qtbot, wizard, page_id)
    ready(qtbot, wizard)
    for lang in ("en", "zh_CN"):
        wizard.set_language(lang)
        for page in wizard.pages.values():
            controls = [c for kind in (QAbstractButton, QComboBox, QLineEdit, QPlainTextEdit, QAbstractItemView)
                        for c in page.findChildren(kind)
                        if c.window() is wizard and not isinstance(c, QHeaderView)  # Qt's own parts: popups,
                        and not isinstance(c.parent(), QLineEdit)]  # headers, a line edit's clear button
            for control in controls:
                name = control.accessibleName() or (control.text() if isinstance(control, QAbstractButton) else "")
                assert name.strip(), (type(page).__name__, control.objectName(), type(control).__name__)
    wizard.set_language("en")  # Qt's translators belong to the application: the next test starts in English


def test_every_page_fits_800_by_600_in_both_languages(open_wizard, qtbot):
    wizard = open_wizard(demo=True)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    for page_id in (None, ENVIRONMENTS, DIAGNOSE, FINDINGS, PLAN, REPAIR, VERIFY, FINISH):
        if page_id is not None:
            forward(qtbot, wizard, page_id)
            ready(qtbot, wizard)
        for lang in ("en", "zh_CN"):
            wizard.set_language(lang)
            QApplication.processEvents()
            hint = wizard.minimumSizeHint()
            assert hint.width() <= 800 and hint.height() <= 600, (wizard.currentId(), lang, hint)
        wizard.set_language("en")


def test_workers_hand_their_results_to_the_gui_thread(qtbot):
    pool = WorkerPool()
    seen = {}
    worker_thread = {}

    def work(worker):
        worker_thread["id"] = threading.get_ident()
        worker.emit("streamed")
        return "result"

    pool.start(work, yielded=lambda item: seen.setdefault("yielded", QThread.currentThread()),
               returned=lambda value: seen.setdefault("returned", QThread.currentThread()))
    qtbot.waitUntil(lambda: "returned" in seen and "yielded" in seen, timeout=5000)
    gui = QApplication.instance().thread()
    assert seen["yielded"] is gui and seen["returned"] is gui and worker_thread["id"] != threading.get_ident()
    assert pool.wait(5000)


# -- the pictures and the window that cannot open ----------------------------------------------------------------
def test_screenshot_pages_saves_every_page_in_both_languages_at_both_scales(tmp_path, qapp):
    from PySide6.QtGui import QFontDatabase, QImage

    if not QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese):
        if os.environ.get("TDD_REQUIRE_WHEELS") == "1":  # CI installs the font (.ci/wine_setup.sh)
            pytest.fail("no Chinese font: install fonts-wqy-microhei")
        pytest.skip("no Chinese font here (install fonts-wqy-microhei): the pictures would show empty boxes")

    out = tmp_path / "pages"
    done = subprocess.run([sys.executable, "-m", "app", "--screenshot-pages", str(out)], cwd=REPO,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    pictures = sorted(out.glob("*.png"))
    assert len(pictures) == (9 + 1) * 2 * 2  # nine pages, and the technical details' own window
    assert len(list(out.glob("9-history-*.png"))) == 4 and len(list(out.glob("4-findings-details-*.png"))) == 4
    for picture in pictures:
        image = QImage(str(picture))
        scale = 2 if "@2x" in picture.name else 1
        size = (image.width(), image.height())
        if "details" in picture.name:  # a window of its own, at least the wizard's size
            assert size >= (800 * scale, 600 * scale), picture.name
        else:
            assert size == (800 * scale, 600 * scale), picture.name
        colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
        assert len(colours) > 20, picture.name  # drawn, not blank


def test_without_a_display_one_line_points_to_the_command_line():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run([sys.executable, "-m", "app", "--demo"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "diagnose --demo" in done.stderr


# -- the translations are complete and compiled ------------------------------------------------------------------
def test_every_wizard_string_is_translated_and_the_compiled_file_is_current(tmp_path):
    import shutil
    import xml.etree.ElementTree as ET

    ts = REPO / "resources" / "translations" / "torch_dll_doctor_zh_CN.ts"
    copy = tmp_path / ts.name
    shutil.copy(ts, copy)
    sources = sorted(str(p) for p in (REPO / "app" / "ui").rglob("*.py"))
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    subprocess.run([str(lupdate), *sources, "-ts", str(copy), "-no-obsolete"], check=True, capture_output=True)
    untranslated = [m.find("source").text for m in ET.parse(copy).getroot().iter("message")
                    if m.find("translation").get("type") == "unfinished"]
    assert untranslated == []  # also: no string in app/ui is missing from the .ts
    qm = tmp_path / "out.qm"
    subprocess.run([str(Path(sys.executable).parent / "pyside6-lrelease"), str(ts), "-qm", str(qm)], check=True,
                   capture_output=True)
    assert qm.read_bytes() == ts.with_suffix(".qm").read_bytes()


def test_copy_puts_the_whole_text_report_on_the_clipboard_made_off_the_gui_thread(open_wizard, qtbot):
    import threading

    from PySide6.QtGui import QGuiApplication

    from app.ui.session import Session

    wizard = open_wizard(demo=True)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    forward(qtbot, wizard, FINDINGS)
    QGuiApplication.clipboard().setText("")
    threads = []
    made = Session.report_text

    def watched(self, *args, **kwargs):
        threads.append(threading.current_thread() is threading.main_thread())
        return made(self, *args, **kwargs)

    Session.report_text = watched
    try:
        findings = wizard.pages[FINDINGS]
        qtbot.mouseClick(findings.copy, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() != "", timeout=WAIT_MS)
    finally:
        Session.report_text = made
    copied = QGuiApplication.clipboard().text()
    assert threads == [False]  # made in a worker: the window never waits for it
    title = wizard.session.problems()[0].lead.text("en").title
    assert title in copied and "copied" in findings.saved.text()
    qtbot.waitUntil(findings.copy.isEnabled, timeout=WAIT_MS)


def test_the_wizard_starts_without_loading_the_http_library():
    """requests and urllib3 cost 0.16 s here and about a second under Wine: only a download loads them."""
    code = ("import sys; import app.ui.wizard, app.ui.application; "
            "print(sorted(m for m in ('requests', 'urllib3') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_every_repair_has_a_name_of_its_own_on_the_plan_page(qapp):
    from app.repair.actions import ACTIONS
    from app.repair.names import repair_name

    for lang in ("en", "zh_CN"):
        fallback = repair_name("no-such-repair", lang)
        names = [repair_name(action, lang) for action in ACTIONS]
        assert fallback not in names and len(set(names)) == len(names)


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_demo_says_the_demos_words_on_the_check_plan_and_finish_pages(open_wizard, qtbot, lang):
    """On the demo computer: one red cross for one cause (the checks that confirm it say so), no "copied Windows
    drive" on the plan page, and Finish names the demo computer and each change by its name and time, not its id."""
    wizard = open_wizard(demo=True, lang=lang)
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    forward(qtbot, wizard, DIAGNOSE)
    ready(qtbot, wizard)
    checklist = wizard.pages[DIAGNOSE].checklist.model
    states = [checklist.data(checklist.index(row), ROLE_ITEM) for row in range(checklist.rowCount())]
    assert states.count(CheckRow.FAILED) == 1 and states.count(CheckRow.CONFIRMS) >= 1
    forward(qtbot, wizard, FINDINGS)
    forward(qtbot, wizard, PLAN)
    ready(qtbot, wizard)
    shown = " ".join(label.text() for label in wizard.pages[PLAN].content.findChildren(QLabel))
    assert "copied Windows drive" not in shown and "复制出来的 Windows 磁盘" not in shown
    assert ("demo computer" in shown) if lang == "en" else ("演示电脑" in shown)
    forward(qtbot, wizard, REPAIR)
    ready(qtbot, wizard)
    forward(qtbot, wizard, VERIFY)
    ready(qtbot, wizard)
    forward(qtbot, wizard, FINISH)
    summary = wizard.pages[FINISH].summary.text()
    assert ("Changes made on the demo computer" in summary) if lang == "en" else ("在演示电脑上做的更改" in summary)
    (transaction,) = wizard.session.transactions
    assert transaction.id not in summary


def test_after_undo_every_page_and_the_report_say_the_sessions_latest_truth(torch_image, open_wizard, qtbot):
    """Repair, verify, undo on Finish: Finish marks the change undone and points at no button that is gone; Back to
    Verify no longer says PyTorch loads; the report saved then holds the first check, the repair and its undo."""
    image = torch_image()
    wizard = open_wizard(root=str(image.root))
    forward(qtbot, wizard, ENVIRONMENTS)
    qtbot.waitUntil(lambda: wizard.session.env is not None, timeout=WAIT_MS)
    for page in (DIAGNOSE, FINDINGS, PLAN, REPAIR, VERIFY):
        forward(qtbot, wizard, page)
        ready(qtbot, wizard)
    assert "should load now" in wizard.pages[VERIFY].headline.text()
    forward(qtbot, wizard, FINISH)
    finish = wizard.pages[FINISH]
    undo_on_finish(qtbot, finish)
    qtbot.waitUntil(lambda: "Undone" in finish.result.text(), timeout=WAIT_MS)
    summary = finish.summary.text()
    assert "undone" in summary and "Undo these changes" not in summary and finish.undo.isHidden()
    if os.environ.get("TDD_SCREENSHOT_DIR"):
        wizard.grab().save(str(Path(os.environ["TDD_SCREENSHOT_DIR"]) / "finish-after-undo.png"))
    qtbot.mouseClick(wizard.button(QWizard.WizardButton.BackButton), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: wizard.currentId() == VERIFY, timeout=WAIT_MS)
    verify = wizard.pages[VERIFY].headline.text()
    assert "undone" in verify and "As before them" in verify and "should load now" not in verify
    shots = os.environ.get("TDD_SCREENSHOT_DIR")
    if shots:  # what the person sees, for a look by eye
        wizard.grab().save(str(Path(shots) / "verify-after-undo.png"))
    report = Path(str(image.root) + "-after-undo.txt")
    wizard.pages[VERIFY].save_report(str(report))
    qtbot.waitUntil(lambda: report.is_file() and report.stat().st_size > 0, timeout=WAIT_MS)
    text = report.read_text(encoding="utf-8")
    assert "What this session did" in text and "then undone" in text and "libomp140.x86_64.dll" in text
