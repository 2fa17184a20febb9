"""The default rerank on constructed cases, through the service: coverage of the query's words,
the exact-phrase bonus (case and width folded), Chinese coverage by jieba's words, and the
switch that turns it off."""

from __future__ import annotations

import math
from typing import Any

from memories.search.rank import parse_query
from memories.search.rerank import features, learned_order
from memories.search.tokenize import fold, tokenize
from memories.service import Service
from tests.memories.service.support import call, put


def search(service: Service, query: str, **fields: Any) -> dict[str, Any]:
    return call(service, {"op": "search", "query": query, "mode": "bm25", **fields})


def ranked(response: dict[str, Any]) -> list[str]:
    return [hit["summary"]["title"] for hit in response["results"]]


def scores(response: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {hit["summary"]["title"]: hit["scores"] for hit in response["results"]}


def test_full_coverage_outranks_a_document_repeating_one_word(service: Service) -> None:
    put(service, title="Sizes", body="pool pool pool")
    put(service, title="Database", body="Timeout: each pool connection waits.")
    for i in range(4):  # common words: BM25 alone gives them little weight
        put(service, title=f"Note {i}", body=f"connection notes {i} and a timeout story {i}")
    for i in range(6):
        put(service, title=f"Other {i}", body=f"lunch menu {i}")
    plain = search(service, "connection pool timeout", rerank=False)
    assert plain["rerank"] == "none" and ranked(plain)[0] == "Sizes"
    found = search(service, "connection pool timeout")
    assert found["rerank"] == "default" and ranked(found)[0] == "Database"
    parts = scores(found)
    assert parts["Database"]["coverage"] == 1.0 and parts["Database"]["phrase"] == 0.0

    # Coverage weighs each word by its rarity over the 12 chunks: "pool" is in 2 of them,
    # "connection" and "timeout" in 5 each.
    def rarity(held: int) -> float:
        return math.log(1 + (12 - held + 0.5) / (held + 0.5))

    expected = rarity(2) / (rarity(2) + 2 * rarity(5))
    assert round(parts["Sizes"]["coverage"], 6) == round(expected, 6)
    assert parts["Database"]["first"] < parts["Sizes"]["first"] == 1.0
    assert parts["Database"]["rerank"] > parts["Sizes"]["rerank"]


def test_an_exact_phrase_earns_the_bonus_case_and_width_folded(service: Service) -> None:
    put(service, title="Deploys A", body="We ship with a ＢＬＵＥ ＧＲＥＥＮ deploy every week.")
    put(
        service,
        title="Deploys B",
        body="Green lights mean deploy; blue means wait. deploy green blue",
    )
    plain = search(service, "Blue green deploy", rerank=False)
    assert ranked(plain) == ["Deploys B", "Deploys A"]
    found = search(service, "Blue green deploy")
    assert ranked(found) == ["Deploys A", "Deploys B"]
    parts = scores(found)
    assert parts["Deploys A"]["phrase"] == 1.0 and parts["Deploys B"]["phrase"] == 0.0
    assert parts["Deploys A"]["coverage"] == parts["Deploys B"]["coverage"] == 1.0
    quoted = search(service, '"green deploy" week')
    assert ranked(quoted) == ["Deploys A"]  # a quoted phrase must appear
    assert scores(quoted)["Deploys A"]["phrase"] == 1.0


def test_chinese_coverage_is_measured_in_jieba_words(service: Service) -> None:
    put(service, title="部署", body="连接池 连接池 连接池，连接池很大。")
    put(service, title="配置", body="数据库连接池的超时时间是三十秒。")
    found = search(service, "数据库连接池超时")
    assert ranked(found) == ["配置", "部署"]
    parts = scores(found)
    assert parts["配置"]["coverage"] == 1.0
    assert parts["部署"]["coverage"] < 0.5


def test_title_matches_weigh_more_than_body_matches() -> None:
    query = parse_query("retry budget")
    in_title = features(query, fold("Retry budget"), tokenize("Retry budget notes"), "notes")
    in_body = features(query, fold("Notes"), tokenize("Notes retry budget"), "retry budget")
    assert in_title.coverage == in_body.coverage == 1.0
    assert in_title.title == 1.0 and in_body.title == 0.0
    assert in_title.bonus > in_body.bonus


def test_coverage_weighs_rare_words_above_common_ones() -> None:
    query = parse_query("the retry budget")
    weights = {"the": 0.1, "retry": 2.0, "budget": 2.0}
    rare = features(query, "", tokenize("retry budget"), "retry budget", weights)
    common = features(query, "", tokenize("the notes"), "the notes", weights)
    assert round(rare.coverage, 6) == round(4.0 / 4.1, 6)
    assert round(common.coverage, 6) == round(0.1 / 4.1, 6)
    unweighted = features(query, "", tokenize("the notes"), "the notes")
    assert round(unweighted.coverage, 6) == round(1 / 3, 6)


def test_the_learned_order_keeps_the_default_order_for_ties_and_unscored() -> None:
    default = ["a", "b", "c", "d"]
    assert learned_order(default, {"c": 0.9, "a": 0.5, "b": 0.5}) == ["c", "a", "b", "d"]
    assert learned_order(default, {}) == default
