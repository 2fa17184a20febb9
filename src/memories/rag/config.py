"""The ``[rag]`` table of config.toml: which model endpoints retrieval and answers use.

::

    [rag]
    generate_url = "http://127.0.0.1:11434/v1/chat/completions"   # OpenAI-compatible chat
    generate_model = "qwen2.5:3b"
    # api_key_env = "OPENAI_API_KEY"    # a variable's *name*, never the key itself
    # api_key_file = "~/.config/memories/openai.key"   # or a file holding it (mode 0600)
    # proxy = "http://127.0.0.1:3128"
    # timeout_seconds = 120
    # retries = 2

    embedder = "onnx"          # "onnx" (bundled models, the default), "http" or "none"
    # embed_url = "http://127.0.0.1:11434/v1/embeddings"   # OpenAI-compatible, or Gemini's
    # embed_model = "nomic-embed-text"                    # ...:embedContent URL
    # embed_api_key_env = "GEMINI_API_KEY"
    # model_path = "/path/to/model.onnx"   # another ONNX sentence encoder (with tokenizer_path)
    # tokenizer_path = "/path/to/tokenizer.json"
    # fusion = "scores"        # how hybrid search fuses keywords and vectors: "scores"
    #                          # (relative scores, the default) or "rrf" (reciprocal ranks)
    # rrf_k = 60               # the reciprocal-rank constant, with fusion = "rrf"

    # rerank_url = "https://api.jina.ai/v1/rerank"   # a Cohere/Jina-style /rerank endpoint
    # rerank_model = "jina-reranker-v2-base-multilingual"
    # rerank_api_key_file = "~/.config/memories/jina.key"   # or rerank_api_key_env
    # rerank_timeout_seconds = 10   # a search waits this long, then uses the default rerank

Keys and tokens never live in this file: it names an environment variable or a file. The
daemon starts with a cleaned environment (secret-looking variables are not passed on), so a
daemon reads keys from ``api_key_file``; ``api_key_env`` serves in-process use.
"""

from __future__ import annotations

import ipaddress
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit

from memories.errors import UsageError

__all__ = ["EmbedderChoice", "Endpoint", "FusionChoice", "RagConfig", "load_rag_config"]

EmbedderChoice = Literal["onnx", "http", "none"]
FusionChoice = Literal["scores", "rrf"]

_KEYS: Final = frozenset(
    {
        "generate_url",
        "generate_model",
        "api_key_env",
        "api_key_file",
        "proxy",
        "timeout_seconds",
        "retries",
        "embedder",
        "embed_url",
        "embed_model",
        "embed_api_key_env",
        "embed_api_key_file",
        "model_path",
        "tokenizer_path",
        "rerank_url",
        "rerank_model",
        "rerank_api_key_env",
        "rerank_api_key_file",
        "rerank_timeout_seconds",
        "rrf_k",
        "fusion",
    }
)

HOW_TO_CONFIGURE: Final = (
    "set generate_url (an OpenAI-compatible /v1/chat/completions URL, e.g. Ollama's "
    '"http://127.0.0.1:11434/v1/chat/completions") and generate_model in the [rag] table of '
    "~/.config/memories/config.toml, then restart the daemon (`memories daemon stop`)"
)


@dataclass(frozen=True)
class Endpoint:
    """One configured HTTP model endpoint."""

    url: str
    model: str
    api_key_env: str | None = None
    api_key_file: Path | None = None
    proxy: str | None = None
    timeout_seconds: float = 120.0
    retries: int = 2

    @property
    def loopback(self) -> bool:
        return _is_loopback(urlsplit(self.url).hostname or "")

    def api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key, read now from the named variable or file (None when none is set).

        Raises:
            UsageError: the variable is named but unset, or the file cannot be read or is
                readable by others.
        """
        env = os.environ if env is None else env
        if self.api_key_env is not None:
            value = env.get(self.api_key_env, "").strip()
            if not value:
                raise UsageError(
                    f"the API key variable {self.api_key_env} is not set for the daemon (it "
                    "starts with a cleaned environment); use api_key_file in [rag] instead"
                )
            return value
        if self.api_key_file is not None:
            try:
                info = self.api_key_file.stat()
                if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                    raise UsageError(
                        f"{self.api_key_file} is readable by others; run chmod 600 on it"
                    )
                value = self.api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise UsageError(
                    f"cannot read the API key file {self.api_key_file} "
                    f"({exc.strerror or type(exc).__name__})"
                ) from exc
            if not value:
                raise UsageError(f"the API key file {self.api_key_file} is empty")
            return value
        return None


@dataclass(frozen=True)
class RagConfig:
    """What ``[rag]`` configures; every endpoint is optional."""

    generator: Endpoint | None = None
    embedder: EmbedderChoice = "onnx"
    embed: Endpoint | None = None
    reranker: Endpoint | None = None
    model_path: Path | None = None
    tokenizer_path: Path | None = None
    rrf_k: int = 60
    fusion: FusionChoice = "scores"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _text(table: Mapping[str, object], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 2048:
        raise UsageError(f"{where}: {key} must be a non-empty string")
    return value.strip()


def _url(table: Mapping[str, object], key: str, where: str) -> str | None:
    value = _text(table, key, where)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{where}: {key} must be an http:// or https:// URL")
    if parts.username or parts.password:
        raise UsageError(f"{where}: {key} must not carry credentials; use api_key_file")
    return value


def _number(
    table: Mapping[str, object], key: str, where: str, default: float, low: float, high: float
) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where}: {key} must be a number")
    if not low <= value <= high:
        raise UsageError(f"{where}: {key} must be between {low:g} and {high:g}")
    return float(value)


def _path(table: Mapping[str, object], key: str, where: str) -> Path | None:
    value = _text(table, key, where)
    return None if value is None else Path(value).expanduser()


def _endpoint(
    table: Mapping[str, object],
    url_key: str,
    model_key: str,
    prefix: str,
    where: str,
    *,
    timeout_key: str = "timeout_seconds",
    timeout_default: float = 120.0,
) -> Endpoint | None:
    url = _url(table, url_key, where)
    model = _text(table, model_key, where)
    if url is None:
        if model is not None:
            raise UsageError(f"{where}: {model_key} is set but {url_key} is not")
        return None
    key_env = _text(table, f"{prefix}api_key_env", where)
    key_file = _path(table, f"{prefix}api_key_file", where)
    if key_env is not None and key_file is not None:
        raise UsageError(f"{where}: set {prefix}api_key_env or {prefix}api_key_file, not both")
    endpoint = Endpoint(
        url=url,
        model=model or "",
        api_key_env=key_env,
        api_key_file=key_file,
        proxy=_url(table, "proxy", where),
        timeout_seconds=_number(table, timeout_key, where, timeout_default, 0.1, 3600.0),
        retries=int(_number(table, "retries", where, 2, 0, 10)),
    )
    if (key_env or key_file) and not endpoint.loopback and urlsplit(url).scheme != "https":
        raise UsageError(f"{where}: {url_key} must use https:// to carry an API key")
    return endpoint


def load_rag_config(table: Mapping[str, object], where: str = "[rag]") -> RagConfig:
    """Validate the ``[rag]`` table.

    Raises:
        UsageError: an unknown key, a wrong type, a bad URL or a model without a URL.
    """
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown setting {unknown[0]!r}")
    choice = table.get("embedder", "onnx")
    if choice not in ("onnx", "http", "none"):
        raise UsageError(f'{where}: embedder must be "onnx", "http" or "none"')
    generator = _endpoint(table, "generate_url", "generate_model", "", where)
    if generator is not None and not generator.model:
        raise UsageError(f"{where}: generate_model must name the model to ask")
    embed = _endpoint(table, "embed_url", "embed_model", "embed_", where)
    # A search waits for the reranker, so its timeout is its own and short by default.
    reranker = _endpoint(
        table,
        "rerank_url",
        "rerank_model",
        "rerank_",
        where,
        timeout_key="rerank_timeout_seconds",
        timeout_default=10.0,
    )
    if reranker is not None and not reranker.model:
        raise UsageError(f"{where}: rerank_model must name the rerank model")
    if choice == "http" and embed is None:
        raise UsageError(f'{where}: embedder = "http" needs embed_url')
    model_path = _path(table, "model_path", where)
    tokenizer_path = _path(table, "tokenizer_path", where)
    if (model_path is None) != (tokenizer_path is None):
        raise UsageError(f"{where}: model_path and tokenizer_path go together")
    fusion = table.get("fusion", "scores")
    if fusion not in ("scores", "rrf"):
        raise UsageError(f'{where}: fusion must be "scores" or "rrf"')
    return RagConfig(
        generator=generator,
        embedder=choice,
        embed=embed,
        reranker=reranker,
        model_path=model_path,
        tokenizer_path=tokenizer_path,
        rrf_k=int(_number(table, "rrf_k", where, 60, 1, 1000)),
        fusion=fusion,
    )
