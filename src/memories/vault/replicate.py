"""Revisions moving between devices: exporting a stored revision and accepting one written
elsewhere. Synchronization and backup build on these two; their transports live elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from memories.errors import IntegrityError
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.operations import load_policy
from memories.vault.records import VaultRecord, asset_key, chunk_key, revision_key, vault_key
from memories.vault.revision import Revision, open_content

__all__ = ["Replicating"]


class Replicating(VaultBase):
    """Export and accept signed revisions."""

    def accept(self, header: bytes, chunks: Sequence[bytes]) -> str:
        """Store a revision written on another device (the path synchronization uses).

        It is checked completely before anything is written: its id, the vault and its policy
        chain, the device certificate and signature, the ciphertext digest, that its parents
        exist in this asset's history and that its content decrypts. Returns its id. Raises
        ``IntegrityError`` for anything that does not verify; nothing is written then.
        """
        revision = Revision.from_bytes(header)
        if header != revision.to_bytes():  # its id is the hash of exactly these bytes
            raise IntegrityError("a revision is not in canonical form")
        revision_id = revision.id
        record = self._record_or_integrity(revision.vault_id)
        policy = next(
            (
                candidate
                for seq in range(len(record.policies), 0, -1)
                if (candidate := load_policy(self.store, record, seq)).id == revision.policy
            ),
            None,
        )
        if policy is None:
            raise IntegrityError("a revision names a policy this vault does not have")
        revision.verify(policy, chunks)
        data = self.store.get(asset_key(revision.kind, revision.asset_id))
        state = None if data is None else AssetState.from_bytes(data)
        if state is not None and (state.kind != revision.kind or state.vault_id != record.vault_id):
            raise IntegrityError("a revision does not match its asset")
        if state is None and revision.parents:
            raise IntegrityError("a revision's parent is missing")
        if state is not None:
            known = {entry.revision for entry in self._walk(state)}
            if revision_id in known:
                return revision_id
            if not set(revision.parents) <= known:
                raise IntegrityError("a revision's parent is missing")
        content = open_content(revision, chunks, self._keys.epoch_key(record, revision.epoch))
        m = self.store.mutation()
        m.put_blob(revision_key(revision_id), header)
        for index, chunk in enumerate(chunks):
            m.put_blob(chunk_key(revision_id, index), chunk)
        if state is None:
            if content is None:
                raise IntegrityError("an asset cannot begin with a tombstone")
            new_state = AssetState.first(
                asset_id=revision.asset_id,
                vault_id=record.vault_id,
                kind=revision.kind,
                revision_id=revision_id,
                content=content,
                at=revision.created_at,
                author=revision.author_user,
            )
        else:
            new_state = state.after(
                revision_id, revision.parents, content, revision.created_at, revision.author_user
            )
        m.put(asset_key(revision.kind, revision.asset_id), new_state.to_bytes())
        self._commit(m, "revision.accept", [(new_state, revision_id)], asset=revision.asset_id)
        return revision_id

    def _record_or_integrity(self, vault_id: str) -> VaultRecord:
        self._fresh()
        data = self.store.get(vault_key(vault_id))
        if data is None:
            raise IntegrityError("a revision belongs to a vault this device does not have")
        return VaultRecord.from_bytes(data)

    def export_revision(self, revision_id: str) -> tuple[bytes, list[bytes]]:
        """A stored revision's signed header and sealed chunks, exactly as ``accept`` takes them.

        Raises ``IntegrityError`` when it is missing or damaged.
        """
        self._fresh()
        revision = self._revision(revision_id)
        chunks = [self.store.get_blob(chunk_key(revision_id, i)) for i in range(revision.chunks)]
        return revision.to_bytes(), chunks
