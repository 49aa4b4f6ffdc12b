"""Sizes, speeds, time left and the download line, in the reader's language: one spelling for the CLI and the
wizard's Repair page. Plain Python, no Qt.

Sizes are decimal (1 MB = 1,000,000 bytes), as Windows' own download dialogs and PyPI count them."""

from __future__ import annotations

import math
from typing import Optional, Protocol

from app.i18n import words

# (at least this many bytes, divide by, unit, decimals), largest first
_SCALES = ((1e9, 1e9, "GB", 2), (1e5, 1e6, "MB", 1), (1e3, 1e3, "KB", 0), (0, 1, "B", 0))


class Progress(Protocol):
    """What a download reports (app.sources.download.DownloadProgress has these)."""

    done: int
    total: Optional[int]
    speed: float
    eta: Optional[float]


def _scale(count: float) -> tuple[float, str, int]:
    for at_least, divisor, unit, decimals in _SCALES:
        if count >= at_least:
            return divisor, unit, decimals
    return 1, "B", 0  # a negative count: nothing real, shown as bytes


def _number(count: float, divisor: float, decimals: int) -> str:
    return f"{count / divisor:.{decimals}f}"


def size_text(count: float) -> str:
    """`12.3 MB`, `640 KB`, `1.25 GB`, `512 B`."""
    divisor, unit, decimals = _scale(count)
    return f"{_number(count, divisor, decimals)} {unit}"


def size_pair_text(done: float, total: Optional[float]) -> str:
    """`12.3 / 45.6 MB`: both in the unit of the larger, so the two numbers compare at a glance; `12.3 MB`
    while the total is unknown."""
    if not total:
        return size_text(done)
    divisor, unit, decimals = _scale(max(done, total))
    return f"{_number(done, divisor, decimals)} / {_number(total, divisor, decimals)} {unit}"


def speed_text(bytes_per_second: float, lang: str = "en") -> str:
    """`1.5 MB/s` (zh_CN: `1.5 MB/秒`)."""
    return words("units.speed", lang, size=size_text(max(bytes_per_second, 0.0)))


def time_left_text(seconds: float, lang: str = "en") -> str:
    """`12 s left`, `3 min 5 s left`, `1 h 20 min left` (zh_CN: `还剩 12 秒` ...); whole seconds, rounded up so
    that the last second never shows as `0 s left` while bytes still arrive."""
    whole = max(0, math.ceil(seconds)) if math.isfinite(seconds) else 0
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return words("units.left.hours", lang, hours=hours, minutes=minutes)
    if minutes:
        return words("units.left.minutes", lang, minutes=minutes, seconds=secs)
    return words("units.left.seconds", lang, seconds=secs)


def download_line(progress: Progress, lang: str = "en") -> str:
    """`12.3 / 45.6 MB, 1.5 MB/s, 22 s left`: bytes done of the total, the speed, and the time left when known."""
    size = size_pair_text(progress.done, progress.total)
    speed = speed_text(progress.speed, lang)
    if progress.eta is None or not math.isfinite(progress.eta):
        return words("units.download.no_eta", lang, size=size, speed=speed)
    return words("units.download", lang, size=size, speed=speed, left=time_left_text(progress.eta, lang))
