"""A learned rerank through a configured Cohere/Jina-style ``/rerank`` endpoint.

The request is ``{"model", "query", "documents": [text, ...], "top_n"}`` and the answer
``{"results": [{"index", "relevance_score"}, ...]}`` (Cohere's ``/v2/rerank``, Jina's
``/v1/rerank``, Voyage's and most self-hosted rerank servers speak it; extra fields such as
``document`` or ``usage`` are ignored). The call goes through :func:`memories.rag.http.post_json`
(timeouts, proxy, retries with backoff, errors that never echo what was sent or received) and
never runs under the service lock: the service's search handler falls back to the default
rerank, with the reason, when it fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import httpx

from memories.errors import MemoriesError
from memories.rag.config import Endpoint
from memories.rag.http import post_json

__all__ = ["MAX_DOCUMENT_CHARS", "HttpReranker", "Reranker"]

#: What one candidate may send: its title and best chunk (chunks are at most ~1,200 characters).
MAX_DOCUMENT_CHARS = 2400
_WHAT = "the rerank endpoint"


class Reranker(Protocol):
    """Something that scores documents against a query."""

    @property
    def model(self) -> str:
        """The model's name, as reported to the user."""
        ...

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> dict[int, float]:
        """Relevance scores by position in ``documents`` (at most ``top_n`` of them).

        Raises:
            UnavailableError: the endpoint cannot be used now.
            MemoriesError: it answered something its protocol does not allow.
            UsageError: its API key is configured but cannot be read.
        """
        ...


def _results(answer: object, count: int) -> dict[int, float]:
    """The ``results`` of a rerank answer as {index: score}, or a clear error naming no data."""
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise MemoriesError(f"{_WHAT} answered without a results list")
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if (
            isinstance(index, bool)
            or not isinstance(index, int)
            or not 0 <= index < count
            or index in scores
        ):
            raise MemoriesError(f"{_WHAT} answered a result with a missing or wrong index")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise MemoriesError(f"{_WHAT} answered a result without a relevance score")
        scores[index] = float(score)
    return scores


class HttpReranker:
    """A Cohere/Jina-style ``/rerank`` client."""

    def __init__(self, endpoint: Endpoint, *, transport: httpx.BaseTransport | None = None):
        self._endpoint = endpoint
        self._transport = transport
        url = endpoint.url.rstrip("/")
        # A base URL (".../v1") is accepted as well as the full one.
        self._url = url if url.endswith("/rerank") else url + "/rerank"

    @property
    def model(self) -> str:
        return self._endpoint.model

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> dict[int, float]:
        """See :meth:`Reranker.rerank`."""
        if not documents:
            return {}
        body = {
            "model": self._endpoint.model,
            "query": query,
            "documents": [d[:MAX_DOCUMENT_CHARS] for d in documents],
            "top_n": max(1, min(top_n, len(documents))),
        }
        answer = post_json(self._endpoint, self._url, body, what=_WHAT, transport=self._transport)
        return _results(answer, len(documents))
