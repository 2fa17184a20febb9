"""Search: the bounded, in-memory full-text (and vector) index over authorized content.

::

    tokenize.py   fold (NFKC + case), tokenize (jieba for CJK runs only, a fast path otherwise)
    chunk.py      overlapping, grapheme-safe chunks; chunk ids are content hashes
    fts.py        FtsIndex: SQLite FTS5 in :memory: with memory-only temp storage, BM25 5/1/2
    vectors.py    VectorSet: one space's normalized chunk vectors, exact cosine top-k (numpy)
    index.py      VaultIndex: one vault's FTS rows, chunk texts, vectors and waiting chunks
    rank.py       the query language, reciprocal-rank fusion, snippets
    rerank.py     the default rerank (coverage, title, exact phrase) and the learned order
    ranking.py    Hit; bm25 / vector / hybrid (RRF) first stages fused and reranked
    embedding.py  EmbedWorker: fills vectors in the background, never under a service lock
    cache.py      SearchCache: at most two vault indexes, kept current by commit observers

Nothing here writes to disk: no plaintext index, no vectors, nothing in backups or sync.
"""

from memories.search.cache import (
    MAX_CHUNKS,
    MAX_TEXT_BYTES,
    MAX_VAULTS,
    MAX_VECTOR_BYTES,
    Hit,
    IndexStatus,
    SearchCache,
    VectorPlan,
)
from memories.search.chunk import Chunk, chunk_text
from memories.search.rank import Query, Snippet, parse_query, rrf
from memories.search.ranking import Mode
from memories.search.tokenize import fold, tokenize

__all__ = [
    "MAX_CHUNKS",
    "MAX_TEXT_BYTES",
    "MAX_VAULTS",
    "MAX_VECTOR_BYTES",
    "Chunk",
    "Hit",
    "IndexStatus",
    "Mode",
    "Query",
    "SearchCache",
    "Snippet",
    "VectorPlan",
    "chunk_text",
    "fold",
    "parse_query",
    "rrf",
    "tokenize",
]
