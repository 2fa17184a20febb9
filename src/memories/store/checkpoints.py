"""Checkpoints: one encrypted, hash-chained entry per commit — the store's audit trail.

Each entry names what the commit did (an action such as ``asset.put`` or ``read.intent`` and a
few ids), never content, prompts or keys. Each entry carries the hash of the previous entry's
ciphertext and the root carries the hash of the newest, so a removed, reordered or replaced
entry breaks the chain.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from memories.crypto import associated_data, canonical_bytes, digest, seal, unseal
from memories.errors import IntegrityError
from memories.store.records import StoreKeys

__all__ = ["Checkpoint", "chain_hash"]

Detail = str | int | bool


def chain_hash(blob: bytes) -> str:
    """The hash a checkpoint's successor (and the root) records for it."""
    return digest(blob)


@dataclass(frozen=True)
class Checkpoint:
    seq: int
    at: str  # RFC 3339 UTC
    action: str
    prev: str  # chain_hash of the previous entry's ciphertext, "" for the first
    digest: str  # the root digest after this commit, hex
    details: Mapping[str, Detail] = field(default_factory=dict)

    def seal(self, keys: StoreKeys) -> bytes:
        body = canonical_bytes(
            {
                "t": "memories.checkpoint",
                "v": 1,
                "seq": self.seq,
                "at": self.at,
                "action": self.action,
                "prev": self.prev,
                "digest": self.digest,
                "details": dict(self.details),
            }
        )
        aad = associated_data("checkpoint", store=keys.store_id, seq=self.seq)
        return seal(keys.checkpoint, body, aad)

    @classmethod
    def open(cls, keys: StoreKeys, seq: int, blob: bytes) -> Checkpoint:
        """Raises ``IntegrityError`` if the entry was altered, moved or copied."""
        aad = associated_data("checkpoint", store=keys.store_id, seq=seq)
        body = unseal(keys.checkpoint, blob, aad)
        try:
            data = json.loads(body)
            if data.get("t") != "memories.checkpoint" or int(data["seq"]) != seq:
                raise ValueError("not a checkpoint")
            details = data.get("details", {})
            if not isinstance(details, dict):
                raise ValueError("bad details")
            return cls(
                seq=seq,
                at=str(data["at"]),
                action=str(data["action"]),
                prev=str(data["prev"]),
                digest=str(data["digest"]),
                details=details,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError("a checkpoint is malformed") from exc

    def to_dict(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "at": self.at,
            "action": self.action,
            "details": dict(self.details),
        }
