"""How a query runs against the index: SQL filters, and the plans of a text search.

Kept apart from ``index.py``, which owns the file (schema, catching up with the
journal, connections); this module only reads a snapshot it is handed, plus the
journal lines that snapshot points at.

The tables it reads (see ``index.py`` for how they are written):

- ``events``: one row per valid line, ``seq`` 1, 2, 3… in file order, the line's
  ``byte_offset`` and ``length`` in the journal, ``ts`` (microseconds since the
  epoch), ``lag`` (how far ``ts`` lies below the largest ``ts`` of this line and
  every earlier one), and ``source``/``workspace`` as ids into ``sources`` and
  ``workspaces``, which hold each distinct value once.
- ``texts``: the searched text of each row, lower-cased: content, title and the
  tags, joined by U+FFFD.
- ``events_text``: a contentless FTS5 trigram index (``detail=none``) of the same
  three fields. It only says which rows hold every trigram of a needle; the
  ``instr`` test on ``texts`` then makes the answer exact.
"""

from __future__ import annotations

import heapq
import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from urchin.errors import MalformedEventError
from urchin.event import Event
from urchin.query.filters import text_matches

__all__ = [
    "SEP",
    "VARIABLES",
    "IndexState",
    "JournalChangedError",
    "Lines",
    "Query",
    "Rows",
    "Search",
    "fetch_events",
    "fts_terms",
    "key_bytes",
    "scalar",
    "source_id",
    "window_seq",
    "workspace_ids",
]

# The index's logger: one name for everything the index reports.
log = logging.getLogger("urchin.query.index")

VARIABLES = 500  # values per IN (...) list: SQLite caps bound variables per statement
SEP = "\ufffd"

Rows = list[tuple[int, int, int]]  # (seq, ts, peak)
Query = tuple[str, list[object]]  # SQL and its parameters


class JournalChangedError(Exception):
    """The journal file was swapped while a step read it; the step is rolled back."""


class Lines(Protocol):
    """Reads journal lines by position (the snapshot's own journal file)."""

    def read(self, offset: int, length: int) -> bytes:
        """The ``length`` bytes at ``offset``, which end in a newline.

        Raises:
            MalformedEventError: the bytes there are not a whole line.
        """
        ...


@dataclass(frozen=True, slots=True)
class IndexState:
    """The ``state`` row: which file is indexed, up to which byte, with what totals."""

    dev: int | None
    ino: int | None
    offset: int
    head_len: int
    head_hash: str
    events: int
    malformed: int
    oversized: int
    peak_ts: int | None


def key_bytes(text: str) -> bytes:
    # surrogatepass encodes each code point on its own: string prefixes stay byte prefixes.
    return text.encode("utf-8", "surrogatepass")


def scalar(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def source_id(conn: sqlite3.Connection, source: str) -> int | None:
    """The id of ``source``, or None when no event has it."""
    row = conn.execute("SELECT id FROM sources WHERE name = ?", (key_bytes(source),)).fetchone()
    return None if row is None else int(row[0])


def workspace_ids(conn: sqlite3.Connection, prefix: str) -> list[int]:
    """Ids of the workspaces that start with ``prefix`` (exact case)."""
    low = key_bytes(prefix)
    # UTF-8 never holds 0xFF, so [prefix, prefix + FF) is exactly "starts with prefix".
    rows = conn.execute(
        "SELECT id FROM workspaces WHERE name >= ? AND name < ?", (low, low + b"\xff")
    )
    return [wid for (wid,) in rows]


def window_seq(conn: sqlite3.Connection, state: IndexState, since: int | None) -> int:
    """The first ``seq`` whose line could be inside a window starting at ``since``.

    ``ts + lag`` (the running maximum) only grows along the file, so a binary
    search finds where the window starts.
    """
    if since is None or state.events == 0:
        return 1
    low, high = 1, state.events + 1
    while low < high:
        middle = (low + high) // 2
        (peak,) = conn.execute("SELECT ts + lag FROM events WHERE seq = ?", (middle,)).fetchone()
        if peak >= since:
            high = middle
        else:
            low = middle + 1
    return low


def fts_terms(needle: str, most: int = 6) -> str:
    """An FTS5 query for rows holding the rarest-looking trigrams of ``needle`` (3+ chars).

    Every matching row holds every trigram of the needle, so any subset of them
    finds a superset of the matches; the ``instr`` check makes it exact.
    """
    grams = list(dict.fromkeys(needle[i : i + 3] for i in range(len(needle) - 2)))
    if len(grams) > most:
        # Trigrams of common letters and spaces select least: keep the others.
        grams.sort(key=lambda gram: sum(char in _COMMON for char in gram))
        grams = grams[:most]
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


_COMMON = frozenset("etaoinshrdlcu ")


def fetch_events(conn: sqlite3.Connection, lines: Lines, seqs: Sequence[int]) -> list[Event]:
    """The events of rows ``seqs``, in that order, read back from the journal.

    Raises:
        MalformedEventError: a line is not where the index says it is.
    """
    where: dict[int, tuple[int, int]] = {}
    for first in range(0, len(seqs), VARIABLES):
        part = seqs[first : first + VARIABLES]
        marks = ", ".join("?" * len(part))
        sql = f"SELECT seq, byte_offset, length FROM events WHERE seq IN ({marks})"  # noqa: S608
        where.update((seq, (offset, length)) for seq, offset, length in conn.execute(sql, part))
    return [Event.from_line(lines.read(*where[seq])) for seq in seqs]


class Search:
    """How one text search runs against a read snapshot of the index.

    A match is a row whose text holds the needle, or whose workspace does. The
    workspaces are few: they are checked in Python, once each, and their rows
    read from the ``workspace`` column. The text is searched in SQL:

    - needles of three characters or more: the rows FTS5 finds for the needle's
      trigrams, then ``instr`` on their text (for exactly three characters the
      trigram alone is exact, and ``instr`` is skipped);
    - shorter needles have no trigram: ``instr`` over every row's text;
    - needles holding U+FFFD may match across fields or replaced characters, so
      their candidates are decoded from the journal and checked in Python.

    At most ``FEW`` matches are read in one pass and counted in Python; more are
    walked newest line first until the top ``limit`` is settled, then counted in
    SQL. A time window starts at a known place in the file, so every query skips
    the lines before it. The SQL is assembled from constant fragments; every value
    is a bound parameter.
    """

    FEW = 2_000

    def __init__(
        self, needle: str, lowered: str, source: str | None, since: int | None, limit: int
    ) -> None:
        self.needle, self.lowered, self.source, self.since, self.limit = (
            needle,
            lowered,
            source,
            since,
            limit,
        )
        self.first = 1  # the first row inside the time window
        self.and_source = ""
        self.source_params: list[object] = []
        self.not_workspaces = ""
        self.workspaces = "[]"  # JSON list of the matching workspace ids

    def run(
        self, conn: sqlite3.Connection, state: IndexState, lines: Lines
    ) -> tuple[list[Event], int]:
        if self.source is not None:
            found = source_id(conn, self.source)
            if found is None:
                return [], 0
            self.and_source, self.source_params = "AND e.source = ?", [found]
        self.first = window_seq(conn, state, self.since)
        matching = [
            wid
            for wid, name in conn.execute("SELECT id, name FROM workspaces")
            if self.lowered in name.decode("utf-8", "surrogatepass").lower()
        ]
        if matching:
            self.workspaces = json.dumps(matching)
            # Rows of a matching workspace come from the workspace stream only.
            self.not_workspaces = (
                "AND (e.workspace IS NULL OR e.workspace NOT IN (SELECT value FROM json_each(?)))"
            )
        if SEP in self.needle:
            return self._verified(conn, lines)
        if self.FEW > 0:
            few = list(_take(self._stream(conn, reverse=False), self.FEW + 1))
            if len(few) <= self.FEW:
                few.sort(reverse=True)
                walk = _Walk(self.limit, self.since)
                events = fetch_events(conn, lines, walk.newest(few, exhaustive=True))
                return self._checked(events), walk.seen
        walk = _Walk(self.limit, self.since)
        events = fetch_events(conn, lines, walk.newest(self._stream(conn, reverse=True)))
        events = self._checked(events)
        return events, walk.seen if walk.complete else self._count(conn)

    # -- the two streams of matching rows, merged -----------------------------------------

    def _text(self, *, reverse: bool, total: bool = False) -> Query:
        """Rows whose text holds the needle (none of a matching workspace)."""
        order = "DESC" if reverse else ""
        params: list[object] = []
        # A count with no filter on the row needs no look at ``events``.
        rows = (
            not total or bool(self.source_params or self.not_workspaces) or self.since is not None
        )
        if len(self.needle) >= 3:
            what = "count(*)" if total else "f.rowid, e.ts, e.ts + e.lag"
            exact = len(self.needle) == 3
            texts = "" if exact else " CROSS JOIN texts t ON t.seq = f.rowid"
            events = " CROSS JOIN events e ON e.seq = f.rowid" if rows else ""
            sql = (
                f"SELECT {what} FROM events_text f{texts}{events}"  # noqa: S608
                " WHERE events_text MATCH ? AND f.rowid >= ?"
            )
            params += [fts_terms(self.needle), self.first]
            if not exact:
                sql += " AND instr(t.body, ?) > 0"
                params.append(self.needle)
            key = "f.rowid"
        else:
            what = "count(*)" if total else "t.seq, e.ts, e.ts + e.lag"
            events = " CROSS JOIN events e ON e.seq = t.seq" if rows else ""
            sql = (
                f"SELECT {what} FROM texts t{events}"  # noqa: S608
                " WHERE t.seq >= ? AND instr(t.body, ?) > 0"
            )
            params += [self.first, self.needle]
            key = "t.seq"
        sql += f" {self.and_source}"
        params += self.source_params
        if self.not_workspaces:
            sql += f" {self.not_workspaces}"
            params.append(self.workspaces)
        if total:
            if self.since is not None:
                sql += " AND e.ts >= ?"
                params.append(self.since)
        else:
            sql += f" ORDER BY {key} {order}"
        return sql, params

    def _workspace(self, *, reverse: bool, total: bool = False) -> Query:
        what = "count(*)" if total else "e.seq, e.ts, e.ts + e.lag"
        sql = (
            f"SELECT {what} FROM events e"  # noqa: S608
            " WHERE e.workspace IN (SELECT value FROM json_each(?)) AND e.seq >= ?"
            f" {self.and_source}"
        )
        params: list[object] = [self.workspaces, self.first, *self.source_params]
        if total:
            if self.since is not None:
                sql += " AND e.ts >= ?"
                params.append(self.since)
        else:
            sql += f" ORDER BY e.seq {'DESC' if reverse else ''}"
        return sql, params

    def _stream(self, conn: sqlite3.Connection, *, reverse: bool) -> Iterator[tuple[int, int, int]]:
        text = conn.execute(*self._text(reverse=reverse))
        if not self.not_workspaces:
            return iter(text)
        ours = conn.execute(*self._workspace(reverse=reverse))
        # The streams are disjoint (the text stream leaves matching workspaces out).
        return heapq.merge(text, ours, key=lambda row: row[0], reverse=reverse)

    def _count(self, conn: sqlite3.Connection) -> int:
        total = scalar(conn, *self._text(reverse=False, total=True))
        if self.not_workspaces:
            total += scalar(conn, *self._workspace(reverse=False, total=True))
        return total

    # -- checks ---------------------------------------------------------------------------

    def _checked(self, events: list[Event]) -> list[Event]:
        """The events, once each is confirmed to match (a cheap guard against a bad index).

        Raises:
            MalformedEventError: one does not, so the index does not describe the journal.
        """
        if all(text_matches(event, self.lowered) for event in events):
            return events
        raise MalformedEventError("the index returned a row that does not match")

    def _verified(self, conn: sqlite3.Connection, lines: Lines) -> tuple[list[Event], int]:
        """Every candidate decoded and checked in Python: for needles holding U+FFFD."""
        candidates = list(self._stream(conn, reverse=True))
        events = fetch_events(conn, lines, [seq for seq, _, _ in candidates])
        matched: Rows = []
        by_seq: dict[int, Event] = {}
        for (seq, ts, peak), event in zip(candidates, events, strict=True):
            if (self.since is None or ts >= self.since) and text_matches(event, self.lowered):
                matched.append((seq, ts, peak))
                by_seq[seq] = event
        top = _Walk(self.limit, None).newest(matched)
        return [by_seq[seq] for seq in top], len(matched)


def _take(rows: Iterable[tuple[int, int, int]], most: int) -> Iterator[tuple[int, int, int]]:
    for n, row in enumerate(rows):
        if n >= most:
            return
        yield row


class _Walk:
    """Picks the ``limit`` newest of rows given in descending ``seq`` order.

    A row's peak bounds the ts of every row at or before it, so once that bound
    cannot beat the weakest row kept (an equal ts loses: it is earlier in the
    file) or falls before ``since``, no later row can qualify.
    """

    def __init__(self, limit: int, since: int | None) -> None:
        self.limit, self.since = limit, since
        self.seen = 0  # rows inside the window
        self.complete = True  # whether ``seen`` counts all of them

    def newest(
        self, rows: Iterable[tuple[int, int, int]], *, exhaustive: bool = False
    ) -> list[int]:
        """Seqs of the newest rows, newest first. ``exhaustive`` reads every row."""
        limit, since = self.limit, self.since
        if limit <= 0 and not exhaustive:
            self.complete = False
            return []
        kept: list[tuple[int, int]] = []  # min-heap of (ts, seq)
        for seq, ts, peak in rows:
            if since is not None and peak < since:
                break  # this row and every earlier one are older than the window
            if not exhaustive and len(kept) == limit and peak <= kept[0][0]:
                self.complete = False
                break
            if since is not None and ts < since:
                continue
            self.seen += 1
            if limit > 0 and len(kept) < limit:
                heapq.heappush(kept, (ts, seq))
            elif limit > 0 and (ts, seq) > kept[0]:
                heapq.heapreplace(kept, (ts, seq))
        return [seq for _, seq in sorted(kept, reverse=True)]
