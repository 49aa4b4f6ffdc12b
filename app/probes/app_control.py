"""Smart App Control and App Control for Business: does Windows' code integrity policy stop torch's unsigned DLLs?

A blocked DLL fails with WinError 4551 (HRESULT 0x800711C7, "An Application Control policy has blocked this file").
The live replay seeing that is a blocker (`replayed_block`, called by the replay probe). Without a replay, Smart App
Control switched on (HKLM\\SYSTEM\\CurrentControlSet\\Control\\CI\\Policy VerifiedAndReputablePolicyState = 1) while
torch's DLLs carry no signature is a risk, not a certainty: Smart App Control also trusts files the cloud knows, so
it is a warning; evaluation mode blocks nothing yet and is only told (info).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.system.signature import NOT_SIGNED

CODE = "app-control-blocks"
GUIDE = "app-control-settings"
BLOCKED = 4551  # ERROR_SYSTEM_INTEGRITY_POLICY_VIOLATION
FIRST_LOADED = "c10.dll"  # the first of torch's own DLLs every build loads: small, so its signature reads fast


def run(ctx: ProbeContext) -> Iterator[Finding]:
    state = ctx.machine.smart_app_control
    if ctx.env is None or ctx.env.torch is None or state not in ("on", "evaluation"):
        return
    sample = _sample(ctx.torch_dlls())
    if sample is None:
        return
    check = ctx.system.verify_signature(sample)
    if check.status != NOT_SIGNED:
        return  # signed (a rebuilt torch, say) or not checkable here: no claim either way
    evidence = {"state": state, "dll": sample.name, "path": ctx.display(sample), "signature": check.status,
                "signature_detail": check.detail}
    if state == "on":
        yield ctx.finding(CODE, WARNING, evidence, [GUIDE], variant="risk")
    else:
        yield ctx.finding(CODE, INFO, evidence, variant="evaluation")


def replayed_block(ctx: ProbeContext, winerror: object, dll: Optional[str], message: str) -> Optional[Finding]:
    """The blocker when the replayed import failed with WinError 4551; None for any other failure."""
    if winerror != BLOCKED:
        return None
    state = ctx.machine.smart_app_control
    # Smart App Control on names the culprit; otherwise an App Control for Business policy (an organisation's)
    return ctx.finding(CODE, BLOCKER, {"dll": dll, "winerror": BLOCKED, "hresult": "0x800711C7", "message": message,
                                       "state": state}, [GUIDE], variant=None if state == "on" else "policy")


def _sample(dlls: list[Path]) -> Optional[Path]:
    """c10.dll, else the smallest DLL of torch\\lib (a signature check reads the whole file)."""
    named = next((p for p in dlls if p.name.lower() == FIRST_LOADED), None)
    if named is not None:
        return named
    sized = []
    for path in dlls:
        try:
            sized.append((path.stat().st_size, path.name.lower(), path))
        except OSError:
            continue
    return min(sized)[2] if sized else None


PROBE = Probe("app-control", ENVIRONMENT, run)
