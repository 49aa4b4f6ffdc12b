"""The repairs recorded on one computer (this one, a copied drive, the demo computer): read from the journal in a
worker, and held here for the History page and Welcome. No Qt: the page draws it, tests read it without a window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from app.repair.journal import DONE, Journal, State, Transaction
from app.repair.plan import Change, Plan
from app.report.plan_lines import change_lines
from app.system.base import System
from app.system.identity import machine_of


@dataclass
class EarlierRepair:
    """One recorded repair: the transaction, and whether what it changed is still in place."""

    transaction: Transaction
    state: State

    @property
    def action(self) -> str:
        return self.transaction.begin.get("action", "")

    @property
    def created(self) -> Optional[str]:
        return self.transaction.begin.get("created")

    @property
    def in_place(self) -> bool:
        """Its changes are there now, and an undo puts back what was there before."""
        return self.state == DONE

    def changes(self, lang: str) -> list[str]:
        """What it changed, as the plan said it before it ran (the command line's words)."""
        return change_lines(recorded_plan(self.transaction.begin.get("plan") or {}), lang)


def recorded_plan(plan: dict) -> Plan:
    """A plan as a transaction records it (Plan.to_dict), made a Plan again for its words."""
    changes = [Change(kind=c.get("kind", ""), target=c.get("target", ""), source=c.get("source"), value=c.get("value"))
               for c in plan.get("changes") or [] if isinstance(c, dict)]
    return Plan(plan.get("action", ""), plan.get("source"), plan.get("environment", ""), changes=changes)


def earlier_repairs(journal: Journal, system: Optional[System]) -> list[EarlierRepair]:
    """The repairs recorded for `system`'s computer, newest first (none without a computer). Reads files: a
    worker's work."""
    if system is None:
        return []
    machine = machine_of(system)
    return [EarlierRepair(t, t.state) for t in journal.transactions() if t.machine == machine]
