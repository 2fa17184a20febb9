"""The search cache: at most two in-memory vault indexes, kept current by commit observers.

:class:`SearchCache` owns one :class:`~memories.search.index.VaultIndex` per recently searched
vault (LRU, at most :data:`MAX_VAULTS`). An index holds only *authorized ordinary* content:
current, unconflicted, non-private memories and cards (title, body chunks, tags, source and
the card type's searchable metadata fields). Credentials, files, private, deleted and
conflicting assets never enter, and a ``credential_ref`` field is never searchable. Nothing is
written anywhere: the FTS5 database is ``:memory:`` with memory-only temporary storage, and
chunk texts and vectors live in this process only.

Each index is keyed by its vault's policy state (policy entries and epoch). The cache
subscribes to the vault domain's commit observers: a commit marks the assets it changed, and
the next query updates just those (incrementally); a policy change or a new card type rebuilds
the vault's index. :meth:`SearchCache.clear` (called when the service locks) drops every
index, every vector, the query-vector cache and the subscription, and discards embeddings in
flight.

When embedders are configured, new chunks wait for vectors and the background worker
(:mod:`memories.search.embedding`) fills them in, most recently used vault first; queries are
answered at once by keywords and by hybrid ranking over whatever is embedded so far. Query
vectors are computed by the caller outside the service lock (:meth:`vector_plan`) and cached.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memories.errors import DeniedError, IntegrityError, MemoriesError, NotFoundError, UsageError
from memories.search.embedding import BATCH, EmbedJob, EmbedWorker
from memories.search.index import (
    MAX_CHUNKS,
    MAX_TEXT_BYTES,
    MAX_VECTOR_BYTES,
    IndexStatus,
    VaultIndex,
)
from memories.search.rank import MIN_SIMILARITY, RRF_K, Query, parse_query
from memories.search.ranking import Fusion, Hit, Mode, rank
from memories.vault import CommitEvent, Vaults
from memories.views.assets import AssetView
from memories.views.cards import BUILTIN_CARD_TYPES, CardType
from memories.views.kinds import Kind

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memories.rag.embed import Embedder, ScriptRouted

__all__ = [
    "MAX_CHUNKS",
    "MAX_TEXT_BYTES",
    "MAX_VAULTS",
    "MAX_VECTOR_BYTES",
    "Hit",
    "IndexStatus",
    "SearchCache",
    "VaultIndex",
    "VectorPlan",
]

log = logging.getLogger(__name__)

MAX_VAULTS = 2
#: Query vectors kept (per cache) so a repeated query costs no model call: at 512
#: dimensions, 2 MiB.
QUERY_VECTORS = 1024

#: The asset kinds search covers; files and credentials never enter an index.
SEARCHED_KINDS: tuple[Kind, ...] = ("memory", "card")

EmbedderSource = Callable[[], "ScriptRouted | None"]


@dataclass(frozen=True)
class VectorPlan:
    """What a hybrid query needs: the embedder of its space and, when cached, its vector."""

    embedder: Embedder
    text: str
    vector: npt.NDArray[np.float32] | None
    weight: float = 1.0  # the vector ranking's weight in hybrid fusion
    floor: float = MIN_SIMILARITY  # the least similarity of a hit found by its vector alone

    def embed(self) -> npt.NDArray[np.float32]:
        """The query's vector (no lock may be held: this runs the model).

        Raises what :meth:`memories.rag.embed.Embedder.embed` raises.
        """
        if self.vector is not None:
            return self.vector
        vector: npt.NDArray[np.float32] = self.embedder.embed([self.text], query=True)[0]
        return vector


class SearchCache:
    """At most :data:`MAX_VAULTS` vault indexes over one vault domain. Thread-safe."""

    def __init__(
        self,
        *,
        max_vaults: int = MAX_VAULTS,
        max_chunks: int = MAX_CHUNKS,
        max_bytes: int = MAX_TEXT_BYTES,
        max_vector_bytes: int = MAX_VECTOR_BYTES,
        embedders: EmbedderSource | None = None,
        rrf_k: int = RRF_K,
        fusion: Fusion = "scores",
    ) -> None:
        self._guard = threading.RLock()
        self._indexes: OrderedDict[str, VaultIndex] = OrderedDict()
        self._domain: Vaults | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._max_vaults = max_vaults
        self._max_chunks = max_chunks
        self._max_bytes = max_bytes
        self._max_vector_bytes = max_vector_bytes
        self._embedder_source = embedders
        self._embedders: ScriptRouted | None = None
        self._embedders_loaded = False
        #: Why vectors are off (no embedder, a bad configuration), or None.
        self.vectors_off: str | None = None if embedders is not None else "no embedder"
        self._query_vectors: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
        self._epoch = 0
        self.rrf_k = rrf_k
        self.fusion: Fusion = fusion
        self.worker = EmbedWorker(self._take_job, self._store_job, self._job_failed)
        #: Full builds and incremental updates done (for tests and status).
        self.builds = 0
        self.updates = 0

    # -- life cycle ------------------------------------------------------------------------

    def clear(self) -> None:
        """Drop every index, its texts and vectors, the query vectors and the commit
        subscription (the store locked); embeddings in flight are discarded."""
        with self._guard:
            self._epoch += 1
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()
            self._query_vectors.clear()
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            self._domain = None
        if unsubscribe is not None:
            unsubscribe()

    def _attach(self, domain: Vaults) -> None:
        """Follow ``domain``'s commits; a different domain object (a new unlock) starts afresh."""
        if self._domain is domain:
            return
        self.clear()
        self._domain = domain
        self._unsubscribe = domain.subscribe(self._observe)

    def _observe(self, event: CommitEvent) -> None:
        """Commit observer: mark what changed; the next query brings the index up to date."""
        rebuild = event.policies_changed or event.action == "card_type.define"
        with self._guard:
            for vault_id in event.vaults:
                index = self._indexes.get(vault_id)
                if index is None:
                    continue
                if rebuild:
                    index.stale = True
            for change in event.assets:
                index = self._indexes.get(change.vault_id)
                if index is not None:
                    index.dirty.add(change.asset_id)

    # -- embedders -------------------------------------------------------------------------

    def _routing(self) -> ScriptRouted | None:
        """The configured embedders, loaded on first use; None with :attr:`vectors_off` set."""
        if not self._embedders_loaded:
            self._embedders_loaded = True
            if self._embedder_source is not None:
                try:
                    self._embedders = self._embedder_source()
                except MemoriesError as exc:  # a bad [rag] table: keywords only, with why
                    self.vectors_off = exc.message
                    self._embedders = None
                else:
                    if self._embedders is None:
                        self.vectors_off = "embeddings are turned off ([rag] embedder = none)"
        return self._embedders

    def _take_job(self) -> EmbedJob | None:
        """The next batch for the worker: from the most recently used index with waiting
        chunks. Called on the worker's thread."""
        with self._guard:
            routing = self._embedders
            if routing is None:
                return None
            for index in reversed(self._indexes.values()):
                if not index.pending:
                    continue
                groups: dict[str, tuple[Embedder, list[int], list[str]]] = {}
                for rowid in list(index.pending)[:BATCH]:
                    text = index.embed_text(rowid)
                    embedder = routing.pick(text)
                    group = groups.setdefault(embedder.space, (embedder, [], []))
                    group[1].append(rowid)
                    group[2].append(text)
                return EmbedJob(self._epoch, index, list(groups.values()))
            return None

    def _current(self, job: EmbedJob) -> bool:
        return job.epoch == self._epoch and self._indexes.get(job.index.vault_id) is job.index

    def _store_job(self, job: EmbedJob, results: list[tuple[str, list[int], object]]) -> None:
        with self._guard:
            if not self._current(job):
                return  # the cache was cleared or the index rebuilt: discard
            for space, rowids, vectors in results:
                for rowid, vector in zip(rowids, vectors, strict=True):  # type: ignore[call-overload]
                    job.index.store_vector(rowid, space, vector)

    def _job_failed(self, job: EmbedJob, embedder: Embedder, error: MemoriesError) -> None:
        with self._guard:
            if self._current(job):
                job.index.stop_embedding(f"embedding stopped: {error.message}")

    # -- building --------------------------------------------------------------------------

    def _card_types(self, domain: Vaults, vault_id: str) -> dict[str, CardType]:
        merged = dict(BUILTIN_CARD_TYPES)
        merged.update({t.name: t for t in domain.card_types(vault_id)})
        return merged

    def _view(self, domain: Vaults, asset_id: str) -> AssetView | None:
        """The current view of an asset if search may cover it, else None."""
        try:
            state = domain.resolve_asset(asset_id)
            if (
                state.kind not in SEARCHED_KINDS
                or state.private
                or state.deleted
                or state.conflicted
            ):
                return None
            view = domain.get(asset_id, elevated=False)
        except (NotFoundError, DeniedError):
            return None
        except IntegrityError:
            # Damage is reported by `memories verify`; search leaves the asset out.
            log.warning("search left out an asset that could not be read")
            return None
        content = view.content
        if content is None or content.private or view.kind not in SEARCHED_KINDS:
            return None
        return view

    def _build(self, domain: Vaults, vault_id: str, key: tuple[int, int]) -> VaultIndex:
        index = VaultIndex(
            vault_id,
            key,
            max_chunks=self._max_chunks,
            max_bytes=self._max_bytes,
            max_vector_bytes=self._max_vector_bytes,
            embedding=self._routing() is not None,
        )
        if not index.embedding:
            index.vectors_note = self.vectors_off
        types = self._card_types(domain, vault_id)
        summaries = [
            s
            for kind in SEARCHED_KINDS
            for s in domain.list_assets(vault_id, kind=kind)
            if not s.private and not s.conflicted
        ]
        # Newest first, so a bounded index keeps (and embeds first) the most recent memories.
        summaries.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
        views = (self._view(domain, summary.id) for summary in summaries)
        index.add_many((view for view in views if view is not None), types)
        self.builds += 1
        return index

    def index(self, domain: Vaults, vault: str | None = None) -> VaultIndex:
        """The up-to-date index of ``vault`` (a name, id or prefix; None: personal).

        Raises what ``resolve_vault`` raises (``NotFoundError``, ``UsageError``) and
        ``LockedError`` when the domain is closed.
        """
        with self._guard:
            self._attach(domain)
            record = domain.resolve_vault(vault)
            key = (len(record.policies), record.epoch)
            index = self._indexes.get(record.vault_id)
            if index is not None and (index.stale or index.key != key):
                index.close()
                del self._indexes[record.vault_id]
                index = None
            if index is None:
                index = self._build(domain, record.vault_id, key)
                self._indexes[record.vault_id] = index
                while len(self._indexes) > self._max_vaults:
                    _, evicted = self._indexes.popitem(last=False)
                    evicted.close()
            elif index.dirty:
                refreshed = False
                try:
                    self._refresh(domain, index)
                    refreshed = True
                finally:
                    if not refreshed:
                        # A half-applied update would leave the table and the rows'
                        # bookkeeping apart (the table deletes rows by their values): the
                        # index goes, and the next query builds it afresh.
                        del self._indexes[record.vault_id]
                        index.close()
            self._indexes.move_to_end(record.vault_id)
            if index.pending:
                self.worker.kick()
            return index

    def _refresh(self, domain: Vaults, index: VaultIndex) -> None:
        dirty, index.dirty = index.dirty, set()
        types = self._card_types(domain, index.vault_id)
        for asset_id in sorted(dirty):
            view = self._view(domain, asset_id)
            if view is None:
                index.remove(asset_id)
            elif view.vault_id == index.vault_id:
                index.add(view, types)
        self.updates += 1

    def statuses(self) -> list[IndexStatus]:
        """What each cached index holds, most recently used last."""
        with self._guard:
            return [index.status for index in self._indexes.values()]

    # -- querying --------------------------------------------------------------------------

    def vector_plan(
        self, domain: Vaults, text: str, vault: str | None = None, *, mode: Mode = "hybrid"
    ) -> VectorPlan | None:
        """What a ``mode`` query for ``text`` needs, or None when ``vault`` has no vectors in
        the query's space, or (hybrid) that space has no weight: then keywords are all.

        Raises what :meth:`index` raises.
        """
        with self._guard:
            index = self.index(domain, vault)
            routing = self._embedders
            query = parse_query(text)
            if routing is None or query.empty:
                return None
            embedder = routing.pick(query.text)
            weight = routing.weight(query.text)
            if not index.has_vectors(embedder.space) or (mode == "hybrid" and weight <= 0):
                return None
            cached = self._query_vectors.get((embedder.space, query.text))
            if cached is not None:
                self._query_vectors.move_to_end((embedder.space, query.text))
            return VectorPlan(embedder, query.text, cached, weight, routing.floor(query.text))

    def remember(self, plan: VectorPlan, vector: npt.NDArray[np.float32]) -> None:
        """Cache the query vector ``plan`` produced."""
        with self._guard:
            self._query_vectors[(plan.embedder.space, plan.text)] = vector
            while len(self._query_vectors) > QUERY_VECTORS:
                self._query_vectors.popitem(last=False)

    def search(
        self,
        domain: Vaults,
        text: str,
        *,
        vault: str | None = None,
        kind: Kind | None = None,
        limit: int = 10,
        mode: Mode = "bm25",
        plan: VectorPlan | None = None,
        vector: npt.NDArray[np.float32] | None = None,
        rerank: bool = True,
    ) -> tuple[list[Hit], IndexStatus, Query, Mode]:
        """The best ``limit`` assets for the query ``text`` in ``vault``, and the mode used.

        ``vector`` is the query's embedding from ``plan`` (for ``vector`` and ``hybrid``
        modes); without one (or without vectors in its space yet), ranking is by keywords.
        ``rerank`` False keeps the first stage's order (see :mod:`memories.search.rerank`).

        Raises:
            UsageError: the query has no words to search for, or ``kind`` is not searched.
            NotFoundError, LockedError: as :meth:`index`.
        """
        query = parse_query(text)
        if query.empty:
            raise UsageError("the query has no words to search for")
        if kind is not None and kind not in SEARCHED_KINDS:
            raise UsageError("search covers memories and cards only")
        with self._guard:
            index = self.index(domain, vault)
            space = plan.embedder.space if plan is not None else None
            if vector is None or space is None or not index.has_vectors(space):
                mode, vector, space = "bm25", None, None
            hits = rank(
                domain,
                index,
                query,
                kind=kind,
                limit=limit,
                mode=mode,
                space=space,
                vector=vector,
                rrf_k=self.rrf_k,
                vector_weight=plan.weight if plan is not None else 1.0,
                vector_floor=plan.floor if plan is not None else MIN_SIMILARITY,
                rerank=rerank,
                fusion=self.fusion,
            )
            return hits, index.status, query, mode
