"""An in-memory SQLite FTS5 index over chunks, split into this project's tokens.

The connection is ``:memory:`` with ``temp_store=MEMORY``, so neither the index nor SQLite's
temporary b-trees (sorting, large result sets) ever reach a file: search plaintext never touches
disk. The index (:mod:`memories.search.index`) gives each column either as text spelled so that
FTS5's ``unicode61`` tokenizer splits it into exactly the tokens of
:mod:`memories.search.tokenize` (plain Latin text, camel-case parts written after their words)
or as those tokens, split in Python (jieba for CJK runs) and joined by spaces; ``porter`` stems
Latin words. The table is contentless (``content=''``): it keeps the index,
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

import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
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
#: Rows per statement of a bulk insert, at most (see :meth:`FtsIndex.add`).
BULK_ROWS = 1000
_INSERT = "INSERT INTO chunks(rowid, title, body, meta, grams) VALUES "
_ROW = "(?, ?, ?, ?, ?)"


class FtsRow(NamedTuple):
    """One chunk as the index is given it (as text FTS5 splits into the chunk's tokens, see
    :mod:`memories.search.index`). A tuple: the insert binds it as it is."""

    rowid: int
    title: str
    body: str
    meta: str
    grams: str = ""


def _batches(rows: Iterable[FtsRow], size: int) -> Iterator[list[FtsRow]]:
    """``rows`` in lists of ``size`` (the last may be shorter), each taken as it is asked for."""
    taken = iter(rows)
    while batch := list(islice(taken, size)):
        yield batch


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
        parameters = self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        #: Rows per statement of a bulk insert (see :meth:`add`), as SQLite's limit on a
        #: statement's parameters allows.
        self.bulk_rows = min(BULK_ROWS, parameters // len(FtsRow._fields))
        self._bulk_insert = _INSERT + ", ".join([_ROW] * self.bulk_rows)

    def add(self, rows: Iterable[FtsRow]) -> None:
        """Insert ``rows`` (their rowids must be new), all or nothing: when taking a row
        from ``rows`` raises, none is kept and the exception propagates. ``rows`` must not
        use this index while it yields.

        Past :attr:`bulk_rows` rows, a helper thread inserts them, that many per statement,
        while this thread takes the next ones from ``rows``: FTS5 splits and indexes text
        without holding Python's global lock, so a build that makes its rows in Python
        (:meth:`~memories.search.index.VaultIndex.add_many`) runs on two cores.

        Raises:
            MemoriesError: FTS5 failed (nothing was kept).
        """
        batches = _batches(rows, self.bulk_rows)
        first = next(batches, [])
        with self._transaction():
            if len(first) < self.bulk_rows:  # all there is: no helper for so few
                self._db.executemany(_INSERT + _ROW, first)
            else:
                self._insert_on_helper(first, batches)

    def _insert_on_helper(self, first: list[FtsRow], more: Iterator[list[FtsRow]]) -> None:
        """Insert ``first`` and the batches of ``more`` on a helper thread, each as it is
        taken. What taking a batch raises propagates; when an insert fails, the rest are
        skipped and :class:`MemoriesError` is raised (from the SQLite error, if it was one).

        The queue is unbounded, so handing a batch never waits on the helper, even one that
        died: the rows it holds are the build's own, within the index's bounds."""
        handed: queue.SimpleQueue[list[FtsRow] | None] = queue.SimpleQueue()
        failed: list[sqlite3.Error] = []
        abandoned = threading.Event()
        finished = threading.Event()

        def insert() -> None:
            while (batch := handed.get()) is not None:
                if failed or abandoned.is_set():
                    continue  # skip what is left, down to the end mark
                try:
                    if len(batch) == self.bulk_rows:
                        self._db.execute(self._bulk_insert, [v for row in batch for v in row])
                    else:
                        self._db.executemany(_INSERT + _ROW, batch)
                except sqlite3.Error as exc:  # raised again on the taker's thread
                    failed.append(exc)
            finished.set()

        helper = threading.Thread(target=insert, name="memories-fts-insert", daemon=True)
        helper.start()
        taken = False
        try:
            handed.put(first)
            for batch in more:
                if failed:
                    break
                handed.put(batch)
            taken = True
        finally:
            if not taken:  # taking a batch raised: the helper skips the rest
                abandoned.set()
            handed.put(None)
            helper.join()
        if failed:  # never show SQL or the rows
            raise MemoriesError("the search index could not take its rows") from failed[0]
        if not finished.is_set():
            raise MemoriesError("the search index could not take its rows")

    def optimize(self) -> None:
        """Merge the index's segments into one (a bulk insert leaves one per statement, which
        FTS5 merges only as more come). A query then reads one list per token instead of
        one per segment, which matters for the many character pairs of a CJK query."""
        self._db.execute("INSERT INTO chunks(chunks) VALUES ('optimize')")

    def remove(self, rows: Sequence[FtsRow]) -> None:
        """Delete ``rows``, each given with exactly the values it was added with (a row
        given otherwise would take other tokens out of the index)."""
        if rows:
            with self._transaction():
                self._db.executemany(
                    "INSERT INTO chunks(chunks, rowid, title, body, meta, grams) "
                    "VALUES ('delete', ?, ?, ?, ?, ?)",
                    rows,
                )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction, rolled back when anything raises inside it."""
        self._db.execute("BEGIN")
        committed = False
        try:
            yield
            self._db.execute("COMMIT")
            committed = True
        finally:
            if not committed:
                self._db.execute("ROLLBACK")

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
