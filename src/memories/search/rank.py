"""The query language, reciprocal-rank fusion and highlighted snippets.

Query syntax (documented in docs/cli.md):

- words are matched in any order; an asset matching more of them ranks higher;
- ``"an exact phrase"`` must appear as written (case and width folded);
- ``-word`` leaves out assets holding ``word``;
- ``tag:NAME`` keeps only assets tagged ``NAME``;
- FTS5 operators, brackets, ``*`` and other punctuation carry no meaning: they are separators.

The rerank that follows the first stages is in :mod:`memories.search.rerank`.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memories.search.tokenize import cjk_grams, fold, query_tokens, unique

__all__ = [
    "MAX_QUERY_TOKENS",
    "MIN_SIMILARITY",
    "RRF_K",
    "Query",
    "Snippet",
    "fuse_scores",
    "normalized",
    "parse_query",
    "rrf",
    "snippet",
]

RRF_K = 60
MAX_QUERY_TOKENS = 64
#: In hybrid mode an asset found only by its vector must be at least this similar (unless its
#: model says otherwise, see :class:`memories.rag.embed.ScriptRouted`): the nearest
#: neighbours of anything include unrelated text, which keywords would not match.
MIN_SIMILARITY = 0.25

_PART = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class Query:
    """A parsed query: what to match, what must appear, what to leave out."""

    text: str  # the words and phrases, as one folded string (for phrase checks)
    tokens: tuple[str, ...]  # every distinct query token of words and phrases
    phrases: tuple[str, ...]  # folded quoted phrases
    excluded: tuple[str, ...]  # tokens of -words
    tags: tuple[str, ...]  # tag: filters
    truncated: bool  # more than MAX_QUERY_TOKENS tokens were given
    grams: tuple[str, ...] = ()  # the distinct CJK character pairs of words and phrases

    @property
    def empty(self) -> bool:
        return not self.tokens


def parse_query(text: str) -> Query:
    """Parse ``text`` (any string; never raises). See the module docstring for the syntax."""
    words: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    tags: list[str] = []
    for match in _PART.finditer(text):
        phrase, word = match.group(1), match.group(2)
        if phrase is not None:
            if phrase.strip():
                phrases.append(phrase.strip())
                words.append(phrase)
            continue
        if word.startswith("-") and len(word) > 1:
            excluded.extend(query_tokens(word[1:]))
        elif word.lower().startswith("tag:") and len(word) > 4:
            tags.append(word[4:])
        else:
            words.append(word)
    tokens = unique(t for w in words for t in query_tokens(w))
    grams = unique(g for w in words for g in cjk_grams(w))
    return Query(
        text=fold(" ".join(words)).strip(),
        tokens=tuple(tokens[:MAX_QUERY_TOKENS]),
        phrases=tuple(fold(p) for p in phrases),
        excluded=tuple(unique(excluded)[:MAX_QUERY_TOKENS]),
        tags=tuple(unique(tags)),
        truncated=len(tokens) > MAX_QUERY_TOKENS,
        grams=tuple(grams[:MAX_QUERY_TOKENS]),
    )


def rrf(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion: each id scores the sum of ``1 / (k + rank)`` over the rankings
    it appears in (ranks from 1)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def fuse_scores(
    lexical: Mapping[str, float], semantic: Mapping[str, float], weight: float = 1.0
) -> dict[str, float]:
    """Relative score fusion: BM25 scores divided by the best one, cosine similarities scaled
    min-max over their candidates (an id missing from a ranking scores 0 in it), then
    ``(lexical + weight * semantic) / (1 + weight)``, so every fused score is in 0..1.

    Unlike :func:`rrf` it keeps how far apart the scores are: a passage far more similar than
    the rest stays far ahead, where ranks alone would give it one step."""
    top = max(lexical.values(), default=0.0)
    low = min(semantic.values(), default=0.0)
    span = max(semantic.values(), default=0.0) - low
    fused: dict[str, float] = {}
    for key in lexical.keys() | semantic.keys():
        words = lexical[key] / top if key in lexical and top > 0 else 0.0
        meaning = 0.0
        if key in semantic:
            meaning = (semantic[key] - low) / span if span > 0 else 1.0
        fused[key] = (words + weight * meaning) / (1.0 + weight)
    return fused


@dataclass(frozen=True)
class Snippet:
    """A passage of a result with the spans that matched the query."""

    text: str
    highlights: tuple[tuple[int, int], ...]

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "highlights": [list(span) for span in self.highlights]}


_ASCII_WORD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_WORD_TAIL = re.compile(r"[a-z0-9]*")


@functools.lru_cache(maxsize=256)
def _needles(phrases: tuple[str, ...], tokens: tuple[str, ...]) -> tuple[str, ...]:
    """What a snippet looks for: the query's phrases and tokens, longest first (worked out
    once per query, not once per result)."""
    return tuple(sorted({*phrases, *tokens}, key=lambda n: (-len(n), n)))


@functools.lru_cache(maxsize=256)
def _short_words(needles: tuple[str, ...]) -> tuple[str, ...]:
    """The Latin needles under three characters, looked for as whole words only."""
    return tuple(n for n in needles if len(n) < 3 and n[0] in _ASCII_WORD)


def _word_spans(folded: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where ``needles`` (folded words and phrases) of three characters or more occur in
    ``folded`` (a text's ``lower()``), unmerged.

    A Latin needle matches at the start of a word and takes the rest of its word with it (so
    "deploy" marks "deploys"); other needles (CJK) match anywhere.
    """
    spans: list[tuple[int, int]] = []
    for needle in needles:
        if not needle or (len(needle) < 3 and needle[0] in _ASCII_WORD):
            continue
        latin_start = needle[0] in _ASCII_WORD
        latin_end = needle[-1] in _ASCII_WORD
        at = folded.find(needle)
        while at != -1:
            end = at + len(needle)
            if not latin_start or at == 0 or folded[at - 1] not in _ASCII_WORD:
                if latin_end:
                    found = _WORD_TAIL.match(folded, end)
                    end = found.end() if found is not None else end
                spans.append((at, end))
            at = folded.find(needle, end)
    return spans


def _short_spans(
    folded: str, needles: tuple[str, ...], start: int, end: int
) -> list[tuple[int, int]]:
    """Where the Latin needles under three characters occur in ``folded[start:end]``, as
    whole words only (so "a" is not found inside every word)."""
    spans: list[tuple[int, int]] = []
    for needle in _short_words(needles):
        at = folded.find(needle, start, end)
        while at != -1:
            stop = at + len(needle)
            if (at == 0 or folded[at - 1] not in _ASCII_WORD) and (
                stop == end or folded[stop] not in _ASCII_WORD
            ):
                spans.append((at, stop))
                at = folded.find(needle, stop, end)
            else:
                at = folded.find(needle, at + 1, end)
    return spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def snippet(text: str, query: Query, width: int = 240) -> Snippet:
    """The ``width``-character window of ``text`` holding the most query matches, with the
    matched spans (offsets into the window's text). Never cuts inside a surrogate-free
    character; leading and trailing "…" mark a cut.

    The window is chosen by the matches of the query's words of three characters or more
    when there are any; its words under three characters (``a``, ``of``, ``go``) are then
    only looked for inside the window, since scanning a long text for them costs more than
    the rest of the snippet."""
    needles = _needles(query.phrases, query.tokens)
    # Matching on lower() keeps offsets aligned with ``text`` (NFKC could change lengths).
    folded = text.lower()
    words = _word_spans(folded, needles)
    if len(text) <= width:
        return Snippet(text, tuple(_merged(words + _short_spans(folded, needles, 0, len(text)))))
    spans = _merged(words) or _merged(_short_spans(folded, needles, 0, len(text)))
    # Slide over the spans (sorted by start): the window opening a quarter width before span i
    # holds spans i..j-1, so the best window costs one pass, not one count per span.
    starts = [start for start, _ in spans]
    best_start, best_count = 0, -1
    j = 0
    for i, start in enumerate(starts):
        window_start = max(0, start - width // 4)
        j = max(j, i)
        while j < len(spans) and spans[j][1] <= window_start + width:
            j += 1
        # The spans just before i that start inside the window too (at most four looked at).
        earlier = i - bisect_left(starts, window_start, max(0, i - 4), i)
        if j - i + earlier > best_count:
            best_start, best_count = window_start, j - i + earlier
    if best_start > 0:
        space = text.find(" ", best_start, best_start + 20)
        if space != -1:
            best_start = space + 1
    window = text[best_start : best_start + width]
    prefix = "…" if best_start > 0 else ""
    suffix = "…" if best_start + width < len(text) else ""
    shift = len(prefix) - best_start
    inside = _short_spans(folded, needles, best_start, best_start + len(window))
    shown = tuple(
        (s + shift, e + shift)
        for s, e in _merged(words + inside)
        if s >= best_start and e <= best_start + len(window)
    )
    return Snippet(prefix + window + suffix, shown)


def normalized(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores divided by the best one (all in 0..1); empty stays empty."""
    top = max(scores.values(), default=0.0)
    if top <= 0:
        return dict.fromkeys(scores, 0.0)
    return {key: value / top for key, value in scores.items()}
