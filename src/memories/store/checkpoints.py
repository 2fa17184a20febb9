"""Checkpoints: one encrypted, hash-chained entry per commit — the store's audit trail.

Each entry names what the commit did (an action such as ``asset.put`` or ``read.intent`` and a
few ids), never content, prompts or keys. Each entry carries the hash of the previous entry's
ciphertext and the root carries the hash of the newest and of the oldest entry and the oldest
entry's sequence number, so a removed, reordered or replaced entry breaks the chain: at the ends
that is seen at unlock, in between by every listing that covers it and by ``verify_all``.

A listing never fails because one entry is bad. What cannot be read is reported in place as a
marker entry (``problem`` set, ``reason`` in words), and the rest is returned:

- ``problem="damaged"``: the entry at ``seq`` does not decrypt or is malformed
  (``action="checkpoint.damaged"``, ``details={"reason": ...}``);
- ``problem="gap"``: entries ``details["first"]`` to ``details["last"]`` are missing
  (``seq`` is the newest missing one, ``action="checkpoint.gap"``);
- ``problem="unlinked"``: the entry decrypts, but is not the one its successor chained to
  (replaced by another copy's entry, or the chain was reordered); its own fields are kept.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memories.crypto import associated_data, canonical_bytes, digest, unseal
from memories.errors import IntegrityError
from memories.store.records import Root, StoreKeys

__all__ = ["DAMAGED", "GAP", "UNLINKED", "Checkpoint", "chain_hash", "list_chain", "read_chain"]

Detail = str | int | bool

DAMAGED = "damaged"
GAP = "gap"
UNLINKED = "unlinked"


def chain_hash(blob: bytes) -> str:
    """The hash a checkpoint's successor (and the root) records for it."""
    return digest(blob)


@dataclass(frozen=True)
class Checkpoint:
    seq: int
    at: str  # RFC 3339 UTC ("" for a marker)
    action: str
    prev: str  # chain_hash of the previous entry's ciphertext, "" for the first
    digest: str  # the root digest after this commit, hex
    details: Mapping[str, Detail] = field(default_factory=dict)
    problem: str = ""  # "" for a verified entry; DAMAGED, GAP or UNLINKED
    reason: str = ""  # what is wrong, in words (never content)

    @property
    def ok(self) -> bool:
        return not self.problem

    @classmethod
    def damaged(cls, seq: int, reason: str) -> Checkpoint:
        details = {"reason": reason}
        return cls(seq, "", "checkpoint.damaged", "", "", details, DAMAGED, reason)

    @classmethod
    def gap(cls, first: int, last: int) -> Checkpoint:
        count = last - first + 1
        reason = f"{count} audit entr{'y is' if count == 1 else 'ies are'} missing"
        details: dict[str, Detail] = {"first": first, "last": last, "reason": reason}
        return cls(last, "", "checkpoint.gap", "", "", details, GAP, reason)

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
        return keys.checkpoint_sealer.seal(body, aad)  # LockedError once the keys are wiped

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
        shown: dict[str, object] = {
            "seq": self.seq,
            "at": self.at,
            "action": self.action,
            "details": dict(self.details),
        }
        if self.problem:
            shown["problem"] = self.problem
            shown["reason"] = self.reason
        return shown


def list_chain(
    keys: StoreKeys,
    root: Root,
    rows: Sequence[tuple[int, bytes]],
    *,
    successor: tuple[int, str | None],
    exhausted: bool,
) -> list[Checkpoint]:
    """Open and link-check ``rows`` (newest first), with markers for what is wrong.

    ``successor`` is ``(seq, prev)`` of the entry just newer than the window: the root itself
    (``root.seq + 1, root.checkpoint``) for the newest page, or the entry at ``before``; its
    ``prev`` is None when that entry could not be read. ``exhausted`` says no older rows exist
    below the last one, so a missing bottom of the chain is reported too.
    """
    listed: list[Checkpoint] = []
    next_seq, next_prev = successor
    for seq, value in rows:
        if seq < next_seq - 1:
            listed.append(Checkpoint.gap(seq + 1, next_seq - 1))
            next_prev = None  # nothing to compare across a gap
        try:
            entry = Checkpoint.open(keys, seq, value)
        except IntegrityError:
            listed.append(Checkpoint.damaged(seq, "the entry does not decrypt or is malformed"))
            next_seq, next_prev = seq, None
            continue
        reason = _link_problem(root, entry, chain_hash(value), next_prev)
        if reason:
            entry = Checkpoint(
                entry.seq,
                entry.at,
                entry.action,
                entry.prev,
                entry.digest,
                entry.details,
                UNLINKED,
                reason,
            )
        listed.append(entry)
        next_seq, next_prev = seq, entry.prev
    if exhausted and next_seq > root.first:
        listed.append(Checkpoint.gap(root.first, next_seq - 1))
    return listed


def _link_problem(root: Root, entry: Checkpoint, own_hash: str, next_prev: str | None) -> str:
    if next_prev is not None and next_prev != own_hash:
        return "this is not the entry the next one follows (replaced, or the chain was reordered)"
    if entry.seq == root.first:
        if root.genesis and own_hash != root.genesis:
            return "this is not the oldest entry the store root records"
        if root.first == 1 and entry.prev:
            return "the oldest entry claims a predecessor"
    return ""


def read_chain(
    conn: sqlite3.Connection, keys: StoreKeys, root: Root, limit: int, before: int | None
) -> list[Checkpoint]:
    """Up to ``limit`` checkpoints older than ``before`` (None: the newest), newest first, each
    checked against its successor (:func:`list_chain`). Raises ``sqlite3.Error``."""
    upper = root.seq + 1 if before is None else min(before, root.seq + 1)
    successor: tuple[int, str | None] = (root.seq + 1, root.checkpoint)
    if upper <= root.seq:
        above = conn.execute("SELECT value FROM checkpoints WHERE seq = ?", (upper,)).fetchone()
        successor = (upper, None)
        if above is not None:
            with contextlib.suppress(IntegrityError):
                successor = (upper, Checkpoint.open(keys, upper, bytes(above[0])).prev)
    rows = conn.execute(
        "SELECT seq, value FROM checkpoints WHERE seq < ? ORDER BY seq DESC LIMIT ?",
        (upper, max(0, limit)),
    ).fetchall()
    return list_chain(keys, root, rows, successor=successor, exhausted=len(rows) < limit)
