"""The journal: every change a repair makes is written down, with a backup, before it is made, so that it can
always be undone, byte for byte, even after a crash, a kill or a power cut.

One transaction per repair run, in its own folder under the per-user data folder:

    transactions/<id>/journal.jsonl   one JSON record per line, each flushed and fsynced before going on
    transactions/<id>/backups/<n>     a copy of every file a step replaces or removes
    transactions/<id>/lock            held (an OS lock on an open file) by the process that runs or undoes it

A step is recorded as an `intent` (what it will change, the backup and its SHA-256, the content it will
leave) before the change, and as `applied` after it; steps made together (`steps_at_once`: the thousands of files
of a restore) have all their intents written before the first change and their `applied` after the last. The
kinds of change (app/repair/changes/) apply and undo; the journal records and replays. Rollback walks the steps
backwards; each kind compares what is there now with what was there before and what the step left:
- as before: nothing to undo (the crash came before the change);
- as the step left it: put back what was there before;
- anything else: somebody changed it after the repair. Rollback stops there and keeps both: the user's file
  stays where it is, the former content stays in the backup, and the journal says where each one is.

The lock is what tells a live repair from a crashed one: it dies with its process. A transaction that never
finished and that nobody holds was interrupted; one that somebody holds is running (in another window, perhaps),
and is neither offered for rollback nor rolled back under it. One repair or undo runs at a time per user
(`Journal.exclusive`): a second one is refused in plain words.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import secrets
import shutil
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Iterable, Iterator, Optional

from app.data_folder import data_folder
from app.failures import local_time, refusal_kind
from app.i18n import words
from app.repair.changes import (
    FILE,
    INSTALLER,
    MACHINE_VALUE,
    PACKAGES,
    RENAME,
    VARIABLE,
    Change,
    RollbackStopped,
    kind_of,
)
from app.repair.changes.faults import CRASH_AT, crash_point
from app.system.base import ElevationDeclined, System
from app.system.confine import host_absolute, relative_parts
from app.system.locks import LockHeld, ProcessLock, is_held, read_owner
from app.system.user_json import MAX_DEPTH, depth_of, loads

__all__ = ["FILE", "VARIABLE", "PACKAGES", "INSTALLER", "MACHINE_VALUE", "CRASH_AT", "RollbackStopped", "State",
           "Transaction", "Journal", "TransactionBusy", "RepairBusy", "crash_point"]

LOCK = "lock"
RETRYABLE_STOPS = ("refused", "packages-not-restored", "declined")  # "declined": No at the permission prompt
ONE_AT_A_TIME = "one-repair-at-a-time.lock"


class State(str, Enum):
    """Where a transaction stands. The values are what `history --json` and the journal's readers see."""

    RUNNING = "running"  # a process holds it now: applying, or rolling back
    INTERRUPTED = "interrupted"  # begun (or its rollback begun) and never finished, and nobody holds it
    DONE = "done"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_STOPPED = "rollback-stopped"  # rollback stopped rather than overwrite a change, or Windows refused
    KEPT = "kept"  # a stopped rollback the user chose to leave as it is

    def __str__(self) -> str:
        return self.value


RUNNING, INTERRUPTED, DONE = State.RUNNING, State.INTERRUPTED, State.DONE
ROLLED_BACK, ROLLBACK_STOPPED, KEPT = State.ROLLED_BACK, State.ROLLBACK_STOPPED, State.KEPT


class Record(str, Enum):
    """The kinds of record a journal holds, in the order a transaction writes them."""

    BEGIN = "begin"
    INTENT = "intent"  # a change is about to be made: what, and what was there before
    APPLIED = "applied"  # it was made
    NOTE = "note"  # facts for the report (where files came from, the installer's tries)
    FINISH = "finish"  # the repair ended, with its outcome
    ROLLBACK_BEGIN = "rollback-begin"
    RESTORED = "restored"  # one change put back
    ROLLBACK_STOPPED = "rollback-stopped"
    ROLLED_BACK = "rolled-back"
    KEPT = "kept"  # a stopped rollback the user leaves as it is


KINDS = frozenset(kind.value for kind in Record)


class TransactionBusy(Exception):
    """Another process holds this transaction (it is being applied or undone there): not touched."""

    def __init__(self, transaction_id: str, owner: dict) -> None:
        super().__init__(f"{transaction_id} is in use by process {owner.get('pid') or '?'}")
        self.transaction_id, self.owner = transaction_id, owner

    def text(self, lang: str) -> str:
        return words("repair.transaction_busy", lang, pid=self.owner.get("pid") or "?",
                     since=local_time(self.owner.get("since")))


class TransactionChanged(Exception):
    """The transaction's journal changed on disk since it was read (another window or the command line undid it,
    or went on with it): nothing is done with what was read before, and nothing was touched."""

    def __init__(self, transaction_id: str, state: str) -> None:
        super().__init__(f"{transaction_id} changed since it was listed (now {state})")
        self.transaction_id, self.state = transaction_id, state

    def text(self, lang: str) -> str:
        return words("repair.transaction_changed", lang, id=self.transaction_id,
                     state=words(f"history.state.{self.state}", lang))


class NewerRepairFirst(Exception):
    """A newer repair, not undone, changed a file this one changed: undoing this one first would take that one's
    change away while it is recorded as done (and its own undo would then put back what this one wrote)."""

    def __init__(self, transaction_id: str, newer: Transaction) -> None:
        super().__init__(f"{newer.id} changed the same files after {transaction_id}: undo it first")
        self.transaction_id, self.newer = transaction_id, newer

    def text(self, lang: str) -> str:
        return words("repair.newer_first", lang, id=self.newer.id, action=self.newer.begin.get("action") or "-")


class RepairBusy(Exception):
    """Another repair or undo runs now (in another window, or the command line): one at a time."""

    def __init__(self, owner: dict) -> None:
        super().__init__(f"another repair runs in process {owner.get('pid') or '?'} ({owner.get('purpose') or '?'})")
        self.owner = owner

    def text(self, lang: str) -> str:
        return words("repair.busy", lang, pid=self.owner.get("pid") or "?", since=local_time(self.owner.get("since")))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


STEP_KINDS = ("intent", "applied", "restored")


def _line(record: dict) -> bytes:
    """A record as the journal writes it: JSON, its CRC-32 last (of the text before it), one line."""
    body = json.dumps(record, ensure_ascii=False)
    return (body[:-1] + f', "crc": "{zlib.crc32(body.encode("utf-8")):08x}"}}\n').encode("utf-8")


def _whole(number: object) -> bool:
    return isinstance(number, int) and not isinstance(number, bool)


def _record(line: bytes) -> Optional[dict]:
    """The record a journal line holds, or None when it holds none of the form the journal writes (a record
    written before records carried a CRC has none, and is taken as it is)."""
    try:
        record = loads(line.decode("utf-8"))  # a line nested deeper than any record is damage, not a crash
    except ValueError:  # UnicodeDecodeError and JsonNotRead are ones too
        return None
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str) or record["kind"] not in KINDS:
        return None
    if ("crc" in record) != ("n" in record):  # the journal writes both or (before them) neither
        return None
    if "crc" in record:
        crc = record.pop("crc")
        if _line(record) != line.rstrip(b"\r") + b"\n" or not isinstance(crc, str):
            return None
        if not (_whole(record["n"]) and record["n"] >= 0):
            return None
    if record["kind"] in STEP_KINDS and not _whole(record.get("step")):
        return None
    if record["kind"] == "intent" and not (isinstance(record.get("op"), str) and _confined(record)):
        return None
    return record


_PATHS = ("target", "source", "site_packages", "python")  # what an intent names on this computer (its undo acts there)
_HASHES = ("after", "sha256")


def _confined(intent: dict) -> bool:
    """An intent's paths keep the confinement rule (app/system/confine.py): whole paths of this computer, and a
    backup inside the transaction's own folder; its hashes are hexadecimal (they make the undo's file names). A
    line that breaks it is damaged: its undo stops with words, and nothing is looked up or changed."""
    if any(name in intent and (not isinstance(intent[name], str) or host_absolute(intent[name]) is None)
           for name in _PATHS):
        return False
    before = intent.get("before")
    if intent["op"] == FILE and isinstance(before, dict) and not (
            isinstance(before.get("backup"), str) and relative_parts(before["backup"]) is not None
            and _hexadecimal(before.get("sha256"))):
        return False
    return all(_hexadecimal(intent[name]) for name in _HASHES if name in intent and intent["op"] in (FILE, RENAME))


def _hexadecimal(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{1,128}", value) is not None


def _cut_short(line: bytes) -> bool:
    """Whether `line` can be the first bytes of a record, as a power cut leaves one: a UTF-8 character may be cut in
    two at its end, and some file systems fill a lost tail with zeros. A byte changed in the middle is not."""
    line = line.rstrip(b"\0")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            return False
        text = line[:exc.start].decode("utf-8", "replace")
    if not text.startswith("{"):
        return text == ""
    if depth_of(text) > MAX_DEPTH:
        return False  # deeper than any record: damage
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string"):
            return True
        rest = text[exc.pos:]
        if "escape" in exc.msg:  # a \\u escape cut short
            return len(rest) <= 6
        return (rest == "" or (len(rest) < 5 and any(word.startswith(rest) for word in ("true", "false", "null")))
                or re.fullmatch(r"-|[.eE][0-9eE+-]*", rest) is not None)  # a number cut after its sign, point or e
    return False  # whole JSON, and still no record: not a tear


@dataclass
class Step:
    number: int
    intent: dict
    applied: bool = False
    restored: bool = False


class Transaction:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.id = folder.name
        self._lock = ProcessLock(folder / LOCK, purpose=folder.name)
        self.records = self._read()
        self.undone_before = False  # set by a rollback: an earlier one began (and may have been cut short mid-copy)

    @property
    def records(self) -> list[dict]:
        return self._records

    @records.setter
    def records(self, records: list[dict]) -> None:
        self._records = records
        self._last_step = max((r["step"] for r in records if r["kind"] == Record.INTENT), default=0)

    def _read(self) -> list[dict]:
        """Every whole record. A line cut short by a power cut (mid-character too: paths are written as UTF-8) is
        no record: the change it announced was never made (an intent is on disk before its change) or is found by
        comparing (an `applied` lost), so it is passed over, and the records written after it are read.

        Only a line that can be a tear is passed over in silence: the first bytes of a record (`_cut_short`). Each
        record carries its running number (`n`) and a CRC-32 of its text (`crc`), so a whole line whose bytes
        changed since, or a line lost or cut later, is damage too: its line number goes to `damaged`, and an undo
        that puts back everything else still says that the record could not all be read (RollbackStopped
        "journal-damaged"). A tear costs no number (the record is counted only once written), so the records
        after it follow on; a record whose write was taken for failed but reached the disk repeats a number."""
        records, self.damaged, self._next_number = [], [], 0
        path = self.folder / "journal.jsonl"
        if not path.exists():
            return records
        last: Optional[int] = None  # the running number of the last record read
        unread = 0  # damaged lines since it
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            record = _record(line)
            if record is None:
                if not _cut_short(line):
                    self.damaged.append(number)
                    unread += 1  # it held a record, with a number of its own
                continue
            if "n" in record:
                if record["n"] > (last + 1 if last is not None else len(records)) + unread:
                    self.damaged.append(number)  # a line before this one is lost, or was cut short since
                last = record["n"]
            elif last is not None:  # a record of the old form after numbered ones: none the journal writes
                self.damaged.append(number)
                unread += 1
                continue
            unread = 0
            records.append(record)
        # the next record's number: after the last one read (a write taken for failed may have repeated one)
        self._next_number = last + 1 if last is not None else len(records)
        return records

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def begin(self) -> dict:
        return self.records[0] if self.records else {}

    @property
    def machine(self) -> dict:
        return self.begin.get("machine") or {}

    @property
    def state(self) -> State:
        kinds = [r["kind"] for r in self.records]
        if Record.ROLLED_BACK in kinds:
            return ROLLED_BACK
        if kinds and kinds[-1] == Record.KEPT:
            return KEPT
        if kinds and kinds[-1] == Record.ROLLBACK_STOPPED:
            return ROLLBACK_STOPPED
        if Record.FINISH in kinds and Record.ROLLBACK_BEGIN not in kinds:
            return DONE
        return RUNNING if self._lock.held or is_held(self.folder / LOCK) else INTERRUPTED

    @property
    def finished(self) -> bool:
        return self.state in (DONE, ROLLED_BACK, KEPT)

    @property
    def stopped(self) -> Optional[dict]:
        """The record of the last rollback that stopped, if the rollback has not gone on since."""
        kinds = [r["kind"] for r in self.records]
        if not kinds or kinds[-1] not in (Record.ROLLBACK_STOPPED, Record.KEPT):
            return None
        return next((r for r in reversed(self.records) if r["kind"] == Record.ROLLBACK_STOPPED), None)

    @property
    def stop_is_final(self) -> bool:
        """The rollback stopped rather than overwrite a change made since, or at a damaged backup: trying again can
        only stop again (a refusal by Windows, or pip that could not reach its index, may pass later)."""
        stop = self.stopped
        return stop is not None and stop.get("code") not in RETRYABLE_STOPS

    @property
    def restart_needed(self) -> bool:
        """An installer said Windows must restart to finish (3010, 1641), or the files it replaces wait for one."""
        return any(r.get("outcome") in ("restart-needed", "restart-started") or r.get("restart_needed")
                   for r in self.records if r["kind"] in (Record.APPLIED, Record.NOTE))

    def owner(self) -> dict:
        return read_owner(self.folder / LOCK)

    def steps(self) -> list[Step]:
        steps: dict[int, Step] = {}
        for record in self.records:
            if record["kind"] == Record.INTENT:
                steps[record["step"]] = Step(record["step"], record)
            elif record["kind"] == Record.APPLIED and record["step"] in steps:
                steps[record["step"]].applied = True
            elif record["kind"] == Record.RESTORED and record["step"] in steps:
                steps[record["step"]].restored = True
        return [steps[n] for n in sorted(steps)]

    def targets(self) -> list[Path]:
        """Every file the steps change (a program that holds one blocks an undo)."""
        return [path for step in self.steps() for path in kind_of(step.intent["op"]).targets(step.intent)]

    def summary(self) -> dict:
        finish = next((r for r in self.records if r["kind"] == Record.FINISH), {})
        return {"id": self.id, "created": self.begin.get("created"), "action": self.begin.get("action"),
                "source": self.begin.get("source"), "environment": self.begin.get("environment"),
                "machine": self.machine, "state": self.state.value, "changes": [s.intent for s in self.steps()],
                "results": [r for r in self.records if r["kind"] == Record.APPLIED],
                "outcome": finish.get("outcome"), "stopped": self.stopped, "restart_needed": self.restart_needed,
                "damaged_lines": self.damaged}

    # -- holding ---------------------------------------------------------------------------------------
    def hold(self) -> None:
        """The one way to take this transaction's lock (TransactionBusy when another process holds it). Under the
        lock its journal is read again: one that changed since this object read it (undone, or repaired on, in
        another window or on the command line) is let go at once and raises TransactionChanged, so nothing is
        ever replayed from an old reading."""
        try:
            self._lock.acquire()
        except LockHeld as held:
            raise TransactionBusy(self.id, held.owner) from None
        read, self.records = self.records, self._read()
        if self.records != read:
            self._lock.release()
            raise TransactionChanged(self.id, self.state.value)

    def release(self) -> None:
        self._lock.release()

    # -- writing ---------------------------------------------------------------------------------------
    def _write(self, record: dict) -> None:
        self._write_all([record])

    def _write_all(self, records: list[dict]) -> None:
        """The records appended, numbered, in one write and one fsync."""
        records = [{"at": _now(), **record, "n": self._next_number + offset} for offset, record in enumerate(records)]
        lines = b"".join(_line(record) for record in records)
        with open(self.folder / "journal.jsonl", "a+b") as out:
            if out.seek(0, os.SEEK_END) > 0:
                out.seek(-1, os.SEEK_END)
                if out.read(1) != b"\n":  # the last line was cut short by a power cut: never glued onto it
                    lines = b"\n" + lines
            out.write(lines)
            out.flush()
            os.fsync(out.fileno())
        for record in records:
            self._records.append(record)
            self._next_number += 1
            if record["kind"] == Record.INTENT:
                self._last_step = max(self._last_step, record["step"])

    def step(self, system: System, change: Change) -> None:
        """Record the intent, make the change, record that it was made (with what the change reports)."""
        self.steps_at_once(system, [change])

    def steps_at_once(self, system: System, changes: list[Change], workers: int = 1) -> None:
        """Several steps at the cost of one in the journal: every intent recorded (one fsync) before any of the
        changes is made, then the changes, then every `applied` (one fsync). A crash between leaves intents without
        `applied`, which rollback undoes as it undoes one step's (nothing there, or the step's own content).
        `workers` > 1 makes the changes side by side: only for changes of distinct files that need no order (the
        files of a restore), whose fsyncs the file system then commits together."""
        if not self._lock.held:
            raise RuntimeError(f"transaction {self.id} is changed without holding its lock")
        first = self._last_step + 1
        intents = [change.prepare(system, self, first + offset) for offset, change in enumerate(changes)]
        self._write_all([{"kind": Record.INTENT, "step": first + offset, **intent}
                         for offset, intent in enumerate(intents)])

        def make(offset: int) -> dict:
            crash_point(f"intent:{first + offset}")
            result = changes[offset].apply(system, self, intents[offset]) or {}
            crash_point(f"change:{first + offset}")
            return result

        if workers > 1 and len(changes) > 1:
            with ThreadPoolExecutor(min(workers, len(changes))) as pool:
                results = list(pool.map(make, range(len(changes))))
        else:
            results = [make(offset) for offset in range(len(changes))]
        self._write_all([{"kind": Record.APPLIED, "step": first + offset, **result}
                         for offset, result in enumerate(results)])
        for offset in range(len(changes)):
            crash_point(f"applied:{first + offset}")

    def note(self, record: dict) -> None:
        """Facts worth keeping with the transaction (where a download came from, its checks)."""
        self._write({**record, "kind": Record.NOTE})

    def finish(self, outcome: dict) -> None:
        self._write({"kind": Record.FINISH, "outcome": outcome})
        crash_point("finish")

    def keep(self) -> None:
        """The user leaves a stopped rollback as it is: it is no longer offered at every start."""
        self.hold()
        try:
            self._write({"kind": Record.KEPT})
        finally:
            self.release()

    # -- undoing ---------------------------------------------------------------------------------------
    def rollback(self, system: System) -> None:
        """Undo every step, newest first. Raises RollbackStopped (and records it) rather than overwrite a change
        somebody else made after the repair, or when Windows refuses a step; TransactionBusy when another process
        holds the transaction."""
        if self.state == ROLLED_BACK:
            return
        mine = self._lock.held
        if not mine:
            self.hold()  # what is on disk now, read under the lock
        try:
            self._rollback(system)
        finally:
            if not mine:
                self.release()

    def _rollback(self, system: System) -> None:
        self.undone_before = any(r["kind"] == Record.ROLLBACK_BEGIN for r in self.records)
        self._write({"kind": Record.ROLLBACK_BEGIN})
        for step in reversed(self.steps()):
            if step.restored:
                continue
            try:
                kind_of(step.intent["op"]).undo(system, self, step.intent, step.applied)
            except RollbackStopped as stop:
                self._write({"kind": Record.ROLLBACK_STOPPED, "step": step.number, "code": stop.code, **stop.values})
                raise
            except ElevationDeclined as exc:  # No at Windows' permission prompt: recorded, said, offered again
                target = step.intent.get("shown") or step.intent.get("target") or step.intent["op"]
                stop = RollbackStopped("declined", target=target)
                self._write({"kind": Record.ROLLBACK_STOPPED, "step": step.number, "code": stop.code, **stop.values})
                raise stop from exc
            except OSError as exc:  # Windows refused (denied, locked, full): recorded, said, offered again
                target = step.intent.get("shown") or step.intent.get("target") or step.intent["op"]
                stop = RollbackStopped("refused", target=target, reason=refusal_kind(exc),
                                       detail=f"{exc.__class__.__name__}: {exc}")
                self._write({"kind": Record.ROLLBACK_STOPPED, "step": step.number, "code": stop.code, **stop.values})
                raise stop from exc
            self._write({"kind": Record.RESTORED, "step": step.number})
            crash_point(f"restore:{step.number}")
        if self.damaged:  # what the record names is put back; what a damaged line named may not be
            stop = RollbackStopped("journal-damaged", line=", ".join(map(str, self.damaged)),
                                   journal=str(self.folder / "journal.jsonl"))
            self._write({"kind": Record.ROLLBACK_STOPPED, "step": None, "code": stop.code, **stop.values})
            raise stop
        self._write({"kind": Record.ROLLED_BACK})


def _order(folder: Path) -> tuple:
    """Newest last: the folder's stamp to the microsecond (older folders have whole seconds), then its name."""
    parts = folder.name.split("-")
    micro = parts[2] if len(parts) > 3 and parts[2].isdigit() else "000000"
    return (parts[0], parts[1] if len(parts) > 1 else "", micro, folder.name)


class Journal:
    """All transactions of this user, newest first."""

    def __init__(self, folder: Optional[Path] = None) -> None:
        self.folder = (folder or data_folder()) / "transactions"

    @contextlib.contextmanager
    def exclusive(self, purpose: str) -> Iterator[None]:
        """One repair or undo at a time (per user): RepairBusy when another process runs one now."""
        lock = ProcessLock(self.folder.parent / ONE_AT_A_TIME, purpose=purpose)
        try:
            lock.acquire()
        except LockHeld as held:
            raise RepairBusy(held.owner) from None
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def transaction(self, purpose: str, *, facts: Optional[dict] = None,
                    existing: Optional[Transaction] = None) -> Iterator[Transaction]:
        """The locks' one sequence, for a repair and for an undo: this user's one-at-a-time lock (RepairBusy), then
        the transaction's own, of a new transaction begun with `facts` (`begin`'s: machine, action, source,
        environment, plan), or of `existing`, read again under its lock (TransactionBusy, TransactionChanged).
        Both are let go, in reverse order, however the work ends."""
        with self.exclusive(purpose):
            if existing is None:
                transaction = self.begin(**(facts or {}))
            else:
                existing.hold()
                transaction = existing
            try:
                yield transaction
            finally:
                transaction.release()

    def begin(self, machine: dict, action: str, source: Optional[str], environment: Optional[str],
              plan: dict) -> Transaction:
        """A new transaction, held by this process until `release()`: `transaction()` is the way a repair takes
        it (the tests begin one alone, to stand for a process killed while it held one)."""
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
        folder = self.folder / f"{stamp}-{secrets.token_hex(3)}"
        (folder / "backups").mkdir(parents=True)
        transaction = Transaction(folder)
        transaction.hold()
        try:
            transaction._write({"kind": Record.BEGIN, "id": transaction.id, "created": _now(), "machine": machine,
                                "action": action, "source": source, "environment": environment, "plan": plan})
        except BaseException:  # a full disk, denied: nothing was changed, so nothing is left to list or to hold
            transaction.release()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        crash_point("begin")
        return transaction

    def transactions(self) -> Iterator[Transaction]:
        if not self.folder.is_dir():
            return iter(())
        folders = sorted((p for p in self.folder.iterdir() if (p / "journal.jsonl").is_file()), key=_order,
                         reverse=True)
        return (Transaction(f) for f in folders)

    def get(self, transaction_id: str) -> Optional[Transaction]:
        folder = self.folder / transaction_id
        return Transaction(folder) if (folder / "journal.jsonl").is_file() and folder.parent == self.folder else None

    def last(self, machine: Optional[dict] = None) -> Optional[Transaction]:
        """The newest transaction (for that machine) that can still be undone."""
        return next((t for t in self.transactions() if t.state not in (ROLLED_BACK, KEPT)
                     and (machine is None or t.machine == machine)), None)

    def newer_on_same_files(self, transaction: Transaction) -> Optional[Transaction]:
        """The oldest transaction begun after this one, of its machine, not undone, that changes one of its files: the
        same file, or one inside a folder the other changes (pip replacing the torch folder, a DLL restored in it)."""
        mine = _comparable(transaction.targets())
        found = None
        for other in self.transactions():  # newest first
            if other.id == transaction.id:
                return found
            if (mine and other.machine == transaction.machine and other.state not in (ROLLED_BACK, KEPT)
                    and _overlap(mine, _comparable(other.targets()))):
                found = other
        return found

    def unfinished(self, machine: Optional[dict] = None) -> list[Transaction]:
        """Repairs cut short by a crash (or a rollback that stopped), that no process holds now: offered for
        rollback at the next start."""
        return [t for t in self.transactions() if t.state in (INTERRUPTED, ROLLBACK_STOPPED)
                and (machine is None or t.machine == machine)]

    def running(self, machine: Optional[dict] = None) -> list[Transaction]:
        """Repairs (or undos) another window runs now."""
        return [t for t in self.transactions() if t.state == RUNNING and (machine is None or t.machine == machine)]


def _comparable(paths: Iterable[Path]) -> set[str]:
    return {str(path).replace("\\", "/").rstrip("/").casefold() for path in paths}


def _overlap(mine: set[str], theirs: set[str]) -> bool:
    """One path of each set is the same, or lies below the other."""
    return any(a == b or a.startswith(b + "/") or b.startswith(a + "/") for a in mine for b in theirs)
