"""Staged blobs: parts of a large write kept on disk, sealed, until one commit publishes them.

A file upload arrives in many frames; holding it in memory until it is stored would make the
daemon's memory grow with the file. Instead each sealed part is written as it arrives into the
``state`` table as a *staged* row (kind 2) of a random *area*. Staged rows are not part of the
state: the root does not count them, no record refers to them, and a blob read never finds
them. A commit that adopts an area (:meth:`memories.store.Mutation.adopt`) re-seals each of its
rows as the blob the domain names, one row at a time, and deletes the area, all inside the
commit's transaction: the parts become visible together with the record that refers to them, or
not at all. An area that is never adopted is deleted on cancel, at lock, and at the next unlock
(after a crash), so nothing half-written survives.

Row id of a staged part: ``area (16 bytes) || index (4 bytes, big-endian)``. The area is random
and names nothing, so the id needs no key. The row is sealed under the state key with the
row associated data (store id, row id, seq, kind 2), like every other row.
"""

from __future__ import annotations

import secrets
import sqlite3
import struct
from collections.abc import Iterator, Sequence

from memories.errors import IntegrityError, UsageError
from memories.store.records import BLOB, StoreKeys, open_row, seal_row

__all__ = [
    "AREA_BYTES",
    "STAGED",
    "adopt_rows",
    "delete_all",
    "delete_area",
    "new_area",
    "staged_row_id",
    "staged_rows",
]

STAGED = 2  # kind of a staged row (entries are 0, blobs 1)
AREA_BYTES = 16
_INDEX = struct.Struct(">I")
_MISSING = "a staged part of an upload is missing; nothing was stored"


def new_area() -> bytes:
    """A fresh random staging area id."""
    return secrets.token_bytes(AREA_BYTES)


def staged_row_id(area: bytes, index: int) -> bytes:
    """The row id of part ``index`` of ``area``.

    Raises:
        UsageError: the area is not 16 bytes or the index is outside 0..2**32-1.
    """
    if not isinstance(area, bytes) or len(area) != AREA_BYTES:
        raise UsageError("a staging area id is 16 bytes")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 2**32:
        raise UsageError("a staged part index is outside 0..2**32-1")
    return area + _INDEX.pack(index)


def staged_rows(
    keys: StoreKeys, area: bytes, seq: int, items: Sequence[tuple[int, bytes]]
) -> Iterator[tuple[int, bytes, int, bytes]]:
    """Rows ``(kind, id, seq, sealed)`` for the parts ``items`` (index, plaintext) of ``area``."""
    for index, value in items:
        row_id = staged_row_id(area, index)
        yield (STAGED, row_id, seq, seal_row(keys, row_id, seq, STAGED, value))


def adopt_rows(
    conn: sqlite3.Connection,
    keys: StoreKeys,
    sealing: StoreKeys,
    area: bytes,
    blob_keys: Sequence[str],
    seq: int,
) -> None:
    """Inside the caller's transaction: publish part ``i`` of ``area`` as blob ``blob_keys[i]``
    at ``seq`` and delete the area. One part is in memory at a time.

    Raises:
        IntegrityError: a part is missing or does not open (the transaction must roll back).
        sqlite3.Error: for the caller's transaction to translate (a blob key that exists
            raises ``sqlite3.IntegrityError``).
    """
    for index, key in enumerate(blob_keys):
        row_id = staged_row_id(area, index)
        found = conn.execute(
            "SELECT seq, value FROM state WHERE kind = ? AND id = ?", (STAGED, row_id)
        ).fetchone()
        if found is None:
            raise IntegrityError(_MISSING)
        plaintext = open_row(keys, row_id, found[0], STAGED, found[1])
        blob_id = keys.row_id_for(BLOB, key)
        conn.execute(
            "INSERT INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)",
            (BLOB, blob_id, seq, seal_row(sealing, blob_id, seq, BLOB, plaintext)),
        )
        del plaintext
    extra = conn.execute(
        "SELECT count(*) FROM state WHERE kind = ? AND substr(id, 1, ?) = ?",
        (STAGED, AREA_BYTES, area),
    ).fetchone()[0]
    if extra != len(blob_keys):
        # More parts than the commit names: the domain and the upload disagree.
        raise IntegrityError("an upload has parts its record does not name; nothing was stored")
    delete_area(conn, area)


def delete_area(conn: sqlite3.Connection, area: bytes) -> None:
    """Delete every staged part of ``area`` (no transaction of its own)."""
    conn.execute(
        "DELETE FROM state WHERE kind = ? AND substr(id, 1, ?) = ?", (STAGED, AREA_BYTES, area)
    )


def delete_all(conn: sqlite3.Connection) -> int:
    """Delete every staged part of every area; returns how many rows went."""
    return conn.execute("DELETE FROM state WHERE kind = ?", (STAGED,)).rowcount
