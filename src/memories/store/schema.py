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

from memories.errors import IntegrityError, UsageError

__all__ = ["FORMAT_NAME", "MIGRATIONS", "Migration", "apply_migrations", "format_version"]

FORMAT_NAME = b"memories-store"


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

    Returns the new list of applied names. Raises ``UsageError`` for a file written by a newer
    release and ``IntegrityError`` when the recorded history is not a prefix of ours.
    """
    known = [m.name for m in MIGRATIONS]
    if len(applied) > len(known):
        raise UsageError(
            "this store was written by a newer release of memories; upgrade memories to open it"
        )
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
