"""The store file's tables and its named, ordered migrations.

::

    header       (name TEXT PRIMARY KEY, value BLOB)      format metadata, KDF salt/params,
                                                           wrapped master key, encrypted root
    state        (kind INTEGER, id BLOB, seq INTEGER,     one encrypted record per row, under an
                  value BLOB, PRIMARY KEY (kind, id))      opaque keyed id; entries (kind 0) are
                                                           clustered apart from blobs (kind 1)
    checkpoints  (seq INTEGER PRIMARY KEY, value BLOB)     one sealed, chained entry per commit

The format version is the number of migrations applied; their names are kept in the header so a
file written by a newer release is refused instead of misread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memories.errors import IntegrityError, MemoriesError
from memories.store.errors import (
    MalformedHeaderError,
    NewerFormatError,
    NotAStoreError,
    sqlite_code,
    sqlite_reason,
)

__all__ = [
    "FORMAT_NAME",
    "MIGRATIONS",
    "Migration",
    "apply_migrations",
    "connect",
    "connect_reader",
    "format_version",
    "migrate",
]

FORMAT_NAME = b"memories-store"
_NEWER = "this store was written by a newer release of memories; upgrade memories to open it"


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[sqlite3.Connection], None]


def _initial(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE header (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
    conn.execute(
        "CREATE TABLE state (kind INTEGER NOT NULL, id BLOB NOT NULL, seq INTEGER NOT NULL,"
        " value BLOB NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID"
    )
    conn.execute("CREATE TABLE checkpoints (seq INTEGER PRIMARY KEY, value BLOB NOT NULL)")


MIGRATIONS: tuple[Migration, ...] = (Migration("0001_initial", _initial),)


def format_version() -> int:
    return len(MIGRATIONS)


def apply_migrations(conn: sqlite3.Connection, applied: list[str]) -> list[str]:
    """Apply the migrations missing from ``applied`` (inside the caller's transaction).

    Returns the new list of applied names. Raises ``NewerFormatError`` (a ``UsageError``) for a
    file written by a newer release and ``IntegrityError`` when the recorded history is not a
    prefix of ours.
    """
    known = [m.name for m in MIGRATIONS]
    if len(applied) > len(known):
        raise NewerFormatError(_NEWER)
    if applied != known[: len(applied)]:
        raise IntegrityError("the store's migration history is not recognized")
    for migration in MIGRATIONS[len(applied) :]:
        migration.apply(conn)
        applied = [*applied, migration.name]
    conn.execute(
        "INSERT OR REPLACE INTO header (name, value) VALUES ('migrations', ?)",
        (json.dumps(applied).encode("utf-8"),),
    )
    conn.execute(
        "INSERT OR REPLACE INTO header (name, value) VALUES ('format_version', ?)",
        (str(len(applied)).encode("ascii"),),
    )
    return applied


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the store's pragmas: durable commits, no temporary files on disk.

    Raises ``NotAStoreError`` for a file that is not SQLite, ``MemoriesError`` naming the cause
    when the file or its folder cannot be used (read-only, full, missing).
    """
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
    except sqlite3.Error as exc:
        raise MemoriesError(f"cannot open the store {path}: {sqlite_reason(exc)}") from exc
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA temp_store=MEMORY")
    except sqlite3.Error as exc:
        conn.close()
        if sqlite_code(exc) == "SQLITE_NOTADB":
            raise NotAStoreError(f"{path} is not a memories store") from exc
        raise MemoriesError(f"cannot open the store {path}: {sqlite_reason(exc)}") from exc
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A second, read-only connection to an open store (its writer already made it WAL).

    In WAL mode it reads the last committed state while the writer's transaction and fsync are
    still running, so reads need not queue behind a commit. Raises ``MemoriesError`` naming the
    cause when the file cannot be opened.
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, timeout=5
        )
    except sqlite3.Error as exc:
        raise MemoriesError(f"cannot open the store {path}: {sqlite_reason(exc)}") from exc
    try:
        conn.execute("PRAGMA temp_store=MEMORY")
    except sqlite3.Error as exc:
        conn.close()
        raise MemoriesError(f"cannot open the store {path}: {sqlite_reason(exc)}") from exc
    return conn


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring an existing file up to this release's format (one transaction).

    Raises ``NotAStoreError``, ``MalformedHeaderError``, ``NewerFormatError``, ``IntegrityError``
    (an unknown migration history) and ``MemoriesError`` when the file cannot be read or
    written.
    """
    try:
        _migrate(conn, path)
    except sqlite3.Error as exc:
        code = sqlite_code(exc)
        if code == "SQLITE_NOTADB":
            raise NotAStoreError(f"{path} is not a memories store") from exc
        if code == "SQLITE_CORRUPT":
            raise IntegrityError(f"the store {path} is damaged; restore it from a backup") from exc
        raise MemoriesError(f"cannot open the store {path}: {sqlite_reason(exc)}") from exc


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    try:
        marker = conn.execute("SELECT value FROM header WHERE name = 'format'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise NotAStoreError(f"{path} is not a memories store") from exc
        raise
    if marker is None or bytes(marker[0]) != FORMAT_NAME:
        raise NotAStoreError(f"{path} is not a memories store")
    row = conn.execute("SELECT value FROM header WHERE name = 'migrations'").fetchone()
    if row is None:
        raise MalformedHeaderError("the store header is incomplete (no migrations row)")
    try:
        applied = json.loads(bytes(row[0]))
        if not isinstance(applied, list) or not all(isinstance(n, str) for n in applied):
            raise ValueError("bad migrations")
    except ValueError as exc:
        raise MalformedHeaderError("the store header is malformed (the migrations row)") from exc
    if applied == [m.name for m in MIGRATIONS]:
        return
    if len(applied) > len(MIGRATIONS):  # before BEGIN: a read-only file still says why
        raise NewerFormatError(_NEWER)
    conn.execute("BEGIN IMMEDIATE")
    committed = False
    try:
        apply_migrations(conn, applied)
        conn.execute("COMMIT")
        committed = True
    finally:
        if not committed:
            conn.execute("ROLLBACK")
