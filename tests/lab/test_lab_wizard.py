"""The wizard on Windows' Qt: `--screenshot-pages` run by Windows CPython with the Windows PySide6 wheel under Wine
(from source), and by the frozen TorchDllDoctor.exe (tests/lab/test_exe.py builds it), offscreen, with the lab's fonts.

Each writes every page of a demo run, in English and Chinese, at 100 % and 200 %, and exits 0. The PNGs are read
back here with the Linux Qt: a page that drew nothing (no fonts, no widgets) is one flat colour.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.lab import wine_unavailable
from tests.winelab import WineLabUnavailable, to_windows_path

pytestmark = [
    pytest.mark.wine,
    pytest.mark.slow,
]

RUN_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"
PAGES = ("welcome", "environments", "diagnose", "findings", "plan", "repair", "verify", "finish")


def check_screenshots(folder: Path) -> None:
    from PySide6.QtGui import QImage

    pngs = sorted(folder.glob("*.png"))
    for page in PAGES:
        for lang in ("en", "zh_CN"):
            assert [p for p in pngs if f"-{page}-{lang}@" in p.name], (page, lang, [p.name for p in pngs])
    for png in pngs:
        image = QImage(str(png))
        assert not image.isNull() and image.width() >= 400, png.name
        small = image.scaled(64, 64)
        colours = {small.pixel(x, y) for x in range(64) for y in range(64)}
        assert len(colours) > 8, f"{png.name} is blank"


def screenshot_argv(folder: Path) -> list[str]:
    # one scale: the 200% pictures are the Linux test's; here it is Windows' Qt, fonts and DLLs that are proved
    return ["--screenshot-pages", to_windows_path(folder), "--scale", "1", "-platform", "offscreen"]


@pytest.fixture(scope="module")
def fonts(lab) -> dict[str, str]:
    try:
        return {"TDD_FONT_DIR": to_windows_path(lab.font_dir())}
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))


@pytest.mark.wheels
def test_the_frozen_wizard_screenshots_every_page(lab, fonts, tmp_path, qapp):
    build = lab.build_exe("app")  # the build of tests/lab/test_exe.py, cached
    result = lab.run_exe(build.exe, screenshot_argv(tmp_path / "shots"), env=fonts, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    check_screenshots(tmp_path / "shots")
