"""Generated files are committed and only checked here: a build or a test never rewrites the tree (a clean clone
stays clean after CI). The .exe's icon is checked here; the compiled translation (.qm) in tests/gui/test_ui.py."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ICONS = REPO / "resources" / "icons"


def _make_icon():
    """packaging/make_icon.py, loaded by path (packaging/ is not a package: it must not shadow the library)."""
    spec = importlib.util.spec_from_file_location("tdd_make_icon", REPO / "packaging" / "make_icon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ico_pngs(data: bytes) -> dict[int, bytes]:
    """{size: PNG} of an ICO file of PNG entries (0 in the directory stands for 256)."""
    reserved, kind, count = struct.unpack_from("<HHH", data, 0)
    assert (reserved, kind) == (0, 1), "not an ICO file"
    pngs = {}
    for index in range(count):
        width, height, _, _, _, _, length, offset = struct.unpack_from("<BBBBHHII", data, 6 + 16 * index)
        assert width == height
        pngs[width or 256] = data[offset:offset + length]
    return pngs


def _pixels(png: bytes):
    from PySide6.QtGui import QImage

    image = QImage.fromData(png, "PNG").convertToFormat(QImage.Format.Format_RGBA8888)
    assert not image.isNull()
    return image.width(), image.height(), bytes(image.constBits())


def test_the_committed_exe_icon_is_app_svg_rendered_at_every_size(qapp):
    make_icon = _make_icon()
    pngs = _ico_pngs((ICONS / "app.ico").read_bytes())
    assert sorted(pngs) == sorted(make_icon.SIZES)
    stale = []
    for size, png in sorted(pngs.items()):
        width, height, committed = _pixels(png)
        fresh = _pixels(make_icon.render_png(ICONS / "app.svg", size))[2]
        assert (width, height) == (size, size)
        # Antialiasing may differ by a step or two between Qt versions; a changed drawing differs by far more.
        worst = max(abs(a - b) for a, b in zip(committed, fresh))
        if worst > 24:
            stale.append(f"{size} px (a channel differs by {worst})")
    assert stale == [], ("resources/icons/app.ico no longer shows resources/icons/app.svg: run "
                         "`python packaging/make_icon.py` and commit the .ico; " + ", ".join(stale))
