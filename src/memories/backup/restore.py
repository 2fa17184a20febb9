"""Recovery: a new store's first contents, built from a checked backup.

What a recovery makes (all staged on the new store's first mutation, so the store is published
whole or not at all):

- a new identity: the backed-up user key (so the user stays who they were) certifying NEW
  device signing and exchange keys; the old device's keys are not carried over;
- for every backed-up vault a NEW vault (new id, new epoch key) of the same name and card
  types, whose genesis policy lists only this user (owner) and this new device: recovery does
  not claim that a historical shared membership is still current, members are invited again;
- every live asset with every head it had (so conflicts stay conflicts), each head's content
  re-signed by the new device under the new vault's policy; an asset id the backup holds once
  is kept (so links and card to credential references survive), one it holds more than once
  gets a new id per occurrence; links whose target was not restored are dropped;
- a fresh device-only vault (``device``) with this device's ``local_config``;
- the archive: the original vault records, policy chains, asset records, revisions and chunks,
  exactly as backed up, read-only (see :mod:`memories.vault.replicate`).

An asset whose every head is a tombstone was deleted: it lives on in the archive only.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from memories.backup.payload import Snapshot
from memories.crypto import ExchangeKey, SigningKey, canonical_bytes, new_id
from memories.errors import IntegrityError
from memories.store import Mutation
from memories.vault import Content, DeviceCertificate, Link, LocalIdentity, make_content
from memories.vault.assets import AssetState
from memories.vault.identity import now
from memories.vault.operations import create_vault, write_revision
from memories.vault.records import (
    IDENTITY_KEY,
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_key,
    chunk_key,
    key_kind,
    policy_key,
    revision_key,
    vault_key,
)
from memories.vault.replicate import (
    ArchivedAsset,
    ArchivedVault,
    archive_asset_key,
    archive_key,
    archive_vault_key,
)
from memories.vault.revision import Revision, open_content

__all__ = ["MEMBERSHIP_NOTE", "RestoreReport", "RestoredVault", "stage_restore"]

MEMBERSHIP_NOTE = (
    "each restored vault's policy lists only you and this new device: memberships and devices "
    "from before the backup are not carried over; invite other members and devices again"
)


@dataclass(frozen=True)
class RestoredVault:
    original: str  # the backed-up vault's id
    id: str  # the new vault's id
    name: str
    personal: bool
    assets: int

    def to_dict(self) -> dict[str, object]:
        return {
            "original": self.original,
            "id": self.id,
            "name": self.name,
            "personal": self.personal,
            "assets": self.assets,
        }


@dataclass(frozen=True)
class RestoreReport:
    """What a recovery made, in counts and ids (never content)."""

    backup_id: str
    backup_created_at: str
    vaults: tuple[RestoredVault, ...]
    assets: int  # live assets restored
    conflicts: int  # of those, assets with more than one head
    deleted: int  # assets that were deleted: archive only
    new_ids: int  # assets given a new id because the backup held their id more than once
    dropped_links: int  # links whose target was not restored
    foreign_heads: int  # restored heads first written by another user, now signed by this one
    archived_assets: int
    archived_revisions: int
    identity: Mapping[str, object]

    def to_dict(self) -> dict[str, object]:
        return {
            "backup": self.backup_id,
            "backup_created_at": self.backup_created_at,
            "vaults": [vault.to_dict() for vault in self.vaults],
            "assets": self.assets,
            "conflicts": self.conflicts,
            "deleted": self.deleted,
            "new_ids": self.new_ids,
            "dropped_links": self.dropped_links,
            "foreign_heads": self.foreign_heads,
            "archived_assets": self.archived_assets,
            "archived_revisions": self.archived_revisions,
            "identity": dict(self.identity),
            "membership": MEMBERSHIP_NOTE,
        }


def _new_device(old: LocalIdentity, device_name: str | None) -> LocalIdentity:
    """The backed-up user key certifying fresh device keys."""
    device = SigningKey.generate()
    exchange = ExchangeKey.generate()
    unsigned = DeviceCertificate(
        user_key=old.user.public_bytes(),
        device_id=new_id(),
        device_name=device_name or socket.gethostname() or "this device",
        signing_key=device.public_bytes(),
        exchange_key=exchange.public_bytes(),
        not_before=now(),
        not_after=None,
        signature=b"",
    )
    certificate = replace(unsigned, signature=old.user.sign_canonical(unsigned.body()))
    certificate.verify()
    return LocalIdentity(old.user, device, exchange, certificate, old.user_name)


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name[:60]}-{n}"
    taken.add(candidate)
    return candidate


def _heads_in_order(
    state: AssetState, revisions: Mapping[str, Revision], contents: Mapping[str, Content | None]
) -> list[str]:
    """The order to re-sign the heads in: oldest first and the recorded newest last, so the new
    record's summary is the same; but never a tombstone first (an asset begins with content)."""
    rest = sorted(
        (h for h in state.heads if h != state.newest),
        key=lambda h: (revisions[h].created_at, h),
    )
    order = [*rest, state.newest] if state.newest in revisions else rest
    first_live = next(i for i, h in enumerate(order) if contents[h] is not None)
    return [order[first_live], *order[:first_live], *order[first_live + 1 :]]


def _contents(
    snapshot: Snapshot, record: VaultRecord, heads: Sequence[str]
) -> tuple[dict[str, Revision], dict[str, Content | None]]:
    revisions: dict[str, Revision] = {}
    contents: dict[str, Content | None] = {}
    for head in heads:
        revision = Revision.from_stored(snapshot.get_blob(revision_key(head)), head)
        key = record.keys.get(revision.epoch)
        if key is None:
            raise IntegrityError("a backed-up revision names an epoch whose key is missing")
        chunks = [snapshot.get_blob(chunk_key(head, i)) for i in range(revision.chunks)]
        revisions[head] = revision
        contents[head] = open_content(revision, chunks, key)
    return revisions, contents


def stage_restore(
    m: Mutation,
    snapshot: Snapshot,
    *,
    device_name: str | None = None,
    local_config: Mapping[str, str] | None = None,
) -> RestoreReport:
    """Stage a recovered store's contents from ``snapshot`` on the new store's mutation ``m``.

    ``snapshot`` must have passed :func:`~memories.backup.check.check_snapshot`. Raises
    ``IntegrityError`` for a record that does not open (nothing is published then).
    """
    restored_at = now()
    identity = _new_device(snapshot.identity(), device_name)
    m.put(IDENTITY_KEY, canonical_bytes(identity.to_dict()))

    originals: dict[str, tuple[VaultRecord, bytes]] = {}
    for _, raw in snapshot.entries("vault/"):
        record = VaultRecord.from_bytes(raw)
        originals[record.vault_id] = (record, raw)
    taken: set[str] = set()
    created: dict[str, VaultRecord] = {}
    for old, _ in sorted(originals.values(), key=lambda item: (item[0].name, item[0].vault_id)):
        new = create_vault(m, identity, _unique(old.name, taken), local=False)
        if old.card_types:
            new = replace(new, card_types=dict(old.card_types))
            m.put(vault_key(new.vault_id), new.to_bytes())
        created[old.vault_id] = new
    if snapshot.personal not in created:
        raise IntegrityError("the backup holds no personal vault")
    device = create_vault(m, identity, _unique("device", taken), local=True)
    m.put(LOCAL_KEY, LocalState(created[snapshot.personal].vault_id, (device.vault_id,)).to_bytes())
    body = "\n".join(f"{k}: {v}" for k, v in sorted((local_config or {}).items()))
    config = make_content("memory", title="local_config", body=body, tags=("local_config",))
    write_revision(
        m,
        identity,
        device,
        asset_id=new_id(),
        kind="memory",
        state=None,
        parents=(),
        content=config,
    )

    states = [(raw, AssetState.from_bytes(raw)) for _, raw in snapshot.entries("asset/")]
    occurrences = Counter(state.asset_id for _, state in states)
    restored: dict[tuple[str, str, str], tuple[AssetState, AssetState]] = {}
    deleted = new_ids = conflicts = foreign = 0
    per_vault: Counter[str] = Counter()
    for raw, state in states:
        old_record, _ = originals[state.vault_id]
        revisions, contents = _contents(snapshot, old_record, state.heads)
        restored_as: str | None = None
        if any(content is not None for content in contents.values()):
            unambiguous = occurrences[state.asset_id] == 1
            restored_as = state.asset_id if unambiguous else new_id()
            new_ids += 0 if unambiguous else 1
            new_state: AssetState | None = None
            for head in _heads_in_order(state, revisions, contents):
                foreign += revisions[head].author_user != identity.user_fingerprint
                _, new_state = write_revision(
                    m,
                    identity,
                    created[state.vault_id],
                    asset_id=restored_as,
                    kind=state.kind,
                    state=new_state,
                    parents=(),
                    content=contents[head],
                )
            assert new_state is not None
            # The dates people sort by stay the original ones; the signed revisions carry now.
            new_state = replace(new_state, created_at=state.created_at, updated_at=state.updated_at)
            restored[(state.vault_id, state.kind, state.asset_id)] = (state, new_state)
            conflicts += new_state.conflicted
            per_vault[state.vault_id] += 1
        else:
            deleted += 1
        archived = ArchivedAsset(state, raw, restored_as)
        m.put(archive_asset_key(state.vault_id, state.kind, state.asset_id), archived.to_bytes())

    dropped = 0
    live = {(vault, asset) for vault, _, asset in restored}
    for old_state, new_state in restored.values():
        links = []
        for link in old_state.links:
            if occurrences[link.target] == 1 and (old_state.vault_id, link.target) in live:
                links.append(Link(new_state.asset_id, link.target, link.relation))
            else:
                dropped += 1
        final = replace(new_state, links=tuple(links))
        m.put(asset_key(final.kind, final.asset_id), final.to_bytes())

    for old, raw in originals.values():
        vault = ArchivedVault(
            record=old,
            raw=raw,
            restored_as=created[old.vault_id].vault_id,
            backup=snapshot.backup_id,
            backup_created_at=snapshot.created_at,
            restored_at=restored_at,
        )
        m.put(archive_vault_key(old.vault_id), vault.to_bytes())
        for seq in range(1, len(old.policies) + 1):
            key = policy_key(old.vault_id, seq)
            m.put_blob(archive_key(key), snapshot.get_blob(key))
    archived_revisions = 0
    for key in sorted(snapshot.blob_keys()):
        kind = key_kind(key)
        if kind in ("revision", "chunk"):
            archived_revisions += kind == "revision"
            m.put_blob(archive_key(key), snapshot.get_blob(key))

    return RestoreReport(
        backup_id=snapshot.backup_id,
        backup_created_at=snapshot.created_at,
        vaults=tuple(
            RestoredVault(
                original=old.vault_id,
                id=created[old.vault_id].vault_id,
                name=created[old.vault_id].name,
                personal=old.vault_id == snapshot.personal,
                assets=per_vault[old.vault_id],
            )
            for old, _ in sorted(originals.values(), key=lambda i: (i[0].name, i[0].vault_id))
        ),
        assets=len(restored),
        conflicts=conflicts,
        deleted=deleted,
        new_ids=new_ids,
        dropped_links=dropped,
        foreign_heads=foreign,
        archived_assets=len(states),
        archived_revisions=archived_revisions,
        identity=identity.public_dict(),
    )
