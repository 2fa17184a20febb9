"""The model runtime of one service: its ``[rag]`` configuration and the clients it builds.

Everything loads lazily: the configuration is validated on first use (a broken ``[rag]`` table
fails the requests that need it with a clear message, not the daemon's start), and the
generator is built once.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from memories.errors import UnavailableError
from memories.rag.config import HOW_TO_CONFIGURE, RagConfig, load_rag_config
from memories.rag.generate import ChatGenerator, Generator

__all__ = ["RagRuntime"]


class RagRuntime:
    """Lazily validated configuration and the clients it describes. Thread-safe."""

    def __init__(self, table: Mapping[str, object]) -> None:
        self._table = dict(table)
        self._guard = threading.Lock()
        self._config: RagConfig | None = None
        self._generator: Generator | None = None

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
        config = self.config
        with self._guard:
            if self._generator is not None:
                return self._generator
            if config.generator is None:
                raise UnavailableError(f"no answer model is configured: {HOW_TO_CONFIGURE}")
            self._generator = ChatGenerator(config.generator)
            return self._generator
