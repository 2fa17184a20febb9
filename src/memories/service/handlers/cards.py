"""Handlers for cards, card types and links."""

from __future__ import annotations

from typing import Any, assert_never

from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import (
    CardPutRequest,
    CardRequest,
    CardTypeDefineRequest,
    CardTypesRequest,
    GraphRequest,
    LinkRequest,
    UnlinkRequest,
)

__all__ = ["handle"]


def handle(core: Core, request: CardRequest, access: Access) -> dict[str, Any]:
    match request:
        case CardPutRequest():
            saved = core.domain().put(
                request.vault,
                "card",
                title=request.title,
                card_type=request.card_type,
                metadata=request.metadata or {},
                body=request.body,
                tags=tuple(request.tags or ()),
                source=request.source,
                private=request.private,
            )
            return core.saved(saved)
        case CardTypesRequest():
            types = core.domain().card_types(request.vault)
            return {"card_types": [t.to_dict() for t in types]}
        case CardTypeDefineRequest():
            fields = [f.model_dump(exclude_none=True) for f in request.fields]
            defined = core.domain().define_card_type(
                request.vault, request.name, fields, request.description
            )
            return dict(defined.to_dict())
        case LinkRequest():
            link = core.domain().link(request.source, request.target, request.relation)
            return dict(link.to_dict())
        case UnlinkRequest():
            removed = core.domain().unlink(request.source, request.target, request.relation)
            return {"removed": removed}
        case GraphRequest():
            graph = core.domain().graph(request.vault, elevated=access.elevated)
            return dict(graph.to_dict())
        case _:
            assert_never(request)
