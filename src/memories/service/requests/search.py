"""Requests about search: ranked, safe projections of what a vault holds."""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import VAULT_HELP, Needs, RequestModel, Text

__all__ = ["MAX_QUERY_CHARS", "SearchQueryRequest", "SearchRequest"]

#: A longer query is refused; past 64 distinct words the rest are ignored anyway.
MAX_QUERY_CHARS: Final = 128 * 1024


class SearchQueryRequest(RequestModel):
    """Search a vault's memories and cards (never credentials, files or private content)."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = "`{results: [{summary, revision, chunk, snippet, score, scores}], index, query}`"

    op: Literal["search"]
    query: Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)] = Field(
        repr=False, description='words, "exact phrases", -excluded words, tag:NAME'
    )
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    kind: Literal["memory", "card"] | None = Field(default=None, description="only this kind")
    limit: int = Field(default=10, ge=1, le=100)


SearchRequest: TypeAlias = SearchQueryRequest
