"""Vault operations on a store mutation, shared by store creation and the live ``Vaults``.

Each function reads through and writes into one ``Mutation``, so the caller decides when (and
whether) the changes are committed, and a new store's first contents are built with the very
code that later edits use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from memories.crypto import canonical_bytes, new_id, new_key, tagged_hash
from memories.errors import IntegrityError
from memories.store import Mutation
from memories.vault.assets import AssetState
from memories.vault.content import Content, Kind, make_content
from memories.vault.identity import LocalIdentity, now
from memories.vault.policy import POLICY_TAG, Policy, check_write, genesis_policy
from memories.vault.records import (
    IDENTITY_KEY,
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_key,
    chunk_key,
    policy_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, seal_revision

__all__ = [
    "BlobIndex",
    "Reader",
    "create_vault",
    "free_policy_key",
    "initialize",
    "load_identity",
    "load_policy",
    "read_policy",
    "write_revision",
]


class Reader(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def get_blob(self, key: str) -> bytes: ...


class BlobIndex(Protocol):
    def has_blob(self, key: str) -> bool: ...


def load_identity(reader: Reader) -> LocalIdentity:
    data = reader.get(IDENTITY_KEY)
    if data is None:
        raise IntegrityError("the store has no identity; it is damaged")
    try:
        return LocalIdentity.from_dict(json.loads(data))
    except ValueError as exc:
        raise IntegrityError("the stored identity is malformed") from exc


def create_vault(m: Mutation, identity: LocalIdentity, name: str, *, local: bool) -> VaultRecord:
    vault_id = new_id()
    policy = genesis_policy(vault_id, identity)
    m.put_blob(policy_key(vault_id, policy.seq), policy.to_bytes())
    record = VaultRecord(
        vault_id=vault_id,
        name=name,
        created_at=now(),
        local=local,
        policies=(policy.id,),
        epoch=policy.epoch,
        keys={policy.epoch: bytes(new_key())},
        card_types={},
    )
    m.put(vault_key(vault_id), record.to_bytes())
    return record


def read_policy(reader: Reader, vault_id: str, seq: int, policy_id: str) -> tuple[str, Policy]:
    """Entry ``seq`` of a chain, which must be ``policy_id``, and the key it is stored under.

    Raises ``IntegrityError`` when neither its plain key nor its adopted key (see
    :func:`~memories.vault.records.policy_key`) holds that entry.
    """
    key = policy_key(vault_id, seq)
    data = reader.get_blob(key)
    if tagged_hash(POLICY_TAG, data) != policy_id:
        # A fork resolution adopted another branch: the number's first holder was discarded.
        key = policy_key(vault_id, seq, policy_id)
        data = reader.get_blob(key)
    return key, Policy.from_stored(data, policy_id)


def free_policy_key(store: BlobIndex, vault_id: str, seq: int, policy_id: str) -> str:
    """Where to store a new entry ``seq``: its plain key, unless a discarded entry holds it."""
    key = policy_key(vault_id, seq)
    return key if not store.has_blob(key) else policy_key(vault_id, seq, policy_id)


def load_policy(reader: Reader, record: VaultRecord, seq: int | None = None) -> Policy:
    seq = len(record.policies) if seq is None else seq
    return read_policy(reader, record.vault_id, seq, record.policies[seq - 1])[1]


def write_revision(
    m: Mutation,
    identity: LocalIdentity,
    record: VaultRecord,
    *,
    asset_id: str,
    kind: Kind,
    state: AssetState | None,
    parents: Sequence[str],
    content: Content | None,
) -> tuple[Revision, AssetState]:
    policy = load_policy(m, record)
    # Before the key is looked up: a device that learned of its own revocation holds no key
    # of the new epoch, and must hear why it may not write.
    check_write(policy, identity.user_fingerprint, identity.device_fingerprint)
    revision, chunks = seal_revision(
        identity,
        vault_id=record.vault_id,
        asset_id=asset_id,
        kind=kind,
        parents=parents,
        policy=policy,
        epoch_key=record.keys[record.epoch],
        content=content,
    )
    revision.verify(policy, chunks)  # raises DeniedError-as-IntegrityError for a foreign device
    revision_id = revision.id
    m.put_blob(revision_key(revision_id), revision.to_bytes())
    for index, chunk in enumerate(chunks):
        m.put_blob(chunk_key(revision_id, index), chunk)
    if state is None:
        assert content is not None
        new_state = AssetState.first(
            asset_id=asset_id,
            vault_id=record.vault_id,
            kind=kind,
            revision_id=revision_id,
            content=content,
            at=revision.created_at,
            author=identity.user_fingerprint,
        )
    else:
        new_state = state.after(
            revision_id, parents, content, revision.created_at, identity.user_fingerprint
        )
    m.put(asset_key(kind, asset_id), new_state.to_bytes())
    return revision, new_state


def initialize(
    m: Mutation,
    *,
    user_name: str = "me",
    device_name: str | None = None,
    local_config: Mapping[str, str] | None = None,
) -> None:
    """Stage a new store's first contents: identity, ``personal`` vault, device-only vault.

    The device-only vault holds ``local_config``: the client version and folders this device
    uses. It is marked local in the device state and never leaves the device.
    """
    identity = LocalIdentity.generate(user_name=user_name, device_name=device_name)
    m.put(IDENTITY_KEY, canonical_bytes(identity.to_dict()))
    personal = create_vault(m, identity, "personal", local=False)
    device = create_vault(m, identity, "device", local=True)
    m.put(LOCAL_KEY, LocalState(personal.vault_id, (device.vault_id,)).to_bytes())
    body = "\n".join(f"{k}: {v}" for k, v in sorted((local_config or {}).items()))
    content = make_content("memory", title="local_config", body=body, tags=("local_config",))
    write_revision(
        m,
        identity,
        device,
        asset_id=new_id(),
        kind="memory",
        state=None,
        parents=(),
        content=content,
    )
