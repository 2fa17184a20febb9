"""TF-IDF ranking, CJK-aware tokens, and the embeddings path against a loopback endpoint."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest

from tests.support import free_port
from urchin.event import Event
from urchin.recall import semantic
from urchin.recall.semantic import (
    EMBED_CANDIDATES,
    EMBED_CHARS,
    EndpointError,
    cosine,
    embed,
    endpoint_url,
    event_text,
    rank,
    tfidf_rank,
    tokenize,
)

# -- a loopback stand-in for an OpenAI-compatible model server ---------------------------

#: Each group of words is one dimension: texts about the same topic point the same
#: way even when they share no word, which is what an embedder adds over TF-IDF.
CONCEPTS = (
    ("database", "postgres", "sql", "schema", "migration"),
    ("frontend", "css", "button", "layout"),
    ("deploy", "kubernetes", "release", "rollout"),
)


def concept_vector(text: str) -> list[float]:
    lowered = text.lower()
    return [1.0 if any(word in lowered for word in group) else 0.0 for group in CONCEPTS] + [0.05]


class OpenAIStub:
    """Serves ``/v1/chat/completions`` and ``/v1/embeddings`` on 127.0.0.1 and records requests.

    ``fail`` answers every request with that HTTP status; ``garbage`` answers 200 with
    JSON of the wrong shape.
    """

    def __init__(
        self,
        *,
        fail: int | None = None,
        garbage: bool = False,
        chat_reply: str = "- The login test is flaky because of a race in the session fixture.",
        vector: Callable[[str], list[float]] = concept_vector,
    ) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append((self.path, body))
                if fail is not None:
                    self._send(fail, {"error": {"message": "boom"}})
                elif garbage:
                    self._send(200, {"unexpected": True})
                elif self.path.endswith("/chat/completions"):
                    message = {"role": "assistant", "content": chat_reply}
                    self._send(200, {"choices": [{"index": 0, "message": message}]})
                elif self.path.endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [
                        {"object": "embedding", "index": i, "embedding": vector(text)}
                        for i, text in enumerate(inputs)
                    ]
                    # Out of order on purpose: clients must honour "index".
                    self._send(200, {"object": "list", "data": list(reversed(data))})
                else:
                    self._send(404, {"error": "not found"})

            def _send(self, status: int, payload: object) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        # Port 0: the OS picks a free port, so parallel tests never collide.
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


# -- tokens -------------------------------------------------------------------------------


def test_tokenize_lowercases_drops_stopwords_and_short_words_and_stems() -> None:
    assert tokenize("The Deploying of 3 Migrations is DONE, x y") == [
        "deploy",
        "migration",
        "done",
    ]


def test_tokenize_splits_identifiers_and_paths() -> None:
    assert tokenize("fix snake_case in /home/dev/urchin-rust") == [
        "fix",
        "snake",
        "case",
        "home",
        "dev",
        "urchin",
        "rust",
    ]


def test_tokenize_turns_cjk_runs_into_bigrams() -> None:
    assert tokenize("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    # A lone ideograph stays a term; latin words inside CJK text stay words.
    assert tokenize("用python数据库") == ["用", "python", "数据", "据库"]
    assert tokenize("テスト") == ["テス", "スト"]


def test_tokenize_normalizes_fullwidth_forms() -> None:
    assert tokenize("ＤＥＰＬＯＹ") == ["deploy"]


# -- TF-IDF -------------------------------------------------------------------------------


def test_tfidf_ranks_the_relevant_document_first_and_skips_unrelated_ones() -> None:
    docs = [
        "tweaked the css for the login button",
        "ran the database migration for invoices, then rolled it back",
        "released version 2 to kubernetes",
    ]
    hits = tfidf_rank("database migration rollback", docs, 10)
    assert [hit.index for hit in hits] == [1]
    assert 0 < hits[0].score <= 1


def test_tfidf_weighs_rare_terms_above_common_ones() -> None:
    docs = [f"deploy service {i}" for i in range(8)] + ["kubernetes node pool resized"]
    hits = tfidf_rank("deploy kubernetes", docs, 3)
    assert hits[0].index == 8
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_tfidf_respects_limit_and_keeps_input_order_on_ties() -> None:
    docs = ["auth event"] * 5
    hits = tfidf_rank("auth", docs, 3)
    assert [hit.index for hit in hits] == [0, 1, 2]


def test_tfidf_with_nothing_to_match_returns_nothing() -> None:
    assert tfidf_rank("the of and", ["the auth flow"], 5) == []
    assert tfidf_rank("auth", [], 5) == []
    assert tfidf_rank("auth", ["auth"], 0) == []


def test_tfidf_finds_chinese_text_by_chinese_query() -> None:
    docs = ["修复登录页面的样式", "数据库迁移失败，需要回滚", "发布新版本到生产环境"]
    hits = tfidf_rank("数据库回滚", docs, 3)
    assert hits[0].index == 1


def test_identical_text_scores_one() -> None:
    hits = tfidf_rank("auth flow debugging", ["auth flow debugging", "solar panel"], 5)
    assert hits[0].index == 0
    assert hits[0].score == pytest.approx(1.0)


def test_event_text_covers_title_tags_workspace_and_caps_content() -> None:
    event = Event.create(
        "x" * 10_000,
        "copilot",
        title="substrate refactor",
        tags=["urchin"],
        workspace="/dev/orinadus/substrate",
        timestamp=datetime(2026, 5, 1, tzinfo=UTC),
    )
    text = event_text(event)
    for part in ("substrate refactor", "urchin", "/dev/orinadus/substrate", "copilot"):
        assert part in text
    assert text.count("x") == semantic.DOC_CHARS


# -- vectors and endpoints ---------------------------------------------------------------


def test_cosine_of_vectors() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([1.0, 2.0], [1.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    assert cosine([], []) == 0.0


def test_endpoint_url_appends_the_path_only_when_missing() -> None:
    assert endpoint_url("http://h:1/v1", "/embeddings") == "http://h:1/v1/embeddings"
    assert endpoint_url("http://h:1/v1/", "/embeddings") == "http://h:1/v1/embeddings"
    assert endpoint_url("http://h:1/v1/embeddings", "/embeddings") == "http://h:1/v1/embeddings"


def test_embed_batches_requests_and_orders_vectors_by_index(stub: OpenAIStub) -> None:
    texts = ["database", "css", "deploy", "nothing"] * 3
    vectors = embed(stub.url, texts, model="tiny", batch=5)
    assert vectors == [concept_vector(text) for text in texts]
    assert stub.paths() == ["/v1/embeddings"] * 3
    assert all(body["model"] == "tiny" for _, body in stub.requests)
    assert [len(body["input"]) for _, body in stub.requests] == [5, 5, 2]


def test_rank_with_embedder_finds_paraphrases_tfidf_cannot(stub: OpenAIStub) -> None:
    docs = ["tweaked the button layout", "ran the invoices migration", "rolled out v2"]
    assert tfidf_rank("postgres schema", docs, 5) == []
    ranking = rank("postgres schema", docs, 2, embedder_url=stub.url)
    assert ranking.method == "embeddings"
    assert ranking.note is None
    assert ranking.hits[0].index == 1
    assert len(ranking.hits) == 2


def test_rank_sends_a_bounded_number_of_bounded_texts(stub: OpenAIStub) -> None:
    docs = [f"event {i} " + "y" * 5000 for i in range(EMBED_CANDIDATES + 100)]
    rank("event", docs, 5, embedder_url=stub.url)
    inputs = [text for _, body in stub.requests for text in body["input"]]
    assert len(inputs) == EMBED_CANDIDATES + 1  # the query plus the candidates
    assert max(len(text) for text in inputs) <= EMBED_CHARS


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ({"fail": 500}, "answered HTTP 500"),
        ({"garbage": True}, "without one embedding per input"),
    ],
)
def test_rank_falls_back_to_tfidf_when_the_embedder_fails(
    broken: dict[str, Any], expected: str
) -> None:
    docs = ["tweaked the button layout", "ran the database migration"]
    with OpenAIStub(**broken) as server:
        ranking = rank("database migration", docs, 5, embedder_url=server.url)
    assert ranking.method == "tfidf"
    assert ranking.note is not None
    assert expected in ranking.note
    assert "TF-IDF" in ranking.note
    assert [hit.index for hit in ranking.hits] == [1]
    assert server.url not in ranking.note


def test_unreachable_embedder_is_reported_without_its_url() -> None:
    url = f"http://user:secret@127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointError) as caught:
        embed(url, ["a"], timeout=2)
    assert "could not reach the embeddings endpoint" in caught.value.message
    assert "secret" not in caught.value.message
    ranking = rank("database", ["database work"], 5, embedder_url=url, timeout=2)
    assert ranking.method == "tfidf"
    assert [hit.index for hit in ranking.hits] == [0]
