"""The learned rerank through the service, against a loopback Cohere/Jina-style /rerank fixture:
a good answer reorders the candidates; a 500, a timeout or a malformed body falls back to the
default rerank with the reason; nothing private ever reaches the endpoint."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memories.service import Service
from tests.memories.rag.fake_models import FakeModels, Script, fake_models
from tests.memories.service.support import call, put, sudo

CANARY = "zebracanary"


@pytest.fixture
def reranking(make_service: Callable[..., Service]) -> Iterator[tuple[Service, FakeModels]]:
    with fake_models(Script()) as models:
        service = make_service(
            rerank_url=f"{models.url}/v1/rerank",
            rerank_model="fake-rerank",
            rerank_timeout_seconds=0.5,
            retries=0,
        )
        yield service, models


def _fill(service: Service) -> None:
    # BM25 and the default rerank put "Cache sizing" first for "cache eviction"; the fake
    # reranker prefers the document that speaks of LRU.
    put(service, title="Cache eviction", body="cache eviction cache eviction, cache first.")
    put(service, title="Cache sizing", body="Eviction of cache entries: sizes and counts.")
    put(service, title="LRU", body="The cache uses LRU eviction when it is full.")


def _titles(response: dict[str, Any]) -> list[str]:
    return [hit["summary"]["title"] for hit in response["results"]]


def _search(service: Service, query: str = "cache eviction", **fields: Any) -> dict[str, Any]:
    return call(service, {"op": "search", "query": query, "mode": "bm25", **fields})


def test_a_learned_rerank_orders_the_candidates_and_reports_its_scores(
    reranking: tuple[Service, FakeModels],
) -> None:
    service, models = reranking
    _fill(service)
    default = _search(service, rerank=True)
    assert default["rerank"] == "default"  # no scorer scripted yet: the endpoint 404s
    assert "rerank_error" in default and "404" in default["rerank_error"]
    models.script.rerank = lambda query, doc: 0.9 if "LRU" in doc else 0.1
    models.script.seen.clear()
    found = _search(service)
    assert found["rerank"] == "learned" and "rerank_error" not in found
    assert _titles(found)[0] == "LRU"
    assert found["results"][0]["scores"]["learned"] == 0.9
    assert found["results"][0]["score"] == 0.9
    assert {"coverage", "phrase", "first"} <= set(found["results"][0]["scores"])
    # Ties (0.1 each) keep the default rerank's order.
    rest = [t for t in _titles(default) if t != "LRU"]
    assert _titles(found)[1:] == rest
    sent = models.script.seen[0]
    assert sent["model"] == "fake-rerank" and sent["query"] == "cache eviction"
    assert sent["top_n"] == len(sent["documents"]) == 3
    assert all(isinstance(d, str) for d in sent["documents"])
    actions = [e["action"] for e in call(service, {"op": "audit_list", "limit": 50})["entries"]]
    assert "rag.rerank" in actions


def test_retrieve_uses_the_learned_order_too(reranking: tuple[Service, FakeModels]) -> None:
    service, models = reranking
    _fill(service)
    models.script.rerank = lambda query, doc: 0.9 if "LRU" in doc else 0.1
    chunks = call(service, {"op": "retrieve", "query": "cache eviction", "mode": "bm25"})
    assert chunks["rerank"] == "learned" and chunks["chunks"][0]["title"] == "LRU"
    assert chunks["chunks"][0]["label"] == "S1"


def test_turning_rerank_off_never_calls_the_endpoint(
    reranking: tuple[Service, FakeModels],
) -> None:
    service, models = reranking
    _fill(service)
    models.script.rerank = lambda query, doc: 1.0
    found = _search(service, rerank=False)
    assert found["rerank"] == "none" and models.script.seen == []
    assert all(set(h["scores"]) == {"first", "bm25"} for h in found["results"])


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        ({"status": 500}, "HTTP 500"),
        ({"raw": b"this is not json"}, "did not answer JSON"),
        ({"raw": b'{"data": []}'}, "without a results list"),
        ({"raw": b'{"results": [{"index": 7, "relevance_score": 1}]}'}, "wrong index"),
        ({"raw": b'{"results": [{"index": 0, "relevance_score": "high"}]}'}, "relevance"),
    ],
)
def test_a_failing_rerank_endpoint_falls_back_to_the_default_rerank_with_the_reason(
    reranking: tuple[Service, FakeModels], failure: dict[str, Any], reason: str
) -> None:
    service, models = reranking
    _fill(service)
    # Equal learned scores keep the default rerank's order: that is the order to fall back to.
    models.script.rerank = lambda query, doc: 0.5
    baseline = _search(service)
    assert baseline["rerank"] == "learned" and len(_titles(baseline)) == 3
    for name, value in failure.items():
        setattr(models.script, name, value)
    models.script.seen.clear()
    found = _search(service)
    assert models.script.seen, "the endpoint was called"
    assert found["rerank"] == "default"
    assert reason in found["rerank_error"] and "default rerank" in found["rerank_error"]
    assert _titles(found) == _titles(baseline)
    assert "learned" not in found["results"][0]["scores"]
    # The reason names the host and the status, never what was sent or answered.
    assert "not json" not in found["rerank_error"] and "cache" not in found["rerank_error"]


def test_a_rerank_endpoint_that_does_not_answer_in_time_falls_back(
    make_service: Callable[..., Service],
) -> None:
    release = threading.Event()
    with fake_models(Script(hook=lambda body: release.wait(10))) as models:
        try:
            service = make_service(
                rerank_url=f"{models.url}/v1/rerank",
                rerank_model="fake-rerank",
                rerank_timeout_seconds=0.2,
                retries=0,
            )
            _fill(service)
            found = _search(service)
        finally:
            release.set()
    assert found["rerank"] == "default" and "did not answer within 0.2" in found["rerank_error"]
    assert len(found["results"]) == 3


def test_a_wrong_rerank_setting_is_reported_and_search_still_works(
    make_service: Callable[..., Service],
) -> None:
    service = make_service(rerank_url="http://127.0.0.1:9/v1/rerank")  # no rerank_model
    _fill(service)
    found = _search(service)
    assert found["rerank"] == "default" and "rerank_model" in found["rerank_error"]
    assert len(found["results"]) == 3


def test_private_credential_and_file_content_never_reach_the_reranker(
    reranking: tuple[Service, FakeModels],
) -> None:
    service, models = reranking
    sudo(service)
    call(service, {"op": "credential_put", "title": f"{CANARY} key", "secret": f"{CANARY}-x"})
    put(service, title="hidden", body=f"{CANARY} private body", private=True)
    data = base64.urlsafe_b64encode(f"{CANARY} file".encode()).decode().rstrip("=")
    call(service, {"op": "file_put", "name": f"{CANARY}.txt", "data": data, "title": CANARY})
    put(service, title="public one", body=f"ordinary {CANARY}s in the zoo")
    put(service, title="public two", body=f"more {CANARY} notes")
    models.script.rerank = lambda query, doc: float(len(doc))
    found = _search(service, query=f"{CANARY} private key file")
    assert found["rerank"] == "learned"
    assert sorted(_titles(found)) == ["public one", "public two"]
    sent = " ".join(models.script.seen[0]["documents"])
    assert "private body" not in sent and f"{CANARY}-x" not in sent
    assert f"{CANARY} file" not in sent and f"{CANARY}.txt" not in sent


def test_the_rerank_settings_are_validated() -> None:
    from memories.errors import UsageError
    from memories.rag import load_rag_config

    config = load_rag_config({"rerank_url": "http://127.0.0.1:8080/v1/rerank", "rerank_model": "m"})
    assert config.reranker is not None and config.reranker.timeout_seconds == 10.0
    bad = [
        {"rerank_url": "http://127.0.0.1:8080/v1/rerank"},
        {"rerank_model": "m"},
        {"rerank_url": "https://r.example/v1", "rerank_model": "m",
         "rerank_api_key_env": "K", "rerank_api_key_file": "/k"},
        {"rerank_url": "http://r.example/v1", "rerank_model": "m", "rerank_api_key_env": "K"},
        {"rerank_url": "http://127.0.0.1/v1", "rerank_model": "m", "rerank_timeout_seconds": 0},
    ]  # fmt: skip
    for table in bad:
        with pytest.raises(UsageError):
            load_rag_config(table)
