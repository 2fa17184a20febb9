"""One durable SQLite write transaction, its failures translated for the user."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator

from memories.errors import ConflictError, MemoriesError
from memories.store.errors import sqlite_reason

__all__ = ["transaction"]

log = logging.getLogger("memories.store.store")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE … COMMIT`` on ``conn``; on any failure a rollback and an error.

    Raises:
        ConflictError: a write-once row already exists (nothing was changed).
        MemoriesError: the write failed; the message names the cause (nothing was changed).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        committed = False
        try:
            yield
            conn.execute("COMMIT")
            committed = True
        finally:
            if not committed:  # any failure, even an interrupt, leaves no open transaction
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
    except sqlite3.IntegrityError as exc:
        raise ConflictError("a write-once record already exists; nothing was changed") from exc
    except sqlite3.Error as exc:
        log.warning("store commit failed: %s", type(exc).__name__)
        raise MemoriesError(
            f"cannot write the store: {sqlite_reason(exc)}; nothing was changed"
        ) from exc
