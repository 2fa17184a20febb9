"""What unlock checks before it trusts the state: root, header, every page, the chain's ends.

Each check costs an index lookup or the pages the store must decrypt anyway; none scans the
checkpoint chain or the blobs (``verify`` does that).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from memories.errors import IntegrityError
from memories.store.checkpoints import Checkpoint, chain_hash
from memories.store.errors import HeaderChangedError
from memories.store.pages import PageIndex, decode_page
from memories.store.records import (
    DIGEST_MODULUS,
    ENTRY,
    Root,
    StoreKeys,
    header_digest,
    open_row,
    row_term,
)

__all__ = ["HEADER_CHANGED", "check_chain_ends", "load_pages", "open_root"]

HEADER_CHANGED = (
    "the store header was changed: the password opens the key header present, but that header "
    "does not belong to this store's data (was it put back from a copy made before a password "
    "change or key rotation?); refusing to open it; put back the current header or restore the "
    "whole store from a backup"
)


def open_root(conn: sqlite3.Connection, keys: StoreKeys, header: Mapping[str, bytes]) -> Root:
    """Open the root and check that it binds ``header``; adopt any carried keys.

    Raises ``HeaderChangedError`` when the key the header gave opens neither the root nor the
    newest checkpoint, or the root binds other header rows; ``IntegrityError`` when only the
    root is damaged.
    """
    try:
        root = Root.open(keys, header["root"])
    except IntegrityError:
        if _newest_checkpoint_opens(conn, keys):
            raise IntegrityError(
                "the store root is damaged; restore the store from a backup"
            ) from None
        raise HeaderChangedError(HEADER_CHANGED) from None
    try:
        keys.unwrap_carried(header)
    except IntegrityError:
        raise HeaderChangedError(HEADER_CHANGED) from None
    if root.version >= 2 and root.header != header_digest(header):
        raise HeaderChangedError(HEADER_CHANGED)
    return root


def _newest_checkpoint_opens(conn: sqlite3.Connection, keys: StoreKeys) -> bool:
    """Whether ``keys`` open the newest checkpoint: tells a damaged root from a foreign key."""
    row = conn.execute("SELECT seq, value FROM checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return False
    try:
        Checkpoint.open(keys, row[0], bytes(row[1]))
    except IntegrityError:
        return False
    return True


def load_pages(
    conn: sqlite3.Connection, keys: StoreKeys, root: Root
) -> tuple[dict[str, bytes], PageIndex]:
    """Decrypt every entry page and check they add up to the root. Raises ``IntegrityError``."""
    entries: dict[str, bytes] = {}
    index = PageIndex()
    total = 0
    for row_id, seq, value in conn.execute("SELECT id, seq, value FROM state WHERE kind = 0"):
        if not 0 < seq <= root.seq:
            raise IntegrityError("a store record is out of place")
        total += row_term(row_id, seq, ENTRY)
        items = decode_page(open_row(keys, row_id, seq, ENTRY, value))
        before = len(entries)
        entries.update(items)
        if len(entries) != before + len(items):
            raise IntegrityError("a store record appears twice")
        index.load(row_id, seq, items)
    if len(index.pages) != root.rows or total % DIGEST_MODULUS != root.digest:
        raise IntegrityError(
            "the store's records do not match its root (a record was deleted, added or rolled back)"
        )
    return entries, index


def check_chain_ends(conn: sqlite3.Connection, keys: StoreKeys, root: Root) -> None:
    """Both ends of the checkpoint chain, by index lookups. Raises ``IntegrityError``."""
    newest = conn.execute("SELECT seq, value FROM checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
    if newest is None:
        if root.seq != 0:
            raise IntegrityError("the store's checkpoints are missing")
        return
    seq, value = newest
    if seq != root.seq or chain_hash(value) != root.checkpoint:
        raise IntegrityError("the newest checkpoint does not match the store root")
    Checkpoint.open(keys, seq, value)
    oldest_seq, oldest = conn.execute(
        "SELECT seq, value FROM checkpoints ORDER BY seq ASC LIMIT 1"
    ).fetchone()
    if oldest_seq != root.first or (root.genesis and chain_hash(oldest) != root.genesis):
        raise IntegrityError(
            "the store's oldest audit entries were removed or replaced (the checkpoint chain no "
            "longer starts where the store root says); restore the store from a backup"
        )
    entry = Checkpoint.open(keys, oldest_seq, oldest)
    if root.first == 1 and entry.prev:
        raise IntegrityError("the checkpoint chain does not start at its first entry")
