"""From first-stage candidates to results: fusion, the default rerank and the safe projection.

The first stages give, per asset, its best chunk by BM25 and (when vectors exist) by cosine
similarity. ``bm25`` and ``vector`` modes rank by one of them; ``hybrid`` fuses the two asset
rankings, by default by their relative scores (:func:`~memories.search.rank.fuse_scores`),
or by reciprocal ranks (:func:`~memories.search.rank.rrf`, ``[rag] fusion = "rrf"``), the
vector ranking weighted per script (:class:`memories.rag.ScriptRouted`). On the benchmark's
known-item sets relative scores beat reciprocal ranks at every weight and constant measured
(0.74 against 0.73 nDCG@10 at best in English): ranks throw away how much more similar the
best passage is than the next. The best :data:`~memories.search.rerank.RERANK_DEPTH`
candidates are then reranked by :mod:`memories.search.rerank` (the normalized first-stage score
plus a bonus for query-word coverage and exact phrases), unless the caller turned reranking
off; :func:`relearn` then applies a learned rerank's relevance scores when one is configured.
A quoted phrase must appear in the title or the passage, in every mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from memories.search.index import CANDIDATE_CHUNKS, VaultIndex
from memories.search.rank import (
    MIN_SIMILARITY,
    RRF_K,
    Query,
    Snippet,
    fuse_scores,
    normalized,
    rrf,
    snippet,
)
from memories.search.rerank import (
    FUSED_SCALE,
    HYBRID_SCALE,
    RERANK_DEPTH,
    Features,
    Measure,
    learned_order,
)
from memories.search.tokenize import folded_contains
from memories.views.assets import Summary
from memories.views.kinds import Kind

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memories.vault import Vaults

__all__ = ["Fusion", "Hit", "Mode", "rank", "relearn"]

Mode = Literal["bm25", "vector", "hybrid"]
#: How hybrid mode fuses the two rankings: relative scores (the default) or reciprocal ranks.
Fusion = Literal["scores", "rrf"]


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


def _keep(index: VaultIndex, asset_id: str, query: Query, kind: Kind | None) -> bool:
    view = index.assets[asset_id].view
    content = view.content
    assert content is not None
    if kind is not None and view.kind != kind:
        return False
    return not (query.tags and not all(tag in content.tags for tag in query.tags))


def _order(scores: Mapping[str, float]) -> list[str]:
    return sorted(scores, key=lambda a: (-scores[a], a))


def rank(
    domain: Vaults,
    index: VaultIndex,
    query: Query,
    *,
    kind: Kind | None,
    limit: int,
    mode: Mode = "bm25",
    space: str | None = None,
    vector: npt.NDArray[np.float32] | None = None,
    rrf_k: int = RRF_K,
    vector_weight: float = 1.0,
    vector_floor: float = MIN_SIMILARITY,
    rerank: bool = True,
    fusion: Fusion = "scores",
) -> list[Hit]:
    """The best ``limit`` hits for ``query`` in ``index``; ``vector`` (in ``space``) is the
    query's embedding for the ``vector`` and ``hybrid`` modes, and ``vector_weight`` its
    ranking's weight against the keywords' in the fusion. In hybrid mode an asset found only
    by its vector must be at least ``vector_floor`` similar: the nearest neighbours of
    anything include unrelated text, which keywords would not match. With ``rerank`` False
    the first stage's order is kept (no coverage or phrase bonus)."""
    lexical: dict[str, tuple[float, int]] = {}
    semantic: dict[str, tuple[float, int]] = {}
    filtered = kind is not None or bool(query.tags)
    if mode != "vector" and query.tokens:
        # Alone, keywords need only enough rows for the rerank's candidates (a few chunks of
        # one asset may come together); fusion and filters need the deeper list.
        fused = mode == "hybrid" and vector is not None
        depth = CANDIDATE_CHUNKS if fused or filtered else max(2 * RERANK_DEPTH, 2 * limit)
        lexical = index.search_bm25(query, depth, least=max(limit, RERANK_DEPTH // 5))
        if filtered:
            lexical = {a: v for a, v in lexical.items() if _keep(index, a, query, kind)}
    if mode != "bm25" and vector is not None and space is not None:
        floor = vector_floor if mode == "hybrid" else -1.0
        semantic = {
            a: v
            for a, v in index.search_vectors(query, space, vector).items()
            if (a in lexical or v[0] >= floor) and (not filtered or _keep(index, a, query, kind))
        }
    bm25 = {a: s for a, (s, _) in lexical.items()}
    cosine = {a: s for a, (s, _) in semantic.items()}
    scale = 1.0
    if mode == "hybrid" and cosine and fusion == "scores":
        base = fuse_scores(bm25, cosine, vector_weight)
        scale = FUSED_SCALE
    elif mode == "hybrid" and cosine:
        lexical_part = rrf([_order(bm25)], rrf_k)
        semantic_part = rrf([_order(cosine)], rrf_k)
        base = {
            a: lexical_part.get(a, 0.0) + vector_weight * semantic_part.get(a, 0.0)
            for a in lexical_part.keys() | semantic_part.keys()
        }
        scale = HYBRID_SCALE
    elif mode == "vector" or (mode == "hybrid" and not bm25):
        base = cosine
    else:
        base = bm25
    # The rerank's candidate set is bounded, but never smaller than what was asked for.
    ordered = _order(base)[: max(RERANK_DEPTH, limit)]
    norm = normalized({a: base[a] for a in ordered})
    measure = Measure(query, index.rarity(query.tokens), index.token_ids(query.tokens))
    measured: list[tuple[float, str, int, Features | None]] = []
    for asset_id in ordered:
        rowid = (lexical.get(asset_id) or semantic[asset_id])[1]
        row = index.rows[rowid]
        indexed = index.assets[asset_id]
        passage = row.chunk.text
        title = indexed.title
        if query.phrases and not all(
            p in title or folded_contains(passage, p) for p in query.phrases
        ):
            continue
        features = (
            measure.by_ids(title, index.row_ids(row), passage, index.title_ids(indexed))
            if rerank
            else None
        )
        bonus = scale * features.bonus if features is not None else 0.0
        measured.append((norm[asset_id] + bonus, asset_id, rowid, features))
    measured.sort(key=lambda item: (-item[0], item[1]))
    hits = []
    # Score components only for what is returned: most candidates are measured, then dropped.
    for score, asset_id, rowid, features in measured[:limit]:
        first = norm[asset_id]
        parts = features.components(first, scale) if features is not None else {"first": first}
        if asset_id in bm25:
            parts["bm25"] = bm25[asset_id]
        if asset_id in cosine:
            parts["vector"] = cosine[asset_id]
        if base is not bm25 and base is not cosine:
            parts["rrf"] = base[asset_id]
        hits.append(_hit(domain, index, rowid, score, parts, query))
    return hits


def relearn(
    hits: Sequence[Hit], relevance: Mapping[tuple[str, str], float], limit: int
) -> list[Hit]:
    """The best ``limit`` of ``hits`` (given in the default rerank's order) in the order of a
    learned rerank's ``relevance``, keyed by (asset id, chunk hash) so a score only ever
    applies to the very text that was scored; see
    :func:`~memories.search.rerank.learned_order`. A scored hit's ``score`` becomes its
    relevance and its components gain ``learned``; unscored hits follow unchanged."""
    by_key = {(hit.summary.id, hit.chunk): hit for hit in hits}
    out: list[Hit] = []
    for key in learned_order(list(by_key), relevance)[:limit]:
        hit = by_key[key]
        if key in relevance:
            hit = replace(
                hit, score=relevance[key], scores={**hit.scores, "learned": relevance[key]}
            )
        out.append(hit)
    return out


def _hit(
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
