"""Publishing: what this device holds that it has not published yet, turned into objects and
signed descriptors inside the encrypted state, in one commit, before any transport I/O.

Per shareable vault (never a device-only one), in this order:

1. **policy entries** of the vault's chain not published or merged here yet, each with the
   vault's epoch keys up to its epoch sealed to every other device it allows;
2. **revisions** not published or merged here yet, parents first;
3. **audit records**: this device's checkpoints about the vault (the rule of
   :func:`memories.devices.audit_records.concerns`) since the last pass, each signed. Sync's own
   bookkeeping (``sync.*`` actions) is not published: it would make every pass publish again.

One descriptor per vault (or more, at most ``MAX_ANNOUNCED`` objects each) announces them in that
order, so a receiver meets a vault's policy before the revisions written under it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from memories.devices.audit_records import AuditRecord, concerns, trail_since
from memories.devices.bundle import certificates_of, seal_vault_keys
from memories.devices.pairing import vault_chain
from memories.errors import IntegrityError
from memories.store import Store
from memories.sync.forks import discarded_chain
from memories.sync.objects import (
    MAX_ANNOUNCED,
    MAX_AUDIT_RECORDS,
    Announced,
    Announcement,
    AuditAnnounced,
    AuditObject,
    Descriptor,
    PolicyAnnounced,
    PolicyObject,
    RevisionObject,
    descriptor_name,
    object_id,
    object_name,
)
from memories.sync.queue import STATE_KEY, OutboxEntry, SyncState, blob_key
from memories.vault import Vaults
from memories.vault.assets import AssetState
from memories.vault.identity import LocalIdentity
from memories.vault.operations import load_identity
from memories.vault.records import LOCAL_KEY, LocalState, VaultRecord, chunk_key, revision_key
from memories.vault.revision import Revision

__all__ = ["Enqueued", "enqueue", "shareable"]


@dataclass(frozen=True)
class Enqueued:
    objects: int  # objects put into the outbox by this call
    audit_scanned: int  # the local trail was read up to this checkpoint


def shareable(store: Store) -> dict[str, VaultRecord]:
    """The vaults that sync (every one but the device-only ones), by id."""
    data = store.get(LOCAL_KEY)
    local = LocalState.from_bytes(data) if data is not None else None
    found = {}
    for _, value in store.entries("vault/"):
        record = VaultRecord.from_bytes(value)
        if record.local or (local is not None and record.vault_id in local.local_vaults):
            continue
        found[record.vault_id] = record
    return found


def _new_revisions(store: Store, state: SyncState, assets: Iterable[AssetState]) -> list[Revision]:
    """Local revisions of ``assets`` not yet published or merged, parents first."""
    found: dict[str, Revision] = {}
    for asset in assets:
        stack = [h for h in asset.heads if h not in state.known]
        while stack:
            rid = stack.pop()
            if rid in found or rid in state.known:
                continue
            revision = Revision.from_stored(store.get_blob(revision_key(rid)), rid)
            found[rid] = revision
            stack.extend(p for p in revision.parents if p not in state.known)
    ordered: list[Revision] = []
    placed: set[str] = set()

    def place(rid: str) -> None:
        # Iterative post-order: every parent is placed before its child.
        work = [(rid, False)]
        while work:
            current, expanded = work.pop()
            if current in placed or current not in found:
                continue
            if expanded:
                placed.add(current)
                ordered.append(found[current])
                continue
            work.append((current, True))
            work.extend((p, False) for p in found[current].parents if p not in placed)

    for rid in sorted(found, key=lambda r: (found[r].created_at, r)):
        place(rid)
    return ordered


class _RevisionsOf(Collection[str]):
    """The revisions of one vault, asked one id at a time (reading that revision's header), so
    selecting audit entries never walks every history."""

    def __init__(self, store: Store, vault_id: str) -> None:
        self._store, self._vault = store, vault_id
        self._answers: dict[str, bool] = {}

    def __contains__(self, rid: object) -> bool:
        if not isinstance(rid, str):
            return False
        answer = self._answers.get(rid)
        if answer is None:
            key = revision_key(rid)
            answer = False
            if self._store.has_blob(key):
                try:
                    answer = Revision.from_bytes(self._store.get_blob(key)).vault_id == self._vault
                except IntegrityError:
                    answer = False
            self._answers[rid] = answer
        return answer

    def __iter__(self) -> Iterator[str]:
        return iter(())  # membership is all concerns() asks

    def __len__(self) -> int:
        return 0


class _Staging:
    """Objects staged into one mutation and announced per vault."""

    def __init__(self, store: Store, state: SyncState) -> None:
        self.store, self.state = store, state
        self.m = store.mutation()
        self.announced: dict[str, list[Announcement]] = {}
        self.staged: set[str] = set()
        self.count = 0

    def add(self, vault_id: str, data: bytes, announce: Announcement) -> None:
        name = object_name(announce.oid)
        if name not in self.staged and not self.store.has_blob(blob_key(name)):
            self.m.put_blob(blob_key(name), data)
        self.staged.add(name)
        self.state.outbox.append(OutboxEntry(name))
        self.announced.setdefault(vault_id, []).append(announce)
        self.count += 1


def _policies(
    staging: _Staging, identity: LocalIdentity, record: VaultRecord, known: set[str]
) -> None:
    chain = vault_chain(staging.store, record)
    fresh = [p for p in chain if p.id not in known]
    if not fresh:
        return
    certificates = certificates_of(chain)
    me = identity.device_fingerprint
    for entry in fresh:
        keys = {e: k for e, k in record.keys.items() if e <= entry.epoch}
        sealed = {}
        for device in entry.devices:
            cert = certificates.get(device)
            if device == me or cert is None or not keys:
                continue
            sealed[device] = seal_vault_keys(identity, cert, record.vault_id, keys)
        # A fork resolution carries the branch it discards, so every device can check it.
        discarded = tuple(discarded_chain(staging.store, record.vault_id, entry.discarded))
        data = PolicyObject(entry, sealed, discarded).to_bytes()
        staging.add(record.vault_id, data, PolicyAnnounced(object_id(data), entry.id, entry.seq))
        known.add(entry.id)


def _revisions(staging: _Staging, revisions: list[Revision]) -> None:
    store, state = staging.store, staging.state
    for revision in revisions:
        chunks = tuple(store.get_blob(chunk_key(revision.id, i)) for i in range(revision.chunks))
        data = RevisionObject(revision.to_bytes(), chunks).to_bytes()
        announced = Announced(object_id(data), revision.id, revision.asset_id, revision.parents)
        staging.add(revision.vault_id, data, announced)
        state.known.add(revision.id)


def _audit(
    staging: _Staging,
    identity: LocalIdentity,
    vaults: Collection[str],
    assets: dict[str, set[str]],
    until: int,
) -> None:
    store, state = staging.store, staging.state
    by_vault: dict[str, list[AuditRecord]] = {}
    revisions = {v: _RevisionsOf(store, v) for v in vaults}
    for entry in trail_since(store, state.audit_cursor):
        if entry.seq > until or entry.action.startswith("sync."):
            continue
        for vault_id in vaults:
            if concerns(entry, vault_id, assets.get(vault_id, set()), revisions[vault_id]):
                try:
                    record = AuditRecord.signed(identity, vault_id, entry)
                except IntegrityError:
                    continue  # an oversized detail: the local trail still shows it
                by_vault.setdefault(vault_id, []).append(record)
    for vault_id, records in by_vault.items():
        for start in range(0, len(records), MAX_AUDIT_RECORDS):
            batch = records[start : start + MAX_AUDIT_RECORDS]
            data = AuditObject(vault_id, tuple(r.to_dict() for r in batch)).to_bytes()
            staging.add(vault_id, data, AuditAnnounced(object_id(data), len(batch)))


def enqueue(vaults_: Vaults, state: SyncState) -> Enqueued:
    """Stage and commit everything new of every shareable vault (objects and descriptors) and
    update ``state`` to match; nothing is committed when nothing is new.

    The audit cursor is advanced in ``state`` only when something was committed here; the
    caller records ``audit_scanned`` with its own commit otherwise. Raises ``LockedError``,
    ``IntegrityError`` for a damaged record, and what ``Store.commit`` raises (``state`` must
    then be read again: it may hold what was not committed).
    """
    store = vaults_.store
    vaults = shareable(store)
    until = store.seq
    if not vaults:
        return Enqueued(0, until)
    # The domain's parsed asset records (kept current by its commits): no parse per pass.
    states = [s for s in vaults_._all_assets().values() if s.vault_id in vaults]
    assets: dict[str, set[str]] = {}
    for asset in states:
        assets.setdefault(asset.vault_id, set()).add(asset.asset_id)
    staging = _Staging(store, state)
    identity = load_identity(store)
    for record in vaults.values():
        _policies(staging, identity, record, state.known)
    _revisions(staging, _new_revisions(store, state, states))
    _audit(staging, identity, sorted(vaults), assets, until)
    if not staging.count:
        return Enqueued(0, until)
    for vault_id, announced in staging.announced.items():
        for start in range(0, len(announced), MAX_ANNOUNCED):
            descriptor = Descriptor.sign(
                identity, vault_id, announced[start : start + MAX_ANNOUNCED]
            )
            data = descriptor.to_bytes()
            name = descriptor_name(object_id(data))
            staging.m.put_blob(blob_key(name), data)
            state.outbox.append(OutboxEntry(name))
    state.audit_cursor = max(state.audit_cursor, until)
    staging.m.put(STATE_KEY, state.to_bytes())
    store.commit(staging.m, action="sync.enqueue", details={"objects": staging.count})
    return Enqueued(staging.count, until)
