"""The durable outbox/inbox: sync state kept in the encrypted store, beside everything else.

Records (entries are small and mutable, blobs write-once; all are ciphertext on disk)::

    entry  sync/targets                where objects go: folders and rclone remotes
    entry  sync/state                  outbox, inbox, receipts, per-target stamps (SyncState)
    entry  sync/quarantine/<object>    a revision that arrived and was not merged, and why
    blob   sync/blob/<name>            the exact bytes of an object or descriptor: ours until
                                       uploaded everywhere, others' until merged or quarantined

The outbox is ordered: a revision's object precedes the descriptor announcing it, so no device
publishes a descriptor before the objects it names. Once an entry is uploaded to every target
it is compacted into a receipt (its name); receipts stay local and never delete remote history.
The inbox holds verified-later descriptors whose objects have not all arrived, with a persisted
exponential retry delay.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Final, Literal

from memories.crypto import canonical_bytes
from memories.errors import IntegrityError

__all__ = [
    "STATE_KEY",
    "TARGETS_KEY",
    "InboxEntry",
    "OutboxEntry",
    "SyncState",
    "Target",
    "Targets",
    "backoff",
    "blob_key",
    "quarantine_key",
]

TARGETS_KEY: Final = "sync/targets"
STATE_KEY: Final = "sync/state"
QUARANTINE_PREFIX: Final = "sync/quarantine/"
#: Retry delays: 5 s doubling up to an hour.
_FIRST_DELAY: Final = 5.0
_MAX_DELAY: Final = 3600.0
_TARGET_ID = re.compile(r"[0-9a-f]{8}")

TargetKind = Literal["folder", "rclone"]


def blob_key(name: str) -> str:
    return f"sync/blob/{name}"


def quarantine_key(oid: str) -> str:
    return f"{QUARANTINE_PREFIX}{oid}"


def backoff(attempts: int) -> float:
    """Seconds to wait after ``attempts`` failed tries (5 s, 10 s, 20 s, … up to an hour)."""
    return float(min(_MAX_DELAY, _FIRST_DELAY * (2 ** max(0, min(attempts, 20) - 1))))


def _load(data: bytes, tag: str, what: str) -> dict[str, object]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise IntegrityError(f"the {what} record is malformed") from exc
    if not isinstance(doc, dict) or doc.get("t") != tag or doc.get("v") != 1:
        raise IntegrityError(f"the {what} record is malformed")
    return doc


@dataclass(frozen=True)
class Target:
    id: str
    kind: TargetKind
    location: str  # an absolute folder path, or REMOTE:PATH for rclone
    added_at: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "location": self.location,
            "added_at": self.added_at,
        }


@dataclass(frozen=True)
class Targets:
    items: tuple[Target, ...] = ()

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {"t": "memories.sync.targets", "v": 1, "targets": [t.to_dict() for t in self.items]}
        )

    @classmethod
    def from_bytes(cls, data: bytes | None) -> Targets:
        """Raises ``IntegrityError`` for a malformed record."""
        if data is None:
            return cls()
        doc = _load(data, "memories.sync.targets", "sync targets")
        try:
            raw = doc["targets"]
            if not isinstance(raw, list):
                raise TypeError("targets")
            items = []
            for item in raw:
                kind = item["kind"]
                if kind not in ("folder", "rclone") or not _TARGET_ID.fullmatch(item["id"]):
                    raise TypeError("target")
                items.append(
                    Target(str(item["id"]), kind, str(item["location"]), str(item["added_at"]))
                )
            return cls(tuple(items))
        except (KeyError, TypeError) as exc:
            raise IntegrityError("the sync targets record is malformed") from exc

    @staticmethod
    def new_id() -> str:
        return secrets.token_hex(4)


@dataclass
class OutboxEntry:
    name: str  # objects/<id> or descriptors/<id>
    uploaded: set[str] = field(default_factory=set)  # target ids


@dataclass
class InboxEntry:
    """A descriptor whose objects are not all here (or whose parents are not merged) yet."""

    name: str  # descriptors/<id>; its bytes are in blob sync/blob/<name>
    attempts: int = 0
    next_try: float = 0.0


@dataclass
class SyncState:
    """Outbox, inbox, receipts and stamps. Mutable while a handler prepares a commit."""

    #: Revision ids published or merged here: the walk for new local revisions stops at them.
    known: set[str] = field(default_factory=set)
    outbox: list[OutboxEntry] = field(default_factory=list)
    #: Names uploaded to every target (compacted outbox entries) and names merged from others.
    receipts: set[str] = field(default_factory=set)
    inbox: dict[str, InboxEntry] = field(default_factory=dict)
    #: Per target: the names already handled from its listing (taken, refused or ignored).
    seen: dict[str, set[str]] = field(default_factory=dict)
    #: Per target: the last completed pass (wall-clock seconds) and its counts.
    stamps: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Quarantined objects the user discarded: never quarantined again.
    discarded: set[str] = field(default_factory=set)
    refused: int = 0
    #: The local audit trail is published up to this checkpoint number.
    audit_cursor: int = 0

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": "memories.sync.state",
                "v": 1,
                "known": sorted(self.known),
                "outbox": [{"name": e.name, "uploaded": sorted(e.uploaded)} for e in self.outbox],
                "receipts": sorted(self.receipts),
                "inbox": [
                    {"name": e.name, "attempts": e.attempts, "next_try": e.next_try}
                    for e in sorted(self.inbox.values(), key=lambda e: e.name)
                ],
                "seen": {t: sorted(names) for t, names in sorted(self.seen.items())},
                "stamps": {t: dict(s) for t, s in sorted(self.stamps.items())},
                "discarded": sorted(self.discarded),
                "refused": self.refused,
                "audit_cursor": self.audit_cursor,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes | None) -> SyncState:
        """Raises ``IntegrityError`` for a malformed record."""
        if data is None:
            return cls()
        doc = _load(data, "memories.sync.state", "sync state")
        try:
            return cls(
                known=set(map(str, doc["known"])),  # type: ignore[call-overload]
                outbox=[
                    OutboxEntry(str(e["name"]), set(map(str, e["uploaded"])))
                    for e in doc["outbox"]  # type: ignore[attr-defined]
                ],
                receipts=set(map(str, doc["receipts"])),  # type: ignore[call-overload]
                inbox={
                    str(e["name"]): InboxEntry(
                        str(e["name"]), int(e["attempts"]), float(e["next_try"])
                    )
                    for e in doc["inbox"]  # type: ignore[attr-defined]
                },
                seen={
                    str(t): set(map(str, names))
                    for t, names in doc["seen"].items()  # type: ignore[attr-defined]
                },
                stamps={
                    str(t): {str(k): float(v) for k, v in s.items()}
                    for t, s in doc["stamps"].items()  # type: ignore[attr-defined]
                },
                discarded=set(map(str, doc["discarded"])),  # type: ignore[call-overload]
                refused=int(doc["refused"]),  # type: ignore[call-overload]
                # Written by later releases; a state without it publishes the whole trail once.
                audit_cursor=int(doc.get("audit_cursor", 0)),  # type: ignore[call-overload]
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("the sync state record is malformed") from exc

    def compact(self, targets: set[str]) -> None:
        """Turn outbox entries uploaded to every target into receipts (the bytes stay local)."""
        if not targets:
            return
        kept = []
        for entry in self.outbox:
            if targets <= entry.uploaded:
                self.receipts.add(entry.name)
            else:
                kept.append(entry)
        self.outbox = kept
