"""How the store seals what it writes: rows, the root, checkpoints and the rollback anchors.

Each value the store keeps is sealed under a subkey of the master key. A row's associated data
binds the store id, the row's opaque id, its sequence number and its class, so a row moved to
another id, copied from another store or replaced by an older version of itself fails to open.
The root keeps an order-independent sum of one hash per entry (id, seq) so a deleted, added or
rolled-back entry is caught when the store is unlocked. Blobs are written once and never
changed, so there is no older version to roll back to; one that goes missing is caught when it is
read.

The root also binds the header rows that decide which key opens the store (``format``,
``store_id``, ``kdf``, ``master`` and, after a master-key rotation, the carried ``row_key`` and
``anchor_key``), and the two ends of the checkpoint chain (the first sequence number and the
hash of the oldest entry) so a header put back from an older copy, or a pruned chain, is refused
at unlock without reading the whole chain.

Associated data here is a fixed binary layout rather than canonical JSON: it is built for every
row at unlock, and the layout is as unambiguous (every field has a fixed width).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from memories.crypto import (
    Sealer,
    associated_data,
    b64u_encode,
    canonical_bytes,
    derive_subkey,
    tagged_hash,
    unseal,
    unwrap_key,
    wipe,
    wrap_key,
)
from memories.errors import IntegrityError, LockedError

__all__ = [
    "BLOB",
    "BOUND_HEADER",
    "DIGEST_MODULUS",
    "ENTRY",
    "ROOT_VERSION",
    "Root",
    "StoreKeys",
    "header_digest",
    "open_row",
    "row_term",
    "seal_row",
]

ENTRY = 0  # mutable; decrypted at unlock and kept in memory
BLOB = 1  # written once; decrypted only when read

DIGEST_MODULUS = 1 << 256
ROOT_VERSION = 2
# The header rows whose replacement changes who can open the store or what the data means.
BOUND_HEADER = ("format", "store_id", "kdf", "master", "row_key", "anchor_key")
_HEADER_TAG = "memories.store-header"
_ROW_AAD = b"memories.row\x00\x01"
_TERM_TAG = b"memories.row-term\x00"
_ANCHOR_TAG = b"memories.anchor\x00"
_SEQ = struct.Struct(">Q")
_WIPED = "the store keys were wiped; run `memories unlock`"
_ROW_ID_CACHE = 4096


class StoreKeys:
    """Subkeys of the master key, held as wipeable buffers while the store is unlocked.

    ``state`` and ``checkpoint`` encrypt; ``row_id`` names blob rows and ``anchor`` MACs the
    rollback anchors. A master-key rotation replaces the encrypting keys and *carries* the
    other two (re-wrapped under the new master), because blob row ids are HMACs of keys the
    store never learns and so cannot be recomputed.

    After :meth:`wipe` every buffer is zero, the prepared cipher is dropped and every method
    that needs a key raises ``LockedError``.
    """

    def __init__(self, master: bytearray, store_id: str) -> None:
        self.store_id = store_id
        self.store_bytes = bytes.fromhex(store_id)
        self.master = master
        self.state = derive_subkey(master, "store/state")
        self.row_id = derive_subkey(master, "store/row-id")
        self.checkpoint = derive_subkey(master, "store/checkpoint")
        self.anchor = derive_subkey(master, "store/anchor")
        self._sealer: Sealer | None = Sealer(self.state)
        # Every commit and every read intent seals a checkpoint: prepared once, like the state's.
        self._checkpoint_sealer: Sealer | None = Sealer(self.checkpoint)
        # The root's associated data names only the store: the same bytes for every commit.
        self.root_aad = associated_data("root", store=store_id)
        # Row ids are HMACs of keys the domain reads again and again; the ids themselves are
        # no secret (they are the rows' names in the file), so they are kept until the wipe.
        self._row_ids: dict[tuple[int, str], bytes] = {}

    def __repr__(self) -> str:
        return f"StoreKeys(store={self.store_id[:8]}…)"

    @property
    def sealer(self) -> Sealer:
        if self._sealer is None:
            raise LockedError(_WIPED)
        return self._sealer

    @property
    def checkpoint_sealer(self) -> Sealer:
        if self._checkpoint_sealer is None:
            raise LockedError(_WIPED)
        return self._checkpoint_sealer

    @property
    def wiped(self) -> bool:
        return self._sealer is None

    def buffers(self) -> tuple[bytearray, ...]:
        """Every key buffer held (for wiping and for tests that check the wipe)."""
        return (self.master, self.state, self.row_id, self.checkpoint, self.anchor)

    def wipe(self) -> None:
        """Zero every buffer and drop the prepared ciphers (which keep their own key copies)."""
        for buffer in self.buffers():
            wipe(buffer)
        self._row_ids.clear()
        for sealer in (self._sealer, self._checkpoint_sealer):
            if sealer is not None:
                sealer.close()
        self._sealer = None
        self._checkpoint_sealer = None

    def carry(self, row_id: bytearray, anchor: bytearray) -> None:
        """Use carried ``row_id`` and ``anchor`` keys instead of the ones derived from master."""
        wipe(self.row_id)
        wipe(self.anchor)
        self.row_id, self.anchor = row_id, anchor
        self._row_ids.clear()

    def wrap_carried(self) -> dict[str, bytes]:
        """The ``row_key`` and ``anchor_key`` header rows: carried keys under this state key."""
        self.sealer  # noqa: B018 - raises LockedError once wiped
        return {
            "row_key": wrap_key(self.state, self.row_id, **self._carried_context("row")),
            "anchor_key": wrap_key(self.state, self.anchor, **self._carried_context("anchor")),
        }

    def unwrap_carried(self, header: Mapping[str, bytes]) -> None:
        """Adopt the carried keys named by ``header`` (no-op before any rotation).

        Raises ``IntegrityError`` when a carried key does not open under this master.
        """
        if "row_key" not in header and "anchor_key" not in header:
            return
        if "row_key" not in header or "anchor_key" not in header:
            raise IntegrityError("the store header is incomplete")
        row_id = unwrap_key(self.state, header["row_key"], **self._carried_context("row"))
        try:
            anchor = unwrap_key(self.state, header["anchor_key"], **self._carried_context("anchor"))
        except IntegrityError:
            wipe(row_id)
            raise
        self.carry(row_id, anchor)

    def _carried_context(self, which: str) -> dict[str, str]:
        return {"purpose": f"store.{which}-key", "store": self.store_id}

    def row_id_for(self, kind: int, key: str) -> bytes:
        if self._sealer is None:
            raise LockedError(_WIPED)
        found = self._row_ids.get((kind, key))
        if found is not None:
            return found
        # hmac accepts the bytearray itself: no immutable copy of the key is made here.
        data = bytes((kind,)) + key.encode("utf-8")
        row_id = hmac.new(self.row_id, data, hashlib.sha256).digest()
        if len(self._row_ids) >= _ROW_ID_CACHE:
            self._row_ids.clear()
        self._row_ids[(kind, key)] = row_id
        return row_id

    def anchor_mac(self, seq: int, head: bytes) -> bytes:
        if self._sealer is None:
            raise LockedError(_WIPED)
        message = _ANCHOR_TAG + self.store_bytes + _SEQ.pack(seq) + head
        return hmac.new(self.anchor, message, hashlib.sha256).digest()


def header_digest(header: Mapping[str, bytes]) -> str:
    """The tagged hash of the bound header rows that are present (absent rows are absent)."""
    bound = {name: b64u_encode(header[name]) for name in BOUND_HEADER if name in header}
    return tagged_hash(_HEADER_TAG, canonical_bytes(bound))


def row_aad(keys: StoreKeys, row_id: bytes, seq: int, kind: int) -> bytes:
    return _ROW_AAD + keys.store_bytes + row_id + _SEQ.pack(seq) + bytes((kind,))


def row_term(row_id: bytes, seq: int, kind: int) -> int:
    """This row's contribution to the root's digest (a sum modulo 2**256)."""
    data = _TERM_TAG + row_id + _SEQ.pack(seq) + bytes((kind,))
    return int.from_bytes(hashlib.sha256(data).digest(), "big")


def seal_row(keys: StoreKeys, row_id: bytes, seq: int, kind: int, plaintext: bytes) -> bytes:
    return keys.sealer.seal(plaintext, row_aad(keys, row_id, seq, kind))


def open_row(keys: StoreKeys, row_id: bytes, seq: int, kind: int, blob: bytes) -> bytes:
    """Open one row. Raises ``IntegrityError`` if it was altered, moved or copied."""
    return keys.sealer.unseal(blob, row_aad(keys, row_id, seq, kind))


@dataclass(frozen=True)
class Root:
    """The small record every commit rewrites: what the whole state must add up to.

    Version 1 roots (before header and chain binding) are still read; the first commit after
    unlock rewrites them as version 2.
    """

    seq: int
    rows: int
    digest: int
    checkpoint: str  # tagged hash of the newest checkpoint's ciphertext ("" before the first)
    header: str = ""  # header_digest of the bound header rows
    first: int = 1  # seq of the oldest checkpoint
    genesis: str = ""  # chain hash of the oldest checkpoint ("" before the first)
    rekeyed: int = 0  # seq of the last master-key rotation (chain hashes before it changed)
    version: int = ROOT_VERSION

    def seal(self, keys: StoreKeys) -> bytes:
        body = canonical_bytes(
            {
                "t": "memories.root",
                "v": ROOT_VERSION,
                "store": keys.store_id,
                "seq": self.seq,
                "rows": self.rows,
                "digest": f"{self.digest:064x}",
                "checkpoint": self.checkpoint,
                "header": self.header,
                "first": self.first,
                "genesis": self.genesis,
                "rekeyed": self.rekeyed,
            }
        )
        return keys.sealer.seal(body, keys.root_aad)

    @classmethod
    def open(cls, keys: StoreKeys, blob: bytes) -> Root:
        """Raises ``IntegrityError`` if the root was altered or belongs to another store."""
        body = unseal(keys.state, blob, associated_data("root", store=keys.store_id))
        try:
            data = json.loads(body)
            if data.get("t") != "memories.root" or data.get("store") != keys.store_id:
                raise ValueError("not this store's root")
            version = int(data["v"])
            if version not in (1, ROOT_VERSION):
                raise ValueError("unknown root version")
            legacy = version == 1
            return cls(
                seq=int(data["seq"]),
                rows=int(data["rows"]),
                digest=int(data["digest"], 16),
                checkpoint=str(data["checkpoint"]),
                header="" if legacy else str(data["header"]),
                first=1 if legacy else int(data["first"]),
                genesis="" if legacy else str(data["genesis"]),
                rekeyed=0 if legacy else int(data["rekeyed"]),
                version=version,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError("the store root is malformed") from exc
