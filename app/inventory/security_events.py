"""What Windows itself recorded about files it took or stopped: Microsoft Defender Antivirus' detections and actions
(its Operational log: 1116/1117, 1006/1007 on older builds, the failed actions), and Code Integrity's blocks (App
Control for Business and Smart App Control: 3077/3033 blocked, 3076/3034 audited, 3089 their signatures).

Live, Windows' own wevtutil reads the logs with the user's rights (`System.query_event_log`); where that is denied,
the note says an administrator is needed. On a copied drive, the `.evtx` files under Windows\\System32\\winevt\\Logs
are read with the `evtx` package (pyevtx-rs), or, where a drive carries one instead, the export Windows renders
(`wevtutil qe CHANNEL /f:xml`) saved beside them as the log's name with `.xml`. Both give the event XML of
Microsoft's Event schema, which one bounded reader takes in (`parse_rendered`).

Bounded: only these event IDs, only the last `months()` months, at most READ_BYTES of each log (an .evtx file's
newest chunks, by their record numbers), records of at most MAX_RECORD characters, MAX_EVENTS events. A damaged,
hostile (a DTD, an entity) or oversized log is a note (`SecurityLog.notes`), never an error: what could be read
before the damage is kept.
"""

from __future__ import annotations

import io
import os
import re
import struct
import threading
import weakref
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Iterator, Optional
from xml.parsers import expat

from app.system.base import NotAvailable, System
from app.system.folders import descend

DEFENDER, CODE_INTEGRITY = "defender", "code-integrity"
MONTHS_SETTING = "TDD_SECURITY_LOG_MONTHS"  # how far back the logs are read, in months (1 to 24)
DEFAULT_MONTHS = 6
READ_BYTES = 4 << 20  # of each log: 64 chunks of an .evtx file, or 4 MiB of a rendered export
MAX_RECORD = 64 << 10  # characters of one event's XML; Windows' own are 2 to 8 KB
MAX_EVENTS = 200  # records of the wanted IDs read of each log: a PC's detections of months are a few dozen
MAX_VALUE = 4096  # characters kept of one Data value (a Defender Path names many files)
MAX_DATA = 128  # Data elements read of one event
MAX_RENDERED = 5000  # records rendered of one .evtx file (pyevtx-rs: about 25 ms); 4 MB of Defender's hold fewer
MAX_DAMAGED = 64  # damaged records passed over in one .evtx file before the rest of it is given up
QUERY_TIMEOUT_S = 30
EVTX_HEADER, EVTX_CHUNK = 4096, 65536
DAMAGED, HOSTILE, TOO_LARGE, NEEDS_ADMIN, UNREADABLE, NO_READER = (
    "damaged", "hostile", "too-large", "needs-admin", "unreadable", "no-reader")
TAKES = ("quarantined", "removed", "cleaned", "blocked")  # an action that took a file away or stopped it loading
_DEFENDER_ACTIONS = {1: "cleaned", 2: "quarantined", 3: "removed", 6: "allowed", 8: "detected", 9: "detected",
                     10: "blocked"}  # "Action ID" as Defender's documentation lists it; "Action Name" is translated
_DEFENDER_NAMED = {"clean": "cleaned", "quarantine": "quarantined", "remove": "removed", "allow": "allowed",
                   "block": "blocked"}
_EVENT_ID = re.compile(r"<EventID[^>]*>\s*(\d{1,5})\s*<")
_RECORD_START = re.compile(r"<Event[\s>]")
_MARKUP_DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)  # Windows renders neither
_SYSTEM_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)")
_DRIVE = re.compile(r"^[a-z]:\\")
_VOLUME = re.compile(r"^\\device\\[^\\]+")


@dataclass(frozen=True)
class LogSource:
    kind: str
    channel: str
    file: str  # its name under Windows\System32\winevt\Logs
    ids: tuple[int, ...]


DEFENDER_LOG = LogSource(DEFENDER, "Microsoft-Windows-Windows Defender/Operational",
                         "Microsoft-Windows-Windows Defender%4Operational.evtx",
                         (1006, 1007, 1008, 1116, 1117, 1118, 1119))
CODE_INTEGRITY_LOG = LogSource(CODE_INTEGRITY, "Microsoft-Windows-CodeIntegrity/Operational",
                               "Microsoft-Windows-CodeIntegrity%4Operational.evtx", (3033, 3034, 3076, 3077, 3089))
LOGS = (DEFENDER_LOG, CODE_INTEGRITY_LOG)


@dataclass(frozen=True)
class SecurityEvent:
    kind: str  # DEFENDER or CODE_INTEGRITY
    event_id: int
    time: datetime  # UTC
    action: str  # quarantined, removed, cleaned, blocked, allowed, detected, audited, failed
    name: Optional[str]  # the threat's name (Defender) or the policy's (Code Integrity)
    paths: tuple[str, ...]  # the files it names, as it names them (a drive letter, or \Device\HarddiskVolumeN)
    detection: Optional[str] = None  # Defender's Detection ID: a detection and the action taken on it share it

    @property
    def takes(self) -> bool:
        return self.action in TAKES


@dataclass
class SecurityLog:
    events: list[SecurityEvent] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (the log's channel, DAMAGED / NEEDS_ADMIN / ...)

    def naming(self, windows_path: str) -> list[SecurityEvent]:
        """The events that name this file, newest first."""
        key = path_key(windows_path)
        return sorted((e for e in self.events if key in {path_key(p) for p in e.paths}), key=lambda e: e.time,
                      reverse=True)

    def taken_with(self, event: SecurityEvent) -> list[str]:
        """Every file the same detection named (its action's record too), in their order."""
        same = [e for e in self.events if e is event or event.detection and e.detection == event.detection]
        return list(dict.fromkeys(p for e in same for p in e.paths))


def path_key(path: str) -> str:
    """A file's path without its drive or volume, lower case: Code Integrity names \\Device\\HarddiskVolume3\\...
    where Defender and this app name C:\\..."""
    text = path.strip().replace("/", "\\").lower()
    text = text[4:] if text.startswith("\\\\?\\") else text
    if _DRIVE.match(text):
        return text[2:]
    return _VOLUME.sub("", text)


def months() -> int:
    """The setting TDD_SECURITY_LOG_MONTHS, within 1 to 24; DEFAULT_MONTHS when unset or not a number."""
    try:
        return min(24, max(1, int(os.environ.get(MONTHS_SETTING, DEFAULT_MONTHS))))
    except ValueError:
        return DEFAULT_MONTHS


# -- the event XML, as Windows renders it ---------------------------------------------------------------------------
class _Refused(Exception):
    pass


class _EventReader:
    """expat's handlers, keeping of each <Event> what a SecurityEvent needs; a DTD or an entity is refused."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.event: Optional[SecurityEvent] = None
        self._event: Optional[dict] = None
        self._field: Optional[str] = None
        self._text: list[str] = []

    def start(self, name: str, attrs: dict) -> None:
        local = name.rpartition(" ")[2]
        if local == "Event":
            self._event = {"data": {}}
        elif self._event is None:
            return
        elif local == "TimeCreated":
            self._event["time"] = attrs.get("SystemTime")
        elif local in ("EventID", "EventRecordID") or local == "Data" and len(self._event["data"]) < MAX_DATA:
            self._field = f"data:{attrs.get('Name', '')}" if local == "Data" else local
            self._text = []

    def text(self, data: str) -> None:
        if self._field is not None and sum(map(len, self._text)) < MAX_VALUE:
            self._text.append(data)

    def end(self, name: str) -> None:
        local = name.rpartition(" ")[2]
        if self._event is None:
            return
        if local == "Event":
            self.event = self.event or _security_event(self.kind, self._event)
            self._event = None
        elif self._field is not None and local in ("EventID", "EventRecordID", "Data"):
            value = "".join(self._text)[:MAX_VALUE].strip()
            if self._field.startswith("data:"):
                self._event["data"][_plain_name(self._field[5:])] = value
            else:
                self._event[self._field] = value
            self._field = None

    @staticmethod
    def refuse(*_args: object) -> None:
        raise _Refused("a DTD or an entity: Windows renders neither")


def parse_rendered(text: str, kind: str, since: datetime) -> tuple[list[SecurityEvent], Optional[str]]:
    """The events of the rendered event XML `text` (one <Event> or many, with or without a root element, as
    wevtutil writes them) with the log's event IDs, at most MAX_EVENTS of them, and a note: DAMAGED (the other
    records are kept), HOSTILE (nothing is read), TOO_LARGE (a record past MAX_RECORD is passed over), or None."""
    if "<!" in text and _MARKUP_DECLARATION.search(text):
        return [], HOSTILE
    wanted = next(source.ids for source in LOGS if source.kind == kind)
    events: list[SecurityEvent] = []
    note, seen = None, 0
    for start, end in _records(text):
        if end < 0:
            note = note or DAMAGED  # cut short: the records before it are kept
            break
        found = _EVENT_ID.search(text, start, min(end, start + 4096))
        if found is None or int(found.group(1)) not in wanted:
            continue  # most of a log: a look at its EventID spares it the parse
        seen += 1
        if seen > MAX_EVENTS:
            break
        if end - start > MAX_RECORD:
            note = note or TOO_LARGE
            continue
        event, damage = _parse_one(text[start:end], kind)
        note = note or damage
        if event is not None and event.time >= since:
            events.append(event)
    return events, note


def _records(text: str) -> Iterator[tuple[int, int]]:
    """Where each <Event>...</Event> starts and ends; the end -1 for one that is cut short."""
    position = 0
    while True:
        match = _RECORD_START.search(text, position)
        if match is None:
            return
        end = text.find("</Event>", match.start())
        yield match.start(), end + len("</Event>") if end >= 0 else -1
        if end < 0:
            return
        position = end


def _parse_one(record: str, kind: str) -> tuple[Optional[SecurityEvent], Optional[str]]:
    """One <Event>, through expat with a DTD and entities refused."""
    reader = _EventReader(kind)
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.StartDoctypeDeclHandler = parser.EntityDeclHandler = reader.refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler, parser.EndElementHandler = reader.start, reader.end
    parser.CharacterDataHandler = reader.text
    try:
        parser.Parse(record, True)
    except _Refused:
        return None, HOSTILE
    except expat.ExpatError:
        return None, DAMAGED
    return reader.event, None


def _plain_name(name: str) -> str:
    """A Data element's name without spaces, lower case: "File Name" and "FileName", "Policy Name" and
    "PolicyName" are one field (the schema's manifests spell them both ways)."""
    return name.replace(" ", "").lower()


def _security_event(kind: str, raw: dict) -> Optional[SecurityEvent]:
    try:
        event_id = int(raw.get("EventID") or "")
    except ValueError:
        return None
    time = _utc(raw.get("time"))
    data = raw["data"]
    action = _action(kind, event_id, data)
    if time is None or action is None:
        return None
    if kind == DEFENDER:
        paths = _defender_paths(data.get("path", ""))
        name = data.get("threatname") or data.get("name")
        detection = data.get("detectionid") or None
    else:
        paths = tuple(p for p in (data.get("filename"),) if p)
        name, detection = data.get("policyname") or data.get("policyid"), None
    return SecurityEvent(kind, event_id, time, action, name or None, paths, detection) if paths else None


def _action(kind: str, event_id: int, data: dict) -> Optional[str]:
    if kind == CODE_INTEGRITY:
        return {3033: "blocked", 3077: "blocked", 3034: "audited", 3076: "audited"}.get(event_id)
    if event_id in (1116, 1006):
        return "detected"
    if event_id in (1008, 1118, 1119):
        return "failed"
    if event_id not in (1117, 1007):
        return None
    try:
        return _DEFENDER_ACTIONS.get(int(data.get("actionid", "")), "detected")
    except ValueError:
        named = (data.get("actionname") or data.get("action") or "").strip().lower()
        return _DEFENDER_NAMED.get(named, "detected")


def _defender_paths(value: str) -> tuple[str, ...]:
    """Defender's "Path": resources separated by ";", each `file:_C:\\...` (or `containerfile:_`, an archive's
    member after "->"); processes, registry keys and the like name no file."""
    paths = []
    for resource in value.split(";"):
        kind, sep, rest = resource.strip().partition(":_")
        if sep and kind.lower() in ("file", "containerfile") and rest:
            paths.append(rest.split("->", 1)[0].strip())
    return tuple(dict.fromkeys(paths))


def _utc(text: Optional[str]) -> Optional[datetime]:
    match = _SYSTEM_TIME.match(text or "")
    if match is None:
        return None
    try:
        return datetime(*map(int, match.groups()), tzinfo=timezone.utc)
    except ValueError:
        return None


# -- where the logs are read ----------------------------------------------------------------------------------------
_READ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # System -> SecurityLog: read once per computer
_READ_LOCK = threading.Lock()


def security_log(system: System) -> SecurityLog:
    """Both logs of this computer, read once per System (a diagnosis's environments share it)."""
    with _READ_LOCK:
        log = _READ.get(system)
        if log is None:
            log = _READ[system] = read_logs(system, datetime.now(timezone.utc) - timedelta(days=30.44 * months()))
        return log


def read_logs(system: System, since: datetime) -> SecurityLog:
    log = SecurityLog()
    for source in LOGS:
        events, note = _read_one(system, source, since)
        log.events += events[:MAX_EVENTS]
        if note is not None:
            log.notes.append((source.channel, note))
    return log


def _read_one(system: System, source: LogSource, since: datetime) -> tuple[list[SecurityEvent], Optional[str]]:
    try:
        return _read_live(system, source, since)
    except NotAvailable:
        pass
    logs = descend(system.system32, "winevt", "Logs")
    evtx = descend(logs, source.file)
    if evtx is not None:
        return read_evtx(evtx, source.kind, since)
    export = descend(logs, source.file[: -len(".evtx")] + ".xml")
    if export is not None:
        return read_export(export, source.kind, since)
    return [], None  # no such log on this drive: nothing recorded, nothing said


def _read_live(system: System, source: LogSource, since: datetime) -> tuple[list[SecurityEvent], Optional[str]]:
    age_ms = max(0, int((datetime.now(timezone.utc) - since).total_seconds() * 1000))
    ids = " or ".join(f"EventID={i}" for i in source.ids)
    xpath = f"*[System[({ids}) and TimeCreated[timediff(@SystemTime) <= {age_ms}]]]"
    try:
        result = system.query_event_log(source.channel, xpath, MAX_EVENTS, QUERY_TIMEOUT_S)
    except (OSError, TimeoutError):
        return [], UNREADABLE
    if result.returncode == 5 or "access is denied" in (result.stderr or "").lower():
        return [], NEEDS_ADMIN  # ERROR_ACCESS_DENIED: the channel's readers exclude this user
    if result.returncode != 0:
        no_channel = result.returncode == 15007  # ERROR_EVT_CHANNEL_NOT_FOUND: Defender is not installed
        return [], None if no_channel else UNREADABLE
    text = result.stdout or ""
    events, note = parse_rendered(text[:READ_BYTES], source.kind, since)
    return events, TOO_LARGE if len(text) > READ_BYTES else note


def read_export(path: Path, kind: str, since: datetime) -> tuple[list[SecurityEvent], Optional[str]]:
    """A rendered export (`wevtutil qe CHANNEL /f:xml`, newest first with /rd:true): its first READ_BYTES."""
    try:
        with path.open("rb") as handle:
            data = handle.read(READ_BYTES + 1)
    except OSError:
        return [], UNREADABLE
    text = data[:READ_BYTES].decode("utf-8-sig", errors="replace")
    events, note = parse_rendered(text, kind, since)
    return events, TOO_LARGE if len(data) > READ_BYTES else note


def read_evtx(path: Path, kind: str, since: datetime) -> tuple[list[SecurityEvent], Optional[str]]:
    """An .evtx file's events of the log `kind`, newest first: each wanted record's XML through `parse_rendered`."""
    wanted = next(source.ids for source in LOGS if source.kind == kind)
    records, note = evtx_records(path, frozenset(wanted), since)
    events: list[SecurityEvent] = []
    for xml in records:
        found, damage = parse_rendered(xml, kind, since)
        events += found
        note = note or damage
    events.sort(key=lambda e: e.time, reverse=True)
    return events, note


def evtx_records(path: Path, wanted: frozenset[int], since: Optional[datetime] = None) -> tuple[
        list[str], Optional[str]]:
    """The XML of the records with these event IDs, as pyevtx-rs renders them, chunk by chunk from the newest: at
    most READ_BYTES of chunks, MAX_RENDERED records, MAX_EVENTS found, none of a chunk written before `since`; a
    note: DAMAGED, TOO_LARGE (more than that was there), UNREADABLE, NO_READER, or None."""
    try:
        import evtx  # pyevtx-rs: the one dependency that reads Windows' binary XML (docs/architecture.md)
    except ImportError:
        return [], NO_READER
    try:
        header, chunks, note = newest_chunks(path)
    except OSError:
        return [], UNREADABLE
    found: list[str] = []
    rendered = 0
    for chunk in chunks:
        if since is not None and _written(chunk) < since or len(found) >= MAX_EVENTS:
            break
        if rendered >= MAX_RENDERED:
            note = note or TOO_LARGE
            break
        records = iter(evtx.PyEvtxParser(io.BytesIO(header + chunk), number_of_threads=1).records())
        for _ in range(MAX_DAMAGED):  # a damaged record raises; the records after it still come
            try:
                for record in records:
                    rendered += 1
                    xml = record.get("data")
                    if len(xml) > MAX_RECORD:
                        note = note or TOO_LARGE
                    elif _event_id(xml) in wanted:  # the cheap look spares most records the parse
                        found.append(xml)
                break
            except (RuntimeError, ValueError, OSError, TypeError, AttributeError):
                note = note or DAMAGED
    return found[:MAX_EVENTS], note


def _event_id(xml: str) -> Optional[int]:
    """The EventID of one record's XML, from its first <EventID ...>NNN<, without a parse."""
    start = xml.find("<EventID")
    opened = xml.find(">", start, start + 200) if start >= 0 else -1
    closed = xml.find("<", opened) if opened >= 0 else -1
    text = xml[opened + 1:closed].strip() if 0 <= closed - opened <= 12 else ""
    return int(text) if text.isdigit() else None


def _written(chunk: bytes) -> datetime:
    """When the newest record of a chunk was written: its header's FILETIME (the chunk's last record's)."""
    last = struct.unpack_from("<I", chunk, 44)[0]
    if not 512 <= last <= EVTX_CHUNK - 24 or chunk[last:last + 4] != b"**\0\0":
        return datetime.max.replace(tzinfo=timezone.utc)  # unknown: the chunk is read
    ticks = struct.unpack_from("<Q", chunk, last + 16)[0]
    try:
        return datetime(1601, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ticks // 10)
    except OverflowError:
        return datetime.max.replace(tzinfo=timezone.utc)


def newest_chunks(path: Path) -> tuple[bytes, list[bytes], Optional[str]]:
    """The file's header, made the header of a one-chunk log, and its newest chunks (by the last record number each
    holds), newest first, at most READ_BYTES of them; no chunks and DAMAGED for a file that is not an event log."""
    with path.open("rb") as handle:
        header = bytearray(handle.read(EVTX_HEADER))
        if len(header) < EVTX_HEADER or not header.startswith(b"ElfFile\0"):
            return b"", [], DAMAGED
        count = (os.fstat(handle.fileno()).st_size - EVTX_HEADER) // EVTX_CHUNK
        numbered = []
        for index in range(count):
            handle.seek(EVTX_HEADER + index * EVTX_CHUNK)
            head = handle.read(24)
            if head.startswith(b"ElfChnk\0"):  # a chunk never used is zeros; another is damaged and passed over
                numbered.append((struct.unpack_from("<Q", head, 16)[0], index))
        chunks = []
        for _, index in sorted(numbered, reverse=True)[:READ_BYTES // EVTX_CHUNK]:
            handle.seek(EVTX_HEADER + index * EVTX_CHUNK)
            chunks.append(handle.read(EVTX_CHUNK))
    struct.pack_into("<QQ", header, 8, 0, 0)  # first and last chunk, then the count at 42
    struct.pack_into("<H", header, 42, 1)
    struct.pack_into("<I", header, 124, zlib.crc32(bytes(header[:120])))
    return bytes(header), chunks, TOO_LARGE if len(numbered) > len(chunks) else None


def evidence_lines(events: Iterable[SecurityEvent]) -> list[dict]:
    """The events as a finding's evidence shows them: date, source, event, action, name, files."""
    return [{"date": e.time.strftime("%Y-%m-%d %H:%M UTC"), "log": e.kind, "event": e.event_id, "action": e.action,
             "name": e.name, "files": list(e.paths)} for e in events]
