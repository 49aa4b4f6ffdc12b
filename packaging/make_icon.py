"""Write the .exe's icon from the wizard's own emblem: ``python packaging/make_icon.py [SVG [OUT.ico]]``.

Renders resources/icons/app.svg (the window icon the wizard shows) at every size Windows asks for, 16 to 256 px,
each rendered at its own size rather than scaled down, and stores them as PNG entries of one ICO file (the format
Windows Vista and later read). Default output: resources/icons/app.ico. Needs PySide6 (QtSvg is in
PySide6-Essentials). The .ico is committed; tests/unit/test_generated_files.py fails when it no longer shows the SVG.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

SIZES = (16, 20, 24, 32, 40, 48, 64, 128, 256)
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


def render_png(svg: Path, size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg}: not an SVG Qt can draw")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """An ICO file: ICONDIR, one ICONDIRENTRY per size (0 stands for 256), then the PNG images."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = 6 + 16 * len(pngs)
    entries, images = b"", b""
    for size, png in sorted(pngs.items()):
        dim = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(png), offset + len(images))
        images += png
    return header + entries + images


def make_icon(svg: Path = ICONS / "app.svg", out: Path = ICONS / "app.ico") -> Path:
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(["make_icon", "-platform", "offscreen"])  # noqa: F841
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(ico_bytes({size: render_png(svg, size) for size in SIZES}))
    return out


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]]
    written = make_icon(*args)
    print(f"{written}: {len(SIZES)} sizes, {written.stat().st_size} bytes")
