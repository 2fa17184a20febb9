"""Master-key rotation: every row and checkpoint re-sealed under new keys, inside one transaction.

The caller (``Store.rotate_master_key``) holds the transaction open: this module re-seals the
existing rows and checkpoints in place, and the caller then writes the rotation's own checkpoint,
the new root and the new header rows before ``COMMIT``. A crash or any failure before that
leaves every row under the old key; after it, every row is under the new one.

Rows keep their ids and sequence numbers, so the root's digest does not change. Checkpoint
ciphertexts do change, so the chain is rebuilt: each re-sealed entry's ``prev`` is the hash of
its re-sealed predecessor. The old chain is verified link by link as it is read; a store whose
chain or rows do not verify is not rotated (``IntegrityError``), because re-sealing would make
damage look authentic.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace

from memories.errors import IntegrityError
from memories.store.checkpoints import Checkpoint, chain_hash
from memories.store.records import Root, StoreKeys, open_row, seal_row

__all__ = ["reseal_all"]

_BATCH = 512


def reseal_all(
    conn: sqlite3.Connection,
    old: StoreKeys,
    new: StoreKeys,
    root: Root,
    progress: Callable[[int, int], None] | None,
) -> tuple[str, str]:
    """Re-seal every state row and checkpoint; return the new (newest hash, oldest hash).

    Raises ``IntegrityError`` when a row or checkpoint does not verify under ``old`` or the
    chain is broken; ``sqlite3.Error`` for the caller's transaction to translate.
    """
    rows = conn.execute("SELECT count(*) FROM state").fetchone()[0]
    total = rows + root.seq - root.first + 1
    done = 0

    def advance(step: int) -> None:
        nonlocal done
        done += step
        if progress is not None:
            progress(done, total)

    advance(0)
    last: tuple[int, bytes] = (-1, b"")
    while True:
        # Keyset pagination: rows updated in this transaction are never read twice.
        batch = conn.execute(
            "SELECT kind, id, seq, value FROM state WHERE (kind, id) > (?, ?)"
            " ORDER BY kind, id LIMIT ?",
            (*last, _BATCH),
        ).fetchall()
        if not batch:
            break
        updates = []
        for kind, row_id, seq, value in batch:
            if not 0 < seq <= root.seq:
                raise IntegrityError("a store record is out of place; the store was not rotated")
            plaintext = open_row(old, row_id, seq, kind, value)
            updates.append((seal_row(new, row_id, seq, kind, plaintext), kind, row_id))
        conn.executemany("UPDATE state SET value = ? WHERE kind = ? AND id = ?", updates)
        last = (batch[-1][0], batch[-1][1])
        advance(len(batch))
    old_prev, new_prev, genesis = "", "", ""
    expected = root.first
    after = root.first - 1
    while True:
        batch = conn.execute(
            "SELECT seq, value FROM checkpoints WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, _BATCH),
        ).fetchall()
        if not batch:
            break
        updates_cp = []
        for seq, value in batch:
            entry = Checkpoint.open(old, seq, value)
            old_hash = chain_hash(value)
            if seq == root.first:
                linked = not root.genesis or old_hash == root.genesis
                new_prev = entry.prev  # the oldest entry keeps what it chained to
            else:
                linked = entry.prev == old_prev
            if seq != expected or not linked:
                raise IntegrityError(
                    "the audit trail is broken; the store was not rotated (run a verify)"
                )
            old_prev = old_hash
            sealed = replace(entry, prev=new_prev).seal(new)
            new_prev = chain_hash(sealed)
            genesis = genesis or new_prev
            updates_cp.append((sealed, seq))
            expected += 1
        conn.executemany("UPDATE checkpoints SET value = ? WHERE seq = ?", updates_cp)
        after = batch[-1][0]
        advance(len(batch))
    if expected != root.seq + 1 or old_prev != root.checkpoint:
        raise IntegrityError("the audit trail is broken; the store was not rotated (run a verify)")
    return new_prev, genesis
