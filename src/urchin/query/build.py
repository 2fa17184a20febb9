"""Turning journal bytes into index rows: the hot loop of building ``index.db``.

Building reads the journal in large pieces (one ``pread`` per chunk, split on
newlines in C) rather than line by line, and decodes each line with
``json.loads`` alone when it has the shape every urchin writer produces; only a
line that does not is handed to :meth:`Event.from_json`, the one judge of what
a valid event is. The fast path therefore only ever *accepts*: every line it
accepts, ``Event.from_json`` accepts too, with the same field values, and every
other line gets the full check. The counts (events, malformed, oversized, torn
tail) are exactly those of :class:`urchin.journal.JournalScan`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from urchin.errors import MalformedEventError
from urchin.event import Event, EventKind, parse_timestamp
from urchin.journal import MAX_LINE_BYTES
from urchin.query.plans import SEP, key_bytes

__all__ = ["Fields", "Region", "RowWriter", "event_fields", "fold", "micros", "read_region"]

#: (ts in microseconds, source, workspace, content, title, tags)
Fields = tuple[int, str, str | None, str, str | None, Sequence[str]]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_CANONICAL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_KIND_NAMES = frozenset(kind.value for kind in EventKind)
_OPTIONAL = ("brain", "workspace", "session", "title")
_SEEK_STEP = 1024 * 1024
_BATCH = 5_000  # lines per executemany
# Stored in place of what SQLite text cannot hold faithfully.
_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def fold(text: str) -> str:
    """Lower-case as the linear search does, then make it storable as SQLite text."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.replace("\x00", SEP) if "\x00" in lowered else lowered
    return _UNSAFE.sub(SEP, lowered)


def _plain_actor(actor: Any) -> bool:
    if type(actor) is not dict:
        return False
    if type(actor.get("account")) is not str or type(actor.get("device")) is not str:
        return False
    workspace, node = actor.get("workspace"), actor.get("node_id")
    return (workspace is None or type(workspace) is str) and (node is None or type(node) is str)


def event_fields(line: bytes) -> Fields:
    """What the index needs of one journal line (without its newline).

    Raises:
        MalformedEventError: the line is not a valid event (as ``Event.from_line`` says).
    """
    try:
        obj: Any = json.loads(line)
    except ValueError:  # UnicodeDecodeError included, as in Event.from_line
        raise MalformedEventError("line is not valid JSON") from None
    if type(obj) is dict:
        raw_id, kind, stamp = obj.get("id"), obj.get("kind"), obj.get("timestamp")
        source, content, tags = obj.get("source"), obj.get("content"), obj.get("tags")
        actor, meta = obj.get("actor"), obj.get("meta")
        if (
            type(raw_id) is str
            and len(raw_id) == 36
            and _CANONICAL_ID.fullmatch(raw_id)
            and type(kind) is str
            and kind in _KIND_NAMES
            and type(stamp) is str
            and type(source) is str
            and type(content) is str
            and all(obj.get(name) is None or type(obj.get(name)) is str for name in _OPTIONAL)
            and (tags is None or (type(tags) is list and all(type(t) is str for t in tags)))
            and (actor is None or _plain_actor(actor))
            and (meta is None or type(meta) is dict)
        ):
            # parse_timestamp is Event.from_json's own check: it raises where that would.
            moment = parse_timestamp(stamp)
            return (
                micros(moment),
                source,
                obj.get("workspace"),
                content,
                obj.get("title"),
                tags or (),
            )
    event = Event.from_json(obj)
    return (
        micros(event.timestamp),
        event.source,
        event.workspace,
        event.content,
        event.title,
        event.tags,
    )


@dataclass(slots=True)
class Region:
    """The whole lines of one piece of the journal, and what was skipped or left."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, line w/o newline)
    end: int = 0  # where the next piece starts: just after the last whole line
    oversized: int = 0
    torn: bool = False  # the file ends in an unterminated line
    exhausted: bool = False  # nothing more to read now


def read_region(fd: int, start: int, budget: int) -> Region:
    """The whole lines from ``start`` within about ``budget`` bytes (at least one line).

    Raises:
        OSError: the journal cannot be read.
    """
    buffer = os.pread(fd, budget, start)
    region = Region(end=start)
    cut = buffer.rfind(b"\n")
    if cut < 0:
        if len(buffer) < budget:
            region.torn, region.exhausted = bool(buffer), True
            return region
        return _long_line(fd, start, region)
    offset = start
    lines = region.lines
    for line in buffer[:cut].split(b"\n"):
        size = len(line) + 1
        if size > MAX_LINE_BYTES:
            region.oversized += 1
        elif line and not line.isspace():
            lines.append((offset, line))
        offset += size
    region.end = offset
    if len(buffer) < budget:
        region.exhausted = True
        region.torn = cut != len(buffer) - 1
    return region


def _long_line(fd: int, start: int, region: Region) -> Region:
    """One line longer than the budget: read it whole, or count it as oversized."""
    at = start
    while True:
        piece = os.pread(fd, _SEEK_STEP, at)
        if not piece:
            region.torn, region.exhausted = True, True
            return region
        newline = piece.find(b"\n")
        if newline >= 0:
            break
        at += len(piece)
    size = at + newline + 1 - start
    region.end = start + size
    if size > MAX_LINE_BYTES:
        region.oversized = 1
        return region
    line = os.pread(fd, size - 1, start)
    if not line.isspace():
        region.lines.append((start, line))
    return region


class RowWriter:
    """Rows for the lines of one chunk, written in batches (inside its transaction)."""

    def __init__(self, conn: sqlite3.Connection, seq: int, peak: int | None) -> None:
        """Rows continue after ``seq``; ``peak`` is the largest ts indexed so far."""
        self.conn = conn
        self.seq, self.peak, self.malformed = seq, peak, 0
        self.sources = self._known("sources")
        self.workspaces = self._known("workspaces")
        self.events: list[tuple[object, ...]] = []
        self.texts: list[tuple[int, str]] = []
        self.fts: list[tuple[int, str, str | None, str | None]] = []

    def _known(self, table: str) -> dict[str, int]:
        # The table name is one of two constants.
        rows = self.conn.execute(f"SELECT id, name FROM {table}")  # noqa: S608
        return {name.decode("utf-8", "surrogatepass"): wid for wid, name in rows}

    def _id(self, table: str, known: dict[str, int], name: str) -> int:
        found = known.get(name)
        if found is None:
            cursor = self.conn.execute(
                f"INSERT INTO {table} (name) VALUES (?)",  # noqa: S608
                (key_bytes(name),),
            )
            found = known[name] = int(cursor.lastrowid or 0)
        return found

    def add(self, offset: int, line: bytes) -> None:
        """Index the line at ``offset`` (without its newline), or count it as malformed."""
        try:
            ts, source, workspace, content, title, tags = event_fields(line)
        except MalformedEventError:
            self.malformed += 1
            return
        self.seq += 1
        seq, peak = self.seq, self.peak
        self.peak = peak = ts if peak is None or ts > peak else peak
        source_key = self._id("sources", self.sources, source)
        place = None if workspace is None else self._id("workspaces", self.workspaces, workspace)
        self.events.append((seq, offset, len(line) + 1, ts, peak - ts, source_key, place))
        body = fold(content)
        folded_title = None if title is None else fold(title)
        folded_tags = SEP.join([fold(tag) for tag in tags]) if tags else None
        self.fts.append((seq, body, folded_title, folded_tags))
        if folded_title is not None or folded_tags is not None:
            body = SEP.join((body, folded_title or "", folded_tags or ""))
        self.texts.append((seq, body))
        if len(self.events) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the rows held so far.

        Raises:
            sqlite3.IntegrityError: a row exists already (a damaged index).
        """
        if not self.events:
            return
        conn = self.conn
        # A row that already exists means a damaged index: the IntegrityError says so.
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", self.events)
        conn.executemany("INSERT INTO texts VALUES (?, ?)", self.texts)
        conn.executemany(
            "INSERT INTO events_text (rowid, content, title, tags) VALUES (?, ?, ?, ?)", self.fts
        )
        self.events, self.texts, self.fts = [], [], []
