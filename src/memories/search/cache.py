"""The search cache: at most two in-memory vault indexes, kept current by commit observers.

:class:`SearchCache` owns one :class:`VaultIndex` per recently searched vault (LRU, at most
:data:`MAX_VAULTS`). An index holds only *authorized ordinary* content: current, unconflicted,
non-private memories and cards (title, body chunks, tags, source and the card type's searchable
metadata fields). Credentials, files, private, deleted and conflicting assets never enter, and a
``credential_ref`` field is never searchable. Nothing is written anywhere: the FTS5 database is
``:memory:`` with memory-only temporary storage, and chunk texts live in this process only.

Each index is keyed by its vault's policy state (policy entries and epoch). The cache subscribes
to the vault domain's commit observers: a commit marks the assets it changed, and the next query
updates just those (incrementally); a policy change or a new card type rebuilds the vault's
index. :meth:`SearchCache.clear` (called when the service locks) drops every index and the
subscription. Each index is bounded to :data:`MAX_CHUNKS` chunks and :data:`MAX_TEXT_BYTES` of
source text and metadata; what does not fit is left out and the index says why.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.search.chunk import Chunk, chunk_text
from memories.search.fts import FtsIndex, FtsRow, match_all, match_any
from memories.search.rank import (
    RERANK_DEPTH,
    Query,
    Snippet,
    normalized,
    parse_query,
    rerank_bonus,
    snippet,
)
from memories.search.tokenize import fold, tokenize
from memories.vault import CommitEvent, Vaults
from memories.views.assets import AssetView, Summary
from memories.views.cards import BUILTIN_CARD_TYPES, CardType
from memories.views.kinds import Kind

__all__ = [
    "MAX_CHUNKS",
    "MAX_TEXT_BYTES",
    "MAX_VAULTS",
    "Hit",
    "IndexStatus",
    "SearchCache",
    "VaultIndex",
]

log = logging.getLogger(__name__)

MAX_VAULTS = 2
MAX_CHUNKS = 10_000
MAX_TEXT_BYTES = 16 * 1024 * 1024
#: How many chunks the first stage hands to grouping and reranking.
CANDIDATE_CHUNKS = 300

#: The asset kinds search covers; files and credentials never enter an index.
SEARCHED_KINDS: tuple[Kind, ...] = ("memory", "card")


@dataclass
class _Asset:
    """One indexed asset: what its summary needs, its revision stamp and its chunk rows."""

    view: AssetView
    rowids: list[int]
    size: int  # bytes of text and metadata counted against the bound


@dataclass
class _Row:
    asset_id: str
    chunk: Chunk
    tokens: frozenset[str]


@dataclass(frozen=True)
class IndexStatus:
    """What one vault index holds."""

    vault: str
    assets: int
    chunks: int
    text_bytes: int
    truncated: str | None  # why some content was left out, or None

    def to_dict(self) -> dict[str, object]:
        return {
            "vault": self.vault,
            "assets": self.assets,
            "chunks": self.chunks,
            "text_bytes": self.text_bytes,
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class Hit:
    """One search result: the asset's safe summary, its revision, a snippet and the scores."""

    summary: Summary
    revision: str
    chunk: str  # the best chunk's content hash (not an asset id)
    snippet: Snippet
    score: float
    scores: Mapping[str, float] = field(default_factory=dict)
    #: The whole best chunk (the title for a memory without a body); for retrieval and answers.
    passage: str = field(default="", repr=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "summary": self.summary.to_dict(),
            "revision": self.revision,
            "chunk": self.chunk,
            "snippet": self.snippet.to_dict(),
            "score": round(self.score, 6),
            "scores": {name: round(value, 6) for name, value in self.scores.items()},
        }


def _metadata_text(view: AssetView, card_types: Mapping[str, CardType]) -> list[str]:
    """Tags, source and the searchable metadata values of ``view`` (never a credential_ref)."""
    content = view.content
    assert content is not None
    parts = [*content.tags]
    if content.source:
        parts.append(content.source)
    if view.kind == "card" and content.card_type is not None:
        card_type = card_types.get(content.card_type)
        if card_type is not None:
            kinds = {f.name: f.type for f in card_type.fields}
            for name in card_type.searchable:
                if kinds.get(name) == "credential_ref":
                    continue
                value = content.metadata.get(name)
                if isinstance(value, tuple):
                    parts.extend(str(item) for item in value)
                elif value is not None and not isinstance(value, bool):
                    parts.append(str(value))
    return parts


class VaultIndex:
    """The FTS5 index of one vault's searchable content. Its owner serializes every call."""

    def __init__(self, vault_id: str, key: tuple[int, int], *, max_chunks: int, max_bytes: int):
        self.vault_id = vault_id
        self.key = key
        self.fts = FtsIndex()
        self.assets: dict[str, _Asset] = {}
        self.rows: dict[int, _Row] = {}
        self.text_bytes = 0
        self.truncated: str | None = None
        self.dirty: set[str] = set()
        self.stale = False
        self._next_rowid = 1
        self._max_chunks = max_chunks
        self._max_bytes = max_bytes
        self._left_out = 0

    @property
    def status(self) -> IndexStatus:
        return IndexStatus(
            self.vault_id, len(self.assets), len(self.rows), self.text_bytes, self.truncated
        )

    def add(self, view: AssetView, card_types: Mapping[str, CardType]) -> bool:
        """Index ``view`` (replacing an earlier revision); False when it did not fit."""
        self.remove(view.asset_id)
        content = view.content
        if content is None:
            return False
        meta_parts = _metadata_text(view, card_types)
        chunks = chunk_text(content.body) or [Chunk("", 0, 0)]
        size = len(content.title.encode("utf-8")) + len(content.body.encode("utf-8"))
        size += sum(len(p.encode("utf-8")) for p in meta_parts)
        if len(self.rows) + len(chunks) > self._max_chunks or self.text_bytes + size > (
            self._max_bytes
        ):
            self._left_out += 1
            bound = "chunks" if len(self.rows) + len(chunks) > self._max_chunks else "bytes"
            self.truncated = (
                f"{self._left_out} memories were left out: the index is bounded to "
                f"{self._max_chunks} chunks and {self._max_bytes // (1024 * 1024)} MiB ({bound})"
            )
            return False
        title_tokens = tokenize(content.title)
        meta_tokens = tokenize(" ".join(meta_parts))
        title, meta = " ".join(title_tokens), " ".join(meta_tokens)
        fts_rows: list[FtsRow] = []
        rowids: list[int] = []
        for chunk in chunks:
            body_tokens = tokenize(chunk.text)
            rowid = self._next_rowid
            self._next_rowid += 1
            fts_rows.append(FtsRow(rowid, title, " ".join(body_tokens), meta))
            self.rows[rowid] = _Row(
                view.asset_id, chunk, frozenset((*title_tokens, *body_tokens, *meta_tokens))
            )
            rowids.append(rowid)
        self.fts.add(fts_rows)
        self.assets[view.asset_id] = _Asset(view, rowids, size)
        self.text_bytes += size
        return True

    def remove(self, asset_id: str) -> None:
        """Take ``asset_id`` out of the index (nothing happens when it is not in it)."""
        indexed = self.assets.pop(asset_id, None)
        if indexed is None:
            return
        self.fts.remove(indexed.rowids)
        for rowid in indexed.rowids:
            self.rows.pop(rowid, None)
        self.text_bytes -= indexed.size

    def search_bm25(
        self, query: Query, depth: int = CANDIDATE_CHUNKS
    ) -> dict[str, tuple[float, int]]:
        """Best BM25 score and best chunk row per asset, for ``query``."""
        expression = match_any(query.tokens)
        if query.phrases:
            needed = [t for p in query.phrases for t in tokenize(p)]
            if needed:
                expression = f"({expression}) AND ({match_all(needed)})"
        if query.excluded:
            expression = f"({expression}) NOT ({match_any(query.excluded)})"
        best: dict[str, tuple[float, int]] = {}
        for rowid, score in self.fts.search(expression, depth):
            row = self.rows.get(rowid)
            if row is None:
                continue
            if row.asset_id not in best or score > best[row.asset_id][0]:
                best[row.asset_id] = (score, rowid)
        return best

    def close(self) -> None:
        self.fts.close()
        self.assets.clear()
        self.rows.clear()


class SearchCache:
    """At most :data:`MAX_VAULTS` vault indexes over one vault domain. Thread-safe."""

    def __init__(
        self,
        *,
        max_vaults: int = MAX_VAULTS,
        max_chunks: int = MAX_CHUNKS,
        max_bytes: int = MAX_TEXT_BYTES,
    ) -> None:
        self._guard = threading.RLock()
        self._indexes: OrderedDict[str, VaultIndex] = OrderedDict()
        self._domain: Vaults | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._max_vaults = max_vaults
        self._max_chunks = max_chunks
        self._max_bytes = max_bytes
        #: Full builds and incremental updates done (for tests and status).
        self.builds = 0
        self.updates = 0

    # -- life cycle ------------------------------------------------------------------------

    def clear(self) -> None:
        """Drop every index, its texts and the commit subscription (the store locked)."""
        with self._guard:
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()
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
        index = VaultIndex(vault_id, key, max_chunks=self._max_chunks, max_bytes=self._max_bytes)
        types = self._card_types(domain, vault_id)
        summaries = [
            s
            for kind in SEARCHED_KINDS
            for s in domain.list_assets(vault_id, kind=kind)
            if not s.private and not s.conflicted
        ]
        # Newest first, so a bounded index keeps the most recent memories.
        summaries.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
        for summary in summaries:
            view = self._view(domain, summary.id)
            if view is not None:
                index.add(view, types)
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
                self._refresh(domain, index)
            self._indexes.move_to_end(record.vault_id)
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

    def search(
        self,
        domain: Vaults,
        text: str,
        *,
        vault: str | None = None,
        kind: Kind | None = None,
        limit: int = 10,
    ) -> tuple[list[Hit], IndexStatus, Query]:
        """The best ``limit`` assets for the query ``text`` in ``vault``.

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
            hits = self._rank(domain, index, query, kind=kind, limit=limit)
            return hits, index.status, query

    def _rank(
        self, domain: Vaults, index: VaultIndex, query: Query, *, kind: Kind | None, limit: int
    ) -> list[Hit]:
        best = index.search_bm25(query)
        candidates: dict[str, float] = {}
        for asset_id, (score, _) in best.items():
            view = index.assets[asset_id].view
            content = view.content
            assert content is not None
            if kind is not None and view.kind != kind:
                continue
            if query.tags and not all(tag in content.tags for tag in query.tags):
                continue
            candidates[asset_id] = score
        ordered = sorted(candidates, key=lambda a: (-candidates[a], a))[:RERANK_DEPTH]
        norm = normalized({a: candidates[a] for a in ordered})
        scored: list[tuple[float, str, dict[str, float]]] = []
        for asset_id in ordered:
            row = index.rows[best[asset_id][1]]
            content = index.assets[asset_id].view.content
            assert content is not None
            passage = fold(row.chunk.text)
            title = fold(content.title)
            if query.phrases and not all(p in title or p in passage for p in query.phrases):
                continue
            bonus = rerank_bonus(query, title, row.tokens, passage)
            scores = {"bm25": candidates[asset_id], "rerank": bonus}
            scored.append((norm[asset_id] + bonus, asset_id, scores))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [
            self._hit(domain, index, best[a][1], s, parts, query) for s, a, parts in scored[:limit]
        ]

    def _hit(
        self,
        domain: Vaults,
        index: VaultIndex,
        rowid: int,
        score: float,
        scores: dict[str, float],
        query: Query,
    ) -> Hit:
        row = index.rows[rowid]
        view = index.assets[row.asset_id].view
        content = view.content
        assert content is not None
        summary = Summary(
            id=view.asset_id,
            short_id=domain.short_id(view.asset_id),
            vault=view.vault_id,
            kind=view.kind,
            card_type=content.card_type if view.kind == "card" else None,
            title=content.title,
            tags=content.tags,
            created_at=view.created_at,
            updated_at=view.updated_at,
            author=view.author,
            private=False,
            conflicted=False,
        )
        text = row.chunk.text or content.title
        return Hit(summary, view.revision, row.chunk.id, snippet(text, query), score, scores, text)
