"""Reading assets: one asset's view, its file payload, history and diffs, listings of safe
summaries, conflicts and card types.

Content-returning methods take ``elevated``: private content is refused or left out unless the
caller is elevated (the service decides that), and a credential's value never appears in any
view, history title or diff.
"""

from __future__ import annotations

from dataclasses import replace

from memories.errors import DeniedError, NotFoundError, UsageError
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.content import Content, FilePayload, parse_kind
from memories.vault.diff import unified_diff
from memories.vault.edit import PROTECTED_CARD
from memories.vault.revision import Revision
from memories.views.assets import AssetView, ContentView, FileInfo, HistoryEntry, Summary
from memories.views.cards import BUILTIN_CARD_TYPES, CardType
from memories.views.format import short_ids

__all__ = ["Listing", "content_view"]


def content_view(content: Content, *, hide_body: bool) -> ContentView:
    """What a view shows of ``content``: everything but a file's bytes, and no body when
    ``hide_body`` (a credential's body is its secret value)."""
    payload = content.file
    return ContentView(
        title=content.title,
        body="" if hide_body else content.body,
        tags=content.tags,
        source=content.source,
        card_type=content.card_type,
        metadata=content.metadata,
        private=content.private,
        file=None
        if payload is None
        else FileInfo(payload.name, payload.media_type, payload.size, payload.digest),
    )


class Listing(VaultBase):
    """Reads of single assets and listings of many."""

    def _shown(
        self, state: AssetState, revision: str | None, elevated: bool
    ) -> tuple[str, Content | None]:
        """The revision a read shows and its content, after the private checks."""
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
        return revision_id, content

    def get(self, ref: str, *, revision: str | None = None, elevated: bool = False) -> AssetView:
        """The asset's newest head (or ``revision``), decrypted, with credential values hidden.

        Raises ``NotFoundError`` (also for a deleted asset, unless a revision is named),
        ``DeniedError`` for private content when not elevated, ``IntegrityError``.
        """
        state = self.resolve_asset(ref)
        revision_id, content = self._shown(state, revision, elevated)
        hidden = state.kind == "credential"
        return AssetView(
            asset_id=state.asset_id,
            vault_id=state.vault_id,
            kind=state.kind,
            revision=revision_id,
            heads=state.heads,
            content=None if content is None else content_view(content, hide_body=hidden),
            created_at=state.created_at,
            updated_at=state.updated_at,
            revisions=state.revisions,
            author=state.author,
            links=state.links,
            secret_hidden=hidden,
        )

    def carries_secrets(self, ref: str) -> bool:
        """Whether ``ref`` is a credential, or any head of it is a protected card or maps
        secret references: assets only the user edits, never a grant's client."""
        state = self.resolve_asset(ref)
        if state.kind == "credential":
            return True
        if state.kind not in ("memory", "card"):
            return False
        for head in state.heads:
            content = self._content(self._revision(head))
            if content is not None and (content.secrets or content.card_type == PROTECTED_CARD):
                return True
        return False

    def file_payload(self, ref: str, *, elevated: bool = False) -> FilePayload:
        """A file asset's payload. Raises ``UsageError`` for other kinds, as ``get`` otherwise."""
        _, content = self._shown(self.resolve_asset(ref), None, elevated)
        if content is None or content.file is None:
            raise UsageError("that asset is not a file")
        return content.file

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
        private assets only when elevated, deleted assets never.

        Raises ``NotFoundError``/``UsageError`` for an unknown vault or kind.
        """
        wanted_vault = None if all_vaults else self.resolve_vault(vault).vault_id
        kind_ = None if kind is None else parse_kind(kind)
        assets = self._all_assets() if kind_ is None else self._assets_of(kind_)
        chosen = [
            s
            for s in assets.values()
            if (wanted_vault is None or s.vault_id == wanted_vault)
            and not s.deleted
            and (elevated or not s.private)
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
        """Summaries of the assets with more than one head, as ``list_assets``."""
        return self.list_assets(vault, elevated=elevated, conflicts_only=True)

    def card_types(self, vault: str | None = None) -> list[CardType]:
        """The built-in card types and ``vault``'s own, by name."""
        record = self.resolve_vault(vault)
        merged = {**BUILTIN_CARD_TYPES, **record.card_types}
        return [merged[name] for name in sorted(merged)]
