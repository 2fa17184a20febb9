"""`memories search` through the console script and a real daemon."""

from __future__ import annotations

from tests.memories.cli.conftest import Memories


def test_search_prints_ranked_results_and_json(store: Memories) -> None:
    store.ok("put", "Blue green deploys need the VPN.", "--title", "Deploy notes", "--tag", "ops")
    store.ok("put", "余弦相似度检索嵌入向量", "--title", "向量检索")
    found = store.ok("search", "vpn")
    assert [h["summary"]["title"] for h in found["results"]] == ["Deploy notes"]
    assert [h["summary"]["title"] for h in store.ok("search", "检索")["results"]] == ["向量检索"]
    text = store("search", "deploys", "--limit", "5")
    assert text.code == 0, text.stderr
    assert "Deploy notes" in text.stdout and "#ops" in text.stdout
    error = store.fails(2, "search", '" ( )')
    assert error["code"] == "invalid_input"
