"""The shared core of the vault domain: caches, vault/asset/revision resolution, decryption,
history walks, and the one commit path that notifies observers.

Reads go to the store's in-memory entries (asset states, vault records) and decrypt revision
blobs only when content is asked for. Parsed asset records are cached per kind, epoch keys are
held in a :class:`~memories.vault.keys.KeyRing`; both are dropped (keys zeroed) when the store's
unlock generation changes and by :meth:`VaultBase.close`, so nothing decrypted outlives a lock.

Every read would otherwise parse the same few records again, so parses are reused too, and are
dropped at the same moments: vault records, the device state and single asset records while the
entry bytes they came from are unchanged (a commit replaces those bytes, so a stale parse is
never used), and revision headers by id in a bounded LRU (a revision is content-addressed and
never changes; its header holds signed metadata and the wrapped data key, no key in the clear),
and the sealed chunks of small revisions, bounded by size: ciphertext the revision's signature
covers, checked against it on every read and opened with a data key unwrapped for that read.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TypeVar

from memories.crypto import resolve_short
from memories.errors import DeniedError, IntegrityError, LockedError, NotFoundError, UsageError
from memories.store import Mutation, Store
from memories.vault.assets import AssetState, newest_first
from memories.vault.content import DEFAULT_MAX_FILE_BYTES, KINDS, Content, Kind
from memories.vault.events import (
    Action,
    AssetChange,
    CommitEvent,
    CommitObserver,
    Observers,
    Unsubscribe,
)
from memories.vault.identity import LocalIdentity
from memories.vault.keys import KeyRing
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
from memories.views.assets import HistoryEntry
from memories.views.format import shortest_prefix
from memories.views.vaults import VaultInfo

__all__ = ["VaultBase"]

_FULL_ID = re.compile(r"[0-9a-f]{32}")
_HEX = re.compile(r"[0-9a-f]+")
_CLOSED = "the vault is locked; unlock it first"
# Bounds of the parse caches: a working set of reads, not the whole store.
_REVISIONS = 512
_ASSETS = 1024
# Sealed content kept in memory, in bytes; a revision larger than _SEALED_ONE is always read
# from the store.
_SEALED = 4 * 1024 * 1024
_SEALED_ONE = 64 * 1024

_T = TypeVar("_T")


class _Parses:
    """Records parsed from store entries, reused while the entry's bytes stay the same."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit
        self._items: OrderedDict[str, tuple[bytes, object]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str, data: bytes, parse: Callable[[bytes], _T]) -> _T:
        """``parse(data)``, or the earlier result for exactly these bytes under ``key``."""
        found = self._items.get(key)
        if found is not None and (found[0] is data or found[0] == data):
            if self._limit is not None:
                self._items.move_to_end(key)
            return found[1]  # type: ignore[return-value]
        parsed = parse(data)
        self._items[key] = (data, parsed)
        if self._limit is not None and len(self._items) > self._limit:
            self._items.popitem(last=False)
        return parsed

    def clear(self) -> None:
        self._items.clear()


class VaultBase:
    """The vault domain over an unlocked ``Store``. Every method raises ``LockedError`` when the
    store is locked or this object was closed."""

    def __init__(self, store: Store, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.store = store
        self.max_file_bytes = max_file_bytes
        self._generation = -1
        self._closed = False
        # Parsed asset records, per kind, built on first use after each unlock.
        self._assets: dict[Kind, dict[str, AssetState]] = {}
        self._ids: list[str] | None = None
        self._identity: LocalIdentity | None = None
        self._keys = KeyRing()
        self._observers = Observers()
        # This identity's role per (vault, policy length): a new policy entry changes the key.
        self._roles: dict[tuple[str, int], str] = {}
        self._parses = _Parses()  # vault records and the device state: a handful
        self._asset_parses = _Parses(_ASSETS)
        self._revisions: OrderedDict[str, Revision] = OrderedDict()
        # The sealed chunks of small revisions, by revision id, and their total size.
        self._sealed: OrderedDict[str, tuple[bytes, ...]] = OrderedDict()
        self._sealed_size = 0
        # Every vault record, parsed, and the store's entries version they were read at.
        self._vault_list: tuple[int, list[VaultRecord]] | None = None

    # -- life cycle --------------------------------------------------------------------------

    def _fresh(self) -> None:
        """Drop caches built under an earlier unlock (a lock bumps the generation).

        Raises ``LockedError`` once closed.
        """
        if self._closed:
            raise LockedError(_CLOSED)
        if self._generation != self.store.generation:
            self._generation = self.store.generation
            self._forget()

    def _forget(self) -> None:
        self._keys.wipe()
        self._roles = {}
        self._assets = {}
        self._ids = None
        self._identity = None
        self._parses.clear()
        self._asset_parses.clear()
        self._revisions.clear()
        self._sealed.clear()
        self._sealed_size = 0
        self._vault_list = None

    def close(self) -> None:
        """Zero the epoch keys held, drop every decrypted record, the identity and all observers.

        Idempotent. Afterwards every method raises ``LockedError``; a new unlock needs a new
        object. Data keys never outlive the call that unwrapped them.
        """
        self._closed = True
        self._forget()
        self._observers.clear()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def held_keys(self) -> int:
        """How many epoch keys this object holds decoded in memory (0 after ``close``)."""
        return len(self._keys)

    @property
    def cached_records(self) -> int:
        """How many parsed records, revision headers and sealed contents are held (0 after a
        lock or close)."""
        return (
            len(self._parses) + len(self._asset_parses) + len(self._revisions) + len(self._sealed)
        )

    def subscribe(self, observer: CommitObserver) -> Unsubscribe:
        """Call ``observer`` with a :class:`~memories.vault.events.CommitEvent` after every
        durable commit this object makes; returns the function that unsubscribes it.

        Observers run in the committing thread; one that raises is logged (by error type) and
        does not affect the commit or the other observers.
        """
        return self._observers.subscribe(observer)

    # -- caches ------------------------------------------------------------------------------

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
        self._fresh()
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
        return shortest_prefix(asset_id, [ids[i] for i in (at - 1, at + 1) if 0 <= i < len(ids)])

    # -- the commit path ---------------------------------------------------------------------

    def _commit(
        self,
        m: Mutation,
        action: Action,
        states: Iterable[tuple[AssetState, str | None]] = (),
        *,
        vaults: Iterable[str] = (),
        policies_changed: bool = False,
        **details: str | int,
    ) -> CommitEvent:
        """Commit ``m`` with its checkpoint, refresh the caches with the new asset ``states``
        (each with the revision it added, or None) and notify the observers.

        Raises what ``Store.commit`` raises; nothing is cached or notified then.
        """
        self._fresh()
        changed = list(states)
        seq = self.store.commit(m, action=action, details=details)
        if self._generation == self.store.generation:
            for state, _ in changed:
                cache = self._assets.get(state.kind)
                if cache is not None:
                    cache[state.asset_id] = state
                ids = self._ids
                if ids is not None:
                    at = bisect_left(ids, state.asset_id)
                    if at == len(ids) or ids[at] != state.asset_id:
                        ids.insert(at, state.asset_id)
        event = CommitEvent.of(
            seq,
            action,
            (AssetChange(s.asset_id, s.vault_id, s.kind, revision) for s, revision in changed),
            vaults=vaults,
            policies_changed=policies_changed,
        )
        self._observers.notify(event)
        return event

    # -- vaults ------------------------------------------------------------------------------

    def _local(self) -> LocalState:
        self._fresh()
        data = self.store.get(LOCAL_KEY)
        if data is None:
            raise IntegrityError("the store has no device state; it is damaged")
        return self._parses.get(LOCAL_KEY, data, LocalState.from_bytes)

    def _records(self) -> list[VaultRecord]:
        self._fresh()
        version = self.store.entries_version
        cached = self._vault_list
        if cached is not None and cached[0] == version:
            return list(cached[1])
        records = [
            self._parses.get(k, v, VaultRecord.from_bytes) for k, v in self.store.entries("vault/")
        ]
        self._vault_list = (version, records)
        return list(records)

    def _record(self, vault_id: str) -> VaultRecord:
        self._fresh()
        key = vault_key(vault_id)
        data = self.store.get(key)
        if data is None:
            raise IntegrityError("an asset refers to a vault that does not exist")
        return self._parses.get(key, data, VaultRecord.from_bytes)

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

    def vault_role(self, ref: str | None = None) -> tuple[str, str]:
        """The id of the vault ``ref`` names and this identity's role in its current policy
        (``"none"`` without one). Raises as :meth:`resolve_vault`."""
        record = self.resolve_vault(ref)
        return record.vault_id, self._role(record)

    def _role(self, record: VaultRecord) -> str:
        slot = (record.vault_id, len(record.policies))
        role = self._roles.get(slot)
        if role is None:
            policy = load_policy(self.store, record)
            role = self._roles[slot] = policy.members.get(self.identity.user_fingerprint, "none")
        return role

    def _info(self, record: VaultRecord, local: LocalState) -> VaultInfo:
        return VaultInfo(
            id=record.vault_id,
            name=record.name,
            created_at=record.created_at,
            local=record.vault_id in local.local_vaults,
            personal=record.vault_id == local.personal,
            epoch=record.epoch,
            role=self._role(record),
        )

    def vaults(self) -> list[VaultInfo]:
        """Every vault, by name."""
        local = self._local()
        return sorted((self._info(r, local) for r in self._records()), key=lambda v: (v.name, v.id))

    # -- assets and revisions ----------------------------------------------------------------

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
            key = asset_key(kind, asset_id)
            data = self.store.get(key)
            if data is not None:
                return self._asset_parses.get(key, data, AssetState.from_bytes)
        return None

    def _revision(self, revision_id: str) -> Revision:
        self._fresh()
        cached = self._revisions.get(revision_id)
        if cached is not None:
            self._revisions.move_to_end(revision_id)
            return cached
        try:
            data = self.store.get_blob(revision_key(revision_id))
        except IntegrityError:
            raise IntegrityError("a revision this asset refers to is missing") from None
        revision = Revision.from_stored(data, revision_id)
        self._revisions[revision_id] = revision
        if len(self._revisions) > _REVISIONS:
            self._revisions.popitem(last=False)
        return revision

    def _content(self, revision: Revision) -> Content | None:
        record = self._record(revision.vault_id)
        chunks = self._sealed_chunks(revision)
        return open_content(revision, chunks, self._keys.epoch_key(record, revision.epoch))

    def _sealed_chunks(self, revision: Revision) -> tuple[bytes, ...]:
        """The revision's chunks as stored: still sealed under its data key.

        A small revision's are kept (bounded, least recently read dropped first) so reading
        the same memory again does not go to the file each time. They are content the
        revision's signature covers and ``open_content`` checks them against it on every
        read; what is kept is ciphertext, never a key or plaintext.
        """
        cached = self._sealed.get(revision.id)
        if cached is not None:
            self._sealed.move_to_end(revision.id)
            return cached
        store = self.store
        chunks = tuple(store.get_blob(chunk_key(revision.id, i)) for i in range(revision.chunks))
        size = sum(map(len, chunks))
        if size <= _SEALED_ONE:
            self._sealed[revision.id] = chunks
            self._sealed_size += size
            while self._sealed_size > _SEALED:
                _, dropped = self._sealed.popitem(last=False)
                self._sealed_size -= sum(map(len, dropped))
        return chunks

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
