"""Reading the vault domain: caches, vault and asset resolution, content, history and diffs.

Reads go to the store's in-memory entries (asset states, vault records) and decrypt revision
blobs only when content is asked for. Parsed asset records are cached per kind and dropped when
the store's unlock generation changes, so nothing decrypted outlives a lock.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import replace

from memories.crypto import resolve_short
from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.store import Mutation, Store
from memories.vault.assets import AssetState, newest_first, short_ids
from memories.vault.content import DEFAULT_MAX_FILE_BYTES, KINDS, Content, FilePayload, Kind
from memories.vault.diff import unified_diff
from memories.vault.identity import LocalIdentity
from memories.vault.operations import load_identity, load_policy
from memories.vault.records import (
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_key,
    asset_prefix,
    chunk_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, open_content
from memories.vault.views import AssetView, HistoryEntry, VaultInfo

__all__ = ["VaultReader"]

_FULL_ID = re.compile(r"[0-9a-f]{32}")
_HEX = re.compile(r"[0-9a-f]+")


class VaultReader:
    """Reading the vault domain over an unlocked ``Store``. Every method raises ``LockedError``
    when the store is locked; content-returning methods take ``elevated`` for private content."""

    def __init__(self, store: Store, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.store = store
        self.max_file_bytes = max_file_bytes
        self._generation = -1
        # Parsed asset records, per kind, built on first use after each unlock.
        self._assets: dict[Kind, dict[str, AssetState]] = {}
        self._ids: list[str] | None = None
        self._identity: LocalIdentity | None = None

    # -- caches ------------------------------------------------------------------------------

    def _fresh(self) -> None:
        """Drop caches built under an earlier unlock (a lock bumps the generation)."""
        if self._generation != self.store.generation:
            self._generation = self.store.generation
            self._assets = {}
            self._ids = None
            self._identity = None

    @property
    def identity(self) -> LocalIdentity:
        self._fresh()
        if self._identity is None:
            self._identity = load_identity(self.store)
        return self._identity

    def _assets_of(self, kind: Kind) -> dict[str, AssetState]:
        """Every asset of ``kind``; a graph of cards never parses the memories beside them."""
        self._fresh()
        if kind not in self._assets:
            prefix = asset_prefix(kind)
            self._assets[kind] = {
                key.removeprefix(prefix): AssetState.from_bytes(value)
                for key, value in self.store.entries(prefix)
            }
        return self._assets[kind]

    def _all_assets(self) -> dict[str, AssetState]:
        merged: dict[str, AssetState] = {}
        for kind in KINDS:
            merged.update(self._assets_of(kind))
        return merged

    def _asset_ids(self) -> list[str]:
        """Every asset id, sorted, from the record keys alone (nothing is parsed).

        Sorted so that prefix lookups and short ids cost a binary search, not a scan.
        """
        self._fresh()
        if self._ids is None:
            self._ids = sorted(key.rsplit("/", 1)[1] for key in self.store.keys("asset/"))
        return self._ids

    def vault_count(self) -> int:
        """How many vaults the store holds, without reading their records or policies."""
        return len(self.store.keys("vault/"))

    def asset_count(self) -> int:
        """How many assets the store records (deleted ones included), without parsing any."""
        return len(self._asset_ids())

    def _with_prefix(self, prefix: str) -> list[str]:
        ids = self._asset_ids()
        return ids[bisect_left(ids, prefix) : bisect_left(ids, prefix + "g")]  # "g" > any hex

    def short_id(self, asset_id: str) -> str:
        """The shortest prefix (at least 8 characters) no other asset id shares."""
        ids = self._asset_ids()
        at = bisect_left(ids, asset_id)
        neighbours = [ids[i] for i in (at - 1, at + 1) if 0 <= i < len(ids)]
        return short_ids([asset_id, *neighbours])[asset_id]

    def _commit(
        self, m: Mutation, action: str, states: Iterable[AssetState], **details: str | int
    ) -> None:
        self.store.commit(m, action=action, details=details)
        if self._generation == self.store.generation:
            for state in states:
                cache = self._assets.get(state.kind)
                if cache is not None:
                    cache[state.asset_id] = state
                ids = self._ids
                if ids is not None:
                    at = bisect_left(ids, state.asset_id)
                    if at == len(ids) or ids[at] != state.asset_id:
                        ids.insert(at, state.asset_id)

    # -- vaults ------------------------------------------------------------------------------

    def _local(self) -> LocalState:
        data = self.store.get(LOCAL_KEY)
        if data is None:
            raise IntegrityError("the store has no device state; it is damaged")
        return LocalState.from_bytes(data)

    def _records(self) -> list[VaultRecord]:
        return [VaultRecord.from_bytes(v) for _, v in self.store.entries("vault/")]

    def _record(self, vault_id: str) -> VaultRecord:
        data = self.store.get(vault_key(vault_id))
        if data is None:
            raise IntegrityError("an asset refers to a vault that does not exist")
        return VaultRecord.from_bytes(data)

    def resolve_vault(self, ref: str | None = None) -> VaultRecord:
        """The vault named ``ref`` (name, id or id prefix); ``None`` means ``personal``.

        Raises ``NotFoundError`` or ``UsageError`` (ambiguous).
        """
        if ref is None:
            return self._record(self._local().personal)
        records = self._records()
        for record in records:
            if record.name == ref or record.vault_id == ref:
                return record
        if re.fullmatch(r"[0-9a-fA-F]{4,32}", ref):
            found = resolve_short(ref, [r.vault_id for r in records])
            return next(r for r in records if r.vault_id == found)
        raise NotFoundError("no vault has that name; `memories vault list` shows them")

    def _info(self, record: VaultRecord, local: LocalState) -> VaultInfo:
        policy = load_policy(self.store, record)
        return VaultInfo(
            id=record.vault_id,
            name=record.name,
            created_at=record.created_at,
            local=record.vault_id in local.local_vaults,
            personal=record.vault_id == local.personal,
            epoch=record.epoch,
            role=policy.members.get(self.identity.user_fingerprint, "none"),
        )

    def vaults(self) -> list[VaultInfo]:
        local = self._local()
        return sorted((self._info(r, local) for r in self._records()), key=lambda v: (v.name, v.id))

    # -- assets: reading ---------------------------------------------------------------------

    def resolve_asset(self, ref: str) -> AssetState:
        """The asset with id or id prefix ``ref``. Raises ``NotFoundError`` / ``UsageError``."""
        if not isinstance(ref, str):
            raise UsageError("an asset reference must be text")
        ref = ref.strip().lower()
        if not _FULL_ID.fullmatch(ref):
            candidates = self._with_prefix(ref) if _HEX.fullmatch(ref) else []
            ref = resolve_short(ref, candidates)  # its errors say what is wrong with the ref
        found = self._lookup(ref)
        if found is None:
            raise NotFoundError("no memory has that id; `memories ls` shows them")
        return found

    def _lookup(self, asset_id: str) -> AssetState | None:
        self._fresh()
        for kind in KINDS:
            cache = self._assets.get(kind)
            if cache is not None:
                if asset_id in cache:
                    return cache[asset_id]
                continue
            data = self.store.get(asset_key(kind, asset_id))
            if data is not None:
                return AssetState.from_bytes(data)
        return None

    def _revision(self, revision_id: str) -> Revision:
        try:
            data = self.store.get_blob(revision_key(revision_id))
        except IntegrityError:
            raise IntegrityError("a revision this asset refers to is missing") from None
        return Revision.from_stored(data, revision_id)

    def _content(self, revision: Revision) -> Content | None:
        record = self._record(revision.vault_id)
        chunks = [self.store.get_blob(chunk_key(revision.id, i)) for i in range(revision.chunks)]
        return open_content(revision, chunks, record.keys[revision.epoch])

    def _resolve_revision(self, state: AssetState, ref: str) -> str:
        """A revision of ``state`` by id or prefix. Only a prefix or an older revision needs the
        asset's history walked; an edit names its base head in full and stays O(1)."""
        if isinstance(ref, str):
            full = "sha256:" + ref.lower().removeprefix("sha256:")
            if full in state.heads:
                return full
        ids = [entry.revision for entry in self._walk(state)]
        return resolve_short(ref, ids)

    def _check_private(self, state: AssetState, elevated: bool) -> None:
        if state.private and not elevated:
            raise DeniedError("this memory is private; run `memories sudo` to see it")

    def get(self, ref: str, *, revision: str | None = None, elevated: bool = False) -> AssetView:
        """The asset's newest head (or ``revision``), decrypted, with credential values hidden.

        Raises ``NotFoundError`` (also for a deleted asset, unless a revision is named),
        ``DeniedError`` for private content when not elevated, ``IntegrityError``.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if revision is None:
            if state.deleted:
                raise NotFoundError("that memory was deleted; `memories history` shows its past")
            revision_id = state.newest
        else:
            revision_id = self._resolve_revision(state, revision)
        content = self._content(self._revision(revision_id))
        if content is not None and content.private and not elevated:
            raise DeniedError("this revision is private; run `memories sudo` to see it")
        hidden = state.kind == "credential"
        if hidden and content is not None:
            content = replace(content, body="")
        return AssetView(
            asset_id=state.asset_id,
            vault_id=state.vault_id,
            kind=state.kind,
            revision=revision_id,
            heads=state.heads,
            content=content,
            created_at=state.created_at,
            updated_at=state.updated_at,
            revisions=state.revisions,
            author=state.author,
            links=state.links,
            secret_hidden=hidden,
        )

    def file_payload(self, ref: str, *, elevated: bool = False) -> FilePayload:
        """A file asset's payload. Raises ``UsageError`` for other kinds, as ``get`` otherwise."""
        view = self.get(ref, elevated=elevated)
        if view.content is None or view.content.file is None:
            raise UsageError("that asset is not a file")
        return view.content.file

    def _walk(
        self, state: AssetState, seen: dict[str, Revision] | None = None
    ) -> list[HistoryEntry]:
        """Every revision reachable from the heads, newest first and children before parents.

        ``seen``, when given, receives the parsed revisions by id.
        """
        seen = {} if seen is None else seen
        pending = list(state.heads)
        while pending:
            revision_id = pending.pop()
            if revision_id in seen:
                continue
            revision = self._revision(revision_id)
            if revision.asset_id != state.asset_id:
                raise IntegrityError("a revision's parent belongs to another asset")
            seen[revision_id] = revision
            pending.extend(revision.parents)
        heads = set(state.heads)
        order = newest_first({rid: (rev.created_at, rev.parents) for rid, rev in seen.items()})
        return [
            HistoryEntry(
                revision=rid,
                parents=seen[rid].parents,
                created_at=seen[rid].created_at,
                author_user=seen[rid].author_user,
                author_device=seen[rid].author_device,
                tombstone=seen[rid].tombstone,
                title="",
                head=rid in heads,
            )
            for rid in order
        ]

    def history(self, ref: str, *, elevated: bool = False) -> list[HistoryEntry]:
        """Every revision, newest first, with author and title (left blank for a revision that
        was private, unless elevated). Raises as ``get``."""
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        out = []
        revisions: dict[str, Revision] = {}
        for entry in self._walk(state, revisions):
            content = None if entry.tombstone else self._content(revisions[entry.revision])
            if content is None or (content.private and not elevated):
                out.append(entry)  # a tombstone has no title; a private one stays hidden
            else:
                out.append(replace(entry, title=content.title))
        return out

    def diff(
        self,
        ref: str,
        old: str | None = None,
        new: str | None = None,
        *,
        elevated: bool = False,
    ) -> str:
        """Unified diff of the text projection between two revisions.

        ``new`` defaults to the live head, ``old`` to ``new``'s first parent (nothing for the
        first revision). File payloads and credential values never appear.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        new_id_ = state.newest if new is None else self._resolve_revision(state, new)
        new_revision = self._revision(new_id_)
        if old is None:
            old_id = new_revision.parents[0] if new_revision.parents else None
        else:
            old_id = self._resolve_revision(state, old)
        old_content = None if old_id is None else self._content(self._revision(old_id))
        new_content = self._content(new_revision)
        if not elevated and any(c is not None and c.private for c in (old_content, new_content)):
            raise DeniedError("this revision is private; run `memories sudo` to see it")
        labels = short_ids([i for i in (old_id, new_id_) if i])
        return unified_diff(
            state.kind,
            old_content,
            new_content,
            old_label=labels[old_id] if old_id else "(nothing)",
            new_label=labels[new_id_] + (" (live)" if new is None else ""),
        )
