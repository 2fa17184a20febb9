"""What the vault domain hands back: plain, frozen views with JSON forms.

None of them carries a credential's secret value: the vault replaces it before a view exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from memories.vault.content import Content, Kind
from memories.vault.graph import Link

__all__ = ["AssetView", "HistoryEntry", "Saved", "VaultInfo"]


@dataclass(frozen=True)
class VaultInfo:
    id: str
    name: str
    created_at: str
    local: bool
    personal: bool
    epoch: int
    role: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "local": self.local,
            "personal": self.personal,
            "epoch": self.epoch,
            "role": self.role,
        }


@dataclass(frozen=True)
class Saved:
    """The result of a write: which asset, which new revision."""

    asset_id: str
    revision: str
    vault_id: str
    heads: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "asset": self.asset_id,
            "revision": self.revision,
            "vault": self.vault_id,
            "heads": list(self.heads),
        }


@dataclass(frozen=True)
class AssetView:
    asset_id: str
    vault_id: str
    kind: Kind
    revision: str  # the revision shown (the newest head unless one was asked for)
    heads: tuple[str, ...]
    content: Content | None  # None for a tombstone
    created_at: str
    updated_at: str
    revisions: int
    author: str
    links: tuple[Link, ...]
    secret_hidden: bool  # a credential: its value is never part of a view

    @property
    def conflicted(self) -> bool:
        return len(self.heads) > 1

    def to_dict(self) -> dict[str, object]:
        content = self.content
        doc: dict[str, object] = {
            "asset": self.asset_id,
            "vault": self.vault_id,
            "kind": self.kind,
            "revision": self.revision,
            "heads": list(self.heads),
            "conflicted": self.conflicted,
            "deleted": content is None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "revisions": self.revisions,
            "author": self.author,
            "links": [{"target": link.target, "relation": link.relation} for link in self.links],
        }
        if content is not None:
            doc.update(
                title=content.title,
                body=None if self.secret_hidden else content.body,
                tags=list(content.tags),
                source=content.source,
                card_type=content.card_type,
                metadata={
                    k: list(v) if isinstance(v, tuple) else v for k, v in content.metadata.items()
                },
                private=content.private,
            )
            if content.file is not None:
                doc["file"] = {
                    "name": content.file.name,
                    "media_type": content.file.media_type,
                    "size": len(content.file.data),
                }
        doc["secret_hidden"] = self.secret_hidden
        return doc


@dataclass(frozen=True)
class HistoryEntry:
    revision: str
    parents: tuple[str, ...]
    created_at: str
    author_user: str
    author_device: str
    tombstone: bool
    title: str  # the summary: the revision's title ("" for a tombstone)
    head: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "revision": self.revision,
            "parents": list(self.parents),
            "created_at": self.created_at,
            "author": {"user": self.author_user, "device": self.author_device},
            "tombstone": self.tombstone,
            "title": self.title,
            "head": self.head,
        }
