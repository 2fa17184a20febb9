"""Requests about search: ranked, safe projections of what a vault holds, cited chunks for
agents, and answers written from them by a configured model."""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import VAULT_HELP, Needs, RequestModel, Text

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUESTION_CHARS",
    "AskRequest",
    "RagStatusRequest",
    "RetrieveRequest",
    "SearchMode",
    "SearchQueryRequest",
    "SearchRequest",
]

#: A longer query is refused; past 64 distinct words the rest are ignored anyway.
MAX_QUERY_CHARS: Final = 128 * 1024
#: A question goes into a model's prompt whole, so it is bounded more tightly.
MAX_QUESTION_CHARS: Final = 8 * 1024

_CHUNK_SHAPE: Final = "{n, label, asset, kind, title, text, score, revision}"
_MODE_HELP: Final = (
    "hybrid (keywords fused with vectors, the default), bm25 (keywords only) or vector; "
    "falls back to bm25 while nothing is embedded"
)
_RERANK_HELP: Final = (
    "rerank the best 50 candidates (query-word coverage and exact phrases, or the learned "
    "rerank configured in [rag]); false keeps the first stage's order"
)
SearchMode = Literal["bm25", "vector", "hybrid"]


class SearchQueryRequest(RequestModel):
    """Search a vault's memories and cards (never credentials, files or private content)."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = (
        "`{results: [{summary, revision, chunk, snippet, score, scores}], index, query, mode, "
        "rerank}` (`mode`: the one used; `index.vectors`/`vector_error`: why vectors were not; "
        "`rerank`: learned, default or none; `rerank_error`: why the learned one was not)"
    )

    op: Literal["search"]
    query: Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)] = Field(
        repr=False, description='words, "exact phrases", -excluded words, tag:NAME'
    )
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    kind: Literal["memory", "card"] | None = Field(default=None, description="only this kind")
    limit: int = Field(default=10, ge=1, le=100)
    mode: SearchMode = Field(default="hybrid", description=_MODE_HELP)
    rerank: bool = Field(default=True, description=_RERANK_HELP)


class RetrieveRequest(RequestModel):
    """The best chunks for a query, labelled for citation (``[S1]``, ``[S2]`` ...), with their
    asset's short id and revision; never credentials, files or private content. A delivery
    intent naming the sources is recorded before the chunks are returned."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = f"`{{chunks: [{_CHUNK_SHAPE}], index, mode, rerank}}`"

    op: Literal["retrieve"]
    query: Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)] = Field(
        repr=False, description="what to look for (the search query language)"
    )
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    limit: int = Field(default=8, ge=1, le=50, description="how many chunks")
    mode: SearchMode = Field(default="hybrid", description=_MODE_HELP)
    rerank: bool = Field(default=True, description=_RERANK_HELP)


class AskRequest(RequestModel):
    """Answer a question from the vault with cited sources, using the answer model configured
    in ``[rag]``; without one, the answer is extractive: the sources' best-matching sentences,
    each cited (``answer_mode`` says which). Retrieved text is sent to the model as untrusted
    data; every citation in its answer is checked against the sources, and invalid ones are
    dropped and reported. The model runs outside the service lock; the answer is delivered
    only if no lock happened, access still holds and no source changed."""

    NEEDS = Needs(role="reader", mcp="read", audit_failures=True)
    RESPONSE = (
        f"`{{answer, citations: [{_CHUNK_SHAPE}], sources, dropped_citations, model, "
        "answer_mode, mode, rerank}` (`answer_mode`: model or extractive; `model`: null "
        "when extractive)"
    )

    op: Literal["ask"]
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUESTION_CHARS)] = Field(
        repr=False, description="the question"
    )
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    limit: int = Field(default=8, ge=1, le=50, description="how many chunks to answer from")


class RagStatusRequest(RequestModel):
    """What a vault's search index holds: chunks indexed, embedded and waiting for vectors,
    the bounds' notes, and why vectors are off when they are (indexing starts if needed)."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = (
        "`{index: {vault, assets, chunks, text_bytes, truncated, embedded, pending, "
        "vector_bytes, vectors}, embedder: {chunks, seconds, last_failure}, generator}`"
    )

    op: Literal["rag_status"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)


SearchRequest: TypeAlias = SearchQueryRequest | RetrieveRequest | AskRequest | RagStatusRequest
