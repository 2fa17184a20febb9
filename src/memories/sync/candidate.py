"""A candidate state: everything one sync pass merges, staged over the store, committed in one
transaction or not at all.

The candidate reads through its own staged changes, so a policy entry merged early in a pass
decides about the revisions after it, and a revision merged early is the parent a later one
needs. Nothing here decides *whether* something may be merged (that is :mod:`.merge`); this
module only keeps the staged vault records, policy chains and asset states consistent:

- ``add_policy`` appends one verified entry to a vault's chain, with the epoch keys it brought;
- ``add_revision`` adds one verified revision to its asset's history (heads, summary);
- ``drop_revisions`` takes revisions of this device back out of an asset's current state (the
  local side of quarantine), rebuilding the state from the rest of the history;
- ``commit`` writes it all with the queue state through the vault's one commit path, so
  observers (the search index) learn what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from memories.crypto import wipe
from memories.errors import IntegrityError
from memories.sync.stored import has_blob, remember
from memories.vault import Vaults
from memories.vault.assets import AssetState, newest_first
from memories.vault.content import Content
from memories.vault.events import Action
from memories.vault.operations import read_policy
from memories.vault.policy import Policy
from memories.vault.records import (
    VaultRecord,
    asset_key,
    chunk_key,
    policy_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, open_content

__all__ = ["Candidate"]

_Slot = tuple[str, str]  # (kind, asset id)


class Candidate:
    """Changes staged against ``vaults``' store in one mutation (``m``)."""

    def __init__(self, vaults: Vaults) -> None:
        self.vaults = vaults
        self.store = vaults.store
        self.identity = vaults.identity
        self.m = self.store.mutation()
        self._records: dict[str, VaultRecord | None] = {}
        self._chains: dict[str, list[Policy]] = {}
        self._assets: dict[_Slot, AssetState | None] = {}
        self._reachable: dict[_Slot, dict[str, Revision]] = {}
        self._changes: dict[_Slot, tuple[AssetState, str | None]] = {}
        self._staged_revisions: set[str] = set()
        self.added_policies: dict[str, list[Policy]] = {}
        self.deleted = False  # an asset record left the store
        self.rekeyed = False  # an epoch's key changed (a fork resolution adopted a branch)

    # -- reading through -------------------------------------------------------------------

    def record(self, vault_id: str) -> VaultRecord | None:
        if vault_id not in self._records:
            data = self.m.get(vault_key(vault_id))
            self._records[vault_id] = None if data is None else VaultRecord.from_bytes(data)
        return self._records[vault_id]

    def chain(self, vault_id: str) -> list[Policy]:
        """The vault's staged policy chain, genesis first (empty for a vault not held)."""
        if vault_id not in self._chains:
            record = self.record(vault_id)
            self._chains[vault_id] = (
                []
                if record is None
                else [
                    read_policy(self.m, vault_id, seq, pid)[1]
                    for seq, pid in enumerate(record.policies, start=1)
                ]
            )
        return self._chains[vault_id]

    def policy(self, vault_id: str, policy_id: str) -> Policy | None:
        """The entry ``policy_id`` of the vault's staged chain, or None."""
        return next((p for p in reversed(self.chain(vault_id)) if p.id == policy_id), None)

    def asset(self, kind: str, asset_id: str) -> AssetState | None:
        slot = (kind, asset_id)
        if slot not in self._assets:
            data = self.m.get(asset_key(kind, asset_id))
            self._assets[slot] = None if data is None else AssetState.from_bytes(data)
        return self._assets[slot]

    def history(self, kind: str, asset_id: str) -> dict[str, Revision]:
        """Every revision reachable from the asset's staged heads, by id."""
        slot = (kind, asset_id)
        found = self._reachable.get(slot)
        if found is None:
            found = {}
            state = self.asset(kind, asset_id)
            if state is not None:
                self.vaults._walk(state, found)
            self._reachable[slot] = found
        return found

    def policy_key(self, vault_id: str, entry: Policy) -> str:
        """Where a new entry goes: its plain key unless a discarded entry holds that number."""
        plain = policy_key(vault_id, entry.seq)
        if plain in self.m.blobs or self.store.has_blob(plain):
            return policy_key(vault_id, entry.seq, entry.id)
        return plain

    def has_revision(self, revision_id: str) -> bool:
        """Whether the revision's blob is stored (or staged), merged or not."""
        return revision_id in self._staged_revisions or has_blob(
            self.store, revision_key(revision_id)
        )

    def content(self, revision: Revision, chunks: Sequence[bytes]) -> Content | None:
        """Decrypt ``revision`` with the staged record's epoch key (None: a tombstone).

        Raises ``IntegrityError`` when the vault holds no key of its epoch or it does not open.
        """
        record = self.record(revision.vault_id)
        stored = None if record is None else record.keys.get(revision.epoch)
        if stored is None:
            raise IntegrityError("a revision names an epoch whose key this vault does not hold")
        # A local copy, wiped at once: a key staged here is not the domain's until committed.
        key = bytearray(stored)
        try:
            return open_content(revision, chunks, key)
        finally:
            wipe(key)

    # -- staging ---------------------------------------------------------------------------

    def add_policy(self, entry: Policy, keys: Mapping[int, bytes]) -> None:
        """Append ``entry`` (verified to follow the staged head) with the epoch ``keys`` it
        brought (checked not to contradict the keys held)."""
        vault_id = entry.vault_id
        record = self.record(vault_id)
        chain = self.chain(vault_id)
        assert record is not None and chain and entry.prev == chain[-1].id
        updated = replace(
            record,
            policies=(*record.policies, entry.id),
            epoch=entry.epoch,
            keys={**record.keys, **keys},
        )
        self.m.put_blob(self.policy_key(vault_id, entry), entry.to_bytes())
        self.m.put(vault_key(vault_id), updated.to_bytes())
        self._records[vault_id] = updated
        chain.append(entry)
        self.added_policies.setdefault(vault_id, []).append(entry)

    def replace_chain(
        self, vault_id: str, keep: int, entries: Sequence[Policy], keys: Mapping[int, bytes]
    ) -> list[Policy]:
        """Adopt another branch of a forked chain: the first ``keep`` entries stay, then
        ``entries`` (verified to follow them). Epoch keys after the kept head's epoch are
        replaced by ``keys`` (the adopted branch's). Returns the entries replaced (the
        discarded branch), whose blobs stay where they are."""
        record = self.record(vault_id)
        chain = self.chain(vault_id)
        assert record is not None and 0 < keep <= len(chain) and entries
        assert entries[0].prev == chain[keep - 1].id
        shared = chain[keep - 1].epoch
        dropped = chain[keep:]
        del chain[keep:]
        for entry in entries:
            self.m.put_blob(self.policy_key(vault_id, entry), entry.to_bytes())
            chain.append(entry)
        kept_keys = {e: k for e, k in record.keys.items() if e <= shared}
        updated = replace(
            record,
            policies=tuple(p.id for p in chain),
            epoch=chain[-1].epoch,
            keys={**kept_keys, **{e: k for e, k in keys.items() if e > shared}},
        )
        self.m.put(vault_key(vault_id), updated.to_bytes())
        self._records[vault_id] = updated
        self.added_policies.setdefault(vault_id, []).extend(entries)
        self.rekeyed = True
        return dropped

    def add_revision(
        self, revision: Revision, header: bytes, chunks: Sequence[bytes], content: Content | None
    ) -> AssetState:
        """Add a verified revision whose parents are all in its asset's staged history.

        Raises ``IntegrityError`` for an asset that would begin with a tombstone.
        """
        slot = (revision.kind, revision.asset_id)
        history = self.history(*slot)  # read before the state it walks from changes
        state = self.asset(*slot)
        if state is None:
            if content is None:
                raise IntegrityError("an asset cannot begin with a tombstone")
            new_state = AssetState.first(
                asset_id=revision.asset_id,
                vault_id=revision.vault_id,
                kind=revision.kind,
                revision_id=revision.id,
                content=content,
                at=revision.created_at,
                author=revision.author_user,
            )
        else:
            new_state = state.after(
                revision.id, revision.parents, content, revision.created_at, revision.author_user
            )
        if not self.has_revision(revision.id):  # a locally quarantined one is stored already
            self.m.put_blob(revision_key(revision.id), header)
            for index, chunk in enumerate(chunks):
                self.m.put_blob(chunk_key(revision.id, index), chunk)
            self._staged_revisions.add(revision.id)
        self._stage_state(new_state, revision.id)
        history[revision.id] = revision
        return new_state

    def _stage_state(self, state: AssetState, revision_id: str | None) -> None:
        slot = (state.kind, state.asset_id)
        self.m.put(asset_key(state.kind, state.asset_id), state.to_bytes())
        self._assets[slot] = state
        previous = self._changes.get(slot)
        added = revision_id or (previous[1] if previous is not None else None)
        self._changes[slot] = (state, added)

    def drop_revisions(self, kind: str, asset_id: str, dropped: set[str]) -> None:
        """Take ``dropped`` (closed under descendants) out of the asset's current state and
        rebuild the state from the rest of its history; an asset left with nothing is removed
        from current views. The revisions' blobs stay (history is never purged).

        Raises ``IntegrityError`` when the remaining history does not decrypt.
        """
        slot = (kind, asset_id)
        state = self.asset(kind, asset_id)
        if state is None or not dropped:
            return
        history = self.history(kind, asset_id)
        kept = {rid: rev for rid, rev in history.items() if rid not in dropped}
        times = {rid: (rev.created_at, rev.parents) for rid, rev in kept.items()}
        order = list(reversed(newest_first(times)))  # parents first
        rebuilt: AssetState | None = None
        for rid in order:
            revision = kept[rid]
            chunks = [self.m.get_blob(chunk_key(rid, i)) for i in range(revision.chunks)]
            content = self.content(revision, chunks)
            if rebuilt is None:
                if content is None:
                    raise IntegrityError("an asset cannot begin with a tombstone")
                rebuilt = AssetState.first(
                    asset_id=asset_id,
                    vault_id=state.vault_id,
                    kind=state.kind,
                    revision_id=rid,
                    content=content,
                    at=revision.created_at,
                    author=revision.author_user,
                )
            else:
                rebuilt = rebuilt.after(
                    rid, revision.parents, content, revision.created_at, revision.author_user
                )
        self._reachable[slot] = kept
        if rebuilt is None:
            self.m.delete(asset_key(kind, asset_id))
            self._assets[slot] = None
            self._changes[slot] = (state, None)  # observers hear of it; the domain re-reads
            self.deleted = True
            return
        self._stage_state(replace(rebuilt, links=state.links), None)

    # -- committing ------------------------------------------------------------------------

    @property
    def changed(self) -> bool:
        return not self.m.empty

    def commit(self, action: Action, **details: str | int) -> None:
        """Commit everything staged (and whatever else the caller put into ``m``) at once.

        Raises what ``Store.commit`` raises; nothing is written then.
        """
        touched = {state.vault_id for state, _ in self._changes.values()}
        touched |= set(self.added_policies)
        self.vaults._commit(
            self.m,
            action,
            list(self._changes.values()),
            vaults=touched,
            policies_changed=bool(self.added_policies),
            **details,
        )
        remember(self.store, self.m.blobs)
        if self.deleted or self.rekeyed:
            # The domain caches asset records it parsed and epoch keys it decoded (an epoch's
            # key is otherwise never replaced): what changed must be read again.
            self.vaults._forget()
