"""An in-memory SQLite FTS5 index over pre-tokenized chunks.

The connection is ``:memory:`` with ``temp_store=MEMORY``, so neither the index nor SQLite's
temporary b-trees (sorting, large result sets) ever reach a file: search plaintext never touches
disk. Documents are tokenized in Python (:mod:`memories.search.tokenize`, jieba for CJK runs)
and given as space-joined tokens; FTS5's ``unicode61`` tokenizer then only splits on the spaces,
and ``porter`` stems Latin words. The table is contentless (``content=''``): it keeps the index,
not a second copy of every row's tokens, so a row is deleted by giving back the values it was
inserted with. Queries are built from tokens quoted as FTS5 strings, so no user
input is ever parsed as FTS5 syntax.

Columns are title, body and metadata, weighted 5 / 1 / 2 in BM25, and ``grams``: the
overlapping character pairs of the chunk's CJK text (:func:`~memories.search.tokenize.cjk_grams`),
weighted :data:`GRAMS_WEIGHT`. A query looks for its words in the first three and for its
character pairs in ``grams`` only, so a two-character word is not counted twice. Only features
of SQLite 3.40's FTS5 are used.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from memories.errors import MemoriesError

__all__ = [
    "GRAMS_WEIGHT",
    "WEIGHTS",
    "FtsIndex",
    "FtsRow",
    "match_all",
    "match_any",
    "match_every_word",
    "match_query",
]

#: BM25 column weights: title, body, metadata.
WEIGHTS = (5.0, 1.0, 2.0)
#: The BM25 weight of the CJK character-pair column: below the body's, because pairs that
#: straddle two words match by chance more often than words do.
GRAMS_WEIGHT = 0.5
_ALL_WEIGHTS = (*WEIGHTS, GRAMS_WEIGHT)
#: How much FTS5 gathers in memory before writing a segment (see :class:`FtsIndex`).
HASH_BYTES = 32 * 1024 * 1024


class FtsRow(NamedTuple):
    """One chunk as the index is given it (as text FTS5 splits into the chunk's tokens, see
    :mod:`memories.search.index`). A tuple: the insert binds it as it is."""

    rowid: int
    title: str
    body: str
    meta: str
    grams: str = ""


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def match_any(tokens: Iterable[str]) -> str:
    """An FTS5 expression matching rows that hold any of ``tokens`` (each quoted)."""
    return " OR ".join(_quote(t) for t in tokens)


def match_all(tokens: Iterable[str]) -> str:
    """An FTS5 expression matching rows that hold all of ``tokens`` (each quoted)."""
    return " AND ".join(_quote(t) for t in tokens)


def _by_column(
    words: Sequence[str], grams: Sequence[str], each: Callable[[Iterable[str]], str], join: str
) -> str:
    """``words`` looked for in title, body and metadata and ``grams`` in ``grams``, each set
    joined by ``each``, the two by ``join`` ("" when both are empty)."""
    parts = []
    if words:
        parts.append(f"{{title body meta}} : ({each(words)})")
    if grams:
        parts.append(f"grams : ({each(grams)})")
    return join.join(parts)


def match_every_word(words: Sequence[str], grams: Sequence[str] = ()) -> str:
    """An FTS5 expression matching rows whose title, body or metadata, between them, hold
    every one of ``words`` and whose ``grams`` column holds every one of ``grams``."""
    return _by_column(words, grams, match_all, " AND ")


def match_query(words: Sequence[str], grams: Sequence[str]) -> str:
    """An FTS5 expression matching rows whose title, body or metadata hold any of ``words``
    or whose ``grams`` column holds any of ``grams`` ("" when both are empty)."""
    return _by_column(words, grams, match_any, " OR ")


class FtsIndex:
    """One FTS5 table in a private in-memory database. Not thread-safe: its owner serializes."""

    def __init__(self, *, stem: bool = True) -> None:
        # check_same_thread off: the owner's lock serializes use from the service's threads.
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA temp_store=MEMORY")
        # Pages freed by merging segments go back at once, not onto a free list.
        self._db.execute("PRAGMA auto_vacuum=FULL")
        tokenizer = "porter unicode61 remove_diacritics 2" if stem else "unicode61"
        self._db.execute(
            "CREATE VIRTUAL TABLE chunks USING fts5("
            f"title, body, meta, grams, content='', tokenize='{tokenizer}', detail=full)"
        )
        # FTS5 gathers what a transaction adds in memory and writes it as a new segment when
        # it outgrows this (1 MiB by default). Large enough for the whole bounded index, a
        # bulk insert is written as one segment, with no merging to do afterwards.
        self._db.execute("INSERT INTO chunks(chunks, rank) VALUES ('hashsize', ?)", (HASH_BYTES,))

    def add(self, rows: Iterable[FtsRow]) -> None:
        """Insert ``rows`` (their rowids must be new), taking each from the iterable as it
        goes in: a generator's rows are never all held at once, and it may remove rows
        while it yields. All or nothing: when taking a row raises, none is kept and the
        exception propagates."""
        self._write(
            "INSERT INTO chunks(rowid, title, body, meta, grams) VALUES (?, ?, ?, ?, ?)", rows
        )

    def optimize(self) -> None:
        """Merge the index's segments into one. A query then reads one list per token
        instead of one per segment: after a bulk insert, that makes each query about a
        third faster. Edits that follow add small segments, which FTS5 merges as they
        accumulate."""
        self._db.execute("INSERT INTO chunks(chunks) VALUES ('optimize')")

    def remove(self, rows: Sequence[FtsRow]) -> None:
        """Delete ``rows``, each given with exactly the values it was added with (a row
        given otherwise would take other tokens out of the index)."""
        if rows:
            self._write(
                "INSERT INTO chunks(chunks, rowid, title, body, meta, grams) "
                "VALUES ('delete', ?, ?, ?, ?, ?)",
                rows,
            )

    def _write(self, statement: str, rows: Iterable[FtsRow]) -> None:
        """Run ``statement`` for each of ``rows`` in one savepoint (a transaction of its own,
        or nested in the one a write in progress holds), undone when anything raises."""
        self._db.execute("SAVEPOINT write")
        try:
            self._db.executemany(statement, rows)
        except BaseException:
            self._db.execute("ROLLBACK TO write")
            self._db.execute("RELEASE write")
            raise
        self._db.execute("RELEASE write")

    def count(self, token: str, *, words_only: bool = False) -> int:
        """How many rows hold ``token`` (its stem, as a query for it matches): in their
        title, body or metadata when ``words_only``, in any column otherwise.

        Raises:
            MemoriesError: FTS5 failed (a bug: the token is quoted).
        """
        expression = _quote(token)
        if words_only:
            expression = f"{{title body meta}} : {expression}"
        try:
            (held,) = self._db.execute(
                "SELECT count(*) FROM chunks WHERE chunks MATCH ?", (expression,)
            ).fetchone()
        except sqlite3.Error as exc:  # never show SQL or the token
            raise MemoriesError("the search index could not count a word") from exc
        return int(held)

    def search(self, expression: str, limit: int, *, rank: bool = True) -> list[tuple[int, float]]:
        """The best ``limit`` rows for the FTS5 ``expression`` as (rowid, score), best first;
        scores are positive (negated BM25). With ``rank`` False: the first ``limit`` matching
        rows, in row order (FTS5 stops there instead of scoring every match), with a score of
        0.

        Raises:
            MemoriesError: the expression is not valid FTS5 (a bug: expressions are built from
                quoted tokens only).
        """
        if not expression:
            return []
        try:
            if not rank:
                rows = self._db.execute(
                    "SELECT rowid FROM chunks WHERE chunks MATCH ? LIMIT ?", (expression, limit)
                ).fetchall()
                return [(int(rowid), 0.0) for (rowid,) in rows]
            # Ordered by the selected column's alias: ordering by a second bm25() call
            # would score every matching row twice.
            found = self._db.execute(
                "SELECT rowid, bm25(chunks, ?, ?, ?, ?) AS score FROM chunks "
                "WHERE chunks MATCH ? ORDER BY score LIMIT ?",
                (*_ALL_WEIGHTS, expression, limit),
            ).fetchall()
        except sqlite3.Error as exc:  # never show SQL or the query text
            raise MemoriesError("the search index could not run that query") from exc
        return [(int(rowid), -float(score)) for rowid, score in found]

    def close(self) -> None:
        """Drop the database and everything in it (idempotent)."""
        self._db.close()
