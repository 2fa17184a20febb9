"""Reranking the first stage's best candidates: the default rerank and the order a learned one
gives.

**The default rerank** looks at a bounded candidate set: the best :data:`RERANK_DEPTH` assets
of the first stage (BM25, cosine similarity or their reciprocal-rank fusion), never fewer than
the caller asked for. For each candidate it measures, with the index's own tokens (so Chinese
text is compared by jieba's words, as the index is):

- ``coverage``: the share of the query's distinct tokens the candidate holds anywhere (title,
  best passage, tags and searchable metadata), each token weighted by its rarity in the index
  (BM25's inverse document frequency), so "the" and "of" count for little;
- ``title``: the same share for its title alone (a title match counts twice: it also counts
  in ``coverage``);
- ``phrase``: 1 when a quoted phrase, or the whole query of two or more tokens, appears
  verbatim (case and width folded) in the title or the best passage, else 0.

The candidate's score is then, deterministically::

    score = first / best_first + scale * (0.35 * coverage + 0.15 * title + 0.25 * phrase)

where ``first / best_first`` is its first-stage score over the best one (0..1) and ``scale``
is 1 for BM25 and vector rankings, :data:`FUSED_SCALE` for relative-score fusion and
:data:`HYBRID_SCALE` for reciprocal-rank fusion (whose scores are flatter still). Ties go to
the asset id, so equal inputs always give the same order. Each component is reported in the
result's score components (``first``, ``coverage``, ``title_coverage``, ``phrase``,
``rerank`` = the added bonus).

**A learned rerank** (a configured Cohere/Jina-style ``/rerank`` endpoint) scores the same
bounded candidates; :func:`learned_order` puts them in the order of its relevance scores,
ties and unscored candidates keeping the default order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import NamedTuple, TypeVar

from memories.search.index import held_of
from memories.search.rank import Query
from memories.search.tokenize import folded_contains, tokenize

__all__ = [
    "COVERAGE_WEIGHT",
    "FUSED_SCALE",
    "HYBRID_SCALE",
    "PHRASE_WEIGHT",
    "RERANK_DEPTH",
    "TITLE_WEIGHT",
    "Features",
    "Measure",
    "features",
    "learned_order",
]

#: How many first-stage candidates the rerank (default or learned) looks at.
RERANK_DEPTH = 50
COVERAGE_WEIGHT = 0.35
TITLE_WEIGHT = 0.15
PHRASE_WEIGHT = 0.25
#: Fused (RRF) scores are flatter than BM25's, so the bonus is scaled down for them.
HYBRID_SCALE = 0.25
#: Relative-score fusion keeps the spread of the scores, but averages two of them.
FUSED_SCALE = 0.5

K = TypeVar("K")


class Features(NamedTuple):
    """What the default rerank measured of one candidate (see the module docstring); a
    tuple, being built once per candidate of every query."""

    coverage: float
    title: float
    phrase: bool

    @property
    def bonus(self) -> float:
        """The unscaled bonus these features earn."""
        return (
            COVERAGE_WEIGHT * self.coverage
            + TITLE_WEIGHT * self.title
            + PHRASE_WEIGHT * float(self.phrase)
        )

    def components(self, first: float, scale: float) -> dict[str, float]:
        """The score components a result reports for these features."""
        return {
            "first": first,
            "coverage": self.coverage,
            "title_coverage": self.title,
            "phrase": float(self.phrase),
            "rerank": scale * self.bonus,
        }


class Measure:
    """The default rerank's measure for one query: the query's token weights and phrases,
    worked out once, then applied to each candidate."""

    def __init__(
        self,
        query: Query,
        weights: Mapping[str, float] | None = None,
        ids: Iterable[tuple[str, int]] = (),
    ) -> None:
        """``weights`` gives each query token's rarity weight (a token it leaves out, or
        every token when it is None, weighs 1); ``ids`` gives the index's id of each query
        token the index holds, for :meth:`by_ids`."""
        self.weight = {t: 1.0 if weights is None else weights.get(t, 1.0) for t in query.tokens}
        self.total = sum(self.weight.values()) or 1.0
        phrases = list(query.phrases)
        if len(query.tokens) > 1 and query.text:
            phrases.append(query.text)
        self.phrases = [p for p in phrases if p]
        self._weighted_ids = [(self.weight[t], i) for t, i in ids if t in self.weight]

    def __call__(
        self,
        title: str,
        tokens: Iterable[str],
        passage: str,
        title_tokens: AbstractSet[str] | None = None,
    ) -> Features:
        """Measure one candidate; ``title`` is folded (:func:`fold`), ``passage`` is its best
        chunk's text (folded or not) and ``tokens`` are its index tokens (title, passage and
        metadata); ``title_tokens`` are the title's tokens (or those of the query's it holds)
        when the caller has them. Never raises."""
        if not self.weight:
            return Features(0.0, 0.0, False)
        held = tokens if isinstance(tokens, frozenset | set) else set(tokens)
        coverage = sum(w for t, w in self.weight.items() if t in held) / self.total
        if title_tokens is None:
            title_tokens = frozenset(tokenize(title))
        in_title = sum(w for t, w in self.weight.items() if t in title_tokens) / self.total
        return Features(coverage, in_title, self._phrase(title, passage))

    def by_ids(self, title: str, ids: array[int], passage: str, title_ids: array[int]) -> Features:
        """As calling the measure, with the candidate's tokens given as the index's sorted
        token ids (of its title, passage and metadata, and of its title alone): what the
        rerank does for each candidate of every query, without a set of strings per
        candidate. Never raises."""
        if not self.weight:
            return Features(0.0, 0.0, False)
        coverage = sum(held_of(ids, self._weighted_ids)) / self.total
        in_title = sum(held_of(title_ids, self._weighted_ids)) / self.total
        return Features(coverage, in_title, self._phrase(title, passage))

    def _phrase(self, title: str, passage: str) -> bool:
        return any(p in title or folded_contains(passage, p) for p in self.phrases)


def features(
    query: Query,
    title: str,
    tokens: Iterable[str],
    passage: str,
    weights: Mapping[str, float] | None = None,
    title_tokens: AbstractSet[str] | None = None,
) -> Features:
    """Measure one candidate for ``query``: :class:`Measure` for a single use."""
    return Measure(query, weights)(title, tokens, passage, title_tokens)


def learned_order(default: Sequence[K], relevance: Mapping[K, float]) -> list[K]:
    """``default`` (the default rerank's order) reordered by ``relevance``, highest first;
    ties keep their default order and candidates without a score follow, in default order."""
    position = {key: at for at, key in enumerate(default)}
    scored = sorted(
        (k for k in default if k in relevance), key=lambda k: (-relevance[k], position[k])
    )
    return scored + [k for k in default if k not in relevance]
