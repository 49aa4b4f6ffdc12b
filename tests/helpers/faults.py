"""Ends that a real computer gives a repair or a check and a test computer cannot: a check that cannot finish once the
OpenMP runtime is placed (security software holding the new file), and Microsoft's installer still running when the
app's wait for it ran out."""

from __future__ import annotations

LIBOMP = "libomp140.x86_64.dll"


def blind_once_the_runtime_is_placed(ctx):
    """A check that cannot finish once libomp140 is in torch\\lib (security software holding the new file)."""
    if any(p.name.lower() == LIBOMP for p in ctx.torch_dlls()):
        raise TimeoutError("the file was held by another program")
    yield from ()


class InstallerStillRunningAfter:
    """A repair's real step, then the failure run_installer raises when the app's wait for Microsoft's installer
    ran out (StillRunning): the installer itself runs only on Windows (tests/lab/test_live_vc_runtime.py)."""

    def __init__(self, action) -> None:
        self.action = action

    def __getattr__(self, name: str):  # the plan and everything else: the real action's
        return getattr(self.action, name)

    def apply(self, system, plan, transaction, *args, **kwargs) -> None:
        from app.repair.vc_runtime import InstallerFailed

        self.action.apply(system, plan, transaction, *args, **kwargs)
        raise InstallerFailed("still-running", minutes=30)
