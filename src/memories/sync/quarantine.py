"""The quarantine: objects that arrived (or were written here) and are not part of a vault, each
with the reason, kept for local review. Only this device's user takes anything out of it:
``reapply`` (a revision, merged after all and still checked) or ``discard`` (never again).
Nothing an incoming object says can clear it.

Entries are ``sync/quarantine/<object id>`` records of ids and reasons, never content; the
object's bytes stay in ``sync/blob/objects/<id>`` (history is never purged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, Literal

from memories.crypto import canonical_bytes
from memories.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from memories.store import Mutation, Store
from memories.sync.candidate import Candidate
from memories.sync.objects import RevisionObject, object_name
from memories.sync.queue import QUARANTINE_PREFIX, STATE_KEY, SyncState, blob_key, quarantine_key
from memories.vault import Vaults

__all__ = [
    "Quarantined",
    "discard",
    "find_quarantined",
    "list_quarantine",
    "load_state",
    "reapply",
]

_TAG: Final = "memories.sync.quarantine"
ObjectType = Literal["revision", "policy", "audit"]
_TYPES: Final = ("revision", "policy", "audit")


def load_state(store: Store | Mutation) -> SyncState:
    return SyncState.from_bytes(store.get(STATE_KEY))


@dataclass(frozen=True)
class Quarantined:
    """An object that was not merged: ids and the reason, never content.

    ``revision`` names the revision (a revision object) or the policy entry (a policy object);
    ``asset`` is empty but for revisions; ``descriptor`` is empty for this device's own writes
    taken back out of a vault.
    """

    object: str
    descriptor: str
    vault: str
    asset: str
    revision: str
    device: str
    reason: str
    at: str
    type: ObjectType = "revision"

    def to_dict(self) -> dict[str, str]:
        return {
            "object": self.object,
            "type": self.type,
            "descriptor": self.descriptor,
            "vault": self.vault,
            "asset": self.asset,
            "revision": self.revision,
            "device": self.device,
            "reason": self.reason,
            "at": self.at,
        }

    def to_bytes(self) -> bytes:
        return canonical_bytes({"t": _TAG, "v": 1, **self.to_dict()})

    @classmethod
    def from_bytes(cls, data: bytes) -> Quarantined:
        """Raises ``IntegrityError`` for a malformed record."""
        try:
            doc = json.loads(data)
            if doc.get("t") != _TAG or doc.get("v") != 1:
                raise ValueError("tag")
            kind = doc.get("type", "revision")  # records of the first release: revisions
            if kind not in _TYPES:
                raise ValueError("type")
            fields = {k: str(doc[k]) for k in cls.__dataclass_fields__ if k != "type"}
            return cls(**fields, type=kind)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IntegrityError("a quarantine record is malformed") from exc


def list_quarantine(store: Store) -> list[Quarantined]:
    """Every quarantined object, oldest first. Raises ``LockedError``, ``IntegrityError``."""
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
    revision's own checks (signature, the policy entry it names, ciphertext, parents) still
    apply. Raises ``NotFoundError``; ``UsageError`` for a policy entry or audit records (they
    are not reapplied: a policy fork is resolved with ``memories sync resolve-fork``);
    ``IntegrityError`` when it still does not verify (it stays); ``ConflictError`` when the
    policy entry it names or its parents have not arrived yet.
    """
    store = vaults.store
    entry = find_quarantined(store, ref)
    if entry.type != "revision":
        raise UsageError(
            "only a quarantined revision can be reapplied; discard this one, or see "
            "`memories sync forks` for a policy history that forked"
        )
    from memories.sync.forks import discarded_policy  # forks builds on this module

    obj = RevisionObject.from_bytes(store.get_blob(blob_key(object_name(entry.object))))
    revision = obj.revision()
    candidate = Candidate(vaults)
    if candidate.record(revision.vault_id) is None:
        raise IntegrityError("a revision belongs to a vault this device does not have")
    # A discarded policy entry stays verifiable: a revision written under it can be checked
    # against it and, by this user's decision, merged (its epoch's key must still open it).
    policy = candidate.policy(revision.vault_id, revision.policy) or discarded_policy(
        candidate.m, revision.vault_id, revision.policy
    )
    if policy is None:
        raise ConflictError(
            "the policy entry it was written under has not arrived yet; sync, then try again"
        )
    history = candidate.history(revision.kind, revision.asset_id)
    if revision.id in history:
        raise ConflictError("that revision is part of the vault already; discard the entry")
    if any(p not in history for p in revision.parents):
        raise ConflictError("its parent revisions have not arrived yet; sync, then try again")
    state = candidate.asset(revision.kind, revision.asset_id)
    if state is not None and state.vault_id != revision.vault_id:
        raise IntegrityError("a revision does not match its asset")
    revision.verify(policy, obj.chunks)
    content = candidate.content(revision, obj.chunks)
    candidate.add_revision(revision, obj.header, obj.chunks, content)
    sync_state = load_state(store)
    sync_state.known.add(revision.id)
    candidate.m.delete(quarantine_key(entry.object))
    candidate.m.put(STATE_KEY, sync_state.to_bytes())
    candidate.commit("sync.quarantine.reapply", revision=revision.id)
    return entry


def discard(store: Store, ref: str) -> Quarantined:
    """Drop a quarantined object from review; it is never quarantined or merged again.

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
