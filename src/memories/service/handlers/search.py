"""Handlers for search."""

from __future__ import annotations

from typing import Any

from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import SearchQueryRequest, SearchRequest

__all__ = ["handle"]


def handle(core: Core, request: SearchRequest, access: Access) -> dict[str, Any]:
    """Answer a search; the index never holds private content, so elevation changes nothing.

    Raises ``UsageError`` for a query without words, as ``SearchCache.search`` otherwise.
    """
    del access  # authorize() already checked the caller's role in the vault and its grant
    assert isinstance(request, SearchQueryRequest)
    hits, status, query = core.search.search(
        core.domain(), request.query, vault=request.vault, kind=request.kind, limit=request.limit
    )
    return {
        "results": [hit.to_dict() for hit in hits],
        "index": status.to_dict(),
        "query": {
            "tokens": list(query.tokens),
            "phrases": list(query.phrases),
            "excluded": list(query.excluded),
            "tags": list(query.tags),
            "truncated": query.truncated,
        },
        "mode": "bm25",
    }
