"""One sync pass in three steps, so transport I/O never runs under the service lock.

1. :func:`prepare` (under the lock): *enqueue* everything of this device not yet published —
   policy entries, revisions, audit records (:mod:`memories.sync.publish`): the objects' exact
   bytes and signed descriptors go into the encrypted state in one commit, before any
   transport I/O — then hand out a :class:`Plan`: the ciphertext still to upload,
   the names already handled, the inbox's due descriptors. Never a key or a credential.
2. :func:`execute` (no lock): bounded list/put/get against one transport. Every byte fetched
   is checked against its name; a partial or tampered object is "not there yet".
3. :func:`memories.sync.merge.ack` (under the lock again): checks the session generation the
   plan was made in, then validates and merges what arrived, and commits the queue state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from memories.errors import MemoriesError
from memories.store import Store
from memories.sync.errors import ObjectMissing, TransportError
from memories.sync.objects import MAX_ANNOUNCED, Descriptor, object_name
from memories.sync.publish import enqueue
from memories.sync.quarantine import list_quarantine
from memories.sync.queue import STATE_KEY, TARGETS_KEY, SyncState, Target, Targets, blob_key
from memories.sync.stored import has_blob
from memories.sync.transports.base import Transport, content_matches, is_name
from memories.vault import Vaults

__all__ = [
    "MAX_GETS",
    "MAX_GET_BYTES",
    "MAX_PENDING",
    "MAX_PUTS",
    "Outcome",
    "Plan",
    "execute",
    "prepare",
    "referenced_blobs",
]

#: Bounds of one pass; ``sync now`` runs passes until nothing is left. A pass fetches at most
#: ``MAX_GETS`` objects and stops fetching once ``MAX_GET_BYTES`` have arrived (one object of
#: any size always comes), so a pass of small revisions is large (fewer passes, each one
#: commit) and one of large files stays small in memory.
MAX_PUTS: Final = 1024
MAX_GETS: Final = 4096
MAX_GET_BYTES: Final = 64 * 1024 * 1024
#: Inbox capacity: beyond it, listing takes no new descriptors (back-pressure).
MAX_PENDING: Final = 4096


@dataclass(frozen=True)
class Plan:
    """What one pass against one target may do. Ciphertext and names only."""

    generation: int  # the store's unlock generation when the plan was made
    target: Target
    uploads: tuple[tuple[str, bytes], ...]  # outbox entries not yet on this target, in order
    ours: frozenset[str]  # names this device published (never fetched back)
    handled: frozenset[str]  # names from this target's listing already dealt with
    pending: tuple[tuple[str, tuple[str, ...]], ...]  # due inbox descriptors, missing objects
    have: frozenset[str]  # object names whose bytes are stored here already
    capacity: int  # how many new descriptors the inbox can take
    enqueued: int  # objects enqueued by this prepare
    more_uploads: bool  # the outbox holds more than this pass uploads
    audit_scanned: int = 0  # the local audit trail was read up to this checkpoint
    #: Announced object names whose bytes were not stored when the plan was made, and the
    #: store's commit number then: while it is unchanged, they are still not stored.
    absent: frozenset[str] = frozenset()
    seq: int = -1

    def __repr__(self) -> str:
        return f"Plan(target={self.target.id}, uploads={len(self.uploads)})"


@dataclass
class Outcome:
    """What :func:`execute` did; handed to ``ack``."""

    uploaded: list[str] = field(default_factory=list)
    listed: int = 0
    descriptors: dict[str, bytes] = field(default_factory=dict)  # new, fetched (unverified)
    objects: dict[str, bytes] = field(default_factory=dict)  # fetched, hash-checked
    missing: set[str] = field(default_factory=set)  # named by a descriptor, not fetchable yet
    deferred_listing: bool = False  # back-pressure or the get bound left names for later
    error: str | None = None  # a transport failure that ended the pass early


def load_state(store: Store) -> SyncState:
    return SyncState.from_bytes(store.get(STATE_KEY))


def load_targets(store: Store) -> Targets:
    return Targets.from_bytes(store.get(TARGETS_KEY))


def prepare(vaults: Vaults, target: Target, *, at: float) -> Plan:
    """Enqueue new local revisions (committed before anything else) and plan a pass.

    Must run under the service lock. Raises ``LockedError``, ``IntegrityError`` for a damaged
    record, and what ``Store.commit`` raises (nothing is enqueued then).
    """
    store = vaults.store
    state = load_state(store)
    enqueued = enqueue(vaults, state)
    uploads: list[tuple[str, bytes]] = []
    more = False
    for entry in state.outbox:
        if target.id in entry.uploaded:
            continue
        if len(uploads) >= MAX_PUTS:
            more = True
            break
        uploads.append((entry.name, store.get_blob(blob_key(entry.name))))
    pending = []
    have: set[str] = set()
    absent: set[str] = set()
    for waiting in state.inbox.values():
        descriptor = Descriptor.from_bytes(store.get_blob(blob_key(waiting.name)))
        missing: dict[str, None] = {}
        for name in (object_name(a.oid) for a in descriptor.objects):
            if name in have:
                continue
            if name in absent or not has_blob(store, blob_key(name)):
                absent.add(name)
                missing[name] = None
            else:
                have.add(name)
        if missing and waiting.next_try <= at:
            pending.append((waiting.name, tuple(missing)))
    ours = {e.name for e in state.outbox} | {
        n for n in state.receipts if n.startswith("descriptors/")
    }
    return Plan(
        generation=store.generation,
        target=target,
        uploads=tuple(uploads),
        ours=frozenset(ours),
        handled=frozenset(state.seen.get(target.id, set()) | set(state.inbox)),
        pending=tuple(pending),
        have=frozenset(have),
        capacity=max(0, MAX_PENDING - len(state.inbox)),
        enqueued=enqueued.objects,
        audit_scanned=enqueued.audit_scanned,
        more_uploads=more,
        absent=frozenset(absent),
        seq=store.seq,
    )


def execute(
    plan: Plan, transport: Transport, *, progress: Callable[[str, int], None] | None = None
) -> Outcome:
    """Bounded put/get/list for ``plan`` on ``transport``, with no lock held.

    Never raises a transport's error: a failure ends the pass and is reported in
    ``Outcome.error`` (what was done before it still counts).
    """
    outcome = Outcome()
    tick = progress or (lambda _what, _n: None)
    try:
        for name, data in plan.uploads:
            transport.put(name, data)
            outcome.uploaded.append(name)
            tick("up", 1)
        listed = set(transport.list())
        outcome.listed = len(listed)
        fresh = sorted(
            n
            for n in listed
            if n.startswith("descriptors/") and n not in plan.handled and n not in plan.ours
        )
        if len(fresh) > plan.capacity:
            fresh, outcome.deferred_listing = fresh[: plan.capacity], True
        wanted: dict[str, None] = {}
        for _, missing in plan.pending:
            wanted.update(dict.fromkeys(missing))
        gets = size = 0
        for name in fresh:
            if gets >= MAX_GETS or size >= MAX_GET_BYTES:
                outcome.deferred_listing = True
                break
            gets += 1
            descriptor = _get(transport, name)
            if descriptor is None:
                continue
            size += len(descriptor)
            outcome.descriptors[name] = descriptor
            wanted.update(dict.fromkeys(_announced_names(descriptor)))
        for name in wanted:
            if name in plan.have or name in plan.ours:
                continue
            if gets >= MAX_GETS or size >= MAX_GET_BYTES:
                # Left for the next pass by the bound, not missing: ``sync now`` goes on.
                outcome.missing.add(name)
                outcome.deferred_listing = True
                continue
            gets += 1
            got = _get(transport, name)
            if got is None:
                outcome.missing.add(name)
            else:
                size += len(got)
                outcome.objects[name] = got
                tick("down", 1)
    except TransportError as exc:
        outcome.error = exc.message
    except MemoriesError as exc:  # a malformed name from a listing is not ours to act on
        outcome.error = exc.message
    return outcome


def _get(transport: Transport, name: str) -> bytes | None:
    try:
        data = transport.get(name)
    except ObjectMissing:
        return None
    # Transports are not trusted to check: bytes that do not hash to the name are not it.
    return data if content_matches(name, data) else None


def _announced_names(data: bytes) -> list[str]:
    """The object names a fetched descriptor lists, read before it is verified (only to know
    what to fetch; ``ack`` verifies it before anything is merged)."""
    try:
        doc = json.loads(data)
        names = [
            object_name(str(item["object"]))
            for item in doc["objects"]
            if isinstance(item, dict) and isinstance(item.get("object"), str)
        ]
        return [n for n in names if is_name(n)][:MAX_ANNOUNCED]
    except (ValueError, KeyError, TypeError):
        return []


def referenced_blobs(store: Store) -> frozenset[str]:
    """Every sync blob key the sync state refers to, so a whole-store check can tell them from
    blobs nothing refers to: the outbox and inbox (which must be there), receipts, quarantined
    and taken-back objects, and the objects each kept descriptor announces (when present).

    Raises ``LockedError``; ``IntegrityError`` for a damaged sync record.
    """
    state = load_state(store)
    required = {e.name for e in state.outbox} | set(state.inbox)
    optional = set(state.receipts) | {object_name(q.object) for q in list_quarantine(store)}
    for name in sorted(required | optional):
        if not name.startswith("descriptors/") or not store.has_blob(blob_key(name)):
            continue
        try:
            doc = json.loads(store.get_blob(blob_key(name)))
            optional.update(
                object_name(str(item["object"]))
                for item in doc["objects"]
                if isinstance(item, dict) and isinstance(item.get("object"), str)
            )
        except (ValueError, KeyError, TypeError):
            continue  # not one of ours to vouch for: it stays unreferenced
    keys = {blob_key(n) for n in required}
    keys.update(blob_key(n) for n in optional if store.has_blob(blob_key(n)))
    return frozenset(keys)
