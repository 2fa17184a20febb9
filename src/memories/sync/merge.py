"""Acknowledge a pass: check the session, validate what arrived, merge it, commit the queue.

Under the service lock. Nothing a transport returned is trusted: a descriptor is verified
(form, certificate, signature) and its device must be allowed to write by the vault's current
policy; each revision is then checked completely by the vault's own ``accept`` (id, policy
chain, certificate, signature, ciphertext digest, parents, decryption) before it is merged, and
concurrent edits become conflicts there (several heads), never overwrites. What does not
verify is quarantined (kept locally with its reason, never merged, never purged); what only
waits for objects or parents stays in the inbox with a persisted retry delay.

Merging commits per revision (``accept`` is one validated transaction each), then the queue
state commits. A crash in between leaves the descriptor in the inbox or unhandled; the next
pass finds its revisions already merged (``accept`` is idempotent), so nothing is lost and
nothing is merged twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from memories.crypto import canonical_bytes
from memories.errors import (
    ConflictError,
    DeniedError,
    IntegrityError,
    LockedError,
    NotFoundError,
    UsageError,
)
from memories.store import Mutation, Store
from memories.sync.engine import Outcome, Plan, load_state, load_targets
from memories.sync.objects import Announced, Descriptor, RevisionObject, object_name
from memories.sync.queue import (
    QUARANTINE_PREFIX,
    STATE_KEY,
    InboxEntry,
    SyncState,
    backoff,
    blob_key,
    quarantine_key,
)
from memories.vault import Vaults
from memories.vault.identity import now
from memories.vault.operations import load_policy
from memories.vault.policy import check_write
from memories.vault.records import VaultRecord, revision_key, vault_key

__all__ = ["Quarantined", "Report", "ack", "discard", "list_quarantine", "reapply"]

log = logging.getLogger(__name__)
_STALE: Final = "the vault was locked during sync; nothing it fetched was imported"


@dataclass
class Report:
    target: str
    uploaded: int = 0
    downloaded: int = 0
    merged: int = 0
    quarantined: int = 0
    refused: int = 0
    pending: int = 0
    enqueued: int = 0
    more: bool = False
    error: str | None = None
    vaults: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "enqueued": self.enqueued,
            "up": self.uploaded,
            "down": self.downloaded,
            "merged": self.merged,
            "quarantined": self.quarantined,
            "refused": self.refused,
            "pending": self.pending,
            "more": self.more,
            "error": self.error,
        }


@dataclass(frozen=True)
class Quarantined:
    """A revision that arrived and was not merged: ids and the reason, never content."""

    object: str
    descriptor: str
    vault: str
    asset: str
    revision: str
    device: str
    reason: str
    at: str

    def to_dict(self) -> dict[str, str]:
        return {
            "object": self.object,
            "descriptor": self.descriptor,
            "vault": self.vault,
            "asset": self.asset,
            "revision": self.revision,
            "device": self.device,
            "reason": self.reason,
            "at": self.at,
        }

    def to_bytes(self) -> bytes:
        return canonical_bytes({"t": "memories.sync.quarantine", "v": 1, **self.to_dict()})

    @classmethod
    def from_bytes(cls, data: bytes) -> Quarantined:
        try:
            doc = json.loads(data)
            if doc.get("t") != "memories.sync.quarantine" or doc.get("v") != 1:
                raise ValueError("tag")
            return cls(**{k: str(doc[k]) for k in cls.__dataclass_fields__})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IntegrityError("a quarantine record is malformed") from exc


class _Waiting(Exception):
    """A revision's parents are not merged yet: try again later (not a failure)."""


def ack(vaults: Vaults, plan: Plan, outcome: Outcome, *, at: float) -> Report:
    """Commit what ``execute`` did for ``plan``, after checking the session it was made in.

    Raises ``LockedError`` when the store was locked (or locked and unlocked) since ``plan``
    was made: nothing fetched is imported then, and the uploads are simply redone later.
    Raises what ``Store.commit`` raises.
    """
    store = vaults.store
    if not store.unlocked or store.generation != plan.generation:
        raise LockedError(_STALE)
    report = Report(plan.target.id, enqueued=plan.enqueued, error=outcome.error)
    state = load_state(store)
    targets = {t.id for t in load_targets(store).items}
    m = store.mutation()
    uploaded = set(outcome.uploaded)
    for entry in state.outbox:
        if entry.name in uploaded:
            entry.uploaded.add(plan.target.id)
    report.uploaded = len(uploaded)
    state.compact(targets)
    seen = state.seen.setdefault(plan.target.id, set())
    staged: set[str] = set()

    def stash(name: str, data: bytes) -> None:
        if name not in staged and not store.has_blob(blob_key(name)):
            m.put_blob(blob_key(name), data)
            staged.add(name)

    for name, data in sorted(outcome.descriptors.items()):
        seen.add(name)
        try:
            Descriptor.from_bytes(data)
        except IntegrityError:
            state.refused += 1
            report.refused += 1
            log.warning("sync: a descriptor did not verify and was refused")
            continue
        stash(name, data)
        state.inbox.setdefault(name, InboxEntry(name))
    report.downloaded = len(outcome.objects)
    objects = dict(outcome.objects)
    # Merge what is complete; the inbox is retried in order of arrival.
    for name in sorted(state.inbox):
        waiting = state.inbox[name]
        descriptor = Descriptor.from_bytes(
            outcome.descriptors.get(name) or store.get_blob(blob_key(name))
        )
        done = _merge_descriptor(vaults, store, state, descriptor, name, objects, m, stash, report)
        if done:
            del state.inbox[name]
            state.receipts.add(name)
        else:
            waiting.attempts += 1
            waiting.next_try = at + backoff(waiting.attempts)
    report.pending = len(state.inbox)
    report.more = plan.more_uploads or outcome.deferred_listing
    state.stamps[plan.target.id] = {
        "at": at,
        "up": float(report.uploaded),
        "down": float(report.downloaded),
        "merged": float(report.merged),
        "quarantined": float(report.quarantined),
    }
    m.put(STATE_KEY, state.to_bytes())
    store.commit(m, action="sync.ack", details={"merged": report.merged})
    return report


def _merge_descriptor(
    vaults: Vaults,
    store: Store,
    state: SyncState,
    descriptor: Descriptor,
    name: str,
    objects: dict[str, bytes],
    m: Mutation,
    put: Callable[[str, bytes], None],
    report: Report,
) -> bool:
    """Merge every revision ``descriptor`` announces; True when none is left waiting."""
    record_data = store.get(vault_key(descriptor.vault_id))
    if record_data is None:
        return True  # a vault this device does not hold: not ours to merge
    record = VaultRecord.from_bytes(record_data)
    policy = load_policy(store, record)
    try:
        check_write(policy, descriptor.user, descriptor.device)
        author_reason = None
    except DeniedError:
        author_reason = "published by a device the vault's current policy does not allow"
    waiting = False
    for announced in descriptor.objects:
        oname = object_name(announced.oid)
        if announced.revision in state.known and store.has_blob(revision_key(announced.revision)):
            continue
        if store.get(quarantine_key(announced.oid)) is not None:
            continue
        if announced.oid in state.discarded:
            continue
        data = objects.get(oname)
        if data is None and store.has_blob(blob_key(oname)):
            data = store.get_blob(blob_key(oname))
        if data is None:
            waiting = True
            continue
        put(oname, data)
        reason = author_reason
        try:
            if reason is None:
                _apply(vaults, store, record, announced, data)
                state.known.add(announced.revision)
                report.merged += 1
                report.vaults.add(record.vault_id)
                continue
        except _Waiting:
            waiting = True
            continue
        except IntegrityError as exc:
            reason = exc.message
        _quarantine(store, m, descriptor, name, announced, reason or "refused", report)
    return not waiting


def _apply(
    vaults: Vaults, store: Store, record: VaultRecord, announced: Announced, data: bytes
) -> None:
    obj = RevisionObject.from_bytes(data)
    revision = obj.revision()
    if revision.id != announced.revision or revision.vault_id != record.vault_id:
        raise IntegrityError("an object is not the revision its descriptor announces")
    if revision.asset_id != announced.asset or revision.parents != announced.parents:
        raise IntegrityError("an object is not the revision its descriptor announces")
    if store.has_blob(revision_key(revision.id)):
        return
    if any(not store.has_blob(revision_key(p)) for p in revision.parents):
        raise _Waiting()
    if revision.epoch < record.epoch:
        raise IntegrityError("written under a superseded permission epoch")
    vaults.accept(obj.header, obj.chunks)


def _quarantine(
    store: Store,
    m: Mutation,
    descriptor: Descriptor,
    name: str,
    announced: Announced,
    reason: str,
    report: Report,
) -> None:
    entry = Quarantined(
        object=announced.oid,
        descriptor=name,
        vault=descriptor.vault_id,
        asset=announced.asset,
        revision=announced.revision,
        device=descriptor.device,
        reason=reason,
        at=now(),
    )
    m.put(quarantine_key(announced.oid), entry.to_bytes())
    report.quarantined += 1


# -- local review: the only way out of quarantine ------------------------------------------


def list_quarantine(store: Store) -> list[Quarantined]:
    """Every quarantined revision, oldest first. Raises ``LockedError``, ``IntegrityError``."""
    found = [Quarantined.from_bytes(v) for _, v in store.entries(QUARANTINE_PREFIX)]
    return sorted(found, key=lambda q: (q.at, q.object))


def find_quarantined(store: Store, ref: str) -> Quarantined:
    """The quarantined object ``ref`` names (its id or a prefix of at least 6 hex digits).

    Raises ``NotFoundError``, ``UsageError`` when ambiguous.
    """
    wanted = ref.strip().lower()
    matches = [q for q in list_quarantine(store) if q.object.startswith(wanted)]
    if len(wanted) < 6 or not matches:
        raise NotFoundError("nothing quarantined has that id; `memories quarantine ls` lists them")
    if len(matches) > 1:
        raise UsageError("that prefix names several quarantined objects; give more of the id")
    return matches[0]


def reapply(vaults: Vaults, ref: str) -> Quarantined:
    """Validate and merge a quarantined revision again, by the user's local decision.

    The epoch and current-policy checks that quarantined it are the user's to override; the
    revision's own checks (signature, policy chain, ciphertext, parents) still apply.
    Raises ``NotFoundError``, ``IntegrityError`` (still does not verify: it stays),
    ``ConflictError`` when its parents are not merged yet.
    """
    store = vaults.store
    entry = find_quarantined(store, ref)
    data = store.get_blob(blob_key(object_name(entry.object)))
    obj = RevisionObject.from_bytes(data)
    revision = obj.revision()
    if any(not store.has_blob(revision_key(p)) for p in revision.parents):
        raise ConflictError("its parent revisions have not arrived yet; sync, then try again")
    vaults.accept(obj.header, obj.chunks)
    state = load_state(store)
    state.known.add(revision.id)
    m = store.mutation()
    m.delete(quarantine_key(entry.object))
    m.put(STATE_KEY, state.to_bytes())
    store.commit(m, action="sync.quarantine.reapply", details={})
    return entry


def discard(store: Store, ref: str) -> Quarantined:
    """Drop a quarantined revision from review; it is never quarantined or merged again.

    Its bytes stay in the store (history is never purged). Raises ``NotFoundError``.
    """
    entry = find_quarantined(store, ref)
    state = load_state(store)
    state.discarded.add(entry.object)
    m = store.mutation()
    m.delete(quarantine_key(entry.object))
    m.put(STATE_KEY, state.to_bytes())
    store.commit(m, action="sync.quarantine.discard", details={})
    return entry
