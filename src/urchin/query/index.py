"""A SQLite projection of the journal for fast reads: ``index.db`` beside the journal.

The JSONL journal stays the only source of truth; the index is a cache that any
reader refreshes before answering (no daemon needed) and that is deleted and
rebuilt when damaged. It costs less than the journal it indexes: it keeps where
each line is (byte offset and length) rather than the line, and reads answers
back from the journal.

- Catching up is incremental: the index stores how many journal bytes it has
  read (a line boundary) and reads on from there, a large piece at a time
  (:mod:`urchin.query.build`), stopping before an unterminated last line. A
  journal that was replaced (other device/inode), truncated (shorter than what
  was read) or rewritten (the SHA-256 of its first 4 KiB changed) is indexed
  again from scratch.
- Processes refresh concurrently without duplicating or losing rows: each step
  is a ``BEGIN IMMEDIATE`` transaction that re-reads the stored offset; rows are
  numbered from the stored count (the same in every process), and the offset
  moves in the same transaction as the rows. Big catch-ups commit in chunks, and
  one that is large and has nobody watching (the first query on a big journal)
  logs its progress on stderr.
- Search keeps the linear scan's semantics: a case-insensitive (``str.lower``)
  substring match over content, title, tags and workspace, newest first (ties:
  later line first). The searched text is stored lower-cased once, with a
  contentless FTS5 trigram index (``detail=none``: which rows hold a trigram,
  not where) to find the rows worth testing; see :mod:`urchin.query.plans`.
  NUL and lone surrogates are stored as U+FFFD, and tags are joined with it;
  needles holding U+FFFD are checked row by row with
  :func:`urchin.query.filters.text_matches`, as every returned event is.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from urchin.errors import (
    IndexCorruptError,
    IndexUnavailableError,
    JournalReadError,
    MalformedEventError,
    UrchinError,
)
from urchin.event import Event
from urchin.journal import Journal
from urchin.query.build import RowWriter, fold, micros, read_region
from urchin.query.filters import QueryResult, window_start
from urchin.query.plans import (
    IndexState,
    JournalChangedError,
    Search,
    fetch_events,
    scalar,
    source_id,
    workspace_ids,
)

__all__ = [
    "INDEX_NAME",
    "PROGRESS_FROM_BYTES",
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
SCHEMA_VERSION = 3
#: Bytes of the journal's head whose hash tells a rewritten journal from a grown one.
HEAD_BYTES = 4096
#: Journal bytes indexed per write transaction.
CHUNK_BYTES = 32 * 1024 * 1024
#: Seconds to wait for another process's write transaction before answering linearly.
BUSY_TIMEOUT = 15.0
#: A catch-up at least this large, with no progress callback, logs its progress.
PROGRESS_FROM_BYTES = 32 * 1024 * 1024
_PROGRESS_EVERY = 5.0  # seconds between progress lines
_ROUNDS = 5  # restarts allowed when the journal or the index changes under a reader
_MMAP_BYTES = 1 << 34  # map the file rather than copy each page through read()
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26

#: Progress callback: (journal bytes indexed, journal bytes to index).
Progress = Callable[[int, int], None]

_TABLES = (
    "DROP TABLE IF EXISTS events_text",
    "DROP TABLE IF EXISTS texts",
    "DROP TABLE IF EXISTS events",
    "DROP TABLE IF EXISTS sources",
    "DROP TABLE IF EXISTS workspaces",
    "DROP TABLE IF EXISTS state",
    """CREATE TABLE state (
        id INTEGER PRIMARY KEY CHECK (id = 1), dev INTEGER, ino INTEGER,
        byte_offset INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
        events INTEGER NOT NULL, malformed INTEGER NOT NULL, oversized INTEGER NOT NULL,
        peak_ts INTEGER
    )""",
    # Each distinct source and workspace once, as UTF-8 bytes (lone surrogates
    # kept), so equality and prefix tests are exact; events refer to them by id.
    "CREATE TABLE sources (id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE)",
    "CREATE TABLE workspaces (id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE)",
    # seq: 1, 2, 3… in file order (small, dense keys keep the FTS index small).
    # byte_offset, length: the line in the journal, newline included.
    # ts: microseconds since the Unix epoch; lag: how far ts lies below the largest
    # ts of this line and every earlier one (0 for a line in order, stored in no
    # bytes), which lets a newest-first search stop early.
    """CREATE TABLE events (
        seq INTEGER PRIMARY KEY, byte_offset INTEGER NOT NULL, length INTEGER NOT NULL,
        ts INTEGER NOT NULL, lag INTEGER NOT NULL, source INTEGER NOT NULL, workspace INTEGER
    )""",
    "CREATE INDEX events_ts ON events (ts)",
    "CREATE INDEX events_source_ts ON events (source, ts)",
    "CREATE INDEX events_workspace_ts ON events (workspace, ts)",
    # The searched text, lower-cased: content, title and tags joined by U+FFFD.
    "CREATE TABLE texts (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    # Which rows hold which trigram, and nothing else: no copy of the text
    # (contentless), no positions (detail=none). A third of a full trigram index.
    """CREATE VIRTUAL TABLE events_text USING fts5(
        content, title, tags, content = '', columnsize = 0, detail = none,
        tokenize = 'trigram case_sensitive 1'
    )""",
    # Fewer, larger segments and pages: less merging while building.
    "INSERT INTO events_text (events_text, rank) VALUES ('hashsize', 33554432)",
    "INSERT INTO events_text (events_text, rank) VALUES ('pgsz', 4050)",
)
_EMPTY_HASH = hashlib.sha256(b"").hexdigest()


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


def _since_micros(now: datetime | None, hours: float | None) -> int | None:
    start = window_start(now or datetime.now(UTC), hours)
    return None if start is None else micros(start)


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
        chunk_bytes: int | None = None,
        busy_timeout: float | None = None,
        pooled: bool = False,
    ) -> None:
        self.journal = journal
        self.path = path or index_path(journal)
        self.chunk_bytes = max(1, CHUNK_BYTES if chunk_bytes is None else chunk_bytes)
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
            info, state = self._journal_stat(), self._state()
            valid = info is not None and self._still_valid(state, info)
            # The common case takes no write lock: nothing new since the last refresh.
            if not force and valid and info is not None and info.st_size == state.offset:
                return state, False
            if progress is None and info is not None:
                behind = info.st_size - (state.offset if valid and not force else 0)
                if behind >= PROGRESS_FROM_BYTES:
                    # Nobody draws a bar (the first query on a big journal): say what
                    # takes the time rather than hang silently.
                    progress = _LoggedProgress(self.journal.path, behind)
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
                except JournalChangedError:
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
            fd = os.open(self.journal.path, os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise JournalChangedError from None
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise JournalChangedError
            region = read_region(fd, state.offset, self.chunk_bytes)
            rows = RowWriter(conn, state.events, state.peak_ts)
            for offset, line in region.lines:
                rows.add(offset, line)
            rows.flush()
            end, head_len, head_hash = region.end, state.head_len, state.head_hash
            if head_len < HEAD_BYTES and end > head_len:
                head_len = min(HEAD_BYTES, end)
                head_hash = hashlib.sha256(os.pread(fd, head_len, 0)).hexdigest()
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc
        finally:
            os.close(fd)
        now = self._journal_stat()
        if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise JournalChangedError
        conn.execute(
            "UPDATE state SET byte_offset = ?, head_len = ?, head_hash = ?, events = ?,"
            " malformed = malformed + ?, oversized = oversized + ?, peak_ts = ? WHERE id = 1",
            (end, head_len, head_hash, rows.seq, rows.malformed, region.oversized, rows.peak),
        )
        return self._state(), region.exhausted, region.torn

    # -- answering -------------------------------------------------------------------

    def _answer(self, ask: Callable[[_Snapshot], T]) -> tuple[T, IndexState, bool]:
        """Refresh, then run ``ask`` in a read snapshot holding at least that refresh."""
        for _ in range(_ROUNDS):
            fresh, torn = self._refresh(force=False, progress=None)
            try:
                with self._translated(), self._transaction("BEGIN") as conn:
                    state = self._state()
                    if (state.dev, state.ino) == (fresh.dev, fresh.ino) and (
                        state.offset >= fresh.offset
                    ):
                        with _JournalLines(self.journal, state) as lines:
                            return ask(_Snapshot(conn, state, lines)), state, torn
            except JournalChangedError:
                continue
        raise IndexUnavailableError(f"the index at {self.path} kept being rebuilt")

    def _result(self, ask: Callable[[_Snapshot], tuple[list[Event], int]]) -> QueryResult:
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
        since = _since_micros(now, hours)

        def ask(snap: _Snapshot) -> tuple[list[Event], int]:
            where: list[str] = []
            params: list[object] = []
            if source is not None:
                found = source_id(snap.conn, source)
                if found is None:
                    return [], 0
                where.append("AND e.source = ?")
                params.append(found)
            return snap.newest(where, params, since, limit, walk_time=False)

        return self._result(ask)

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
        if not path_prefix:
            return self.recent(limit, None, hours, now=now)
        since = _since_micros(now, hours)

        def ask(snap: _Snapshot) -> tuple[list[Event], int]:
            ids = workspace_ids(snap.conn, path_prefix)
            if not ids:
                return [], 0
            if len(ids) == 1:
                where, params = ["AND e.workspace = ?"], list[object](ids)
            else:
                where = ["AND e.workspace IN (SELECT value FROM json_each(?))"]
                params = [json.dumps(ids)]
            return snap.newest(where, params, since, limit, walk_time=len(ids) > 1)

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
        needle = fold(text)
        if not needle:
            return self.recent(limit, source, hours, now=now)
        plan = Search(needle, text.lower(), source, _since_micros(now, hours), limit)
        return self._result(lambda snap: plan.run(snap.conn, snap.state, snap.lines))

    def count(self) -> int:
        """How many valid events the journal holds. Raises what the class docstring says."""
        return self._answer(lambda snap: snap.state.events)[0]

    def last_event(self) -> Event | None:
        """The newest event (the later line on a tie), or None for an empty journal.

        Raises what the class docstring says.
        """
        events = self.recent(1).events
        return events[0] if events else None


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """One read transaction of the index and the journal lines it points at."""

    conn: sqlite3.Connection
    state: IndexState
    lines: _JournalLines

    def newest(
        self,
        where: list[str],
        params: list[object],
        since: int | None,
        limit: int,
        *,
        walk_time: bool,
    ) -> tuple[list[Event], int]:
        """The newest ``limit`` rows matching ``where`` and their number."""
        if since is not None:
            where, params = [*where, "AND e.ts >= ?"], [*params, since]
        # Only constant SQL fragments are joined; every value is a bound parameter.
        conditions = " ".join(where)
        total = f"SELECT count(*) FROM events e WHERE 1 {conditions}"  # noqa: S608
        matched = scalar(self.conn, total, params) if params else self.state.events
        # Many events under several workspaces: walking by time finds the newest
        # sooner than sorting them all, which SQLite would otherwise do.
        hint = "INDEXED BY events_ts" if walk_time and matched > Search.FEW else ""
        sql = (
            f"SELECT e.seq FROM events e {hint} WHERE 1 {conditions}"  # noqa: S608
            " ORDER BY e.ts DESC, e.seq DESC LIMIT ?"
        )
        seqs = [seq for (seq,) in self.conn.execute(sql, [*params, max(limit, 0)])]
        return fetch_events(self.conn, self.lines, seqs), matched


class _JournalLines:
    """Reads the lines an index snapshot points at, from the journal file it describes.

    Opened on the first read: an answer with no events never touches the journal.
    """

    def __init__(self, journal: Journal, state: IndexState) -> None:
        self.journal, self.state = journal, state
        self._fd: int | None = None

    def __enter__(self) -> _JournalLines:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def read(self, offset: int, length: int) -> bytes:
        """Raises: JournalChangedError: the journal was replaced; MalformedEventError:
        the bytes there are not a whole line."""
        if self._fd is None:
            try:
                fd = os.open(self.journal.path, os.O_RDONLY | os.O_CLOEXEC)
            except (FileNotFoundError, NotADirectoryError):
                raise JournalChangedError from None
            except OSError as exc:
                raise _journal_error(self.journal, exc) from exc
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (self.state.dev, self.state.ino):
                os.close(fd)
                raise JournalChangedError
            self._fd = fd
        try:
            line = os.pread(self._fd, length, offset)
        except OSError as exc:
            raise _journal_error(self.journal, exc) from exc
        if len(line) != length or not line.endswith(b"\n"):
            raise MalformedEventError("the journal holds no line where the index points")
        return line


class _LoggedProgress:
    """Progress of a long catch-up, logged every few seconds (stderr by default)."""

    def __init__(self, path: Path, behind: int) -> None:
        self.started = self.said = time.monotonic()
        log.warning(
            "indexing the journal at %s (%d MB) so that queries are fast;"
            " this happens once and takes a while",
            path,
            behind // 1_000_000,
        )

    def __call__(self, done: int, target: int) -> None:
        now = time.monotonic()
        if done >= target:
            log.warning("indexed the journal in %.1f s", now - self.started)
        elif now - self.said >= _PROGRESS_EVERY:
            self.said = now
            share = 100 * done // max(target, 1)
            log.warning("indexing the journal: %d%% (%d MB)", share, done // 1_000_000)


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
