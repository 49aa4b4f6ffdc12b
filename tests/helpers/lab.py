"""The Windows lab's helpers: the app run by the lab's Windows Python, its torch environments, a Chinese Windows,
and a skip (a failure where CI demands the lab) when the lab cannot run."""

from __future__ import annotations

import os

import pytest

LAB_APP = "import sys; sys.path.insert(0, {repo!r}); from app.main import main; sys.exit(main({argv!r}))"


def app_in_lab(lab, env, extra: dict, *argv: str):
    """The app's command line, run by the Windows Python of the lab environment `env`, with `extra` variables. Wine 8
    quirk (measured: 2 runs in 6): after OMP's abort in the replay's child, the app's own process sometimes ends with
    exit 0 and no output at all; never seen without the abort, so such a run is asked again."""
    from tests.winelab import REPO_ROOT, to_windows_path

    code = LAB_APP.format(repo=to_windows_path(REPO_ROOT), argv=list(argv))
    for _ in range(3):
        result = lab.run_python(["-c", code], env=extra, timeout=900, torch_env=env)
        if result.returncode != 0 or result.stdout or result.stderr:
            return result
    return result


def wine_unavailable(reason: str):
    """Skip a Windows-lab test, unless CI demands the lab (TDD_REQUIRE_WINE=1)."""
    if os.environ.get("TDD_REQUIRE_WINE") == "1":
        pytest.fail(f"the Windows lab is required here (TDD_REQUIRE_WINE=1): {reason}")
    pytest.skip(f"Windows lab unavailable: {reason}")


def lab_or_skip(make, *args, **kwargs):
    """What a call of the Windows lab makes, or a skip (a failure under TDD_REQUIRE_WINE) when the lab cannot."""
    from tests.winelab import WineLabUnavailable

    try:
        return make(*args, **kwargs)
    except WineLabUnavailable as exc:
        wine_unavailable(str(exc))


def lab_env(lab, name: str, **kwargs):
    """A torch install in the Windows lab (tests/winelab.py make_torch_env)."""
    return lab_or_skip(lab.make_torch_env, name, **kwargs)


def chinese_windows(lab, extra=None) -> dict:
    """The env of a run on a Chinese Windows (tests/winelab.py chinese_windows)."""
    return lab_or_skip(lab.chinese_windows, extra)


VC_RUNTIMES_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
