"""The background embedder: fills the indexes' vectors without holding any service lock.

One daemon thread per :class:`~memories.search.cache.SearchCache`, started when chunks are
waiting and ended when none are (or when the cache is cleared). Each round it takes, under the
cache's guard, a small batch of waiting chunks from the most recently used index (so the vault
being searched is served first), copies their texts, lets go of the guard, embeds them, and
takes the guard again to store the vectors, but only into the same index object, for chunks
that are still waiting and only if the cache was not cleared meanwhile (its epoch). A lock
therefore discards whatever is in flight.

A failing embedder (model missing, wrong hash, endpoint down) stops embedding for that index
with the reason, which search reports; search goes on by keywords.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memories.errors import MemoriesError

if TYPE_CHECKING:
    from memories.rag.embed import Embedder
    from memories.search.index import VaultIndex

__all__ = ["BATCH", "EmbedJob", "EmbedProgress", "EmbedWorker"]

log = logging.getLogger(__name__)

#: Chunks per batch: small, so a lock discards little and the first vectors come early.
BATCH = 8


@dataclass
class EmbedJob:
    """A batch taken from one index: row ids and texts, by embedder."""

    epoch: int
    index: VaultIndex
    groups: list[tuple[Embedder, list[int], list[str]]]


@dataclass
class EmbedProgress:
    """What the worker has done (for status and the benchmark)."""

    chunks: int = 0
    seconds: float = 0.0
    last_failure: str | None = None


class EmbedWorker:
    """Runs jobs from ``take`` and hands results to ``store``, on its own thread."""

    def __init__(
        self,
        take: Callable[[], EmbedJob | None],
        store: Callable[[EmbedJob, list[tuple[str, list[int], object]]], None],
        fail: Callable[[EmbedJob, Embedder, MemoriesError], None],
    ) -> None:
        self._take = take
        self._store = store
        self._fail = fail
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()
        self._wanted = False
        self.progress = EmbedProgress()

    def kick(self) -> None:
        """Make sure a thread is working (call after chunks start waiting)."""
        with self._guard:
            # A thread that found nothing just before these chunks arrived looks again.
            self._wanted = True
            if self._thread is not None:
                return
            self._idle.clear()
            self._thread = threading.Thread(target=self._run, name="memories-embed", daemon=True)
            self._thread.start()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no chunk is waiting (for tools and tests); whether it got there."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            job = self._take()
            if job is None:
                with self._guard:
                    if self._wanted:
                        self._wanted = False
                        continue
                    self._thread = None
                    self._idle.set()
                    return
            try:
                results: list[tuple[str, list[int], object]] = []
                started = time.perf_counter()
                for embedder, rowids, texts in job.groups:
                    try:
                        vectors = embedder.embed(texts)
                    except MemoriesError as exc:
                        log.warning("embedding stopped: %s", type(exc).__name__)
                        self.progress.last_failure = exc.message
                        self._fail(job, embedder, exc)
                        continue
                    results.append((embedder.space, rowids, vectors))
                self.progress.seconds += time.perf_counter() - started
                self.progress.chunks += sum(len(r) for _, r, _ in results)
                self._store(job, results)
            except BaseException:
                with self._guard:  # let a later kick start a new thread, then die loudly
                    self._thread = None
                    self._idle.set()
                raise
