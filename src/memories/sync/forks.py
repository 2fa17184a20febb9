"""Permission forks: two branches of one vault's policy chain, and how one is chosen.

A fork appears when two devices extend the same entry differently (both offline, say, one
adding a device while the other changes a role). Sync never chooses between them: the incoming
branch is kept beside the chain in an open fork record, writes under its entries wait, and the
vault goes on under this device's branch until an Owner resolves it.

A resolution is one new policy entry that follows the chosen head and names, in ``discarded``,
every entry of the other branch; its signature is the Owner's over both. Its signer must be the
Owner (on an allowed device) on both branches; it keeps the revocations of both and starts an
epoch after both (a fresh key, sealed to the devices it allows). The discarded entries stay
verifiable here (``Discarded`` records), so revisions written under them can still be checked
while they sit in the quarantine. A resolution that names only part of the other branch, or
competes with another resolution, is never merged: the fork stays open (or opens again) until
an Owner signs over all of it.

::

    entry  sync/fork/<vault>                       the open fork of a vault (Fork)
    entry  sync/discarded/<vault>/<policy id hex>  a policy entry a resolution discarded
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, new_key
from memories.errors import ConflictError, DeniedError, IntegrityError, NotFoundError
from memories.store import Mutation, Store
from memories.sync.candidate import Candidate
from memories.sync.queue import STATE_KEY, SyncState, blob_key
from memories.sync.takeback import take_back
from memories.vault import Vaults
from memories.vault.identity import now
from memories.vault.policy import Policy, propose_resolution
from memories.vault.revision import Revision

__all__ = [
    "DISCARDED_PREFIX",
    "FORK_PREFIX",
    "Discarded",
    "Fork",
    "discard_branch",
    "discarded_chain",
    "discarded_policy",
    "fork_key",
    "list_forks",
    "load_fork",
    "resolve_fork",
]

FORK_PREFIX: Final = "sync/fork/"
DISCARDED_PREFIX: Final = "sync/discarded/"
_FORK_TAG: Final = "memories.sync.fork"
_DISCARDED_TAG: Final = "memories.sync.discarded"

Keep = Literal["local", "incoming"]


def fork_key(vault_id: str) -> str:
    return f"{FORK_PREFIX}{vault_id}"


def discarded_key(vault_id: str, policy_id: str) -> str:
    return f"{DISCARDED_PREFIX}{vault_id}/{policy_id.removeprefix('sha256:')}"


def _keys_doc(keys: Mapping[int, bytes]) -> dict[str, str]:
    return {str(e): b64u_encode(k) for e, k in sorted(keys.items())}


def _keys_of(doc: object) -> dict[int, bytes]:
    if not isinstance(doc, dict):
        raise TypeError("keys")
    return {int(e): b64u_decode(str(k)) for e, k in doc.items()}


def _summary(entry: Policy) -> dict[str, object]:
    return {
        "id": entry.id,
        "seq": entry.seq,
        "epoch": entry.epoch,
        "signer": entry.signer,
        "device": entry.certificate.device,
        "created_at": entry.created_at,
        "resolution": bool(entry.discarded),
    }


@dataclass(frozen=True)
class Fork:
    """The open fork of one vault: the last shared entry and the competing branch after it."""

    vault_id: str
    base: str  # id of the last entry both branches hold
    base_seq: int
    branch: tuple[Policy, ...]  # the incoming branch, oldest first, each verified
    keys: Mapping[int, bytes] = field(default_factory=dict, repr=False)  # its epochs' keys
    detected_at: str = ""

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": _FORK_TAG,
                "v": 1,
                "vault": self.vault_id,
                "base": self.base,
                "base_seq": self.base_seq,
                "branch": [p.to_dict() for p in self.branch],
                "keys": _keys_doc(self.keys),
                "detected_at": self.detected_at,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Fork:
        """Raises ``IntegrityError`` for a malformed record."""
        try:
            doc = json.loads(data)
            if doc.get("t") != _FORK_TAG or doc.get("v") != 1:
                raise ValueError("tag")
            return cls(
                vault_id=str(doc["vault"]),
                base=str(doc["base"]),
                base_seq=int(doc["base_seq"]),
                branch=tuple(Policy.from_dict(p) for p in doc["branch"]),
                keys=_keys_of(doc["keys"]),
                detected_at=str(doc["detected_at"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IntegrityError("a permission fork record is malformed") from exc

    def view(self, chain: Sequence[Policy]) -> dict[str, object]:
        """Ids, numbers, signers and times of both branches; never a key."""
        return {
            "vault": self.vault_id,
            "base": self.base,
            "base_seq": self.base_seq,
            "local": [_summary(p) for p in chain[self.base_seq :]],
            "incoming": [_summary(p) for p in self.branch],
            "detected_at": self.detected_at,
        }


@dataclass(frozen=True)
class Discarded:
    """A policy entry a fork resolution discarded, kept to check what was written under it."""

    entry: Policy
    resolution: str  # the id of the entry that discarded it
    keys: Mapping[int, bytes] = field(default_factory=dict, repr=False)  # its branch's keys
    at: str = ""

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": _DISCARDED_TAG,
                "v": 1,
                "entry": self.entry.to_dict(),
                "resolution": self.resolution,
                "keys": _keys_doc(self.keys),
                "at": self.at,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Discarded:
        """Raises ``IntegrityError`` for a malformed record."""
        try:
            doc = json.loads(data)
            if doc.get("t") != _DISCARDED_TAG or doc.get("v") != 1:
                raise ValueError("tag")
            return cls(
                entry=Policy.from_dict(doc["entry"]),
                resolution=str(doc["resolution"]),
                keys=_keys_of(doc["keys"]),
                at=str(doc["at"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IntegrityError("a discarded policy record is malformed") from exc


def load_fork(reader: Store | Mutation, vault_id: str) -> Fork | None:
    data = reader.get(fork_key(vault_id))
    return None if data is None else Fork.from_bytes(data)


def list_forks(store: Store) -> list[Fork]:
    """Every open fork, by vault id. Raises ``IntegrityError`` for a damaged record."""
    return [Fork.from_bytes(v) for _, v in store.entries(FORK_PREFIX)]


def discarded_policy(reader: Store | Mutation, vault_id: str, policy_id: str) -> Policy | None:
    """The entry ``policy_id`` if a fork resolution of the vault discarded it, else None."""
    data = reader.get(discarded_key(vault_id, policy_id))
    if data is None:
        return None
    entry = Discarded.from_bytes(data).entry
    if entry.id != policy_id or entry.vault_id != vault_id:
        raise IntegrityError("a discarded policy record is filed under another id")
    return entry


def discarded_chain(reader: Store | Mutation, vault_id: str, ids: Sequence[str]) -> list[Policy]:
    """The discarded entries ``ids`` (a resolution's ``discarded``), in order.

    Raises ``IntegrityError`` when one is not held.
    """
    found = []
    for policy_id in ids:
        entry = discarded_policy(reader, vault_id, policy_id)
        if entry is None:
            raise IntegrityError("a policy entry a fork resolution discarded is missing")
        found.append(entry)
    return found


def discard_branch(
    candidate: Candidate,
    vault_id: str,
    entries: Sequence[Policy],
    resolution: Policy,
    keys: Mapping[int, bytes],
    stash: Callable[[str, bytes], None],
) -> list[str]:
    """Keep ``entries`` (the discarded branch) as ``Discarded`` records, close the vault's
    fork, and take revisions written under them out of the vault into the quarantine.
    Returns the quarantined object ids."""
    at = now()
    for entry in entries:
        record = Discarded(entry, resolution.id, keys, at)
        candidate.m.put(discarded_key(vault_id, entry.id), record.to_bytes())
    candidate.m.delete(fork_key(vault_id))
    ids = {p.id for p in entries}

    def under_discarded(revision: Revision) -> bool:
        return revision.policy in ids

    def why(_revision: Revision) -> str:
        return "written under a policy entry a fork resolution discarded"

    return take_back(candidate, vault_id, under_discarded, why, stash)


@dataclass
class Resolved:
    vault: str
    kept: Keep
    resolution: Policy
    discarded: list[str]
    quarantined: int

    def to_dict(self) -> dict[str, object]:
        return {
            "vault": self.vault,
            "kept": self.kept,
            "resolution": self.resolution.id,
            "seq": self.resolution.seq,
            "epoch": self.resolution.epoch,
            "discarded": self.discarded,
            "quarantined": self.quarantined,
        }


def resolve_fork(vaults: Vaults, ref: str | None, keep: Keep) -> Resolved:
    """Resolve the open fork of vault ``ref`` for this device's branch (``local``) or the
    incoming one, signing the resolution here; it is published at the next sync.

    Raises:
        NotFoundError: the vault has no open fork.
        DeniedError: this device's user is not the Owner on both branches, or this device
            holds no key of an epoch of the incoming branch it would keep.
    """
    record = vaults.resolve_vault(ref)
    candidate = Candidate(vaults)
    fork = load_fork(candidate.m, record.vault_id)
    if fork is None:
        raise NotFoundError("that vault's policy history has not forked; nothing to resolve")
    chain = candidate.chain(record.vault_id)
    if fork.base_seq > len(chain) or chain[fork.base_seq - 1].id != fork.base:
        raise ConflictError("the fork no longer starts in this vault's chain; sync, then retry")
    base = chain[fork.base_seq - 1]
    local = chain[fork.base_seq :]
    if not local:
        raise ConflictError("this device holds no branch of its own; sync, then retry")
    identity = vaults.identity
    record_keys = dict(candidate.record(record.vault_id).keys)  # type: ignore[union-attr]
    if keep == "local":
        resolution = propose_resolution(base, chain[-1], fork.branch, identity)
        new_key_ = bytes(new_key())
        candidate.add_policy(resolution, {resolution.epoch: new_key_})
        branch_keys = dict(fork.keys)
        discarded = list(fork.branch)
    else:
        needed = {p.epoch for p in fork.branch if p.epoch > base.epoch}
        if not needed <= set(fork.keys):
            raise DeniedError(
                "this device holds no key of an epoch of the incoming branch; it cannot keep "
                "that branch (resolve on a device the other branch allows)"
            )
        resolution = propose_resolution(base, fork.branch[-1], local, identity)
        keys = {**fork.keys, resolution.epoch: bytes(new_key())}
        candidate.replace_chain(record.vault_id, fork.base_seq, (*fork.branch, resolution), keys)
        branch_keys = {e: k for e, k in record_keys.items() if e > base.epoch}
        discarded = list(local)
    staged: set[str] = set()

    def stash(name: str, data: bytes) -> None:
        if name not in staged and not vaults.store.has_blob(blob_key(name)):
            candidate.m.put_blob(blob_key(name), data)
            staged.add(name)

    taken = discard_branch(candidate, record.vault_id, discarded, resolution, branch_keys, stash)
    state = SyncState.from_bytes(candidate.m.get(STATE_KEY))
    state.known.update(p.id for p in fork.branch)  # others published them; ours goes out
    candidate.m.put(STATE_KEY, state.to_bytes())
    candidate.commit("sync.fork.resolve", resolution=resolution.id, epoch=resolution.epoch)
    return Resolved(record.vault_id, keep, resolution, [p.id for p in discarded], len(taken))
