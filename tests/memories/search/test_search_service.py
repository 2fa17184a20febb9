"""Search through the service: exclusions, incremental updates, lock, bounds and errors."""

from __future__ import annotations

import base64
import sqlite3
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.errors import LockedError, NotFoundError, UsageError
from memories.search import index as index_module
from memories.search.cache import SearchCache
from memories.search.fts import FtsIndex
from memories.search.index import VaultIndex
from memories.search.rank import parse_query
from memories.service import Service
from memories.views.cards import BUILTIN_CARD_TYPES
from tests.memories.service.support import PASSWORD, call, put, sudo

CANARY = "zebracanary"


def search(service: Service, query: str, **fields: Any) -> dict[str, Any]:
    return call(service, {"op": "search", "query": query, **fields})


def titles(response: dict[str, Any]) -> list[str]:
    return [hit["summary"]["title"] for hit in response["results"]]


def everything_shown(response: dict[str, Any]) -> str:
    return repr(response["results"])


def built_index(service: Service) -> VaultIndex:
    """The index of the vault searched last (search once first to build it)."""
    core = service._core
    return core.search._indexes[core.search.statuses()[-1].vault]


def imported(service: Service, items: list[dict[str, str]]) -> tuple[VaultIndex, dict[str, str]]:
    """Import ``items`` and build the index: the index, and its assets by folded title."""
    call(service, {"op": "import_batch", "items": items})
    call(service, {"op": "search", "query": "warm up"})
    vault_index = built_index(service)
    return vault_index, {indexed.title: asset for asset, indexed in vault_index.assets.items()}


def test_search_finds_a_memory_by_body_with_a_highlighted_snippet(service: Service) -> None:
    put(service, title="Deploy notes", body="Blue green deploys need the VPN first.", tags=["ops"])
    put(service, title="Lunch", body="Noodles on Tuesday.")
    found = search(service, "vpn deploys")
    assert titles(found) == ["Deploy notes"]
    hit = found["results"][0]
    assert len(hit["summary"]["short_id"]) >= 8
    assert hit["summary"]["tags"] == ["ops"]
    text = hit["snippet"]["text"]
    marked = {text[s:e].lower() for s, e in hit["snippet"]["highlights"]}
    assert {"vpn", "deploys"} <= marked
    assert set(hit["scores"]) == {"bm25", "first", "coverage", "title_coverage", "phrase", "rerank"}


def test_credentials_private_memories_files_and_credential_refs_never_appear(
    service: Service,
) -> None:
    sudo(service)
    call(service, {"op": "credential_put", "title": f"{CANARY} key", "secret": f"{CANARY}-secret"})
    put(service, title="hidden", body=f"{CANARY} private body", private=True)
    data = base64.urlsafe_b64encode(f"{CANARY} file".encode()).decode().rstrip("=")
    call(service, {"op": "file_put", "name": f"{CANARY}.txt", "data": data, "title": CANARY})
    put(service, title="public", body="an ordinary memory about zebras")
    for query in (CANARY, f"{CANARY} key", "secret", "hidden private", "file txt"):
        shown = everything_shown(search(service, query))
        assert CANARY not in shown
    assert titles(search(service, "zebras")) == ["public"]


def test_card_metadata_is_searchable_only_through_the_allowlist(service: Service) -> None:
    call(
        service,
        {
            "op": "card_put",
            "title": "Release checklist",
            "card_type": "knowledge",
            "metadata": {"topic": "kubernetes rollouts"},
        },
    )
    assert titles(search(service, "kubernetes")) == ["Release checklist"]
    assert titles(search(service, "rollouts", kind="card")) == ["Release checklist"]
    assert titles(search(service, "rollouts", kind="memory")) == []


def test_edits_and_deletes_update_the_index_incrementally(service: Service) -> None:
    saved = put(service, title="Cache notes", body="the old eviction policy is FIFO")
    assert titles(search(service, "fifo")) == ["Cache notes"]
    core = service._core
    builds = core.search.builds
    call(
        service,
        {"op": "update", "ref": saved["asset"], "base": saved["revision"], "body": "now it is LRU"},
    )
    assert titles(search(service, "fifo")) == []
    assert titles(search(service, "lru")) == ["Cache notes"]
    second = put(service, title="Another", body="lru everywhere")
    assert set(titles(search(service, "lru"))) == {"Cache notes", "Another"}
    call(service, {"op": "tombstone", "ref": second["asset"], "base": second["revision"]})
    assert titles(search(service, "lru")) == ["Cache notes"]
    assert core.search.builds == builds  # no rebuild: the commits were applied one by one


def test_an_update_that_fails_halfway_leaves_no_half_updated_index(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = put(service, title="Cache notes", body="the old eviction policy is FIFO")
    assert titles(search(service, "fifo")) == ["Cache notes"]
    builds = service._core.search.builds
    real_add = FtsIndex.add

    def failing_add(self: FtsIndex, rows: Any) -> None:
        raise sqlite3.OperationalError("out of memory")

    monkeypatch.setattr(FtsIndex, "add", failing_add)
    change = {"op": "update", "ref": saved["asset"], "base": saved["revision"], "body": "LRU"}
    call(service, change)
    with pytest.raises(sqlite3.OperationalError):
        search(service, "lru")
    monkeypatch.setattr(FtsIndex, "add", real_add)
    assert titles(search(service, "lru")) == ["Cache notes"]
    assert titles(search(service, "fifo")) == []
    assert service._core.search.builds == builds + 1  # rebuilt, not patched up


def test_making_a_memory_private_takes_it_out_of_search(service: Service) -> None:
    saved = put(service, title="Plans", body="quarterly roadmap")
    assert titles(search(service, "roadmap")) == ["Plans"]
    sudo(service)
    call(
        service,
        {"op": "update", "ref": saved["asset"], "base": saved["revision"], "private": True},
    )
    assert titles(search(service, "roadmap")) == []


def test_lock_clears_the_cache_and_search_needs_unlock(service: Service) -> None:
    put(service, title="Something", body="indexed words")
    search(service, "indexed")
    core = service._core
    assert core.search.statuses()
    call(service, {"op": "lock"})
    assert core.search.statuses() == []
    with pytest.raises(LockedError):
        search(service, "indexed")
    call(service, {"op": "unlock", "password": PASSWORD})
    assert titles(search(service, "indexed")) == ["Something"]


def test_chinese_and_mixed_queries_find_chinese_memories(service: Service) -> None:
    put(service, title="向量检索", body="使用余弦相似度对嵌入向量进行检索，支持中文分词。")
    put(service, title="Deploy", body="部署服务需要先连接VPN。")
    assert titles(search(service, "检索")) == ["向量检索"]
    assert titles(search(service, "分词"))[0] == "向量检索"
    assert titles(search(service, "VPN 部署"))[0] == "Deploy"


def test_bad_queries_are_clear_errors_or_plain_text(service: Service) -> None:
    put(service, title="Quotes", body='she said "hello" (twice) AND NOT NEAR')
    with pytest.raises(UsageError):
        search(service, "")
    with pytest.raises(UsageError):
        search(service, '  " ( ) * ')
    for query in ('"hello', "NEAR(", "AND OR NOT", "col:hello", "hello*", "'; DROP TABLE"):
        search(service, query)  # never an FTS5 or SQL error
    long = " ".join(f"w{i}" for i in range(15_000))
    assert titles(search(service, "hello " + long)) == ["Quotes"]  # the first 64 words count
    assert search(service, long + " hello")["query"]["truncated"]


def test_exact_phrases_and_exclusions_filter(service: Service) -> None:
    put(service, title="a", body="the blue green deploy", tags=["ops"])
    put(service, title="b", body="green and blue paint")
    assert titles(search(service, '"blue green"')) == ["a"]
    assert titles(search(service, "blue -paint")) == ["a"]
    assert titles(search(service, "blue tag:ops")) == ["a"]


def test_an_unknown_vault_is_not_found(service: Service) -> None:
    with pytest.raises(NotFoundError):
        search(service, "x", vault="no such vault")


def test_bounds_leave_content_out_and_say_why(service: Service) -> None:
    service._core.search = SearchCache(max_chunks=3)
    for i in range(5):
        put(service, title=f"note {i}", body="bounded words")
    found = search(service, "bounded")
    assert len(found["results"]) == 3
    assert "left out" in found["index"]["truncated"]


def test_at_most_two_vault_indexes_are_kept(service: Service) -> None:
    for name in ("one", "two"):
        call(service, {"op": "vault_create", "name": name})
        put(service, vault=name, title=f"in {name}", body="shared words")
    search(service, "shared")
    search(service, "shared", vault="one")
    search(service, "shared", vault="two")
    statuses = service._core.search.statuses()
    assert len(statuses) == 2
    assert titles(search(service, "shared", vault="one")) == ["in one"]


_MIXED = [
    {
        "title": "ArgumentParser notes",
        "body": "The parser\u2019s \u201chelp\u201d text \u2014 the HelpFormatter wraps it",
    },
    {"title": "Formatter", "body": "The formatter of the help output, with the parser"},
    {"title": "IPv4Network", "body": "The network ranges the deploy uses"},
    {"title": "检索笔记", "body": "The 向量检索 of the notes, and the parser"},
    {"title": "Deploy", "body": "The deploy needs the network and the VPN"},
    {"title": "Café", "body": "The café menu, not the parser"},
]


def test_ids_worked_out_as_queries_need_them_rank_as_ids_worked_out_first(
    service: Service,
) -> None:
    # Rows whose text FTS5 splits itself get their token ids when a query first needs them;
    # the rarity counts come from FTS5 when first asked. Neither may change an answer.
    queries = [
        "help formatter",  # first: words no row has given ids to yet
        "the parser help",
        "the network deploy",
        "向量 the parser",
        "ipv4 network",
        "the café",
        '"the parser" -café',
        "formatter",
    ]
    imported(service, _MIXED)
    lazy = [search(service, q, mode="bm25", limit=10)["results"] for q in queries]
    assert [search(service, q, mode="bm25", limit=10)["results"] for q in queries] == lazy
    service._core.search.clear()
    search(service, "warm up")
    vault_index = built_index(service)
    waiting = [row for row in vault_index.rows.values() if row.ids is None]
    assert len(waiting) == 4  # all but the rows of the Chinese text and of "café"
    for row in vault_index.rows.values():
        vault_index.row_ids(row)
    for indexed in vault_index.assets.values():
        vault_index.title_ids(indexed)
    assert [search(service, q, mode="bm25", limit=10)["results"] for q in queries] == lazy


def test_a_bulk_add_replaces_what_is_already_indexed(service: Service) -> None:
    put(service, title="alpha", body="zebra grazing")
    put(service, title="beta", body="yak grazing")
    search(service, "grazing")
    vault_index = built_index(service)
    views = [indexed.view for indexed in vault_index.assets.values()]
    first = views[0]
    assert first.content is not None
    newer = replace(first, content=replace(first.content, body="okapi grazing"))
    # Both already indexed, and one of them twice, the second time as a newer revision.
    vault_index.add_many([*views, newer], dict(BUILTIN_CARD_TYPES))
    assert len(vault_index.assets) == len(vault_index.rows) == 2
    assert vault_index.fts.count("grazing") == 2
    held = {word: vault_index.fts.count(word) for word in ("zebra", "yak", "okapi")}
    assert sum(held.values()) == 2 and held["okapi"] == 1  # the newer revision won


def test_word_counts_follow_edits(service: Service) -> None:
    put(service, title="one", body="zebras graze")
    search(service, "zebra")
    vault_index = built_index(service)
    assert vault_index.rows_holding("zebra") == 1  # "zebras": the same stem
    put(service, title="two", body="a zebra")
    search(service, "zebra")
    assert vault_index.rows_holding("zebra") == 2
    assert vault_index.rarity(["zebra"])["zebra"] < vault_index.rarity(["graze"])["graze"]


_EDITS = st.lists(
    st.tuples(st.sampled_from(["put", "update", "delete"]), st.integers(0, 4), st.integers(0, 5)),
    min_size=1,
    max_size=8,
)
_WORDS = ["alpha", "beta", "gamma", "delta", "检索", "向量"]


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
def test_incremental_updates_equal_a_full_rebuild(service: Service, edits: list[Any]) -> None:
    live: list[dict[str, Any]] = []
    core = service._core
    search(service, "alpha")  # build once, then apply every edit incrementally
    for action, which, word in edits:
        if action == "put" or not live:
            live.append(put(service, title=f"t{len(live)}", body=f"{_WORDS[word]} words"))
            continue
        saved = live[which % len(live)]
        if action == "update":
            changed = call(
                service,
                {
                    "op": "update",
                    "ref": saved["asset"],
                    "base": saved["revision"],
                    "body": f"{_WORDS[word]} changed",
                },
            )
            live[which % len(live)] = {**saved, "revision": changed["revision"]}
        else:
            call(service, {"op": "tombstone", "ref": saved["asset"], "base": saved["revision"]})
            live.remove(saved)
    incremental = {w: search(service, w, limit=100)["results"] for w in _WORDS}
    core.search.clear()
    rebuilt = {w: search(service, w, limit=100)["results"] for w in _WORDS}
    assert incremental == rebuilt


def test_words_most_chunks_hold_still_find_their_memories_after_the_telling_ones(
    service: Service,
) -> None:
    # "deploy" is in 5 of 6 chunks: BM25 gives it no weight, so rows are ranked by "canary"
    # alone, and the rows holding only "deploy" still follow.
    for i in range(4):
        put(service, title=f"Plain {i}", body=f"deploy notes {i}")
    put(service, title="Rare", body="deploy with the canary first")
    put(service, title="Lunch", body="noodles")
    found = titles(search(service, "deploy canary", mode="bm25"))
    assert found[0] == "Rare"
    assert sorted(found[1:]) == [f"Plain {i}" for i in range(4)]
    assert titles(search(service, "deploy", mode="bm25", limit=3)) != []
    # Phrases and exclusions hold for the rows that follow too.
    assert titles(search(service, "deploy canary -notes", mode="bm25")) == ["Rare"]
    quoted = titles(search(service, '"deploy notes" canary', mode="bm25"))
    assert sorted(quoted) == [f"Plain {i}" for i in range(4)]


def test_memories_holding_every_word_are_candidates_however_many_score_higher_on_one(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the rarer word is scored, and 120 memories outscore the targets on it (title, three
    # times) and fill the first stage's list: only looking for every word first keeps them.
    monkeypatch.setattr(index_module, "SCORED_ROWS", 2)
    items = [{"title": f"Alpha {i}", "body": "alpha alpha alpha"} for i in range(120)]
    items += [{"title": f"Beta {i}", "body": "beta"} for i in range(150)]
    items += [{"title": f"Filler {i}", "body": "gamma"} for i in range(200)]
    items += [{"title": f"Target {i}", "body": "where alpha met beta"} for i in range(2)]
    vault_index, by_title = imported(service, items)
    targets = {by_title["target 0"], by_title["target 1"]}
    found = vault_index.search_bm25(parse_query("alpha beta"), depth=100, least=10)
    assert targets <= found.keys()
    assert all(found[t][0] > 0 for t in targets)  # scored, by both words


def test_words_most_rows_hold_are_still_required_of_the_rows_holding_every_word(
    service: Service,
) -> None:
    # "the" is in 7 of 8 chunks: FTS5 is not asked for it, the rows' token ids are.
    for i in range(5):
        put(service, title=f"Plain {i}", body=f"the notes {i}")
    put(service, title="Without", body="pool timeout tuning")
    put(service, title="With", body="the pool timeout")
    put(service, title="Also", body="the pool")
    search(service, "pool")  # builds the index
    vault_index = built_index(service)
    every = vault_index._holding_everything(parse_query("the pool timeout"), depth=100)
    assert every is not None and every.complete
    assert [vault_index.assets[vault_index.rows[r].asset_id].title for r in every.rows] == ["with"]
    # With more wanted, the rows holding fewer words follow.
    assert titles(search(service, "the pool timeout", mode="bm25"))[:3] == [
        "With",
        "Without",
        "Also",
    ]


def test_rows_holding_every_word_score_for_the_words_only_the_first_step_looked_for(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fill scores only "alpha" (the budget leaves "beta" out); the row that also holds
    # "beta" must still outrank the one of the same length that does not.
    monkeypatch.setattr(index_module, "FILL_ROWS", 1)
    items = [{"title": "Target", "body": "alpha beta"}, {"title": "Other", "body": "alpha gamma"}]
    items += [{"title": f"Beta {i}", "body": f"beta {i}"} for i in range(5)]
    items += [{"title": f"Filler {i}", "body": "noodles"} for i in range(20)]
    vault_index, by_title = imported(service, items)
    found = vault_index.search_bm25(parse_query("alpha beta"), depth=100, least=10)
    assert found[by_title["target"]][0] > found[by_title["other"]][0] > 0


def test_a_chinese_row_holding_every_pair_of_the_query_is_a_candidate(service: Service) -> None:
    # jieba cuts the query 期权当日合约 into words the first memory's text is not cut into
    # (上交所期权当日合约 reads differently), and 60 short memories outscore it on those
    # words; its character pairs are all there, so it is still among the first stage's ten,
    # and first.
    items = [{"title": "行情", "body": "上交所期权当日合约的行情，" + "金丝雀发布的部署说明" * 20}]
    items += [{"title": f"散 {i}", "body": "期权 合约 当日 " * 3 + str(i)} for i in range(60)]
    items += [{"title": f"Filler {i}", "body": "noodles"} for i in range(150)]
    items += [{"title": "部署", "body": "金丝雀发布的部署说明"}]
    call(service, {"op": "import_batch", "items": items})
    assert "行情" in titles(search(service, "期权当日合约", mode="bm25", limit=100))
    vault_index = built_index(service)
    found = vault_index.search_bm25(parse_query("期权当日合约"), depth=10, least=10)
    assert "行情" in {vault_index.assets[a].title for a in found}
    found = vault_index.search_bm25(parse_query("期权当日合约"), depth=100, least=10)
    score = {vault_index.assets[a].title: s for a, (s, _) in found.items()}
    assert score["行情"] == max(score.values())  # holding the whole query, it comes first
    assert titles(search(service, "部署说明", mode="bm25"))[0] == "部署"


def test_past_the_scored_rows_budget_the_rarest_words_rank_and_the_rest_still_follow(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "deploy" is held by 4 of 10 chunks (under half), so it is telling until the budget of
    # scored rows is smaller than what it would bring in.
    monkeypatch.setattr(index_module, "SCORED_ROWS", 2)
    monkeypatch.setattr(index_module, "FILL_ROWS", 2)
    for i in range(4):
        put(service, title=f"Plain {i}", body=f"deploy notes {i}")
    put(service, title="Rare", body="the canary sang")
    put(service, title="Both", body="deploy the canary")
    for i in range(4):
        put(service, title=f"Other {i}", body=f"noodles {i}")
    found = search(service, "deploy canary", mode="bm25")
    ranked = titles(found)
    assert ranked[:2] == ["Both", "Rare"]  # scored by the rare word, reranked by coverage
    assert sorted(ranked[2:]) == [f"Plain {i}" for i in range(4)]  # unscored, still found
    assert [hit["scores"]["bm25"] for hit in found["results"][2:]] == [0.0] * 4
    assert titles(search(service, "deploy canary -notes", mode="bm25")) == ["Both", "Rare"]


def test_a_rows_tokens_are_kept_as_ids_that_answer_membership(service: Service) -> None:
    put(service, title="IPv4Network notes", body="Deploy the Café cluster", tags=["ops"])
    core = service._core
    call(service, {"op": "search", "query": "deploy"})
    index = core.search.statuses()[-1]
    vault_index = core.search._indexes[index.vault]
    (row,) = vault_index.rows.values()
    wanted = ["deploy", "café", "ipv4network", "network", "ops", "notes", "absent", "clust"]
    assert vault_index.holds(row, wanted) == {
        "deploy",
        "café",
        "ipv4network",
        "network",
        "ops",
        "notes",
    }


def test_single_letters_are_marked_as_words_not_inside_every_word(service: Service) -> None:
    put(service, title="Letters", body="Take a map and a backpack along")
    hit = search(service, "a map", mode="bm25")["results"][0]
    text = hit["snippet"]["text"]
    marked = [text[s:e].lower() for s, e in hit["snippet"]["highlights"]]
    assert marked == ["a", "map", "a"]  # not the a's of "take", "and", "backpack", "along"


def test_past_65536_distinct_words_token_ids_take_four_bytes_and_still_match(
    service: Service,
) -> None:
    # Ids fit two bytes until the vocabulary passes 65,536 words; rows indexed after that
    # keep theirs in four, and both kinds answer the same way.
    words = [f"w{n:05x}" for n in range(70_000)]
    items = [
        {"title": f"Batch {at}", "body": " ".join(words[at : at + 2000])}
        for at in range(0, len(words), 2000)
    ]
    call(service, {"op": "import_batch", "items": items})
    assert titles(search(service, "w00007 w007cf", mode="bm25")) == ["Batch 0"]
    vault_index = built_index(service)
    for row in list(vault_index.rows.values()):  # ids are worked out as queries need them
        assert vault_index.row_ids(row).typecode in "HI"
    put(service, title="Late", body="zebra " + words[69_999])  # a new word, after the build
    assert titles(search(service, f"zebra {words[69_999]}", mode="bm25"))[0] == "Late"
    late = next(row for row in vault_index.rows.values() if "zebra" in row.chunk.text)
    ids = vault_index.row_ids(late)
    assert ids.typecode == "I" and max(ids) > 0xFFFF
    assert vault_index.holds(late, ["zebra", words[69_999], "w00007"]) == {
        "zebra",
        words[69_999],
    }
