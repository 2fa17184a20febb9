"""One vault's index: FTS5 rows, chunk texts, and the vectors embedded so far.

A :class:`VaultIndex` holds only authorized ordinary content (the cache decides what enters).
Each chunk becomes one FTS5 row (title / body / metadata) and, once the background embedder
reaches it, one vector in the space of the embedder its text was routed to.

A build does little in Python beyond chunking, so FTS5 does most of the work: text FTS5 can
split into this project's tokens itself goes to it as it is (see :func:`_fts_text`), and a
row's token ids, which the rerank compares with a query's, are worked out when a query first
needs them (:meth:`VaultIndex.row_ids`). How many rows hold a word (its rarity) is FTS5's
count of its stem, asked once per word until the next edit (:meth:`VaultIndex.rows_holding`).
Chunks
waiting for a vector are in :attr:`VaultIndex.pending`, in the order they were added (the
newest memories first on a full build). Bounds: :data:`MAX_CHUNKS` chunks and
:data:`MAX_TEXT_BYTES` of text and metadata (what does not fit is left out) and
:data:`MAX_VECTOR_BYTES` of vectors (past it, chunks stay keyword-only); each says why.
"""

from __future__ import annotations

import gc
import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from memories.search.chunk import Chunk, chunk_text
from memories.search.fts import (
    FtsIndex,
    FtsRow,
    match_all,
    match_any,
    match_every_word,
    match_query,
)
from memories.search.rank import Query
from memories.search.tokenize import (
    cjk_grams,
    fold,
    fts5_spelling,
    has_cjk,
    query_tokens,
    tokenize,
)
from memories.search.vectors import VectorSet
from memories.views.assets import AssetView
from memories.views.cards import CardType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CANDIDATE_CHUNKS",
    "MAX_CHUNKS",
    "MAX_TEXT_BYTES",
    "MAX_VECTOR_BYTES",
    "IndexStatus",
    "VaultIndex",
    "held_of",
]

K = TypeVar("K")

MAX_CHUNKS = 10_000
MAX_TEXT_BYTES = 16 * 1024 * 1024
MAX_VECTOR_BYTES = 32 * 1024 * 1024
#: How many chunks each first stage (BM25, vectors) hands to fusion and reranking.
CANDIDATE_CHUNKS = 300
#: About how many rows BM25 scores for one query (see :meth:`VaultIndex._split`).
SCORED_ROWS = 4000
#: How many rows BM25 scores to fill the candidates after the rows holding every word of
#: the query were found first (see :meth:`VaultIndex.search_bm25`).
FILL_ROWS = 200
#: How many words' row counts are kept between edits (past it, the counts start again).
HELD_COUNTS = 50_000


@dataclass(slots=True)
class IndexedAsset:
    """One indexed asset: what its summary needs, its revision stamp and its chunk rows, with
    what the rerank reads of its title worked out once, not once per query."""

    view: AssetView
    rowids: list[int]
    size: int  # bytes of text and metadata counted against the bound
    #: The ids of the distinct tokens of its title, sorted (see :func:`held_of`), worked out
    #: when a query first needs them (:meth:`VaultIndex.title_ids`).
    title_ids: array[int] | None = None
    fixed_grams: str = ""  # the CJK pairs of title and metadata, in every row, space-joined
    fts_title: str = ""  # the title and metadata columns of its FTS5 rows, as inserted
    fts_meta: str = ""
    meta: str = ""  # its searchable metadata (see :func:`metadata_text`), space-joined
    #: The title, folded (see :func:`_folded_title`): the rerank compares it with each query.
    title: str = ""


def _folded_title(view: AssetView) -> str:
    """``view``'s title folded; the title itself (not a copy) when folding leaves it as it
    is, as it does most Chinese titles, so the index keeps a second string only where it
    differs."""
    title = view.content.title if view.content is not None else ""
    folded = fold(title)
    return title if folded == title else folded


@dataclass(frozen=True, slots=True)
class _Everything:
    """What the first step of a keyword search found: the rows holding every telling word
    and pair of the query (all of them when ``complete``), and the expression that did."""

    expression: str
    words: Sequence[str]
    grams: Sequence[str]
    check: list[tuple[str, int]]  # the common words each row was checked for, with their ids
    rows: list[int]
    complete: bool


@dataclass(slots=True)
class Row:
    asset_id: str
    chunk: Chunk
    #: The ids of the distinct tokens of the chunk, its title and metadata, sorted: a
    #: compact array instead of a set of strings per row (see :func:`held_of`). None until a
    #: query first needs them (:meth:`VaultIndex.row_ids`) where FTS5 split the chunk itself.
    ids: array[int] | None = None


@dataclass(frozen=True)
class IndexStatus:
    """What one vault index holds."""

    vault: str
    assets: int
    chunks: int
    text_bytes: int
    truncated: str | None  # why some content was left out, or None
    embedded: int = 0
    pending: int = 0
    vector_bytes: int = 0
    vectors: str | None = None  # why vectors are off or incomplete, or None

    def to_dict(self) -> dict[str, object]:
        return {
            "vault": self.vault,
            "assets": self.assets,
            "chunks": self.chunks,
            "text_bytes": self.text_bytes,
            "truncated": self.truncated,
            "embedded": self.embedded,
            "pending": self.pending,
            "vector_bytes": self.vector_bytes,
            "vectors": self.vectors,
        }


def metadata_text(view: AssetView, card_types: Mapping[str, CardType]) -> list[str]:
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


def _fts_text(text: str) -> tuple[str, list[str] | None]:
    """What the FTS5 table is given for ``text``, and the tokens of ``text`` where Python
    worked them out: text FTS5's own tokenizer splits into this module's tokens goes as it
    is spelled for it (:func:`~memories.search.tokenize.fts5_spelling`), at the speed of
    compiled code, with None for its tokens; any other text goes as its tokens, joined by
    spaces."""
    if not text:  # most memories' metadata
        return text, None
    spelled = fts5_spelling(text)
    if spelled is not None:
        return spelled, None
    tokens = tokenize(text)
    return " ".join(tokens), tokens


def _fts_row(rowid: int, indexed: IndexedAsset, body: str, grams: list[str]) -> FtsRow:
    """A chunk's FTS5 row, built the same way when it is added and when it is deleted."""
    return FtsRow(rowid, indexed.fts_title, body, indexed.fts_meta, " ".join(grams))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off, as it was found after. A build allocates a few
    objects per chunk that all live as long as the index: the collector's passes over them
    free nothing, and one full pass over the process's objects, which they trigger, costs
    as much as a sixth of the build."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def held_of(ids: array[int], wanted: Iterable[tuple[K, int]]) -> list[K]:
    """The keys of the ``wanted`` (key, token id) pairs whose id the sorted token ``ids`` of
    a row or title hold: tokens, or whatever the caller pairs with their ids."""
    held = []
    size = len(ids)
    for key, wanted_id in wanted:
        at = bisect_left(ids, wanted_id)
        if at < size and ids[at] == wanted_id:
            held.append(key)
    return held


def _forget(counts: Counter[str], keys: Iterable[str]) -> None:
    """One row fewer holds each of ``keys``; a count that reaches 0 goes."""
    for key in keys:
        left = counts[key] - 1
        if left > 0:
            counts[key] = left
        else:
            del counts[key]


class VaultIndex:
    """The FTS5 index and vectors of one vault's searchable content. Its owner serializes
    every call."""

    def __init__(
        self,
        vault_id: str,
        key: tuple[int, int],
        *,
        max_chunks: int = MAX_CHUNKS,
        max_bytes: int = MAX_TEXT_BYTES,
        max_vector_bytes: int = MAX_VECTOR_BYTES,
        embedding: bool = False,
    ):
        self.vault_id = vault_id
        self.key = key
        self.fts = FtsIndex()
        self.assets: dict[str, IndexedAsset] = {}
        self.rows: dict[int, Row] = {}
        #: How many chunk rows hold each word a query asked about, counted by FTS5 when first
        #: asked (see :meth:`rows_holding`) until the next edit, and each CJK character pair.
        self._held: dict[str, int] = {}
        self.gram_df: Counter[str] = Counter()
        #: Every token a row or query held, by id (one string each, however many hold it).
        self._vocabulary: dict[str, int] = {}
        self._words: list[str] = []
        self.text_bytes = 0
        self.truncated: str | None = None
        self.dirty: set[str] = set()
        self.stale = False
        #: Whether new chunks wait for vectors (an embedder is configured and working).
        self.embedding = embedding
        #: Chunk rows waiting for a vector, oldest request first (a dict as an ordered set).
        self.pending: dict[int, None] = {}
        self.vectors: dict[str, VectorSet] = {}
        self.vectors_note: str | None = None
        self._next_rowid = 1
        self._max_chunks = max_chunks
        self._max_bytes = max_bytes
        self._max_vector_bytes = max_vector_bytes
        self._left_out = 0

    @property
    def vector_bytes(self) -> int:
        return sum(v.nbytes for v in self.vectors.values())

    @property
    def status(self) -> IndexStatus:
        return IndexStatus(
            self.vault_id,
            len(self.assets),
            len(self.rows),
            self.text_bytes,
            self.truncated,
            embedded=sum(len(v) for v in self.vectors.values()),
            pending=len(self.pending),
            vector_bytes=self.vector_bytes,
            vectors=self.vectors_note,
        )

    def add(self, view: AssetView, card_types: Mapping[str, CardType]) -> bool:
        """Index ``view`` (replacing an earlier revision); False when it did not fit."""
        self.remove(view.asset_id)
        rows = self._admit(view, card_types)
        if rows is None:
            return False
        self.fts.add(rows)
        self._held.clear()
        return True

    def add_many(self, views: Iterable[AssetView], card_types: Mapping[str, CardType]) -> None:
        """Index each of ``views`` as :meth:`add` does, in one insert into the FTS5 table
        (what does not fit is left out and counted, as :meth:`add` does), while the
        insert runs on a helper thread (:meth:`FtsIndex.add`); with CJK text, the table's
        segments are merged after (:meth:`FtsIndex.optimize`)."""
        again: list[AssetView] = []

        def rows() -> Iterator[FtsRow]:
            for view in views:
                if view.asset_id in self.assets:  # replaced after: the insert is under way
                    again.append(view)
                else:
                    yield from self._admit(view, card_types) or ()

        with _collector_paused():
            self.fts.add(rows())
        self._held.clear()
        if self.gram_df:
            # A CJK query looks up each of its character pairs in every segment: merged, a
            # query over 10,000 Chinese chunks takes a tenth less. A Latin query looks up a
            # few words, and the merge would cost a sixth of an English build.
            self.fts.optimize()
        for view in again:
            self.add(view, card_types)

    def _admit(self, view: AssetView, card_types: Mapping[str, CardType]) -> list[FtsRow] | None:
        """Take ``view``, which is not in the index, into everything but the FTS5 table and
        return its FTS5 rows; None when it did not fit."""
        content = view.content
        if content is None:
            return None
        meta_parts = metadata_text(view, card_types)
        chunks = chunk_text(content.body) or [Chunk("", 0, 0)]
        size = len(content.title.encode("utf-8")) + len(content.body.encode("utf-8"))
        if meta_parts:
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
            return None
        meta_text = " ".join(meta_parts)
        fixed_grams = [*cjk_grams(content.title), *cjk_grams(meta_text)]
        indexed = self.assets[view.asset_id] = IndexedAsset(
            view,
            [],
            size,
            fixed_grams=" ".join(fixed_grams),
            fts_title=_fts_text(content.title)[0],
            fts_meta=_fts_text(meta_text)[0],
            meta=meta_text,
            title=_folded_title(view),
        )
        fts_rows: list[FtsRow] = []
        for chunk in chunks:
            body, body_tokens = _fts_text(chunk.text)
            grams = [*fixed_grams, *cjk_grams(chunk.text)]
            rowid = self._next_rowid
            self._next_rowid += 1
            fts_rows.append(_fts_row(rowid, indexed, body, grams))
            row = self.rows[rowid] = Row(view.asset_id, chunk)
            if body_tokens is not None:  # worked out already: their ids cost little now
                row.ids = self._ids(self._tokens(indexed, body_tokens))
            if grams:
                self.gram_df.update(set(grams))
            indexed.rowids.append(rowid)
            if self.embedding:
                self.pending[rowid] = None
        self.text_bytes += size
        return fts_rows

    def remove(self, asset_id: str) -> None:
        """Take ``asset_id`` out of the index (nothing happens when it is not in it)."""
        indexed = self.assets.pop(asset_id, None)
        if indexed is None:
            return
        removed: list[FtsRow] = []
        for rowid in indexed.rowids:
            row = self.rows.pop(rowid, None)
            if row is not None:
                grams = [*indexed.fixed_grams.split(), *cjk_grams(row.chunk.text)]
                if grams:
                    _forget(self.gram_df, set(grams))
                # The table keeps no copy of its rows: a row is deleted by giving back the
                # very values it was inserted with, which the chunk's text gives again.
                body = _fts_text(row.chunk.text)[0]
                removed.append(_fts_row(rowid, indexed, body, grams))
            self.pending.pop(rowid, None)
            for vectors in self.vectors.values():
                vectors.remove(rowid)
        self.fts.remove(removed)
        self._held.clear()
        self.text_bytes -= indexed.size

    def _ids(self, tokens: set[str]) -> array[int]:
        """The sorted ids of ``tokens``, new ones added to the vocabulary; two bytes each
        while the vocabulary allows."""
        vocabulary = self._vocabulary
        for token in tokens.difference(vocabulary):
            vocabulary[token] = len(self._words)
            self._words.append(token)
        ids = sorted(map(vocabulary.__getitem__, tokens))
        return array("H" if not ids or ids[-1] <= 0xFFFF else "I", ids)

    def _tokens(self, indexed: IndexedAsset, body: Iterable[str]) -> set[str]:
        """The distinct tokens of a chunk of ``indexed`` whose own tokens are ``body``, with
        those of its title and metadata."""
        content = indexed.view.content
        title = content.title if content is not None else ""
        return {*tokenize(title), *body, *tokenize(indexed.meta)}

    def row_ids(self, row: Row) -> array[int]:
        """The sorted ids of the distinct tokens of ``row``'s chunk, title and metadata
        (worked out on first use where FTS5 split the chunk itself)."""
        if row.ids is None:
            row.ids = self._ids(self._tokens(self.assets[row.asset_id], tokenize(row.chunk.text)))
        return row.ids

    def title_ids(self, indexed: IndexedAsset) -> array[int]:
        """The sorted ids of the distinct tokens of ``indexed``'s title (worked out on first
        use)."""
        if indexed.title_ids is None:
            content = indexed.view.content
            indexed.title_ids = self._ids(set(tokenize(content.title if content else "")))
        return indexed.title_ids

    def token_ids(self, tokens: Iterable[str]) -> list[tuple[str, int]]:
        """Each of ``tokens`` some row may hold, with its id (for :func:`held_of`). A row's
        ids may be worked out later than a query's: a token some row holds by FTS5's count
        is given its id now, so the row's ids will hold the same one."""
        known = [t for t in tokens if t in self._vocabulary or self.rows_holding(t) > 0]
        if len(known) > len(set(known).intersection(self._vocabulary)):
            self._ids(set(known))
        return [(t, self._vocabulary[t]) for t in known]

    def holds(self, row: Row, tokens: Iterable[str]) -> set[str]:
        """Which of ``tokens`` the chunk ``row`` holds (in its text, title or metadata)."""
        wanted = self.token_ids(tokens)
        return set(held_of(self.row_ids(row), wanted))

    def rows_holding(self, token: str) -> int:
        """How many chunk rows hold ``token`` in their title, text or metadata (FTS5's count,
        of the token's stem as FTS5 matches it), counted once until the next edit."""
        held = self._held.get(token)
        if held is None:
            if len(self._held) >= HELD_COUNTS:
                self._held.clear()
            # Only CJK text can be in the pairs' column: other words are counted over every
            # column, which is faster than leaving one out.
            held = self._held[token] = self.fts.count(token, words_only=has_cjk(token))
        return held

    def _rows_holding_pair(self, gram: str) -> int:
        return self.gram_df[gram]

    # -- vectors ---------------------------------------------------------------------------

    def embed_text(self, rowid: int) -> str:
        """What is embedded for a chunk: its asset's title, then the chunk."""
        row = self.rows[rowid]
        content = self.assets[row.asset_id].view.content
        title = content.title if content is not None else ""
        return f"{title}\n{row.chunk.text}" if row.chunk.text else title

    def store_vector(self, rowid: int, space: str, vector: npt.NDArray[np.float32]) -> bool:
        """Keep ``vector`` for ``rowid`` if it is still waiting; False when it is not or the
        vector bound is reached (then embedding stops and the index says why)."""
        if rowid not in self.pending or rowid not in self.rows:
            return False
        del self.pending[rowid]
        if self.vector_bytes + VectorSet.row_bytes(len(vector)) > self._max_vector_bytes:
            self.embedding = False
            self.pending.clear()
            self.vectors_note = (
                f"vectors are bounded to {self._max_vector_bytes // (1024 * 1024)} MiB; "
                "the remaining chunks are searched by keywords only"
            )
            return False
        vectors = self.vectors.get(space)
        if vectors is None:
            vectors = self.vectors[space] = VectorSet(int(vector.shape[0]))
        vectors.add(rowid, vector)
        return True

    def stop_embedding(self, reason: str) -> None:
        """No more vectors for this index (the embedder failed): keep what is there."""
        self.embedding = False
        self.pending.clear()
        self.vectors_note = reason

    def has_vectors(self, space: str) -> bool:
        vectors = self.vectors.get(space)
        return vectors is not None and len(vectors) > 0

    def rarity(self, tokens: Iterable[str]) -> dict[str, float]:
        """Each of ``tokens`` weighted by how rare it is among the chunk rows (BM25's inverse
        document frequency, ``log(1 + (N - n + 0.5) / (n + 0.5))``; always above 0)."""
        total = len(self.rows)
        out: dict[str, float] = {}
        for token in tokens:
            held = self.rows_holding(token)
            out[token] = math.log(1.0 + (total - held + 0.5) / (held + 0.5))
        return out

    # -- first stages ----------------------------------------------------------------------

    def _split(
        self, keys: tuple[str, ...], held_by: Callable[[str], int], budget: int
    ) -> tuple[list[str], list[str]]:
        """``keys`` as (telling, common). BM25 scores every row that holds a telling key, so
        the common ones are left to the rows that hold no telling key:

        - keys held by more than half of the rows, to which FTS5's BM25 gives no weight
          (their inverse document frequency is clamped to almost 0);
        - past ``budget`` rows, the most common of the others: the rarest keys,
          which decide a ranking, are always scored, and a row that holds only common keys
          would rank below those that hold rare ones anyway.

        When all are held by more than half of the rows, all count as telling."""
        half = len(self.rows) / 2
        ranked = sorted(keys, key=held_by)
        telling: list[str] = []
        common: list[str] = []
        rows = 0
        for key in ranked:
            held = held_by(key)
            if held > half or (telling and rows + held > budget):
                common.append(key)
            else:
                telling.append(key)
                rows += held
        if not telling:
            return list(keys), []
        return telling, common

    def _telling(self, keys: Sequence[str], held_by: Callable[[str], int]) -> Sequence[str]:
        """``keys`` without those held by more than half of the rows (all of them when all
        are)."""
        half = len(self.rows) / 2
        return [key for key in keys if held_by(key) <= half] or keys

    def _narrowed(self, query: Query, expression: str) -> str:
        """``expression`` with the query's phrases required and its -words left out."""
        if query.phrases:
            needed = [t for p in query.phrases for t in query_tokens(p)]
            if needed:
                expression = f"({expression}) AND ({match_all(needed)})"
        if query.excluded:
            expression = f"({expression}) NOT ({match_any(query.excluded)})"
        return expression

    def _presence(self, keys: Iterable[str], held_by: Callable[[str], int]) -> float:
        """What BM25 gives a row for holding each of ``keys`` once in a chunk of average
        length: the sum of their inverse document frequencies, by FTS5's own formula."""
        total = len(self.rows)
        score = 0.0
        for key in keys:
            held = held_by(key)
            score += max(1e-6, math.log((total - held + 0.5) / (held + 0.5)))
        return score

    def _holding_everything(self, query: Query, depth: int) -> _Everything | None:
        """The rows (at most ``depth``, in row order) that hold every word of ``query`` (for
        CJK text: every character pair, since jieba may cut a query's characters differently
        from the same characters inside a longer text); None for a query of one word or
        pair.

        FTS5 only finds them, it does not score them: scoring would first pass over every
        row of each of their words to weigh it, which costs most of a query. Words and pairs
        held by more than half of the rows are left to Python: FTS5's BM25 gives them no
        weight, and requiring them there would cost a pass over nearly every row. A word is
        then checked against each row's token ids; a pair is not checked."""
        words = [t for t in query.tokens if not has_cjk(t)] if query.grams else query.tokens
        if len(words) + len(query.grams) < 2:
            return None
        telling = self._telling(words, self.rows_holding)
        grams = self._telling(query.grams, self._rows_holding_pair)
        expression = self._narrowed(query, match_every_word(telling, grams))
        # The common words, looked up once, not once per row.
        check = self.token_ids(set(words)) if len(telling) < len(words) else []
        found = self.fts.search(expression, depth, rank=False)
        rows = [rowid for rowid, _ in found if self._holds_all(rowid, check)]
        return _Everything(expression, telling, grams, check, rows, len(found) < depth)

    def _holds_all(self, rowid: int, wanted: list[tuple[str, int]]) -> bool:
        return not wanted or len(held_of(self.row_ids(self.rows[rowid]), wanted)) == len(wanted)

    def search_bm25(
        self, query: Query, depth: int = CANDIDATE_CHUNKS, least: int | None = None
    ) -> dict[str, tuple[float, int]]:
        """Best BM25 score and best chunk row per asset, for ``query``.

        First the rows that hold every word of the query (:meth:`_holding_everything`): a
        memory someone is looking for usually holds all the words they remember of it. Then
        the best rows that hold any of its telling words and pairs (:meth:`_split`, which
        gives the same scores at a fraction of the cost; about :data:`FILL_ROWS` rows scored
        when the first step found some, :data:`SCORED_ROWS` when it found none). A row of
        the first step scores what the second gave it plus what BM25 gives for holding the
        rest of the query's words once (:meth:`_presence`); for a query with CJK, plus that
        for all of its words and pairs, so a row holding the whole query comes first. When
        the first step found too many rows to list, FTS5 ranks them instead, and the second
        step only fills up to ``least`` (default ``depth``).

        When still fewer than ``least``, rows that hold only common words follow, up to
        ``depth``, unranked among themselves (their BM25 scores are all but 0), so a short
        list never loses a match.
        """
        enough = depth if least is None else least
        every = self._holding_everything(query, depth)
        budget = FILL_ROWS if every is not None and every.rows else SCORED_ROWS
        words, common_words = self._split(query.tokens, self.rows_holding, budget)
        grams, common_grams = self._split(query.grams, self._rows_holding_pair, budget)
        telling = match_query(words, grams)
        if not telling:
            return {}
        fill = self._narrowed(query, telling)
        if every is None or not every.rows:
            found = self.fts.search(fill, depth)
        elif every.complete:
            found = self._with_everything(self.fts.search(fill, depth), every, query, words)
        else:
            found = self._ranked_everything(every, query, fill, depth, enough)
        if len(found) < enough and (common_words or common_grams):
            rest = f"({match_query(common_words, common_grams)}) NOT ({telling})"
            found += self.fts.search(self._narrowed(query, rest), depth - len(found), rank=False)
        best: dict[str, tuple[float, int]] = {}
        for rowid, score in found:
            row = self.rows.get(rowid)
            if row is None:
                continue
            if row.asset_id not in best or score > best[row.asset_id][0]:
                best[row.asset_id] = (score, rowid)
        return best

    def _ranked_everything(
        self, every: _Everything, query: Query, fill: str, depth: int, enough: int
    ) -> list[tuple[int, float]]:
        """The first two steps of :meth:`search_bm25` when more rows hold everything than
        the first step lists: FTS5 ranks them (for a query with CJK, adding their score to
        the second step's)."""
        ranked = self.fts.search(every.expression, depth)
        ranked = [hit for hit in ranked if self._holds_all(hit[0], every.check)]
        if query.grams:
            first = dict(ranked)
            more = self.fts.search(fill, depth)
            return [(r, s + first.pop(r, 0.0)) for r, s in more] + list(first.items())
        if len(ranked) < enough:
            seen = {rowid for rowid, _ in ranked}
            ranked += [hit for hit in self.fts.search(fill, depth) if hit[0] not in seen]
        return ranked

    def _with_everything(
        self, found: list[tuple[int, float]], every: _Everything, query: Query, words: list[str]
    ) -> list[tuple[int, float]]:
        """``found`` (the second step's rows) with the rows of ``every`` scored as
        :meth:`search_bm25` says, those the second step missed added."""
        if query.grams:
            whole = self._presence(every.words, self.rows_holding)
            whole += self._presence(every.grams, self._rows_holding_pair)
            rest = whole
        else:
            scored = set(words)
            whole = self._presence(every.words, self.rows_holding)
            rest = self._presence((w for w in every.words if w not in scored), self.rows_holding)
        held = set(every.rows)
        out = [(rowid, score + rest if rowid in held else score) for rowid, score in found]
        seen = {rowid for rowid, _ in found}
        return out + [(rowid, whole) for rowid in every.rows if rowid not in seen]

    def search_vectors(
        self,
        query: Query,
        space: str,
        vector: npt.NDArray[np.float32],
        depth: int = CANDIDATE_CHUNKS,
    ) -> dict[str, tuple[float, int]]:
        """Best cosine similarity and chunk row per asset (excluded words respected)."""
        vectors = self.vectors.get(space)
        if vectors is None:
            return {}
        excluded = set(query.excluded)
        best: dict[str, tuple[float, int]] = {}
        for rowid, score in vectors.top(vector, depth):
            row = self.rows.get(rowid)
            if row is None or (excluded and self.holds(row, excluded)):
                continue
            if row.asset_id not in best or score > best[row.asset_id][0]:
                best[row.asset_id] = (score, rowid)
        return best

    def close(self) -> None:
        self.fts.close()
        for vectors in self.vectors.values():
            vectors.clear()
        self.vectors.clear()
        self.pending.clear()
        self.assets.clear()
        self.rows.clear()
        self._held.clear()
        self.gram_df.clear()
        self._vocabulary.clear()
        self._words.clear()
