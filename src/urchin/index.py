"""A SQLite projection of the journal for fast reads: ``index.db`` beside the journal.

The JSONL journal stays the only source of truth; the index is a cache that any
reader refreshes before answering (no daemon needed) and that is deleted and
rebuilt when damaged.

- Catching up is incremental: the index stores how many journal bytes it has
  read (a line boundary) and scans on from there with :meth:`Journal.scan`,
  which stops before an unterminated last line. A journal that was replaced
  (other device/inode), truncated (shorter than what was read) or rewritten
  (the SHA-256 of its first 4 KiB changed) is indexed again from scratch.
- Processes refresh concurrently without duplicating or losing rows: each step
  is a ``BEGIN IMMEDIATE`` transaction that re-reads the stored offset, rows are
  keyed by their byte offset in the journal (the same in every process), and the
  offset moves in the same transaction as the rows. Big catch-ups commit in chunks.
- Search keeps the linear scan's semantics: a case-insensitive (``str.lower``)
  substring match over content, title, tags and workspace, newest first (ties:
  later line first). The text is stored lower-cased and FTS5 uses the
  ``trigram`` tokenizer without case folding, so a phrase query is an exact
  substring test, with two exceptions confined to needles holding U+FFFD: NUL and
  lone surrogates are stored as U+FFFD, and tags are joined with U+FFFD. Such
  needles are checked row by row with :func:`urchin.query.text_matches`, as every
  returned event is. Needles under three characters fall back to ``instr``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from urchin.errors import JournalReadError, MalformedEventError, UrchinError
from urchin.event import Event
from urchin.index_search import (
    SEP,
    IndexState,
    Search,
    fetch_events,
    key_bytes,
    scalar,
    where_filters,
)
from urchin.journal import Journal, JournalEntry
from urchin.query import QueryResult, window_start

__all__ = [
    "INDEX_NAME",
    "IndexCorruptError",
    "IndexStatus",
    "IndexUnavailableError",
    "JournalIndex",
    "Progress",
    "answer",
    "close_pooled",
    "index_path",
    "rebuild",
    "refresh",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

INDEX_NAME = "index.db"
SCHEMA_VERSION = 2
#: Bytes of the journal's head whose hash tells a rewritten journal from a grown one.
HEAD_BYTES = 4096
#: Journal bytes indexed per write transaction.
CHUNK_BYTES = 8 * 1024 * 1024
#: Seconds to wait for another process's write transaction before answering linearly.
BUSY_TIMEOUT = 15.0
_BATCH = 2_000  # events per INSERT
_ROUNDS = 5  # restarts allowed when the journal or the index changes under a reader
_MMAP_BYTES = 1 << 34  # map the file rather than copy each page through read()

# Stored in place of what SQLite text cannot hold faithfully, and between tags.
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26

#: Progress callback: (journal bytes indexed, journal bytes to index).
Progress = Callable[[int, int], None]

_TABLES = (
    "DROP TABLE IF EXISTS events_text",
    "DROP TABLE IF EXISTS events",
    "DROP TABLE IF EXISTS state",
    """CREATE TABLE state (
        id INTEGER PRIMARY KEY CHECK (id = 1), dev INTEGER, ino INTEGER,
        byte_offset INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
        events INTEGER NOT NULL, malformed INTEGER NOT NULL, oversized INTEGER NOT NULL,
        peak_ts INTEGER
    )""",
    # byte_offset: where the line starts in the journal; unique per line and the
    # same in every process, so it is the key concurrent refreshers agree on.
    # ts: microseconds since the Unix epoch; peak_ts: the largest ts of this line
    # and every line before it, which lets a newest-first search stop early.
    # source, workspace: UTF-8 bytes (lone surrogates kept), so equality and
    # prefix tests are exact. title, content, tags, workspace_text: lower-cased
    # search text (see the module docstring). line: the journal line itself.
    """CREATE TABLE events (
        byte_offset INTEGER PRIMARY KEY, ts INTEGER NOT NULL, peak_ts INTEGER NOT NULL,
        source BLOB NOT NULL, workspace BLOB, id TEXT NOT NULL, kind TEXT NOT NULL,
        session TEXT, title TEXT, content TEXT NOT NULL, tags TEXT, workspace_text TEXT,
        line BLOB NOT NULL
    )""",
    "CREATE INDEX events_ts ON events (ts)",
    "CREATE INDEX events_source_ts ON events (source, ts)",
    "CREATE INDEX events_workspace_ts ON events (workspace, ts)",
    # peak_ts only grows along the file: where a time window starts in the file.
    "CREATE INDEX events_peak_ts ON events (peak_ts)",
    """CREATE VIRTUAL TABLE events_text USING fts5(
        title, content, tags, workspace_text,
        content = 'events', content_rowid = 'byte_offset', columnsize = 0,
        tokenize = 'trigram case_sensitive 1'
    )""",
    # Fewer, larger segments: a third less work per event when building.
    "INSERT INTO events_text (events_text, rank) VALUES ('hashsize', 33554432)",
)
_EMPTY_HASH = hashlib.sha256(b"").hexdigest()


class IndexUnavailableError(UrchinError):
    """The index cannot be used now (read-only folder, locked, no journal yet);
    readers answer from a linear scan of the journal instead."""

    code = "index_unavailable"


class IndexCorruptError(IndexUnavailableError):
    """``index.db`` is damaged; it is only a cache, so it is deleted and rebuilt."""

    code = "index_corrupt"


class _JournalChanged(Exception):
    """The journal file was swapped while a step read it; the step is rolled back."""


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What the index holds after a refresh."""

    path: Path
    events: int
    malformed: int
    oversized: int
    indexed_bytes: int
    torn_tail: bool

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"index_path": str(self.path)}
        for name in ("events", "malformed", "oversized", "indexed_bytes", "torn_tail"):
            data[name] = getattr(self, name)
        return data


def index_path(journal: Journal) -> Path:
    """Where the index of ``journal`` lives: ``index.db`` in the journal's folder."""
    return journal.path.parent / INDEX_NAME


def _fold(text: str) -> str:
    """Lower-case as the linear search does, then make it storable as SQLite text."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.replace("\x00", SEP) if "\x00" in lowered else lowered
    return _UNSAFE.sub(SEP, lowered)


def _safe(text: str | None) -> str | None:
    """Text for display-only columns; the stored line keeps the exact value."""
    return text if text is None or text.isascii() else _UNSAFE.sub(SEP, text)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _since_micros(now: datetime | None, hours: float | None) -> int | None:
    start = window_start(now or datetime.now(UTC), hours)
    return None if start is None else _micros(start)


def _journal_error(journal: Journal, exc: OSError) -> JournalReadError:
    return JournalReadError(f"cannot read the journal at {journal.path}: {exc.strerror or exc}")


class _Pool(threading.local):
    """Connections kept open per thread between calls, so that a long-running
    server opens ``index.db`` once rather than on every query."""

    def __init__(self) -> None:
        self.kept: dict[Path, tuple[int, int | None, sqlite3.Connection]] = {}

    def take(self, path: Path) -> tuple[int | None, sqlite3.Connection] | None:
        pid, ino, conn = self.kept.pop(path, (0, None, None))
        if conn is None or pid != os.getpid():
            return None  # none kept, or inherited through fork, which SQLite forbids
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == ino:
                return ino, conn
        # Deleted or replaced since (a damaged index rebuilt by another process).
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        return None

    def keep(self, path: Path, ino: int | None, conn: sqlite3.Connection) -> None:
        close_pooled(path)
        self.kept[path] = (os.getpid(), ino, conn)


_POOL = _Pool()


def close_pooled(path: Path | None = None) -> None:
    """Close the connections this thread keeps open between queries (all, or one file's)."""
    for key in [path] if path is not None else list(_POOL.kept):
        pid, _, conn = _POOL.kept.pop(key, (0, None, None))
        if conn is not None and pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()


# Close what the main thread kept, so that a short-lived command leaves no -wal file.
atexit.register(close_pooled)


class JournalIndex:
    """The SQLite index of one journal. Not thread-safe: use one per thread.

    Every query refreshes the index first, then answers from one consistent
    snapshot. Methods raise :class:`IndexUnavailableError` (or its subclass
    :class:`IndexCorruptError`, then call :meth:`discard`) when the index cannot
    be used, and :class:`JournalReadError` when the journal cannot be read.
    """

    def __init__(
        self,
        journal: Journal,
        path: Path | None = None,
        *,
        chunk_bytes: int = CHUNK_BYTES,
        busy_timeout: float | None = None,
        pooled: bool = False,
    ) -> None:
        self.journal = journal
        self.path = path or index_path(journal)
        self.chunk_bytes = max(1, chunk_bytes)
        self.busy_timeout = BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        self.pooled = pooled
        self._conn: sqlite3.Connection | None = None
        self._opened_ino: int | None = None

    # -- connection ------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        kept = _POOL.take(self.path) if self.pooled else None
        if kept is not None:
            self._opened_ino, self._conn = kept
            return self._conn
        try:
            # 0600 like the journal: the index holds the same private text. SQLite
            # gives its -wal and -shm files the mode of the database file.
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise IndexUnavailableError(
                f"cannot create the index at {self.path}: {exc.strerror or exc}"
            ) from exc
        with self._translated():
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                with contextlib.suppress(OSError):
                    self._opened_ino = os.stat(self.path).st_ino
                # Readers never block the writer. Persistent once set; while another
                # process creates the file this may find it locked, and that process
                # sets it instead (a connection follows the file's mode on its own).
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("PRAGMA journal_mode = WAL")
                # A cache: losing the last commits on power loss is fine, the
                # offset is committed with its rows and the rest is read again.
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA cache_size = -16384")
                conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
                self._conn = conn
                self._ensure_schema()
            except (sqlite3.Error, UrchinError):
                self._conn = None
                conn.close()
                raise
        return conn

    def close(self) -> None:
        """Close the connection (a pooled index keeps it open for the next call)."""
        conn, self._conn = self._conn, None
        if conn is not None and self.pooled and not conn.in_transaction:
            _POOL.keep(self.path, self._opened_ino, conn)
        elif conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def __enter__(self) -> JournalIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def discard(self) -> None:
        """Delete ``index.db`` (it is only a cache); the next use builds it again.

        A file another process has replaced meanwhile is left alone.

        Raises:
            IndexUnavailableError: the file cannot be deleted.
        """
        opened, self.pooled = self._opened_ino, False
        self.close()
        try:
            if opened is not None and os.stat(self.path).st_ino != opened:
                return
            log.warning("the index at %s is damaged; rebuilding it from the journal", self.path)
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise IndexUnavailableError(
                f"cannot delete the damaged index at {self.path}: {exc.strerror or exc}"
            ) from exc

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise  # a bug here, not a state of the file: do not hide it behind a fallback
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            primary = code & 0xFF if isinstance(code, int) else None
            if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or isinstance(
                exc, sqlite3.IntegrityError
            ):
                raise IndexCorruptError(f"the index at {self.path} is damaged") from exc
            raise IndexUnavailableError(f"cannot use the index at {self.path}: {exc}") from exc
        except MalformedEventError as exc:
            raise IndexCorruptError(f"the index at {self.path} holds a bad line") from exc

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute(begin)
        committed = False
        try:
            yield conn
            conn.execute("COMMIT")
            committed = True
        finally:
            if not committed and conn.in_transaction:  # whatever interrupted the block
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")

    def _ensure_schema(self) -> None:
        conn = self._connection()
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        with self._transaction("BEGIN IMMEDIATE"):
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._reset(None)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _reset(self, info: os.stat_result | None) -> None:
        """Empty the index and point it at ``info``'s file (inside a write transaction)."""
        conn = self._connection()
        for statement in _TABLES:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO state VALUES (1, ?, ?, 0, 0, ?, 0, 0, 0, NULL)",
            (info and info.st_dev, info and info.st_ino, _EMPTY_HASH),
        )

    def _state(self) -> IndexState:
        row = (
            self._connection()
            .execute(
                "SELECT dev, ino, byte_offset, head_len, head_hash, events, malformed,"
                " oversized, peak_ts FROM state WHERE id = 1"
            )
            .fetchone()
        )
        # A missing state row reads as an index of nothing, which forces a rebuild.
        return IndexState(*row) if row else IndexState(None, None, 0, 0, "", 0, 0, 0, None)

    # -- the journal side ------------------------------------------------------------

    def _journal_stat(self) -> os.stat_result | None:
        try:
            return os.stat(self.journal.path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc

    def _still_valid(self, state: IndexState, info: os.stat_result) -> bool:
        """Whether the index still describes this file: same file, not shorter, same head."""
        if (state.dev, state.ino) != (info.st_dev, info.st_ino) or info.st_size < state.offset:
            return False
        try:
            with open(self.journal.path, "rb") as handle:
                head = handle.read(state.head_len)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc
        return len(head) == state.head_len and hashlib.sha256(head).hexdigest() == state.head_hash

    # -- refreshing ------------------------------------------------------------------

    def refresh(self, progress: Progress | None = None) -> IndexStatus:
        """Catch up with the journal, or index it again if it was replaced or rewritten.

        Raises what the class docstring says.
        """
        return self._status(*self._refresh(force=False, progress=progress))

    def rebuild(self, progress: Progress | None = None) -> IndexStatus:
        """Drop everything and index the whole journal again.

        Raises what the class docstring says.
        """
        return self._status(*self._refresh(force=True, progress=progress))

    def _status(self, state: IndexState, torn: bool) -> IndexStatus:
        return IndexStatus(
            self.path, state.events, state.malformed, state.oversized, state.offset, torn
        )

    def _refresh(self, *, force: bool, progress: Progress | None) -> tuple[IndexState, bool]:
        """Returns the state reached and whether the journal ends in a torn line."""
        with self._translated():
            if not force:
                info, state = self._journal_stat(), self._state()
                # The common case takes no write lock: nothing new since the last refresh.
                if info and info.st_size == state.offset and self._still_valid(state, info):
                    return state, False
            for _ in range(_ROUNDS):
                target: int | None = None
                try:
                    while True:
                        with self._transaction("BEGIN IMMEDIATE"):
                            state, finished, torn, target = self._step(target, force)
                        force = False
                        if progress is not None:
                            progress(state.offset, target)
                        if finished:
                            return state, torn
                except _JournalChanged:
                    continue
        raise IndexUnavailableError(f"the journal at {self.journal.path} kept changing")

    def _step(self, target: int | None, force: bool) -> tuple[IndexState, bool, bool, int]:
        """Index one chunk inside a write transaction.

        Returns the new state, whether the journal is indexed up to ``target``
        (its size when the refresh began), whether a torn tail was seen, and the target.
        """
        info, state = self._journal_stat(), self._state()
        if info is None:
            # A missing journal reads as empty, so its index is empty too.
            if force or state.dev is not None or state.offset:
                self._reset(None)
            return self._state(), True, False, 0
        if force or not self._still_valid(state, info):
            self._reset(info)
            state, target = self._state(), None
        if target is None:
            target = info.st_size
        if state.offset >= target:
            return state, True, False, target
        state, exhausted, torn = self._index_chunk(state, info)
        return state, exhausted or state.offset >= target, torn and exhausted, target

    def _index_chunk(
        self, state: IndexState, info: os.stat_result
    ) -> tuple[IndexState, bool, bool]:
        conn = self._connection()
        try:
            handle = open(self.journal.path, "rb")  # noqa: SIM115 - closed below
        except (FileNotFoundError, NotADirectoryError):
            raise _JournalChanged from None
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc
        with handle:
            opened = os.fstat(handle.fileno())
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise _JournalChanged
            scan = self.journal.scan(state.offset)
            peak, exhausted, inserted = state.peak_ts, True, 0
            batch: list[JournalEntry] = []
            for entry in scan:
                batch.append(entry)
                done = entry.offset + entry.length - state.offset >= self.chunk_bytes
                if done or len(batch) >= _BATCH:
                    rows, peak = _rows(handle, batch, peak)
                    inserted, batch = inserted + self._insert(conn, rows), []
                if done:
                    exhausted = False
                    break
            if batch:
                rows, peak = _rows(handle, batch, peak)
                inserted += self._insert(conn, rows)
            stats = scan.stats
            end, head_len, head_hash = stats.end_offset, state.head_len, state.head_hash
            if head_len < HEAD_BYTES and end > head_len:
                head_len = min(HEAD_BYTES, end)
                head_hash = hashlib.sha256(os.pread(handle.fileno(), head_len, 0)).hexdigest()
        now = self._journal_stat()
        if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise _JournalChanged
        conn.execute(
            "UPDATE state SET byte_offset = ?, head_len = ?, head_hash = ?, events = events + ?,"
            " malformed = malformed + ?, oversized = oversized + ?, peak_ts = ? WHERE id = 1",
            (end, head_len, head_hash, inserted, stats.malformed, stats.oversized, peak),
        )
        return self._state(), exhausted, stats.torn_tail

    def _insert(self, conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        added = conn.executemany(
            "INSERT OR IGNORE INTO events (byte_offset, ts, peak_ts, source, workspace, id, kind,"
            " session, title, content, tags, workspace_text, line)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        ).rowcount
        if added != len(rows):
            # Rows past the stored offset never exist; one that does means a damaged index.
            raise IndexCorruptError(f"the index at {self.path} holds rows it should not")
        conn.executemany(
            "INSERT INTO events_text (rowid, title, content, tags, workspace_text)"
            " VALUES (?, ?, ?, ?, ?)",
            [(row[0], *row[8:12]) for row in rows],
        )
        return added

    # -- answering -------------------------------------------------------------------

    def _answer(
        self, ask: Callable[[sqlite3.Connection, IndexState], T]
    ) -> tuple[T, IndexState, bool]:
        """Refresh, then run ``ask`` in a read snapshot holding at least that refresh."""
        for _ in range(_ROUNDS):
            fresh, torn = self._refresh(force=False, progress=None)
            with self._translated(), self._transaction("BEGIN") as conn:
                state = self._state()
                if (state.dev, state.ino) == (fresh.dev, fresh.ino) and (
                    state.offset >= fresh.offset
                ):
                    return ask(conn, state), state, torn
        raise IndexUnavailableError(f"the index at {self.path} kept being rebuilt")

    def _result(
        self, ask: Callable[[sqlite3.Connection, IndexState], tuple[list[Event], int]]
    ) -> QueryResult:
        (events, matched), state, torn = self._answer(ask)
        return QueryResult(events, matched, state.malformed, torn)

    def recent(
        self,
        limit: int = 20,
        source: str | None = None,
        hours: float | None = None,
        *,
        now: datetime | None = None,
    ) -> QueryResult:
        """The newest ``limit`` events, optionally from one source and within ``hours``.

        Raises UsageError when ``hours`` is NaN, and what the class docstring says.
        """
        return self._newest(where_filters(source, _since_micros(now, hours), None), limit, False)

    def workspace_events(
        self,
        path_prefix: str,
        limit: int = 20,
        hours: float | None = None,
        *,
        now: datetime | None = None,
    ) -> QueryResult:
        """The newest events whose workspace starts with ``path_prefix``.

        Raises UsageError when ``hours`` is NaN, and what the class docstring says.
        """
        where = where_filters(None, _since_micros(now, hours), path_prefix)
        return self._newest(where, limit, bool(path_prefix))

    def _newest(self, filters: tuple[str, list[object]], limit: int, prefix: bool) -> QueryResult:
        where, params = filters
        # Only constant SQL fragments are joined; every value is a bound parameter.
        total = f"SELECT count(*) FROM events e WHERE 1 {where}"  # noqa: S608

        def ask(conn: sqlite3.Connection, state: IndexState) -> tuple[list[Event], int]:
            matched = scalar(conn, total, params) if params else state.events
            # Many events under a prefix: walking by time finds the newest sooner
            # than sorting them all, which SQLite would otherwise do.
            hint = "INDEXED BY events_ts" if prefix and matched > Search.FEW else ""
            sql = (
                f"SELECT e.byte_offset FROM events e {hint} WHERE 1 {where}"  # noqa: S608
                " ORDER BY e.ts DESC, e.byte_offset DESC LIMIT ?"
            )
            offsets = [offset for (offset,) in conn.execute(sql, [*params, max(limit, 0)])]
            return fetch_events(conn, offsets), matched

        return self._result(ask)

    def search(
        self,
        text: str,
        limit: int = 20,
        source: str | None = None,
        hours: float | None = None,
        *,
        now: datetime | None = None,
    ) -> QueryResult:
        """Events whose content, title, tags or workspace contain ``text`` in any case.

        Raises UsageError when ``hours`` is NaN, and what the class docstring says.
        """
        needle = _fold(text)
        if not needle:
            return self.recent(limit, source, hours, now=now)
        plan = Search(needle, text.lower(), source, _since_micros(now, hours), limit)
        return self._result(plan.run)

    def count(self) -> int:
        """How many valid events the journal holds. Raises what the class docstring says."""
        return self._answer(lambda conn, state: state.events)[0]

    def last_event(self) -> Event | None:
        """The newest event (the later line on a tie), or None for an empty journal.

        Raises what the class docstring says.
        """
        events = self.recent(1).events
        return events[0] if events else None


def _rows(
    handle: BinaryIO, batch: Sequence[JournalEntry], peak: int | None
) -> tuple[list[tuple[Any, ...]], int | None]:
    """Table rows for ``batch``, each with its line's bytes read back from the journal."""
    base, last = batch[0].offset, batch[-1]
    size = last.offset + last.length - base
    region = os.pread(handle.fileno(), size, base)
    if len(region) != size:
        raise _JournalChanged
    rows: list[tuple[Any, ...]] = []
    for entry in batch:
        start = entry.offset - base
        stop = start + entry.length - 1
        if region[stop] != 0x0A:
            raise _JournalChanged  # the bytes are not the lines the scan parsed
        event = entry.event
        ts = _micros(event.timestamp)
        peak = ts if peak is None or ts > peak else peak
        workspace, tags, title = event.workspace, event.tags, event.title
        keys = (key_bytes(event.source), None if workspace is None else key_bytes(workspace))
        about = (str(event.id), _safe(str(event.kind)), _safe(event.session))
        text = (
            None if title is None else _fold(title),
            _fold(event.content),
            SEP.join([_fold(tag) for tag in tags]) if tags else None,
            None if workspace is None else _fold(workspace),
        )
        rows.append((entry.offset, ts, peak, *keys, *about, *text, region[start:stop]))
    return rows, peak


def answer(journal: Journal, ask: Callable[[JournalIndex], T]) -> T:
    """Run ``ask`` on the journal's index; a damaged index is deleted and rebuilt once.

    Raises:
        IndexUnavailableError: the index cannot be used (no journal yet, read-only
            folder, locked for longer than the busy timeout); answer linearly instead.
        JournalReadError: the journal exists but cannot be read.
    """
    if not journal.path.is_file():
        raise IndexUnavailableError(f"there is no journal at {journal.path} yet")
    for attempt in range(2):
        index = JournalIndex(journal, pooled=True)
        try:
            return ask(index)
        except IndexCorruptError:
            if attempt:
                raise
            index.discard()
        finally:
            index.close()
    raise AssertionError("unreachable")


def refresh(journal: Journal, progress: Progress | None = None) -> IndexStatus:
    """Bring the journal's index up to date. Raises what :func:`answer` raises."""
    return answer(journal, lambda index: index.refresh(progress))


def rebuild(journal: Journal, progress: Progress | None = None) -> IndexStatus:
    """Index the whole journal again from scratch. Raises what :func:`answer` raises."""
    return answer(journal, lambda index: index.rebuild(progress))
