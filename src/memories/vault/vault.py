"""The vault domain over one unlocked store: vaults, assets, their histories, links and views.

Every mutation is staged on a store ``Mutation`` and committed with one checkpoint, so it lands
whole or not at all. Reads go to the store's in-memory entries (asset states, vault records) and
decrypt revision blobs only when content is asked for.

Access rules that depend on *who* is asking (elevation, grants) belong to the service; here the
caller passes ``elevated`` and gets the matching projection: private content is refused or left
out unless elevated, and a credential's value never appears in any view.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from memories.crypto import new_id
from memories.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from memories.vault.assets import AssetState, short_ids
from memories.vault.cards import BUILTIN_CARD_TYPES, CardType, define_card_type
from memories.vault.content import (
    Content,
    Kind,
    make_content,
    parse_kind,
)
from memories.vault.graph import Graph, GraphNode, Link, parse_relation, project_graph
from memories.vault.operations import create_vault, load_policy, write_revision
from memories.vault.policy import Policy
from memories.vault.reader import VaultReader
from memories.vault.records import (
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_key,
    chunk_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, open_content
from memories.vault.summary import Summary
from memories.vault.views import Saved, VaultInfo

__all__ = ["Vaults"]

_VAULT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}")
_FULL_ID = re.compile(r"[0-9a-f]{32}")
_CONTENT_FIELDS = frozenset({"title", "body", "tags", "source", "metadata", "private", "file"})


class Vaults(VaultReader):
    """The vault domain over an unlocked ``Store``: reads (from ``VaultReader``), writes,
    listings, links, verification and revisions from elsewhere."""

    def create_vault(self, name: str, *, local: bool = False) -> VaultInfo:
        """Raises ``UsageError`` for a bad name, ``ConflictError`` if the name is taken."""
        name = name.strip() if isinstance(name, str) else ""
        if not _VAULT_NAME.fullmatch(name):
            raise UsageError(
                "a vault name is 1 to 64 letters, digits, spaces or . _ - (starting with a "
                "letter or digit)"
            )
        if any(r.name == name for r in self._records()):
            raise ConflictError("a vault with that name exists already")
        m = self.store.mutation()
        record = create_vault(m, self.identity, name, local=local)
        state = self._local()
        if local:
            state = LocalState(state.personal, (*state.local_vaults, record.vault_id))
            m.put(LOCAL_KEY, state.to_bytes())
        self._commit(m, "vault.create", (), vault=record.vault_id)
        return self._info(record, state)

    # -- assets: writing ---------------------------------------------------------------------

    def _card_type(self, record: VaultRecord, name: str | None) -> CardType | None:
        if name is None:
            return None
        found = record.card_types.get(name) or BUILTIN_CARD_TYPES.get(name)
        if found is None:
            raise UsageError("unknown card type; `memories card types` lists them")
        return found

    def _build(self, record: VaultRecord, kind: Kind, fields: Mapping[str, object]) -> Content:
        unknown = set(fields) - _CONTENT_FIELDS - {"card_type"}
        if unknown:
            raise UsageError("unknown content field: " + ", ".join(sorted(unknown)))
        card_type = fields.get("card_type")
        if card_type is not None and not isinstance(card_type, str):
            raise UsageError("the card type must be text")
        return make_content(
            kind,
            card_type_def=self._card_type(record, card_type),
            max_file_bytes=self.max_file_bytes,
            **fields,  # type: ignore[arg-type]
        )

    def put(self, vault: str | None, kind: str, **fields: object) -> Saved:
        """Create an asset of ``kind`` in ``vault`` (None: personal) from content ``fields``.

        Fields: title, body, tags, source, card_type, metadata, private, file. Raises
        ``UsageError`` for invalid content (nothing is written) and ``DeniedError`` when this
        device may not write to the vault.
        """
        kind_ = parse_kind(kind)
        record = self.resolve_vault(vault)
        content = self._build(record, kind_, fields)
        m = self.store.mutation()
        revision, state = write_revision(
            m,
            self.identity,
            record,
            asset_id=new_id(),
            kind=kind_,
            state=None,
            parents=(),
            content=content,
        )
        self._commit(m, "asset.put", (state,), asset=state.asset_id, revision=revision.id)
        return Saved(state.asset_id, revision.id, record.vault_id, state.heads)

    def _parents_for_edit(self, state: AssetState, base: str | None, fork: bool) -> list[str]:
        if base is None:
            if state.conflicted:
                raise ConflictError(
                    f"this memory has {len(state.heads)} conflicting versions; "
                    "run `memories resolve` first"
                )
            return list(state.heads)
        base_id = self._resolve_revision(state, base)
        if base_id in state.heads and not state.conflicted:
            return [base_id]
        if fork:
            return [base_id]
        raise ConflictError(
            "the memory changed since the version you edited; re-read it, or keep both "
            "versions deliberately (fork)"
        )

    def update(
        self,
        ref: str,
        *,
        base: str | None = None,
        fork: bool = False,
        elevated: bool = False,
        **changes: object,
    ) -> Saved:
        """Append a revision with ``changes`` applied to the newest head's content.

        ``base`` is the revision the edit started from; if it is no longer the single head the
        edit is refused with ``ConflictError`` unless ``fork`` keeps both as a conflict. Raises
        ``UsageError`` for invalid content and ``DeniedError`` for private content when not
        elevated. Nothing is written on any error.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if "card_type" in changes:
            raise UsageError("a card's type cannot change; create a new card instead")
        parents = self._parents_for_edit(state, base, fork)
        start = self._content(self._revision(parents[0])) if fork else None
        return self._save(state, parents, changes, start, "asset.update")

    def _save(
        self,
        state: AssetState,
        parents: Sequence[str],
        changes: Mapping[str, object],
        start: Content | None,
        action: str,
    ) -> Saved:
        record = self._record(state.vault_id)
        current = start or self._current_or_empty(state)
        fields: dict[str, object] = {
            "title": current.title,
            "body": current.body,
            "tags": current.tags,
            "source": current.source,
            "card_type": current.card_type,
            "metadata": dict(current.metadata) if state.kind == "card" else None,
            "private": current.private,
            "file": current.file,
        }
        fields.update(changes)
        content = self._build(record, state.kind, fields)
        return self._append(record, state, parents, content, action)

    def _append(
        self,
        record: VaultRecord,
        state: AssetState,
        parents: Sequence[str],
        content: Content | None,
        action: str,
    ) -> Saved:
        """Commit one new revision (``content`` None: a tombstone) of an existing asset."""
        m = self.store.mutation()
        revision, new_state = write_revision(
            m,
            self.identity,
            record,
            asset_id=state.asset_id,
            kind=state.kind,
            state=state,
            parents=parents,
            content=content,
        )
        self._commit(m, action, (new_state,), asset=state.asset_id, revision=revision.id)
        return Saved(state.asset_id, revision.id, state.vault_id, new_state.heads)

    def _current_or_empty(self, state: AssetState) -> Content:
        """The content to start from: the newest head's, or (when that is a tombstone) the last
        live version before it."""
        content = self._content(self._revision(state.newest))
        if content is not None:
            return content
        for entry in self._walk(state):
            if not entry.tombstone:
                content = self._content(self._revision(entry.revision))
                if content is not None:
                    return content
        raise IntegrityError("an asset has no content in its history")

    def tombstone(self, ref: str, *, base: str | None = None, elevated: bool = False) -> Saved:
        """Delete from current views; history stays. Raises ``ConflictError`` when conflicted
        or stale, ``UsageError`` when already deleted."""
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if state.deleted:
            raise UsageError("that memory is already deleted")
        parents = self._parents_for_edit(state, base, fork=False)
        return self._append(self._record(state.vault_id), state, parents, None, "asset.tombstone")

    def resolve(
        self,
        ref: str,
        *,
        parents: Sequence[str] | None = None,
        elevated: bool = False,
        **changes: object,
    ) -> Saved:
        """End a conflict with a revision whose parents are all current heads.

        Content starts from the newest head (or the newest live one) with ``changes`` applied;
        ``delete=True`` in ``changes`` resolves to a tombstone. Raises ``UsageError`` when there
        is no conflict or ``parents`` omits a head or names an unknown revision.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if not state.conflicted:
            raise UsageError("this memory has no conflict to resolve")
        if parents is not None:
            try:
                named = {self._resolve_revision(state, p) for p in parents}
            except NotFoundError:
                raise UsageError(
                    "a resolution names a version this memory does not have; "
                    "`memories conflicts` lists the current ones"
                ) from None
            missing = set(state.heads) - named
            if missing or named - set(state.heads):
                raise UsageError(
                    f"a resolution must name exactly the {len(state.heads)} current versions "
                    f"({len(missing)} missing); `memories conflicts` lists them"
                )
        delete = bool(changes.pop("delete", False))
        if delete:
            record = self._record(state.vault_id)
            return self._append(record, state, state.heads, None, "asset.resolve")
        return self._save(state, state.heads, changes, None, "asset.resolve")

    # -- listings ----------------------------------------------------------------------------

    def list_assets(
        self,
        vault: str | None = None,
        *,
        kind: str | None = None,
        card_type: str | None = None,
        tag: str | None = None,
        elevated: bool = False,
        all_vaults: bool = False,
        conflicts_only: bool = False,
    ) -> list[Summary]:
        """Safe summaries of current assets, newest first: no bodies, no credential values,
        private assets only when elevated, deleted assets never."""
        wanted_vault = None if all_vaults else self.resolve_vault(vault).vault_id
        kind_ = None if kind is None else parse_kind(kind)
        assets = self._all_assets() if kind_ is None else self._assets_of(kind_)
        chosen = [
            s
            for s in assets.values()
            if (wanted_vault is None or s.vault_id == wanted_vault)
            and not s.deleted
            and (elevated or not s.private)
            and (kind_ is None or s.kind == kind_)
            and (card_type is None or s.card_type == card_type)
            and (tag is None or tag in s.tags)
            and (not conflicts_only or s.conflicted)
        ]
        shorts = short_ids(self._asset_ids())
        chosen.sort(key=lambda s: (s.updated_at, s.asset_id), reverse=True)
        return [
            Summary(
                id=s.asset_id,
                short_id=shorts[s.asset_id],
                vault=s.vault_id,
                kind=s.kind,
                card_type=s.card_type if s.kind == "card" else None,
                title=s.title,
                tags=s.tags,
                created_at=s.created_at,
                updated_at=s.updated_at,
                author=s.author,
                private=s.private,
                conflicted=s.conflicted,
            )
            for s in chosen
        ]

    def conflicts(self, vault: str | None = None, *, elevated: bool = False) -> list[Summary]:
        return self.list_assets(vault, elevated=elevated, conflicts_only=True)

    # -- cards and links ---------------------------------------------------------------------

    def card_types(self, vault: str | None = None) -> list[CardType]:
        record = self.resolve_vault(vault)
        merged = {**BUILTIN_CARD_TYPES, **record.card_types}
        return [merged[name] for name in sorted(merged)]

    def define_card_type(
        self,
        vault: str | None,
        name: str,
        fields: Sequence[Mapping[str, object]],
        description: str = "",
    ) -> CardType:
        """Add a user-defined card type to ``vault``. Raises ``UsageError``/``ConflictError``."""
        record = self.resolve_vault(vault)
        card_type = define_card_type(name, fields, description)
        if card_type.name in record.card_types:
            raise ConflictError("that card type exists already in this vault")
        updated = replace(record, card_types={**record.card_types, card_type.name: card_type})
        m = self.store.mutation()
        m.put(vault_key(record.vault_id), updated.to_bytes())
        self._commit(m, "card_type.define", (), vault=record.vault_id)
        return card_type

    def _linkable(self, ref: str, what: str) -> AssetState:
        state = self.resolve_asset(ref)
        if state.kind != "card":
            raise UsageError(f"the {what} of a link must be a card")
        if state.deleted:
            raise UsageError(f"the {what} of the link was deleted")
        return state

    def link(self, source: str, target: str, relation: str | None = None) -> Link:
        """Add a directed edge between two live cards of one vault. Raises ``UsageError``."""
        src = self._linkable(source, "source")
        dst = self._linkable(target, "target")
        if src.vault_id != dst.vault_id:
            raise UsageError("links connect cards of the same vault")
        link = Link(src.asset_id, dst.asset_id, parse_relation(relation))
        if link in src.links:
            return link
        new_state = replace(src, links=(*src.links, link))
        m = self.store.mutation()
        m.put(asset_key(src.kind, src.asset_id), new_state.to_bytes())
        self._commit(m, "link.add", (new_state,), source=src.asset_id, target=dst.asset_id)
        return link

    def unlink(self, source: str, target: str, relation: str | None = None) -> int:
        """Remove edges from ``source`` to ``target`` (of ``relation``, or all); returns how many.

        Raises ``NotFoundError`` when there was no such link.
        """
        src = self.resolve_asset(source)
        dst = self.resolve_asset(target)
        wanted = None if relation is None else parse_relation(relation)
        kept = tuple(
            link
            for link in src.links
            if not (link.target == dst.asset_id and wanted in (None, link.relation))
        )
        removed = len(src.links) - len(kept)
        if not removed:
            raise NotFoundError("there is no such link")
        new_state = replace(src, links=kept)
        m = self.store.mutation()
        m.put(asset_key(src.kind, src.asset_id), new_state.to_bytes())
        self._commit(m, "link.remove", (new_state,), source=src.asset_id, target=dst.asset_id)
        return removed

    def graph(self, vault: str | None = None, *, elevated: bool = False) -> Graph:
        """The vault's cards and links: only current, unambiguous, visible nodes and edges."""
        vault_id = self.resolve_vault(vault).vault_id
        cards = [s for s in self._assets_of("card").values() if s.vault_id == vault_id]
        nodes = [
            GraphNode(
                id=s.asset_id,
                title=s.title,
                card_type=s.card_type,
                kind=s.kind,
                visible=not s.deleted and not s.conflicted and (elevated or not s.private),
            )
            for s in cards
        ]
        return project_graph(nodes, (link for s in cards for link in s.links))

    # -- verification ------------------------------------------------------------------------

    def verify(self) -> dict[str, int]:
        """Verify every policy chain and every revision's signature, certificate and parents.

        Raises ``IntegrityError`` at the first failure; returns counts.
        """
        policies: dict[str, Policy] = {}
        for record in self._records():
            previous = None
            for seq in range(1, len(record.policies) + 1):
                policy = load_policy(self.store, record, seq)
                policy.verify(previous)
                policies[policy.id] = policy
                previous = policy
        revisions = 0
        for state in self._all_assets().values():
            known: set[str] = set()
            for entry in reversed(self._walk(state)):
                revision = self._revision(entry.revision)
                if not set(revision.parents) <= known:
                    raise IntegrityError("a revision's parent is missing")
                in_force = policies.get(revision.policy)
                if in_force is None:
                    raise IntegrityError("a revision names an unknown policy")
                chunks = [
                    self.store.get_blob(chunk_key(entry.revision, i))
                    for i in range(revision.chunks)
                ]
                revision.verify(in_force, chunks)
                known.add(entry.revision)
                revisions += 1
        return {"policies": len(policies), "revisions": revisions}

    # -- revisions from elsewhere ------------------------------------------------------------

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
        content = open_content(revision, chunks, record.keys[revision.epoch])
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
        self._commit(m, "revision.accept", (new_state,), asset=revision.asset_id)
        return revision_id

    def _record_or_integrity(self, vault_id: str) -> VaultRecord:
        data = self.store.get(vault_key(vault_id))
        if data is None:
            raise IntegrityError("a revision belongs to a vault this device does not have")
        return VaultRecord.from_bytes(data)

    def export_revision(self, revision_id: str) -> tuple[bytes, list[bytes]]:
        """A stored revision's signed header and sealed chunks, exactly as ``accept`` takes them."""
        revision = self._revision(revision_id)
        chunks = [self.store.get_blob(chunk_key(revision_id, i)) for i in range(revision.chunks)]
        return revision.to_bytes(), chunks
