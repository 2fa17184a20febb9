"""Building the safe summary projection that search, list and graph views expose.

A :class:`~memories.views.assets.Summary` names an asset and describes it (kind, card type,
title, tags, times, author, flags) without its body, metadata values or file data, so it never
carries a secret value or a credential reference. Whether private content is listed at all is
:func:`visible_in_listing`'s decision.
"""

from __future__ import annotations

from memories.errors import UsageError
from memories.vault.content import Content
from memories.views.assets import Summary
from memories.views.kinds import Kind, parse_kind

__all__ = ["summarize", "visible_in_listing"]


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
