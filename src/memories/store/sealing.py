"""Sealing one commit's rows: the touched pages and new blobs, and the root digest they give."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from memories.store.pages import PageIndex, PagePlan, encode_page
from memories.store.records import BLOB, DIGEST_MODULUS, ENTRY, Root, StoreKeys, row_term, seal_row

__all__ = ["SealedRows", "seal_rows", "write_sealed"]

Row = tuple[int, bytes, int, bytes]  # (kind, id, seq, sealed value)


@dataclass(frozen=True)
class SealedRows:
    plan: PagePlan
    writes: list[Row]  # pages to insert or replace
    blobs: list[Row]  # write-once blobs
    digest: int  # the root digest once they are written
    rows: int  # how many pages the state then holds


def seal_rows(
    keys: StoreKeys,
    sealing: StoreKeys,
    index: PageIndex,
    entries: Mapping[str, bytes],
    changes: Mapping[str, bytes | None],
    blobs: Mapping[str, bytes],
    root: Root,
    seq: int,
) -> SealedRows:
    """Seal under ``sealing`` only the pages ``changes`` touch, and every new blob, at ``seq``.

    Blob row ids stay those of ``keys`` (they are carried across a key rotation).
    """
    # Only the pages the changes touch are rewritten: the cost follows the mutation.
    plan = index.plan(changes, entries)
    total = root.digest
    count = len(index.pages)
    for page_id in plan.deletes:
        total -= row_term(page_id, index.seq_of(page_id), ENTRY)
        count -= 1
    writes: list[Row] = []
    for page_id, items in plan.writes.items():
        if page_id in index.pages:
            total -= row_term(page_id, index.seq_of(page_id), ENTRY)
        else:
            count += 1
        total += row_term(page_id, seq, ENTRY)
        sealed = seal_row(sealing, page_id, seq, ENTRY, encode_page(items.items()))
        writes.append((ENTRY, page_id, seq, sealed))
    sealed_blobs: list[Row] = []
    for key, value in blobs.items():
        row_id = keys.row_id_for(BLOB, key)
        sealed_blobs.append((BLOB, row_id, seq, seal_row(sealing, row_id, seq, BLOB, value)))
    return SealedRows(plan, writes, sealed_blobs, total % DIGEST_MODULUS, count)


def write_sealed(conn: sqlite3.Connection, rows: SealedRows) -> None:
    """Write ``rows`` inside the caller's transaction: deleted pages, changed pages, new blobs."""
    if rows.plan.deletes:
        conn.executemany(
            "DELETE FROM state WHERE kind = 0 AND id = ?", [(d,) for d in rows.plan.deletes]
        )
    if rows.writes:
        conn.executemany(
            "INSERT OR REPLACE INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)", rows.writes
        )
    if rows.blobs:  # write-once: a plain INSERT refuses an existing key
        conn.executemany("INSERT INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)", rows.blobs)
