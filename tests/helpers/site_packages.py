"""A real wheel's files laid into an image's site-packages as pip unpacks them."""

from __future__ import annotations

from tests import realfiles
from tests.helpers.images import SITE, real


def add_wheel(image, requirement: str, rename: dict[str, str] | None = None) -> None:
    """Every file of a real wheel into the image's site-packages, as pip unpacks it (RECORD, METADATA, .pyd)."""
    folder = real(realfiles.extract, requirement, "*")
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".done-")):
        relative = str(path.relative_to(folder))
        for old, new in (rename or {}).items():
            relative = relative.replace(old, new)
        image.copy(path, SITE + "\\" + relative.replace("/", "\\"), link=not rename)
