"""Revisions and records moving between devices and into backups: exporting a stored revision,
accepting one written elsewhere, exporting the state a backup carries, and reading the archive
a recovery leaves behind. Synchronization and backup build on these; their transports and file
formats live elsewhere (:mod:`memories.backup`).

The archive keeps the original signed histories of a recovered store, read-only, under its own
keys (see docs/FORMATS.md, "memories backup file")::

    entry  archive/vault/<original vault id>                  ArchivedVault
    entry  archive/asset/<original vault id>/<kind>/<asset>   ArchivedAsset
    blob   archive/policy/<original vault id>/<seq>           the original policy entries
    blob   archive/rev/<revision id>[/<i>]                    the original revisions and chunks

Nothing writes to these keys after the recovery that created them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, resolve_short, wipe
from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.vault.assets import AssetState, newest_first
from memories.vault.base import VaultBase
from memories.vault.content import Content
from memories.vault.operations import load_policy, read_policy
from memories.vault.records import (
    IDENTITY_KEY,
    VaultRecord,
    asset_key,
    chunk_key,
    policy_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, open_content
from memories.views.assets import HistoryEntry

__all__ = [
    "ARCHIVE_ASSET_PREFIX",
    "ARCHIVE_VAULT_PREFIX",
    "ArchivedAsset",
    "ArchivedAssetInfo",
    "ArchivedVault",
    "ArchivedVaultInfo",
    "ExportedState",
    "Replicating",
    "archive_asset_key",
    "archive_key",
    "archive_vault_key",
]

ARCHIVE_VAULT_PREFIX = "archive/vault/"
ARCHIVE_ASSET_PREFIX = "archive/asset/"
_ARCHIVED_VAULT_TAG = "memories.archive.vault"
_ARCHIVED_ASSET_TAG = "memories.archive.asset"
_HEX = re.compile(r"[0-9a-f]{4,32}")


def archive_key(key: str) -> str:
    """Where the archive keeps the original blob stored under ``key`` (policy or revision)."""
    return f"archive/{key}"


def archive_vault_key(vault_id: str) -> str:
    return f"{ARCHIVE_VAULT_PREFIX}{vault_id}"


def archive_asset_key(vault_id: str, kind: str, asset_id: str) -> str:
    # The original vault and kind are part of the key: a backup is outside input, and one asset
    # id appearing twice must not make one archived history overwrite another.
    return f"{ARCHIVE_ASSET_PREFIX}{vault_id}/{kind}/{asset_id}"


def _load(data: bytes, tag: str, what: str) -> Mapping[str, object]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise IntegrityError(f"the archived {what} record is malformed") from exc
    if not isinstance(doc, dict) or doc.get("t") != tag or doc.get("v") != 1:
        raise IntegrityError(f"the archived {what} record is malformed")
    return doc


@dataclass(frozen=True)
class ExportedState:
    """What :meth:`Replicating.export_state` read: store records by key, sorted by key."""

    seq: int  # the commit the records are the state after
    personal: str
    records: tuple[tuple[str, bytes], ...]
    vaults: int
    assets: int
    revisions: int

    def __repr__(self) -> str:
        return f"ExportedState(seq={self.seq}, records=<{len(self.records)}>)"


@dataclass(frozen=True)
class ArchivedVaultInfo:
    id: str  # the original vault id
    name: str
    created_at: str
    epoch: int
    policies: int
    restored_as: str | None  # the vault the recovery created in its place
    backup: str
    backup_created_at: str
    restored_at: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "epoch": self.epoch,
            "policies": self.policies,
            "restored_as": self.restored_as,
            "backup": self.backup,
            "backup_created_at": self.backup_created_at,
            "restored_at": self.restored_at,
        }


@dataclass(frozen=True)
class ArchivedVault:
    """An original vault record (its epoch keys open the archived content) and where it went."""

    record: VaultRecord
    raw: bytes  # the record exactly as the backup carried it
    restored_as: str | None
    backup: str
    backup_created_at: str
    restored_at: str

    def __repr__(self) -> str:
        return f"ArchivedVault({self.record!r})"

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": _ARCHIVED_VAULT_TAG,
                "v": 1,
                "record": b64u_encode(self.raw),
                "restored_as": self.restored_as,
                "backup": self.backup,
                "backup_created_at": self.backup_created_at,
                "restored_at": self.restored_at,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ArchivedVault:
        """Raises ``IntegrityError`` for a malformed record."""
        doc = _load(data, _ARCHIVED_VAULT_TAG, "vault")
        try:
            raw = b64u_decode(str(doc["record"]))
            restored = doc["restored_as"]
            return cls(
                record=VaultRecord.from_bytes(raw),
                raw=raw,
                restored_as=None if restored is None else str(restored),
                backup=str(doc["backup"]),
                backup_created_at=str(doc["backup_created_at"]),
                restored_at=str(doc["restored_at"]),
            )
        except KeyError as exc:
            raise IntegrityError("the archived vault record is malformed") from exc

    def info(self) -> ArchivedVaultInfo:
        record = self.record
        return ArchivedVaultInfo(
            id=record.vault_id,
            name=record.name,
            created_at=record.created_at,
            epoch=record.epoch,
            policies=len(record.policies),
            restored_as=self.restored_as,
            backup=self.backup,
            backup_created_at=self.backup_created_at,
            restored_at=self.restored_at,
        )


@dataclass(frozen=True)
class ArchivedAssetInfo:
    """What ``archive ls`` shows of one archived asset: its summary, never content."""

    id: str
    vault: str  # the original vault id
    vault_name: str
    kind: str
    card_type: str | None
    title: str
    tags: tuple[str, ...]
    private: bool
    deleted: bool
    conflicted: bool
    revisions: int
    created_at: str
    updated_at: str
    restored_as: str | None  # the live asset the recovery made of it; None when not restored

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "vault": self.vault,
            "vault_name": self.vault_name,
            "kind": self.kind,
            "card_type": self.card_type,
            "title": self.title,
            "tags": list(self.tags),
            "private": self.private,
            "deleted": self.deleted,
            "conflicted": self.conflicted,
            "revisions": self.revisions,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "restored_as": self.restored_as,
        }


@dataclass(frozen=True)
class ArchivedAsset:
    """An original asset record and the live asset (if any) a recovery made of it."""

    state: AssetState
    raw: bytes
    restored_as: str | None

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": _ARCHIVED_ASSET_TAG,
                "v": 1,
                "state": b64u_encode(self.raw),
                "restored_as": self.restored_as,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ArchivedAsset:
        """Raises ``IntegrityError`` for a malformed record."""
        doc = _load(data, _ARCHIVED_ASSET_TAG, "asset")
        try:
            raw = b64u_decode(str(doc["state"]))
            restored = doc["restored_as"]
        except KeyError as exc:
            raise IntegrityError("the archived asset record is malformed") from exc
        return cls(AssetState.from_bytes(raw), raw, None if restored is None else str(restored))

    def info(self, vaults: Mapping[str, ArchivedVault]) -> ArchivedAssetInfo:
        state = self.state
        vault = vaults.get(state.vault_id)
        return ArchivedAssetInfo(
            id=state.asset_id,
            vault=state.vault_id,
            vault_name="" if vault is None else vault.record.name,
            kind=state.kind,
            card_type=state.card_type,
            title=state.title,
            tags=state.tags,
            private=state.private,
            deleted=state.deleted,
            conflicted=state.conflicted,
            revisions=state.revisions,
            created_at=state.created_at,
            updated_at=state.updated_at,
            restored_as=self.restored_as,
        )


class Replicating(VaultBase):
    """Export and accept signed revisions; export the state a backup carries; read the archive."""

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

    # -- export: what a backup carries -------------------------------------------------------

    def export_state(self) -> ExportedState:
        """Every record a backup carries, read in one go so they form one consistent state.

        That is this device's identity (its private keys are the recovery material) and, for
        every vault that is not device-only, its record (epoch keys included), its policy
        chain, its asset records and every revision reachable from their heads with its
        sealed chunks. Device-only vaults and the device state are left out. The caller must
        hold the service lock for the whole call (one request handler), so no commit lands in
        between. Raises ``IntegrityError`` when a record is missing or damaged, ``LockedError``.
        """
        self._fresh()
        local = self._local()
        records: dict[str, bytes] = {}
        identity = self.store.get(IDENTITY_KEY)
        if identity is None:
            raise IntegrityError("the store has no identity; it is damaged")
        records[IDENTITY_KEY] = identity
        exported: set[str] = set()
        for key, value in self.store.entries("vault/"):
            record = VaultRecord.from_bytes(value)
            if record.local or record.vault_id in local.local_vaults:
                continue
            exported.add(record.vault_id)
            records[key] = value
            for seq, policy_id in enumerate(record.policies, start=1):
                # Under its plain key even when stored under an adopted one (see policy_key):
                # a backup holds the chain, not where this store happens to keep it.
                key, _ = read_policy(self.store, record.vault_id, seq, policy_id)
                records[policy_key(record.vault_id, seq)] = self.store.get_blob(key)
        if local.personal not in exported:
            raise IntegrityError("the personal vault is missing; the store is damaged")
        assets = revisions = 0
        for key, value in self.store.entries("asset/"):
            state = AssetState.from_bytes(value)
            if state.vault_id not in exported:
                continue
            assets += 1
            records[key] = value
            seen: dict[str, Revision] = {}
            self._walk(state, seen)
            for revision_id, revision in seen.items():
                revisions += 1
                records[revision_key(revision_id)] = revision.to_bytes()
                for index in range(revision.chunks):
                    chunk = chunk_key(revision_id, index)
                    records[chunk] = self.store.get_blob(chunk)
        return ExportedState(
            seq=self.store.seq,
            personal=local.personal,
            records=tuple(sorted(records.items())),
            vaults=len(exported),
            assets=assets,
            revisions=revisions,
        )

    # -- the archive: original histories kept read-only after a recovery ----------------------

    def _archived_vaults(self) -> dict[str, ArchivedVault]:
        self._fresh()
        found = {}
        for key, value in self.store.entries(ARCHIVE_VAULT_PREFIX):
            vault = ArchivedVault.from_bytes(value)
            if key != archive_vault_key(vault.record.vault_id):
                raise IntegrityError("an archived vault record is filed under another id")
            found[vault.record.vault_id] = vault
        return found

    def _archived_assets(self) -> list[ArchivedAsset]:
        self._fresh()
        found = []
        for key, value in self.store.entries(ARCHIVE_ASSET_PREFIX):
            asset = ArchivedAsset.from_bytes(value)
            state = asset.state
            if key != archive_asset_key(state.vault_id, state.kind, state.asset_id):
                raise IntegrityError("an archived asset record is filed under another id")
            found.append(asset)
        return found

    def archive_vaults(self) -> list[ArchivedVaultInfo]:
        """The vaults a recovery archived, by name. Raises ``IntegrityError``, ``LockedError``."""
        return sorted(
            (v.info() for v in self._archived_vaults().values()), key=lambda v: (v.name, v.id)
        )

    def archive_assets(self, *, elevated: bool = False) -> list[ArchivedAssetInfo]:
        """The archived assets, newest first; private ones only when ``elevated``.

        Raises ``IntegrityError`` for a damaged archive record, ``LockedError``.
        """
        vaults = self._archived_vaults()
        shown = [
            asset.info(vaults)
            for asset in self._archived_assets()
            if elevated or not asset.state.private
        ]
        shown.sort(key=lambda a: (a.updated_at, a.id), reverse=True)
        return shown

    def archive_history(
        self, ref: str, *, elevated: bool = False
    ) -> tuple[ArchivedAssetInfo, list[HistoryEntry]]:
        """The archived asset ``ref`` (its original id or a prefix) and its original signed
        history, newest first, each entry's title read from its archived content (blank for a
        tombstone, and for private content unless ``elevated``).

        Every archived revision is checked against its id and signature as it is read.
        Raises ``NotFoundError``, ``UsageError`` (ambiguous), ``DeniedError`` for a private
        asset when not elevated, ``IntegrityError`` for archive damage.
        """
        if not isinstance(ref, str) or not _HEX.fullmatch(ref.strip().lower()):
            raise NotFoundError("no archived asset has that id; `memories archive ls` lists them")
        wanted = ref.strip().lower()
        assets = self._archived_assets()
        ids = sorted({a.state.asset_id for a in assets})
        if wanted not in ids:
            wanted = resolve_short(wanted, [i for i in ids if i.startswith(wanted)])
        matches = [a for a in assets if a.state.asset_id == wanted]
        if not matches:
            raise NotFoundError("no archived asset has that id; `memories archive ls` lists them")
        if len(matches) > 1:
            raise UsageError("that id names several archived assets (in different vaults)")
        asset = matches[0]
        state = asset.state
        if state.private and not elevated:
            raise DeniedError("this archived memory is private; run `memories sudo` to see it")
        vaults = self._archived_vaults()
        vault = vaults.get(state.vault_id)
        if vault is None:
            raise IntegrityError("an archived asset refers to an archived vault that is missing")
        revisions = self._archived_revisions(state)
        order = newest_first({rid: (rev.created_at, rev.parents) for rid, rev in revisions.items()})
        heads = set(state.heads)
        entries = []
        for revision_id in order:
            revision = revisions[revision_id]
            title = ""
            if not revision.tombstone:
                content = self._archived_content(vault.record, revision)
                if content is not None and (elevated or not content.private):
                    title = content.title
            entries.append(
                HistoryEntry(
                    revision=revision_id,
                    parents=revision.parents,
                    created_at=revision.created_at,
                    author_user=revision.author_user,
                    author_device=revision.author_device,
                    tombstone=revision.tombstone,
                    title=title,
                    head=revision_id in heads,
                )
            )
        return asset.info(vaults), entries

    def _archived_revisions(self, state: AssetState) -> dict[str, Revision]:
        seen: dict[str, Revision] = {}
        pending = list(state.heads)
        while pending:
            revision_id = pending.pop()
            if revision_id in seen:
                continue
            try:
                data = self.store.get_blob(archive_key(revision_key(revision_id)))
            except IntegrityError:
                raise IntegrityError("an archived revision is missing") from None
            revision = Revision.from_stored(data, revision_id)
            revision.verify_signature()
            if revision.asset_id != state.asset_id or revision.vault_id != state.vault_id:
                raise IntegrityError("an archived revision belongs to another asset")
            seen[revision_id] = revision
            pending.extend(revision.parents)
        return seen

    def _archived_content(self, record: VaultRecord, revision: Revision) -> Content | None:
        chunks = [
            self.store.get_blob(archive_key(chunk_key(revision.id, i)))
            for i in range(revision.chunks)
        ]
        stored = record.keys.get(revision.epoch)
        if stored is None:
            raise IntegrityError("an archived revision names an epoch whose key is missing")
        key = bytearray(stored)
        try:
            return open_content(revision, chunks, key)
        finally:
            wipe(key)

    def archive_blob_keys(self) -> frozenset[str]:
        """Every blob key the archive refers to (policy entries, revisions, chunks), so a
        whole-store check can tell them from blobs nothing refers to.

        An archived revision that cannot be read is still named (it is then reported
        missing, not ignored). Raises ``LockedError``; ``IntegrityError`` for a malformed
        archive record.
        """
        keys: set[str] = set()
        for vault in self._archived_vaults().values():
            record = vault.record
            keys.update(
                archive_key(policy_key(record.vault_id, seq))
                for seq in range(1, len(record.policies) + 1)
            )
        for asset in self._archived_assets():
            pending = list(asset.state.heads)
            seen: set[str] = set()
            while pending:
                revision_id = pending.pop()
                if revision_id in seen:
                    continue
                seen.add(revision_id)
                key = archive_key(revision_key(revision_id))
                keys.add(key)
                try:
                    revision = Revision.from_bytes(self.store.get_blob(key))
                except IntegrityError:
                    continue
                keys.update(archive_key(chunk_key(revision_id, i)) for i in range(revision.chunks))
                pending.extend(revision.parents)
        return frozenset(keys)
