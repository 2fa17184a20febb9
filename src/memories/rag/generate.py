"""Answer generation through a configured OpenAI-compatible chat endpoint.

:class:`Generator` is the seam; :class:`ChatGenerator` speaks ``POST /v1/chat/completions``
(OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio and the like all offer it), without
streaming, at temperature 0. It never runs under the service lock (see
:mod:`memories.rag.answer` for how the service splits an answer around it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx

from memories.errors import MemoriesError
from memories.rag.config import Endpoint
from memories.rag.http import post_json

__all__ = ["ChatGenerator", "Generator", "Message"]

#: An answer longer than this is cut: it is shown to a person or an agent, not archived.
MAX_ANSWER_CHARS = 32 * 1024


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class Generator(Protocol):
    """Something that answers a chat."""

    @property
    def model(self) -> str:
        """The model's name, as reported to the user."""
        ...

    def generate(self, messages: Sequence[Message], *, max_tokens: int = 800) -> str:
        """The assistant's reply to ``messages``.

        Raises:
            UnavailableError: the endpoint cannot be used now.
            MemoriesError: it answered something its protocol does not allow.
        """
        ...


def _content(answer: object) -> str:
    """``choices[0].message.content`` of a chat completion, or a clear error."""
    if isinstance(answer, dict):
        choices = answer.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                content = message.get("content")
                if isinstance(content, str):
                    return content[:MAX_ANSWER_CHARS]
                if isinstance(content, list):  # some servers answer with content parts
                    parts = [
                        p.get("text", "")
                        for p in content
                        if isinstance(p, dict) and isinstance(p.get("text"), str)
                    ]
                    return "".join(parts)[:MAX_ANSWER_CHARS]
    raise MemoriesError("the generation endpoint answered without a chat completion message")


class ChatGenerator:
    """An OpenAI-compatible ``/v1/chat/completions`` client."""

    def __init__(self, endpoint: Endpoint, *, transport: httpx.BaseTransport | None = None):
        self._endpoint = endpoint
        self._transport = transport
        url = endpoint.url.rstrip("/")
        # A base URL (".../v1") is accepted as well as the full one.
        self._url = url if url.endswith("/chat/completions") else url + "/chat/completions"

    @property
    def model(self) -> str:
        return self._endpoint.model

    def generate(self, messages: Sequence[Message], *, max_tokens: int = 800) -> str:
        """See :meth:`Generator.generate`."""
        body = {
            "model": self._endpoint.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": 0,
            "max_tokens": max_tokens,
            "stream": False,
        }
        answer = post_json(
            self._endpoint,
            self._url,
            body,
            what="the generation endpoint",
            transport=self._transport,
        )
        return _content(answer)
