"""Smart App Control and App Control for Business: does Windows' code integrity policy stop torch's unsigned DLLs?

A blocked DLL fails with WinError 4551 (HRESULT 0x800711C7, "An Application Control policy has blocked this file").
The live replay seeing that is a blocker (`replayed_block`, called by the replay probe). Without a replay, Smart App
Control switched on (HKLM\\SYSTEM\\CurrentControlSet\\Control\\CI\\Policy VerifiedAndReputablePolicyState = 1) while
torch's DLLs carry no signature is a risk, not a certainty: Smart App Control also trusts files the cloud knows, so
it is a warning; evaluation mode blocks nothing yet and is only told (info). Code Integrity's own log recording a
block of one of torch's DLLs (3077/3033, app/inventory/security_events.py) makes it a blocker without a replay, and
a replayed block carries that record (its date and policy) where there is one.
"""

from __future__ import annotations

import ntpath
from pathlib import Path
from typing import Iterator, Optional

from app.inventory.security_events import CODE_INTEGRITY, evidence_lines, security_log
from app.probes.base import ENVIRONMENT, Probe, ProbeContext
from app.probes.finding import BLOCKER, INFO, WARNING, Finding
from app.system.signature import NOT_SIGNED

CODE = "app-control-blocks"
GUIDE = "app-control-settings"
BLOCKED = 4551  # ERROR_SYSTEM_INTEGRITY_POLICY_VIOLATION
SHOWN_EVENTS = 10
FIRST_LOADED = "c10.dll"  # the first of torch's own DLLs every build loads: small, so its signature reads fast


def run(ctx: ProbeContext) -> Iterator[Finding]:
    state = ctx.machine.smart_app_control
    if ctx.env is None or ctx.env.torch is None or state not in ("on", "evaluation"):
        return
    logged = _logged_block(ctx, ctx.torch_dlls())
    if logged:  # Code Integrity's own record of a block of torch's DLL: a fact, not a risk
        yield ctx.finding(CODE, BLOCKER, {"state": state, **logged}, [GUIDE],
                          variant=None if state == "on" else "policy")
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
    named = [p for p in ctx.torch_dlls() if dll and p.name.lower() == ntpath.basename(dll).lower()]
    # Smart App Control on names the culprit; otherwise an App Control for Business policy (an organisation's)
    return ctx.finding(CODE, BLOCKER, {"dll": dll, "winerror": BLOCKED, "hresult": "0x800711C7", "message": message,
                                       "state": state, **_logged_block(ctx, named)}, [GUIDE],
                       variant=None if state == "on" else "policy")


def _logged_block(ctx: ProbeContext, dlls: list[Path]) -> dict:
    """The newest block that Code Integrity's log records of one of these DLLs: the DLL, the date, the policy."""
    log = security_log(ctx.system)
    for dll in dlls:
        blocks = [e for e in log.naming(ctx.display(dll)) if e.kind == CODE_INTEGRITY and e.takes]
        if blocks:
            return {"dll": dll.name, "path": ctx.display(dll), "block_date": blocks[0].time.strftime("%Y-%m-%d"),
                    "policy": blocks[0].name, "security_events": evidence_lines(blocks[:SHOWN_EVENTS])}
    return {}


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
