"""Search quality and latency on a known-item set of real technical text, English and Chinese.

The corpora are documentation strings read (with ``ast``, nothing imported) from installed or
downloaded packages:

- English: the docstrings of the functions and classes of Python's own standard library;
- Chinese: the docstrings of ``akshare`` (a Chinese financial-data library whose every function
  is documented in Chinese), fetched once with ``pip download akshare==1.19.5 --no-deps`` into
  ``$MEMORIES_BENCH_CORPUS`` (default ``~/.cache/memories-bench``). Its summaries are mostly
  lists of names ("东方财富网-数据中心-年报季报-业绩快报"), which keywords match well and a
  sentence encoder poorly;
- Chinese prose (``zh_prose``): the docstrings of eight packages documented in Chinese
  sentences (:data:`PROSE_PACKAGES`: a trading SDK, chat-bot and WeChat frameworks, a task
  queue, an NLP toolkit, pinyin), fetched the same way. On such text, as on the hidden set of
  the same kind the goals come from, bare ``unicode61`` tokens find almost nothing (whole
  clauses are one token) and the encoder adds what keywords miss.

The second part (:mod:`benchmarks._search_scale`) measures build, latency and memory at the
index's bound of 10,000 chunks.

Each document is a memory titled with the object's qualified name whose body is its docstring
*without the first line*; that first line (the summary) is the query, and the one document it
came from is the only relevant answer (nDCG@10 with one relevant document). Documents whose
summary repeats another's are left out, so every query has one right answer.

The memories are saved through the real service (fast KDF) and searched with ``search``
requests, so latency includes authorization, ranking and the safe projection. The baseline in
the same run is a bare SQLite FTS5 ``unicode61`` table over the same title and body, queried
with the query's words OR-ed, as a plain FTS5 deployment would.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from benchmarks import report

AKSHARE = "akshare==1.19.5"
#: The packages whose Chinese docstrings make the prose set, pinned so the set never changes.
PROSE_PACKAGES = (
    "efinance==0.5.9",
    "funboost==55.0",
    "jionlp==1.5.31",
    "jqdatasdk==1.9.8",
    "nonebot2==2.5.0",
    "pypinyin==0.55.0",
    "tqsdk==3.10.4",
    "wechatpy==1.8.18",
)
_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclasses.dataclass(frozen=True)
class Doc:
    key: str
    title: str
    body: str
    query: str


def _docstrings(source: str, prefix: str) -> Iterator[tuple[str, str]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node)
            if doc:
                yield f"{prefix}.{node.name}", doc


def _split(name: str, doc: str, *, min_body: int) -> Doc | None:
    lines = [line.strip() for line in doc.strip().splitlines()]
    if len(lines) < 2:
        return None
    query, body = lines[0], "\n".join(lines[1:]).strip()
    if len(query) < 8 or len(body) < min_body:
        return None
    return Doc(name, name, body, query)


def _unique(docs: list[Doc]) -> list[Doc]:
    counts: dict[str, int] = {}
    for doc in docs:
        counts[doc.query.lower()] = counts.get(doc.query.lower(), 0) + 1
    seen: set[str] = set()
    out = []
    for doc in docs:
        if counts[doc.query.lower()] == 1 and doc.key not in seen:
            seen.add(doc.key)
            out.append(doc)
    return out


def english_corpus(limit: int) -> list[Doc]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    docs: list[Doc] = []
    for path in sorted(stdlib.glob("*.py")):
        if path.name.startswith("_"):
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        for name, doc in _docstrings(source, path.stem):
            if _CJK.search(doc) is None:
                found = _split(name, doc, min_body=120)
                if found is not None:
                    docs.append(found)
    docs = _unique(docs)
    random.Random(7).shuffle(docs)
    return docs[:limit]


#: Where the downloaded corpus is kept between runs (read before a run moves HOME).
_CORPUS_HOME = Path(
    os.environ.get("MEMORIES_BENCH_CORPUS", Path.home() / ".cache" / "memories-bench")
)


def _wheel(requirement: str) -> Path:
    """The wheel of ``requirement`` (``name==version``), downloaded once into the cache."""
    home = _CORPUS_HOME
    home.mkdir(parents=True, exist_ok=True)
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    wheels = sorted(home.glob(pattern))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(home),
             requirement],
            check=True,
        )  # fmt: skip
        wheels = sorted(home.glob(pattern))
    return wheels[-1]


def _wheel_docs(requirement: str, min_body: int) -> Iterator[Doc]:
    """The documents of the Python files in ``requirement``'s wheel whose summary holds CJK."""
    with zipfile.ZipFile(_wheel(requirement)) as wheel:
        for name in sorted(wheel.namelist()):
            if not name.endswith(".py"):
                continue
            source = wheel.read(name).decode("utf-8", errors="replace")
            module = name.removesuffix(".py").replace("/", ".")
            for qual, doc in _docstrings(source, module):
                found = _split(qual, doc, min_body=min_body)
                if found is not None and _CJK.search(found.query):
                    yield found


def _shuffled(docs: list[Doc], limit: int) -> list[Doc]:
    docs = _unique(docs)
    random.Random(7).shuffle(docs)
    return docs[:limit]


def chinese_corpus(limit: int) -> list[Doc]:
    return _shuffled(list(_wheel_docs(AKSHARE, min_body=20)), limit)


def chinese_prose_corpus(limit: int) -> list[Doc]:
    """Documents whose body also speaks Chinese (more than ten ideographs), so a query is
    answered by prose, not by a parameter list alone."""
    docs = [
        doc
        for requirement in PROSE_PACKAGES
        for doc in _wheel_docs(requirement, min_body=40)
        if len(_CJK.findall(doc.body)) > 10
    ]
    return _shuffled(docs, limit)


def _halves(scores: list[float]) -> dict[str, float]:
    """nDCG of the first and the second half of the queries: ranking parameters are chosen on
    the first ("tuned") and checked on the second ("held_out"), which they never saw."""
    half = len(scores) // 2
    return {
        "tuned_half": round(statistics.mean(scores[:half]), 4),
        "held_out_half": round(statistics.mean(scores[half:]), 4),
    }


def ndcg_at_10(ranked: list[str], relevant: str) -> float:
    for rank, key in enumerate(ranked[:10], start=1):
        if key == relevant:
            return 1.0 / math.log2(rank + 1)
    return 0.0


class BareFts:
    """The baseline: FTS5 unicode61 over raw title and body, the query's words OR-ed."""

    def __init__(self, docs: list[Doc]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE d USING fts5(key UNINDEXED, title, body)")
        self.db.executemany(
            "INSERT INTO d VALUES (?, ?, ?)", [(d.key, d.title, d.body) for d in docs]
        )

    def search(self, query: str) -> list[str]:
        words = _WORD.findall(query)
        if not words:
            return []
        expression = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.db.execute(
            "SELECT key FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT 10", (expression,)
        ).fetchall()
        return [key for (key,) in rows]


def _service(home: Path, rag: dict[str, object]):  # type: ignore[no-untyped-def]
    # Everything the service reads or writes lives under the run's temporary folder.
    for name, sub in (("HOME", ""), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")):
        os.environ[name] = str(home / sub)
    os.environ["MEMORIES_HOME"] = str(home / "memories")
    from memories.config import load_settings
    from memories.service import Caller, Service, parse_request
    from memories.store import KdfCost

    settings = dataclasses.replace(load_settings(), rag=rag)
    service = Service(settings, kdf_cost=KdfCost(time_cost=1, memory_kib=19456, parallelism=1))
    caller = Caller("cli:bench")

    def call(data: dict[str, object]) -> dict[str, object]:
        return service.handle(parse_request(data), caller)

    call({"op": "init", "password": "benchmark password", "device_name": "bench"})
    return service, call


def _rank_all(call, vault: str, queries: list[Doc], ids: dict[str, str], mode: str):  # type: ignore[no-untyped-def]
    scores: list[float] = []
    latencies: list[float] = []
    for doc in queries:
        started = time.perf_counter()
        found = call(
            {"op": "search", "vault": vault, "query": doc.query, "limit": 10, "mode": mode}
        )
        latencies.append(time.perf_counter() - started)
        ranked = [ids[str(hit["summary"]["id"])] for hit in found["results"]]  # type: ignore[index]
        scores.append(ndcg_at_10(ranked, doc.key))
    return scores, latencies


def _raw_model_rate(service, vault_chunks: list[str]) -> float:  # type: ignore[no-untyped-def]
    """Chunks per second of the bare embedders over the same chunk texts the worker embedded,
    in the worker's batch size: the baseline of background embedding."""
    from memories.search.embedding import BATCH

    routing = service._core.rag.embedders()
    sample = vault_chunks
    started = time.perf_counter()
    for at in range(0, len(sample), BATCH):
        batch = sample[at : at + BATCH]
        routing.pick(batch[0]).embed(batch)
    return len(sample) / (time.perf_counter() - started)


def evaluate(lang: str, docs: list[Doc], quick: bool, vectors: bool) -> None:
    queries = docs[: (60 if quick else 300)]
    rag: dict[str, object] = {} if vectors else {"embedder": "none"}
    hybrid: list[float] = []
    vector: list[float] = []
    hybrid_latencies: list[float] = []
    embed_rate = raw_rate = 0.0
    status: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        service, call = _service(Path(tmp), rag)
        try:
            vault = f"bench-{lang}"
            call({"op": "vault_create", "name": vault})
            ids: dict[str, str] = {}
            started = time.perf_counter()
            for doc in docs:
                saved = call({"op": "put", "vault": vault, "title": doc.title, "body": doc.body})
                ids[str(saved["asset"])] = doc.key
            put_seconds = time.perf_counter() - started
            started = time.perf_counter()
            call({"op": "search", "vault": vault, "query": "warm up", "mode": "bm25"})
            build_seconds = time.perf_counter() - started
            embed_started = time.perf_counter()
            if vectors:
                # Nothing else runs while the worker embeds, so its model time is compared
                # with the bare embedders' on the same chunks under the same conditions.
                worker = service._core.search.worker
                if not worker.wait_idle(3600):
                    raise SystemExit("embedding did not finish within an hour")
                embed_seconds = time.perf_counter() - embed_started
                index = service._core.search.statuses()[-1]
                status = index.to_dict()
                embed_rate = worker.progress.chunks / max(worker.progress.seconds, 1e-9)
                wall_rate = index.embedded / embed_seconds
                cache = service._core.search._indexes[index.vault]
                texts = [cache.embed_text(r) for r in cache.rows]
                raw_rate = _raw_model_rate(service, texts)
                report(
                    "search",
                    f"background_embedding_{lang}",
                    embed_rate,
                    "chunks/s",
                    raw_rate,
                    wall_chunks_per_s=round(wall_rate, 2),
                    chunks=index.embedded,
                    note="the worker's model time per chunk vs the bare embedders on the "
                    "same chunks (shared machine: both measured in this run)",
                )
            ours, latencies = _rank_all(call, vault, queries, ids, "bm25")
            if vectors:
                vector, _ = _rank_all(call, vault, queries, ids, "vector")
                hybrid, _ = _rank_all(call, vault, queries, ids, "hybrid")  # vectors cached now
                _, hybrid_latencies = _rank_all(call, vault, queries, ids, "hybrid")
        finally:
            service.close()
    started = time.perf_counter()
    bare = BareFts(docs)
    bare_build = time.perf_counter() - started
    base: list[float] = []
    base_latencies: list[float] = []
    for doc in queries:
        started = time.perf_counter()
        ranked = bare.search(doc.query)
        base_latencies.append(time.perf_counter() - started)
        base.append(ndcg_at_10(ranked, doc.key))
    extra = {"documents": len(docs), "queries": len(queries)}
    report(
        "search",
        f"ndcg@10_{lang}_bm25",
        statistics.mean(ours),
        "nDCG",
        statistics.mean(base),
        **_halves(ours),
        **extra,
    )
    if vectors:
        report(
            "search", f"ndcg@10_{lang}_vector", statistics.mean(vector), "nDCG",
            statistics.mean(base), **_halves(vector), **extra,
        )  # fmt: skip
        report(
            "search", f"ndcg@10_{lang}_hybrid", statistics.mean(hybrid), "nDCG",
            statistics.mean(base), index=status, **_halves(hybrid), **extra,
        )  # fmt: skip
        report(
            "search",
            f"hybrid_p50_{lang}",
            statistics.median(hybrid_latencies) * 1000,
            "ms",
            statistics.median(base_latencies) * 1000,
            higher_is_better=False,
            note="service.handle(search, hybrid) with a cached query vector vs a bare FTS5 query",
        )
    report(
        "search",
        f"search_p50_{lang}",
        statistics.median(latencies) * 1000,
        "ms",
        statistics.median(base_latencies) * 1000,
        higher_is_better=False,
        note="service.handle(search, bm25) with ranking and projection vs a bare FTS5 query",
    )
    report(
        "search",
        f"cold_build_{lang}",
        build_seconds * 1000,
        "ms",
        bare_build * 1000,
        higher_is_better=False,
        note="first search after the puts: decrypt, chunk, tokenize, index",
    )
    report("search", f"put_{lang}", len(docs) / put_seconds, "memories/s", None)


def run(quick: bool = False, vectors: bool = True, langs: tuple[str, ...] = ("en", "zh")) -> None:
    from benchmarks import _search_scale

    size = 300 if quick else 1100
    if "en" in langs:
        evaluate("en", english_corpus(size), quick, vectors)
    if "zh" in langs:
        evaluate("zh", chinese_corpus(size), quick, vectors)
        evaluate("zh_prose", chinese_prose_corpus(size), quick, vectors)
    _search_scale.run(quick, langs)


if __name__ == "__main__":
    chosen = tuple(a.removeprefix("--lang=") for a in sys.argv if a.startswith("--lang="))
    run(
        quick="--quick" in sys.argv,
        vectors="--no-vectors" not in sys.argv,
        langs=chosen or ("en", "zh"),
    )
