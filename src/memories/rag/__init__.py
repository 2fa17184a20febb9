"""Retrieval-augmented answers: model endpoints, embedders and cited answers.

::

    config.py    the [rag] table of config.toml (endpoints, keys by reference, embedder choice)
    http.py      one POST to a model endpoint: timeouts, proxy, retries, errors without content
    generate.py  Generator protocol; ChatGenerator (OpenAI-compatible /v1/chat/completions)
    answer.py    the prompt (sources as delimited untrusted data) and citation validation
    runtime.py   RagRuntime: the lazily loaded configuration and clients of one service

Nothing here holds the service lock: the service runs model work outside it and re-checks
access before delivery (memories.service.deferred).
"""

from memories.rag.answer import Checked, Source, build_messages, validate_citations
from memories.rag.config import Endpoint, RagConfig, load_rag_config
from memories.rag.generate import ChatGenerator, Generator, Message
from memories.rag.runtime import RagRuntime

__all__ = [
    "ChatGenerator",
    "Checked",
    "Endpoint",
    "Generator",
    "Message",
    "RagConfig",
    "RagRuntime",
    "Source",
    "build_messages",
    "load_rag_config",
    "validate_citations",
]
