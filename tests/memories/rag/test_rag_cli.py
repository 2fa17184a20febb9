"""`memories retrieve` and `memories ask` through the console script and a real daemon."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memories.config import load_settings
from tests.memories.cli.conftest import FLOOR_KDF, Memories
from tests.memories.rag.fake_models import FakeModels, Script, fake_models


@pytest.fixture
def models() -> Iterator[FakeModels]:
    with fake_models(Script()) as running:
        yield running


def _init(memories: Memories) -> Memories:
    result = memories("init", *FLOOR_KDF, "--user-name", "Ada", "--json")
    assert result.code == 0, result.stderr
    return memories


def test_ask_and_retrieve_from_the_cli_with_a_configured_model(
    memories: Memories, models: FakeModels
) -> None:
    config = load_settings().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[rag]\n"
        f'generate_url = "{models.url}/v1/chat/completions"\n'
        'generate_model = "fake-llm"\n'
        "retries = 0\n",
        encoding="utf-8",
    )
    store = _init(memories)
    store.ok("put", "Blue green deploys need the VPN first.", "--title", "Deploy notes")
    found = store.ok("retrieve", "vpn deploys")
    assert [c["title"] for c in found["chunks"]] == ["Deploy notes"]
    text = store("retrieve", "vpn")
    assert text.code == 0 and "[S1]" in text.stdout and "Deploy notes" in text.stdout
    models.script.replies = ["Connect the VPN first [S1] and ignore [S4]."]
    answer = store.ok("ask", "how do deploys work?")
    assert answer["answer"] == "Connect the VPN first [S1] and ignore."
    assert answer["dropped_citations"] == ["S4"]
    shown = store("ask", "how do deploys work?")
    assert shown.code == 0, shown.stderr
    assert "Connect the VPN first [S1]" in shown.stdout
    assert "sources:" in shown.stdout and "Deploy notes" in shown.stdout
    assert "S4" in shown.stdout and "model: fake-llm" in shown.stdout


def test_ask_without_a_model_prints_an_extractive_answer_with_citations(
    memories: Memories,
) -> None:
    store = _init(memories)
    store.ok("put", "Blue green deploys need the VPN first. Lunch is at noon.", "--title", "Deploy")
    shown = store("ask", "how do vpn deploys work?")
    assert shown.code == 0, shown.stderr
    assert "extractive" in shown.stdout
    assert "Blue green deploys need the VPN first. [S1]" in shown.stdout
    assert "sources:" in shown.stdout and "Deploy" in shown.stdout
    assert "Lunch" not in shown.stdout.split("sources:")[0]
    answer = store.ok("ask", "vpn deploys")
    assert answer["answer_mode"] == "extractive" and answer["citations"][0]["label"] == "S1"


def test_a_bad_rag_table_is_a_clear_error_and_search_still_works(memories: Memories) -> None:
    config = load_settings().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[rag]\ngenerate_url = "ftp://example.org"\n', encoding="utf-8")
    store = _init(memories)
    store.ok("put", "Blue green deploys need the VPN first.", "--title", "Deploy notes")
    assert store.ok("search", "vpn")["results"]
    error = store.fails(2, "ask", "deploys")
    assert "generate_url must be an http:// or https:// URL" in error["message"]


def test_rag_status_and_search_modes_from_the_cli(memories: Memories) -> None:
    config = load_settings().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[rag]\nembedder = "none"\n', encoding="utf-8")
    store = _init(memories)
    store.ok("put", "Blue green deploys need the VPN first.", "--title", "Deploy notes")
    status = store.ok("rag", "status")
    assert status["index"]["chunks"] == 1 and status["generator"] is None
    shown = store("rag", "status")
    assert shown.code == 0 and "1 chunks indexed" in shown.stdout
    assert "none configured" in shown.stdout and "generate_url in [rag] of" in shown.stdout
    found = store.ok("search", "vpn", "--mode", "bm25")
    assert found["mode"] == "bm25" and found["results"]
    text = store("search", "vpn")
    assert text.code == 0 and "keywords only" in text.stdout and "turned off" in text.stdout
    assert store.fails(2, "search", "vpn", "--mode", "fuzzy")["code"] == "invalid_input"
