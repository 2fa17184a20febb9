"""How the store seals what it writes: rows, the root, checkpoints and the rollback anchor.

Each value the store keeps is sealed under a subkey of the master key. A row's associated data
binds the store id, the row's opaque id, its sequence number and its class, so a row moved to
another id, copied from another store or replaced by an older version of itself fails to open.
The root keeps an order-independent sum of one hash per entry (id, seq) so a deleted, added or
rolled-back entry is caught when the store is unlocked. Blobs are written once and never
changed, so there is no older version to roll back to; one that goes missing is caught when it is
read.

Associated data here is a fixed binary layout rather than canonical JSON: it is built for every
row at unlock, and the layout is as unambiguous (every field has a fixed width).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from dataclasses import dataclass

from memories.crypto import (
    Sealer,
    associated_data,
    canonical_bytes,
    derive_subkey,
    keyed_digest,
    seal,
    unseal,
    wipe,
)
from memories.errors import IntegrityError

__all__ = [
    "BLOB",
    "DIGEST_MODULUS",
    "ENTRY",
    "Root",
    "StoreKeys",
    "open_row",
    "row_term",
    "seal_row",
]

ENTRY = 0  # mutable; decrypted at unlock and kept in memory
BLOB = 1  # written once; decrypted only when read

DIGEST_MODULUS = 1 << 256
_ROW_AAD = b"memories.row\x00\x01"
_TERM_TAG = b"memories.row-term\x00"
_ANCHOR_TAG = b"memories.anchor\x00"
_SEQ = struct.Struct(">Q")


class StoreKeys:
    """Subkeys of the master key, held as wipeable buffers while the store is unlocked."""

    def __init__(self, master: bytearray, store_id: str) -> None:
        self.store_id = store_id
        self.store_bytes = bytes.fromhex(store_id)
        self.master = master
        self.state = derive_subkey(master, "store/state")
        self.row_id = derive_subkey(master, "store/row-id")
        self.checkpoint = derive_subkey(master, "store/checkpoint")
        self.anchor = derive_subkey(master, "store/anchor")
        self.sealer = Sealer(self.state)

    def __repr__(self) -> str:
        return f"StoreKeys(store={self.store_id[:8]}…)"

    def wipe(self) -> None:
        for buffer in (self.master, self.state, self.row_id, self.checkpoint, self.anchor):
            wipe(buffer)

    def row_id_for(self, kind: int, key: str) -> bytes:
        return keyed_digest(bytes(self.row_id), bytes((kind,)) + key.encode("utf-8"))

    def anchor_mac(self, seq: int, head: bytes) -> bytes:
        message = _ANCHOR_TAG + self.store_bytes + _SEQ.pack(seq) + head
        return hmac.new(bytes(self.anchor), message, hashlib.sha256).digest()


def _row_aad(keys: StoreKeys, row_id: bytes, seq: int, kind: int) -> bytes:
    return _ROW_AAD + keys.store_bytes + row_id + _SEQ.pack(seq) + bytes((kind,))


def row_term(row_id: bytes, seq: int, kind: int) -> int:
    """This row's contribution to the root's digest (a sum modulo 2**256)."""
    data = _TERM_TAG + row_id + _SEQ.pack(seq) + bytes((kind,))
    return int.from_bytes(hashlib.sha256(data).digest(), "big")


def seal_row(keys: StoreKeys, row_id: bytes, seq: int, kind: int, plaintext: bytes) -> bytes:
    return keys.sealer.seal(plaintext, _row_aad(keys, row_id, seq, kind))


def open_row(keys: StoreKeys, row_id: bytes, seq: int, kind: int, blob: bytes) -> bytes:
    """Open one row. Raises ``IntegrityError`` if it was altered, moved or copied."""
    return keys.sealer.unseal(blob, _row_aad(keys, row_id, seq, kind))


@dataclass(frozen=True)
class Root:
    """The small record every commit rewrites: what the whole state must add up to."""

    seq: int
    rows: int
    digest: int
    checkpoint: str  # tagged hash of the newest checkpoint's ciphertext ("" before the first)

    def seal(self, keys: StoreKeys) -> bytes:
        body = canonical_bytes(
            {
                "t": "memories.root",
                "v": 1,
                "store": keys.store_id,
                "seq": self.seq,
                "rows": self.rows,
                "digest": f"{self.digest:064x}",
                "checkpoint": self.checkpoint,
            }
        )
        return seal(keys.state, body, associated_data("root", store=keys.store_id))

    @classmethod
    def open(cls, keys: StoreKeys, blob: bytes) -> Root:
        """Raises ``IntegrityError`` if the root was altered or belongs to another store."""
        body = unseal(keys.state, blob, associated_data("root", store=keys.store_id))
        try:
            data = json.loads(body)
            if data.get("t") != "memories.root" or data.get("store") != keys.store_id:
                raise ValueError("not this store's root")
            return cls(
                seq=int(data["seq"]),
                rows=int(data["rows"]),
                digest=int(data["digest"], 16),
                checkpoint=str(data["checkpoint"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError("the store root is malformed") from exc
