"""What the service answers about assets: saved writes, asset views, history entries and
the safe summaries listings show. Plain, frozen shapes with JSON forms.

None of them carries a credential's secret value or a file's bytes: the vault builds them from
decrypted content and leaves those out before a view exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memories.views.graph import Link
from memories.views.kinds import Kind

__all__ = ["AssetView", "ContentView", "FileInfo", "HistoryEntry", "Saved", "Summary"]


@dataclass(frozen=True)
class Saved:
    """The result of a write: which asset, which new revision, the heads after it."""

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
class FileInfo:
    """What a view says about a file payload: never its bytes."""

    name: str
    media_type: str
    size: int
    digest: str  # "sha256:<hex>" of the payload


@dataclass(frozen=True, repr=False)
class ContentView:
    """One revision's content as a view shows it. ``body`` is ``""`` when the view hides a
    credential's value. The repr shows only the shape: any field may be private."""

    title: str
    body: str
    tags: tuple[str, ...]
    source: str | None
    card_type: str | None
    metadata: Mapping[str, object] = field(default_factory=dict)
    private: bool = False
    file: FileInfo | None = None

    def __repr__(self) -> str:
        return (
            f"ContentView(title=<{len(self.title)} chars>, body=<{len(self.body)} chars>, "
            f"tags=<{len(self.tags)}>, card_type={self.card_type!r}, private={self.private})"
        )


@dataclass(frozen=True)
class AssetView:
    asset_id: str
    vault_id: str
    kind: Kind
    revision: str  # the revision shown (the newest head unless one was asked for)
    heads: tuple[str, ...]
    content: ContentView | None  # None for a tombstone
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
                    "size": content.file.size,
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
    title: str  # the summary: the revision's title ("" for a tombstone or hidden private one)
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


@dataclass(frozen=True)
class Summary:
    """What a listing (search, list, graph) shows about one asset: no body, metadata values or
    file data, so never a secret value or a credential reference."""

    id: str
    short_id: str
    vault: str
    kind: Kind
    card_type: str | None
    title: str
    tags: tuple[str, ...]
    created_at: str
    updated_at: str
    author: str
    private: bool
    conflicted: bool

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return {
            "id": self.id,
            "short_id": self.short_id,
            "vault": self.vault,
            "kind": self.kind,
            "card_type": self.card_type,
            "title": self.title,
            "tags": list(self.tags),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "author": self.author,
            "private": self.private,
            "conflicted": self.conflicted,
        }
