"""Embeddings from an HTTP endpoint: OpenAI-compatible ``/v1/embeddings`` or Gemini's
``embedContent`` / ``batchEmbedContents``.

The protocol follows the URL: one ending in ``:embedContent`` or ``:batchEmbedContents`` speaks
Gemini's (its key goes in ``x-goog-api-key``), anything else OpenAI's (a bearer key; a base URL
ending in ``/v1`` gets ``/embeddings`` added). Batches go out in one request (Gemini: the batch
method). The first answer fixes the dimensions; a later answer of another width is an error,
so one index never mixes vector spaces.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from memories.errors import MemoriesError
from memories.rag.config import Endpoint
from memories.rag.embed import check_vectors
from memories.rag.http import post_json

if TYPE_CHECKING:
    from memories.rag.embed import Vectors

__all__ = ["HttpEmbedder"]

_BATCH = 64


class HttpEmbedder:
    """An embedding endpoint as an :class:`~memories.rag.embed.Embedder`."""

    def __init__(self, endpoint: Endpoint, *, transport: httpx.BaseTransport | None = None):
        self._endpoint = endpoint
        self._transport = transport
        self._guard = threading.Lock()
        self._dimensions: int | None = None
        url = endpoint.url.rstrip("/")
        self._gemini = url.endswith((":embedContent", ":batchEmbedContents"))
        if self._gemini:
            self._url = url.removesuffix(":embedContent").removesuffix(":batchEmbedContents")
            self._url += ":batchEmbedContents"
            self._model_path = self._url.rsplit("/", 1)[-1].split(":", 1)[0]
        else:
            self._url = url if url.endswith("/embeddings") else url + "/embeddings"
            self._model_path = ""

    @property
    def space(self) -> str:
        return f"http:{self._endpoint.url}#{self._endpoint.model}"

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    def _headers(self) -> dict[str, str]:
        if not self._gemini:
            return {}
        key = self._endpoint.api_key()
        return {"x-goog-api-key": key} if key else {}

    def _post(self, body: dict[str, Any]) -> Any:
        return post_json(
            self._endpoint,
            self._url,
            body,
            headers=self._headers(),
            what="the embedding endpoint",
            transport=self._transport,
        )

    def _openai(self, texts: Sequence[str]) -> list[Any]:
        answer = self._post({"model": self._endpoint.model, "input": list(texts)})
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise MemoriesError("the embedding endpoint answered without one embedding per text")
        rows: list[Any] = [None] * len(texts)
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise MemoriesError("the embedding endpoint answered a malformed embedding")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < len(texts) or rows[index]:
                raise MemoriesError("the embedding endpoint answered a malformed embedding")
            rows[index] = item["embedding"]
        return rows

    def _gemini_batch(self, texts: Sequence[str], query: bool) -> list[Any]:
        task = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
        model = self._endpoint.model or self._model_path
        if not model.startswith("models/"):
            model = f"models/{model}"
        body = {
            "requests": [
                {"model": model, "content": {"parts": [{"text": t}]}, "taskType": task}
                for t in texts
            ]
        }
        answer = self._post(body)
        embeddings = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            raise MemoriesError("the embedding endpoint answered without one embedding per text")
        rows = []
        for item in embeddings:
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(values, list):
                raise MemoriesError("the embedding endpoint answered a malformed embedding")
            rows.append(values)
        return rows

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """See :class:`memories.rag.embed.Embedder`."""
        import numpy as np

        out = []
        for start in range(0, len(texts), _BATCH):
            batch = texts[start : start + _BATCH]
            rows = self._gemini_batch(batch, query) if self._gemini else self._openai(batch)
            try:
                array = np.asarray(rows, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise MemoriesError(
                    "the embedding endpoint answered vectors of different lengths or non-numbers"
                ) from exc
            with self._guard:
                vectors = check_vectors(
                    array, len(batch), self._dimensions, "the embedding endpoint"
                )
                self._dimensions = int(vectors.shape[1])
            out.append(vectors)
        if not out:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        stacked: Vectors = np.concatenate(out)
        return stacked
