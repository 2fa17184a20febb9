"""Search: the bounded, in-memory full-text (and vector) index over authorized content.

::

    tokenize.py  fold (NFKC + case), tokenize (jieba for CJK runs only, a fast path otherwise)
    chunk.py     overlapping, grapheme-safe chunks; chunk ids are content hashes
    fts.py       FtsIndex: SQLite FTS5 in :memory: with memory-only temp storage, BM25 5/1/2
    rank.py      the query language, reciprocal-rank fusion, the default rerank, snippets
    cache.py     SearchCache: at most two vault indexes, kept current by commit observers

Nothing here writes to disk: no plaintext index, no vectors, nothing in backups or sync.
"""

from memories.search.cache import (
    MAX_CHUNKS,
    MAX_TEXT_BYTES,
    MAX_VAULTS,
    Hit,
    IndexStatus,
    SearchCache,
)
from memories.search.chunk import Chunk, chunk_text
from memories.search.rank import Query, Snippet, parse_query, rrf
from memories.search.tokenize import fold, tokenize

__all__ = [
    "MAX_CHUNKS",
    "MAX_TEXT_BYTES",
    "MAX_VAULTS",
    "Chunk",
    "Hit",
    "IndexStatus",
    "Query",
    "SearchCache",
    "Snippet",
    "chunk_text",
    "fold",
    "parse_query",
    "rrf",
    "tokenize",
]
