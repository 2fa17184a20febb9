"""How a query runs against the index: SQL filters, and the plans of a text search.

Kept apart from ``index.py``, which owns the file (schema, catching up with the
journal, connections); this module only reads a snapshot it is handed.
"""

from __future__ import annotations

import heapq
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from urchin.event import Event
from urchin.query import text_matches

__all__ = [
    "SEP",
    "TEXT_COLUMNS",
    "VARIABLES",
    "IndexState",
    "Query",
    "Rows",
    "Search",
    "fetch_events",
    "fts_phrase",
    "key_bytes",
    "scalar",
    "where_filters",
]

log = logging.getLogger("urchin.index")

VARIABLES = 500  # values per IN (...) list: SQLite caps bound variables per statement
SEP = "\ufffd"
TEXT_COLUMNS = ("title", "content", "tags", "workspace_text")


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


def fts_phrase(needle: str) -> str:
    return '"' + needle.replace('"', '""') + '"'


def where_filters(
    source: str | None, since: int | None, prefix: str | None
) -> tuple[str, list[object]]:
    """SQL conditions on ``events e``, each starting with AND, and their values."""
    where: list[str] = []
    params: list[object] = []
    if source is not None:
        where.append("AND e.source = ?")
        params.append(key_bytes(source))
    if since is not None:
        where.append("AND e.ts >= ?")
        params.append(since)
    if prefix:
        # UTF-8 never holds 0xFF, so [prefix, prefix + FF) is exactly "starts with prefix".
        where.append("AND e.workspace >= ? AND e.workspace < ?")
        params.extend([key_bytes(prefix), key_bytes(prefix) + b"\xff"])
    return " ".join(where), params


def fetch_events(conn: sqlite3.Connection, offsets: Sequence[int]) -> list[Event]:
    """The events at ``offsets``, in that order."""
    lines: dict[int, bytes] = {}
    for first in range(0, len(offsets), VARIABLES):
        part = offsets[first : first + VARIABLES]
        marks = ", ".join("?" * len(part))
        sql = f"SELECT byte_offset, line FROM events WHERE byte_offset IN ({marks})"  # noqa: S608
        lines.update(conn.execute(sql, part))
    return [Event.from_line(lines[offset]) for offset in offsets]


def scalar(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


Rows = list[tuple[int, int, int]]  # (byte_offset, ts, peak_ts)


Query = tuple[str, list[object]]  # SQL and its parameters


class Search:
    """How one text search runs against a read snapshot of the index.

    - A needle trigram in at most ``RARE`` rows (probed cheaply, rare-looking
      trigrams first): those rows are the candidates, checked with ``instr`` in SQL.
    - Otherwise the FTS phrase of the whole needle is exact. At most ``FEW``
      matches are read in one pass; more are walked newest line first until the
      top ``limit`` is settled, and then counted by SQL.
    - Needles under three characters have no trigram: ``instr`` over every row.
    - Needles holding U+FFFD may match across tags or replaced characters in SQL,
      so their candidates are decoded and checked in Python.

    A time window starts at a known place in the file (peak_ts only grows), so
    every query skips the lines before it. The SQL is assembled from constant
    fragments; every value is a bound parameter.
    """

    RARE = 4_000
    PROBES = 4
    FEW = 2_000
    _COMMON = frozenset("etaoinshrdlcu ")

    def __init__(
        self, needle: str, lowered: str, source: str | None, since: int | None, limit: int
    ) -> None:
        self.needle, self.lowered, self.since, self.limit = needle, lowered, since, limit
        # Candidates are filtered by source only: the walk applies the time window
        # itself, so that it can stop at the first row older than the window.
        self.and_source, self.source_params = where_filters(source, None, None)
        self.and_every, self.every_params = where_filters(source, since, None)
        self.found = "(" + " OR ".join(f"instr(e.{c}, ?) > 0" for c in TEXT_COLUMNS) + ")"
        self.found_params: list[object] = [needle] * len(TEXT_COLUMNS)
        self.first = 0  # the first journal byte inside the time window

    def run(self, conn: sqlite3.Connection, state: IndexState) -> tuple[list[Event], int]:
        if self.since is not None:
            start = conn.execute(
                "SELECT byte_offset FROM events WHERE peak_ts >= ? ORDER BY peak_ts LIMIT 1",
                [self.since],
            ).fetchone()
            self.first = state.offset if start is None else start[0]
        if SEP in self.needle:
            return self._verified(conn, self._candidates())
        if len(self.needle) < 3:
            return self._walk(conn, self._scan(), self._scan(total=True))
        rare = self._rare_trigram(conn)
        if rare is not None:
            sql, params = self._fts(rare, verify=True)
            return self._all(conn, conn.execute(sql, params).fetchall())
        phrase = fts_phrase(self.needle)
        # Few matches: one pass in the index's own order (cheaper than newest
        # first) finds them all, and their number.
        ids = conn.execute(
            "SELECT rowid FROM events_text WHERE events_text MATCH ? AND rowid >= ? LIMIT ?",
            [phrase, self.first, self.FEW + 1],
        ).fetchall()
        if len(ids) <= self.FEW:
            return self._all(conn, self._rows_at(conn, [offset for (offset,) in ids]))
        return self._walk(conn, self._fts(phrase, order="DESC"), self._fts_total(phrase))

    def _fts(self, match: str, *, verify: bool = False, order: str = "") -> Query:
        sql = (
            "SELECT e.byte_offset, e.ts, e.peak_ts FROM events_text"  # noqa: S608
            " CROSS JOIN events e ON e.byte_offset = events_text.rowid"
            f" WHERE events_text MATCH ? AND events_text.rowid >= ?"
            f" {'AND ' + self.found if verify else ''} {self.and_source}"
        )
        sql += f" ORDER BY events_text.rowid {order}" if order else ""
        verified = self.found_params if verify else []
        return sql, [match, self.first, *verified, *self.source_params]

    def _fts_total(self, match: str) -> Query:
        if not self.and_every:
            sql = "SELECT count(*) FROM events_text WHERE events_text MATCH ? AND rowid >= ?"
            return sql, [match, self.first]
        sql = (
            "SELECT count(*) FROM events_text CROSS JOIN events e"  # noqa: S608
            " ON e.byte_offset = events_text.rowid"
            f" WHERE events_text MATCH ? AND events_text.rowid >= ? {self.and_every}"
        )
        return sql, [match, self.first, *self.every_params]

    def _scan(self, *, total: bool = False) -> Query:
        what = "count(*)" if total else "e.byte_offset, e.ts, e.peak_ts"
        sql = (
            f"SELECT {what} FROM events e WHERE e.byte_offset >= ? AND {self.found}"  # noqa: S608
            f" {self.and_every if total else self.and_source}"
        )
        sql += "" if total else " ORDER BY e.byte_offset DESC"
        filters = self.every_params if total else self.source_params
        return sql, [self.first, *self.found_params, *filters]

    def _candidates(self) -> Query:
        """Every row SQL says may match, newest line first (a superset of the matches)."""
        if len(self.needle) < 3:
            return self._scan()
        return self._fts(fts_phrase(self.needle), order="DESC")

    def _rare_trigram(self, conn: sqlite3.Connection) -> str | None:
        """An FTS phrase for a trigram of the needle in at most ``RARE`` rows, if the
        probes find one."""
        grams = dict.fromkeys(self.needle[i : i + 3] for i in range(len(self.needle) - 2))
        # Trigrams of only common letters and spaces are rarely selective: skip them.
        likely = sorted(
            (gram for gram in grams if not self._COMMON.issuperset(gram)),
            key=lambda gram: sum(char in self._COMMON for char in gram),
        )
        best: tuple[int, str] | None = None
        for gram in likely[: self.PROBES]:
            found = self._probe(conn, fts_phrase(gram))
            if found <= self.RARE and (best is None or found < best[0]):
                best = (found, fts_phrase(gram))
                if found <= self.RARE // 4:
                    break
        return None if best is None else best[1]

    def _probe(self, conn: sqlite3.Connection, match: str) -> int:
        """How many rows ``match`` finds, counting no further than ``RARE + 1``."""
        return scalar(
            conn,
            "SELECT count(*) FROM (SELECT rowid FROM events_text"
            " WHERE events_text MATCH ? AND rowid >= ? LIMIT ?)",
            [match, self.first, self.RARE + 1],
        )

    def _rows_at(self, conn: sqlite3.Connection, offsets: list[int]) -> Rows:
        rows: Rows = []
        for first in range(0, len(offsets), VARIABLES):
            part = offsets[first : first + VARIABLES]
            marks = ", ".join("?" * len(part))
            sql = (
                "SELECT e.byte_offset, e.ts, e.peak_ts FROM events e NOT INDEXED"  # noqa: S608
                f" WHERE e.byte_offset IN ({marks}) {self.and_source}"
            )
            rows.extend(conn.execute(sql, [*part, *self.source_params]))
        return rows

    def _walk(self, conn: sqlite3.Connection, rows: Query, total: Query) -> tuple[list[Event], int]:
        """Walk newest line first until the top is settled, then count in SQL."""
        walk = _Walk(self.limit, self.since)
        events = fetch_events(conn, walk.newest(conn.execute(*rows)))
        if not self._checked(events):
            return self._verified(conn, rows)
        return events, walk.seen if walk.complete else scalar(conn, *total)

    def _all(self, conn: sqlite3.Connection, rows: Rows) -> tuple[list[Event], int]:
        """Answer from every matching row, given in any order."""
        rows.sort(reverse=True)
        walk = _Walk(self.limit, self.since)
        events = fetch_events(conn, walk.newest(rows, exhaustive=True))
        if self._checked(events):
            return events, walk.seen
        return self._verified(conn, self._candidates())

    def _checked(self, events: list[Event]) -> bool:
        if all(text_matches(event, self.lowered) for event in events):
            return True
        log.warning("the index returned a row that does not match; checking every row")
        return False

    def _verified(self, conn: sqlite3.Connection, rows: Query) -> tuple[list[Event], int]:
        matched: Rows = []
        for offset, ts, peak in conn.execute(*rows).fetchall():
            if self.since is not None and ts < self.since:
                continue
            (line,) = conn.execute(
                "SELECT line FROM events WHERE byte_offset = ?", (offset,)
            ).fetchone()
            if text_matches(Event.from_line(line), self.lowered):
                matched.append((offset, ts, peak))
        return fetch_events(conn, _Walk(self.limit, None).newest(matched)), len(matched)


class _Walk:
    """Picks the ``limit`` newest of rows given in descending offset order.

    A row's peak_ts bounds the ts of every row at or before it, so once that
    bound cannot beat the weakest row kept (an equal ts loses: it is earlier in
    the file) or falls before ``since``, no later row can qualify.
    """

    def __init__(self, limit: int, since: int | None) -> None:
        self.limit, self.since = limit, since
        self.seen = 0  # rows inside the window
        self.complete = True  # whether ``seen`` counts all of them

    def newest(
        self, rows: Iterable[tuple[int, int, int]], *, exhaustive: bool = False
    ) -> list[int]:
        """Offsets of the newest rows, newest first. ``exhaustive`` reads every row."""
        limit, since = self.limit, self.since
        if limit <= 0 and not exhaustive:
            self.complete = False
            return []
        kept: list[tuple[int, int]] = []  # min-heap of (ts, offset)
        for offset, ts, peak in rows:
            if since is not None and peak < since:
                break  # this row and every earlier one are older than the window
            if not exhaustive and len(kept) == limit and peak <= kept[0][0]:
                self.complete = False
                break
            if since is not None and ts < since:
                continue
            self.seen += 1
            if limit > 0 and len(kept) < limit:
                heapq.heappush(kept, (ts, offset))
            elif limit > 0 and (ts, offset) > kept[0]:
                heapq.heapreplace(kept, (ts, offset))
        return [offset for _, offset in sorted(kept, reverse=True)]
