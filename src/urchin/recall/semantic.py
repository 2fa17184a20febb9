"""Ranking journal events by meaning: TF-IDF cosine by default, an embeddings endpoint if set.

TF-IDF needs nothing beyond the standard library. Tokens are lower-cased words
(with a light suffix strip, so "deploying" meets "deploy"); runs of CJK script,
which has no spaces between words, become overlapping character bigrams, the
usual dictionary-free way to index Chinese and Japanese text.

With an OpenAI-compatible ``/embeddings`` endpoint configured, the query and a
bounded set of candidates are embedded and ranked by cosine similarity. Any
failure of that endpoint falls back to TF-IDF and the ranking says why.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from urchin.errors import EndpointError
from urchin.event import Event

__all__ = [
    "EndpointError",
    "Hit",
    "Ranking",
    "cosine",
    "embed",
    "embedding_rank",
    "endpoint_url",
    "event_text",
    "post_json",
    "rank",
    "tfidf_rank",
    "tokenize",
]

#: Characters of one event that take part in ranking; the head of a long
#: transcript says what it is about, and the cap keeps a ranking pass fast.
DOC_CHARS = 4000
#: Events sent to an embeddings endpoint per query, and characters per event.
EMBED_CANDIDATES = 256
EMBED_CHARS = 2000
EMBED_BATCH = 64
#: Largest response body read from a model endpoint.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002fa1f"  # CJK extensions B-F and supplement
)
_TOKEN_RE = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_CJK_RE = re.compile(f"[{_CJK}]")

_STOPWORDS = frozenset(
    """
    a an and are as at be been but by can did do does for from had has have he her his how i if
    in into is it its me my no not of on or our she so than that the their them then there these
    they this to was we were what when where which who why will with you your
    """.split()  # noqa: SIM905 - a word list reads better as prose
)


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked document: its position in the input and its similarity score."""

    index: int
    score: float


@dataclass(frozen=True, slots=True)
class Ranking:
    """A ranking and how it was made: ``method`` is "tfidf" or "embeddings"."""

    hits: list[Hit]
    method: str
    note: str | None = None


# -- tokens ------------------------------------------------------------------------------


def _stem(word: str) -> str:
    # Deliberately tiny: the same rule runs on query and documents, so
    # consistency matters more than linguistic accuracy.
    if len(word) > 5 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Split text into ranking terms: stemmed lower-case words, CJK character bigrams.

    Stopwords and one-letter words are dropped; a lone CJK character stays a term.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(folded):
        run = match.group()
        if _CJK_RE.match(run):
            if len(run) == 1:
                terms.append(run)
            else:
                terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif len(run) > 1 and run not in _STOPWORDS:
            terms.append(_stem(run))
    return terms


def event_text(event: Event, limit: int = DOC_CHARS) -> str:
    """The text of an event that ranking looks at: title, tags, content head, workspace, source."""
    parts = [event.title or "", " ".join(event.tags), event.content[:limit]]
    if event.workspace:
        parts.append(event.workspace)
    parts.append(event.source)
    return "\n".join(part for part in parts if part)


# -- TF-IDF ------------------------------------------------------------------------------


def _weights(
    counts: Mapping[str, int], idf: Mapping[str, float], default: float
) -> dict[str, float]:
    # Sublinear term frequency: the tenth mention of a word says less than the first.
    return {term: (1.0 + math.log(n)) * idf.get(term, default) for term, n in counts.items()}


def tfidf_rank(query: str, documents: Sequence[str], limit: int) -> list[Hit]:
    """Rank documents by TF-IDF cosine similarity to the query, best first.

    Documents sharing no term with the query are left out; ties keep input order.
    """
    query_counts = Counter(tokenize(query))
    if not query_counts or not documents or limit < 1:
        return []
    doc_counts = [Counter(tokenize(doc)) for doc in documents]
    df: Counter[str] = Counter()
    for counts in doc_counts:
        df.update(counts.keys())
    total = len(documents)
    idf = {term: math.log((1 + total) / (1 + n)) + 1.0 for term, n in df.items()}
    unseen = math.log(1 + total) + 1.0
    query_vec = _weights(query_counts, idf, unseen)
    query_norm = math.sqrt(sum(w * w for w in query_vec.values()))
    hits: list[Hit] = []
    for index, counts in enumerate(doc_counts):
        shared = [term for term in query_vec if term in counts]
        if not shared:
            continue
        doc_vec = _weights(counts, idf, unseen)
        dot = sum(query_vec[term] * doc_vec[term] for term in shared)
        doc_norm = math.sqrt(sum(w * w for w in doc_vec.values()))
        if dot > 0 and doc_norm > 0:
            hits.append(Hit(index, dot / (query_norm * doc_norm)))
    hits.sort(key=lambda hit: (-hit.score, hit.index))
    return hits[:limit]


# -- embeddings --------------------------------------------------------------------------


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two dense vectors; 0.0 for empty, mismatched or zero vectors."""
    if not a or len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def endpoint_url(base: str, suffix: str) -> str:
    """``base`` if it already ends in ``suffix`` (e.g. "/embeddings"), else ``base + suffix``."""
    trimmed = base.rstrip("/")
    return trimmed if trimmed.endswith(suffix) else trimmed + suffix


def post_json(url: str, body: Mapping[str, Any], *, timeout: float, what: str) -> Any:
    """POST a JSON body and decode the JSON answer, reading at most MAX_RESPONSE_BYTES.

    Messages name the endpoint by role (``what``), never by URL, which may hold credentials.

    Raises:
        EndpointError: unreachable, timed out, a non-2xx status, too large, or not JSON.
    """
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0))) as client,
            client.stream("POST", url, json=dict(body)) as response,
        ):
            if not 200 <= response.status_code < 300:
                raise EndpointError(f"the {what} endpoint answered HTTP {response.status_code}")
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_RESPONSE_BYTES:
                    raise EndpointError(f"the {what} endpoint's answer is too large")
    except httpx.TimeoutException:
        raise EndpointError(f"the {what} endpoint timed out after {timeout:g}s") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise EndpointError(f"could not reach the {what} endpoint ({type(exc).__name__})") from None
    try:
        return json.loads(bytes(data))
    except ValueError:
        raise EndpointError(f"the {what} endpoint did not answer with JSON") from None


def _vectors(answer: Any, expected: int) -> list[list[float]]:
    bad = EndpointError("the embeddings endpoint answered without one embedding per input")
    items = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(items, list) or len(items) != expected:
        raise bad
    if all(isinstance(item, dict) and isinstance(item.get("index"), int) for item in items):
        items = sorted(items, key=lambda item: item["index"])
    vectors: list[list[float]] = []
    for item in items:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not vector:
            raise bad
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
            raise bad
        vectors.append([float(x) for x in vector])
    if len({len(v) for v in vectors}) != 1:
        raise EndpointError("the embeddings endpoint answered vectors of different lengths")
    return vectors


def embed(
    url: str,
    texts: Sequence[str],
    *,
    model: str | None = None,
    timeout: float = 15.0,
    batch: int = EMBED_BATCH,
) -> list[list[float]]:
    """Embed texts through an OpenAI-compatible ``/embeddings`` endpoint, in batches.

    Raises:
        EndpointError: the endpoint failed or answered something other than embeddings.
    """
    target = endpoint_url(url, "/embeddings")
    vectors: list[list[float]] = []
    for start in range(0, len(texts), batch):
        chunk = [text[:EMBED_CHARS] or " " for text in texts[start : start + batch]]
        body: dict[str, Any] = {"input": chunk}
        if model:
            body["model"] = model
        answer = post_json(target, body, timeout=timeout, what="embeddings")
        vectors.extend(_vectors(answer, len(chunk)))
    if vectors and len({len(v) for v in vectors}) != 1:
        raise EndpointError("the embeddings endpoint answered vectors of different lengths")
    return vectors


def _candidates(query: str, documents: Sequence[str]) -> list[int]:
    # The lexical best plus the newest (callers pass documents newest first), so
    # an embedder can find both exact matches and paraphrases without being
    # sent the whole window.
    lexical = [hit.index for hit in tfidf_rank(query, documents, EMBED_CANDIDATES // 2)]
    chosen = dict.fromkeys(lexical)
    for index in range(len(documents)):
        if len(chosen) >= EMBED_CANDIDATES:
            break
        chosen.setdefault(index)
    return list(chosen)


def embedding_rank(
    query: str,
    documents: Sequence[str],
    url: str,
    limit: int,
    *,
    model: str | None = None,
    timeout: float = 15.0,
) -> list[Hit]:
    """Rank documents by embedding cosine similarity to the query, best first.

    At most EMBED_CANDIDATES documents are embedded: the TF-IDF best and then the
    earliest in ``documents``.

    Raises:
        EndpointError: the endpoint failed or answered something other than embeddings.
    """
    if not documents or limit < 1:
        return []
    picked = _candidates(query, documents)
    vectors = embed(url, [query, *(documents[i] for i in picked)], model=model, timeout=timeout)
    query_vec = vectors[0]
    hits = [
        Hit(index, cosine(query_vec, vec)) for index, vec in zip(picked, vectors[1:], strict=True)
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.index))
    return hits[:limit]


def rank(
    query: str,
    documents: Sequence[str],
    limit: int,
    *,
    embedder_url: str | None = None,
    embedder_model: str | None = None,
    timeout: float = 15.0,
) -> Ranking:
    """Rank documents by meaning: embeddings if ``embedder_url`` is set and works, else TF-IDF.

    Never raises for endpoint trouble: the ranking falls back and ``note`` says why.
    """
    if embedder_url:
        try:
            hits = embedding_rank(
                query, documents, embedder_url, limit, model=embedder_model, timeout=timeout
            )
        except EndpointError as exc:
            note = f"{exc.message}; ranked with TF-IDF instead"
            return Ranking(tfidf_rank(query, documents, limit), "tfidf", note)
        return Ranking(hits, "embeddings")
    return Ranking(tfidf_rank(query, documents, limit), "tfidf")
