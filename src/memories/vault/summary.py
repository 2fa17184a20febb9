"""The safe summary projection that search, list and graph views expose.

A :class:`Summary` names an asset and describes it (kind, card type, title, tags, times, author,
flags) without its body, metadata values or file data, so it never carries a secret value or a
credential reference. Whether private content is listed at all is :func:`visible_in_listing`'s
decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from memories.errors import UsageError
from memories.vault.content import Content, Kind, parse_kind

__all__ = ["Summary", "summarize", "visible_in_listing"]


@dataclass(frozen=True)
class Summary:
    """What a listing shows about one asset."""

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


def summarize(
    *,
    asset_id: str,
    short_id: str,
    vault: str,
    kind: Kind,
    content: Content,
    created_at: str,
    updated_at: str,
    author: str,
    conflicted: bool,
) -> Summary:
    """Project ``content`` of asset ``asset_id`` to its :class:`Summary`.

    Only the title, tags, card type (for cards) and private flag are taken from the content;
    the body, metadata and file never are.

    Raises:
        UsageError: ``kind`` is not an asset kind or an identifier is blank.
    """
    kind = parse_kind(kind)
    for value in (asset_id, short_id, vault):
        if not isinstance(value, str) or not value:
            raise UsageError("a summary needs the asset id, its short id and the vault")
    return Summary(
        id=asset_id,
        short_id=short_id,
        vault=vault,
        kind=kind,
        card_type=content.card_type if kind == "card" else None,
        title=content.title,
        tags=content.tags,
        created_at=created_at,
        updated_at=updated_at,
        author=author,
        private=content.private,
        conflicted=conflicted,
    )


def visible_in_listing(content: Content, *, elevated: bool) -> bool:
    """Whether ``content`` may appear in a listing: private content only when elevated."""
    return elevated or not content.private
