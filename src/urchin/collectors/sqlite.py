"""Reading SQLite databases that another program is writing, without disturbing it."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from urchin.errors import UrchinError

__all__ = ["open_live_sqlite"]

_BUSY_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED")


@contextlib.contextmanager
def open_live_sqlite(path: Path, *, busy_timeout: float = 2.0) -> Iterator[sqlite3.Connection]:
    """Open a database another program is writing: read-only, inside one read transaction.

    Every query on the connection sees the same snapshot. The connection uses
    ``mode=ro`` and a busy timeout, never ``immutable=1`` (which would read torn
    pages while the owner writes). A WAL reader needs the ``-shm`` file; when it
    is missing and the folder is not writable, we read a private copy of the
    database and its ``-wal`` instead.

    Raises:
        UrchinError: the database is locked or busy past the timeout, or cannot be
            opened or read. Nothing has been consumed; retry on the next run.
    """
    with contextlib.ExitStack() as stack:
        try:
            conn = _connect_read_only(path, busy_timeout)
        except sqlite3.Error as exc:
            if _is_busy(exc) or not _needs_private_copy(path):
                raise _translate(path, exc) from exc
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="urchin-db-")))
            try:
                conn = _connect_read_only(_private_copy(path, folder), busy_timeout)
            except (sqlite3.Error, OSError) as copy_exc:
                raise _translate(path, copy_exc) from copy_exc
        stack.callback(conn.close)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise _translate(path, exc) from exc


def _connect_read_only(path: Path, busy_timeout: float) -> sqlite3.Connection:
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)
    try:
        # A deferred transaction takes its snapshot at the first read, right here,
        # so every later query agrees with this one.
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _is_busy(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(_BUSY_ERRORS) or "locked" in str(exc).lower()


def _needs_private_copy(path: Path) -> bool:
    shm = path.with_name(path.name + "-shm")
    return path.is_file() and not shm.exists() and not os.access(path.parent, os.W_OK)


def _private_copy(path: Path, folder: Path) -> Path:
    # Without -shm in a folder we cannot write, no WAL writer can be active, so
    # copying the database and then its log gives a consistent pair.
    target = folder / path.name
    shutil.copyfile(path, target)
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, folder / wal.name)
    return target


def _translate(path: Path, exc: BaseException) -> UrchinError:
    if _is_busy(exc):
        return UrchinError(f"database {path} is locked by another program; will retry next run")
    detail = str(exc) if isinstance(exc, sqlite3.Error) else getattr(exc, "strerror", None)
    return UrchinError(f"cannot read database {path}: {detail or type(exc).__name__}")
