"""A loopback HTTP server that speaks the model endpoints' real protocols, with scripted answers.

OpenAI-compatible ``POST /v1/chat/completions`` and ``POST /v1/embeddings``, Gemini's
``POST /v1beta/models/{model}:embedContent`` and a Cohere/Jina-style ``POST /v1/rerank``
(``{model, query, documents, top_n}`` -> ``{results: [{index, relevance_score}]}``, best first,
cut to ``top_n``). Each request is recorded (decoded JSON and
headers) so a test can check what was sent; ``hook`` runs while a request is being answered
(with no service lock held: the service is waiting for the answer), which is how tests change
the store in the middle of generation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Script:
    """What the fake answers. ``replies`` are used in turn (the last one repeats)."""

    replies: list[str] = field(default_factory=lambda: ["no answer scripted"])
    status: int = 200
    raw: bytes | None = None  # a body to send instead of a chat completion
    embed: Callable[[str], list[float]] | None = None
    rerank: Callable[[str, str], float] | None = None  # (query, document) -> relevance
    hook: Callable[[dict[str, Any]], None] | None = None
    seen: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    failures_first: int = 0  # answer 503 this many times before answering normally


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        script = self.script
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        script.seen.append(body)
        script.headers.append({k.lower(): v for k, v in self.headers.items()})
        if script.hook is not None:
            script.hook(body)
        if script.failures_first > 0:
            script.failures_first -= 1
            self._send(503, b'{"error": "busy"}')
            return
        if script.status != 200:
            self._send(script.status, b'{"error": {"message": "scripted failure"}}')
            return
        if script.raw is not None:
            self._send(200, script.raw)
            return
        if self.path.endswith("/chat/completions"):
            reply = script.replies.pop(0) if len(script.replies) > 1 else script.replies[0]
            answer = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "stop",
                    }
                ],
            }
            self._send(200, json.dumps(answer).encode())
            return
        if self.path.endswith("/embeddings") and script.embed is not None:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"object": "embedding", "index": i, "embedding": script.embed(text)}
                for i, text in enumerate(inputs)
            ]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
            return
        if self.path.endswith("/rerank") and script.rerank is not None:
            scored = [
                {"index": i, "relevance_score": script.rerank(body["query"], doc)}
                for i, doc in enumerate(body["documents"])
            ]
            scored.sort(key=lambda r: -r["relevance_score"])
            answer = {"model": body.get("model"), "results": scored[: body["top_n"]]}
            self._send(200, json.dumps(answer).encode())
            return
        if self.path.endswith(":embedContent") and script.embed is not None:
            text = body["content"]["parts"][0]["text"]
            self._send(200, json.dumps({"embedding": {"values": script.embed(text)}}).encode())
            return
        if self.path.endswith(":batchEmbedContents") and script.embed is not None:
            values = [
                {"values": script.embed(r["content"]["parts"][0]["text"])} for r in body["requests"]
            ]
            self._send(200, json.dumps({"embeddings": values}).encode())
            return
        self._send(404, b'{"error": "no such route"}')


@dataclass
class FakeModels:
    url: str  # http://127.0.0.1:PORT
    script: Script


@contextmanager
def fake_models(script: Script | None = None) -> Iterator[FakeModels]:
    """Serve ``script`` on a free loopback port until the block ends."""
    script = script or Script()
    handler = type("Handler", (_Handler,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-models", daemon=True)
    thread.start()
    try:
        yield FakeModels(f"http://127.0.0.1:{server.server_address[1]}", script)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
