"""The HTTP intake, driven as a real ``urchin intake`` subprocess on a free loopback port."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import CliResult, free_port, script, wait_for
from urchin.ephemeral import Ephemeral
from urchin.errors import JournalWriteError
from urchin.event import Event
from urchin.intake import GroupCommitter
from urchin.journal import Journal
from urchin.recorder import Outcome, Recorder

TOKEN = "tok-3f9c2a7b-intake"
MIB = 1024 * 1024


@dataclass
class RunningIntake:
    proc: subprocess.Popen[bytes]
    base_url: str
    home: Path
    log_path: Path

    @property
    def data_dir(self) -> Path:
        return self.home / ".local" / "share" / "urchin"

    @property
    def journal_path(self) -> Path:
        return self.data_dir / "journal" / "events.jsonl"

    def journal(self) -> bytes:
        try:
            return self.journal_path.read_bytes()
        except FileNotFoundError:
            return b""

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.journal().splitlines() if line.strip()]

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30, **kwargs)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=30)


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("URCHIN_", "MEMORIES_"))
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        **(extra or {}),
    )
    return env


def start_intake(home: Path, *args: str, env: dict[str, str] | None = None) -> RunningIntake:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = home / "intake.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [script("urchin"), "intake", "--port", str(port), *args],
            env=_env(home, env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    running = RunningIntake(proc, f"http://127.0.0.1:{port}", home, log_path)

    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"urchin intake exited early:\n{running.log()}")
        try:
            return httpx.get(f"{running.base_url}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(healthy, timeout=30)
    except BaseException:
        running.stop()
        raise
    return running


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningIntake]:
    running = start_intake(tmp_path_factory.mktemp("intake") / "home")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningIntake]:
    home = tmp_path_factory.mktemp("secured") / "home"
    running = start_intake(home, env={"URCHIN_INTAKE_TOKEN": TOKEN})
    yield running
    running.stop()


@pytest.fixture
def ephemeral(intake: RunningIntake) -> Iterator[Path]:
    flag = intake.data_dir / "ephemeral.lock"
    flag.parent.mkdir(parents=True, exist_ok=True)
    flag.write_text("{}\n", encoding="utf-8")
    yield flag
    flag.unlink(missing_ok=True)


def post_raw(
    intake: RunningIntake,
    path: str,
    body: bytes,
    content_type: str | None = "application/json",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    sent = dict(headers or {})
    if content_type is not None:
        sent["content-type"] = content_type
    return httpx.post(intake.base_url + path, content=body, headers=sent, timeout=30)


def assert_unchanged_after(
    intake: RunningIntake, request: Callable[[], httpx.Response]
) -> httpx.Response:
    """Run ``request`` and check the journal is byte-for-byte what it was."""
    before = intake.journal()
    response = request()
    assert intake.journal() == before
    return response


# -- POST /ingest ----------------------------------------------------------------------


def test_minimal_event_gets_an_id_a_timestamp_and_kind_conversation(
    intake: RunningIntake,
) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    reply = httpx.post(
        intake.base_url + "/ingest", json={"content": "wrote the intake", "source": "copilot"}
    )
    assert reply.status_code == 200
    answer = reply.json()
    assert answer["status"] == "ok"
    assert uuid.UUID(answer["id"]).version == 4
    line = intake.journal().splitlines()[-1]
    written = json.loads(line)
    assert list(written) == ["id", "timestamp", "source", "kind", "content"]
    assert written["id"] == answer["id"]
    assert written["kind"] == "conversation"
    assert written["source"] == "copilot"
    stamp = datetime.fromisoformat(written["timestamp"])
    assert written["timestamp"].endswith("Z")
    assert before <= stamp <= datetime.now(UTC) + timedelta(seconds=1)


def test_full_event_is_written_as_given_without_unknown_fields(intake: RunningIntake) -> None:
    event = {
        "id": "56816532-adb7-4000-8a0f-1dda8408aab5",
        "timestamp": "2026-05-04T20:00:00Z",
        "source": "copilot",
        "kind": "commit",
        "content": "Hardened intake auth.",
        "workspace": "/home/user/dev/project",
        "tags": ["substrate"],
        "actor": {"account": "ana", "device": "laptop"},
        "from_the_future": {"ignored": True},
    }
    reply = httpx.post(intake.base_url + "/ingest", json=event)
    assert reply.json() == {"id": event["id"], "status": "ok"}
    assert reply.status_code == 200
    expected = (
        b'{"id":"56816532-adb7-4000-8a0f-1dda8408aab5","timestamp":"2026-05-04T20:00:00Z",'
        b'"source":"copilot","kind":"commit","content":"Hardened intake auth.",'
        b'"workspace":"/home/user/dev/project","tags":["substrate"],'
        b'"actor":{"account":"ana","device":"laptop"}}\n'
    )
    assert intake.journal().endswith(expected)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"content": "   \n\t", "source": "cli"}, "content must not be blank"),
        ({"content": "real", "source": " "}, "source must not be blank"),
        ({"source": "cli"}, "content is required"),
        ({"content": "real"}, "source is required"),
        ({"content": ["not", "text"], "source": "cli"}, "content must be a string"),
        ({"content": "x", "source": "cli", "id": "not-a-uuid-VALUE"}, "id must be a UUID"),
        ({"content": "x", "source": "cli", "timestamp": "yesterday-VALUE"}, "timestamp"),
        ({"content": "x", "source": "cli", "tags": "VALUE"}, "tags must be a list"),
        ({"content": "x", "source": "cli", "kind": "  "}, "kind must not be blank"),
        (["VALUE"], "an event must be a JSON object"),
    ],
)
def test_invalid_event_is_400_naming_the_field_and_nothing_is_written(
    intake: RunningIntake, body: object, message: str
) -> None:
    reply = assert_unchanged_after(
        intake, lambda: httpx.post(intake.base_url + "/ingest", json=body)
    )
    assert reply.status_code == 400
    assert message in reply.json()["error"]
    assert "VALUE" not in reply.text
    assert "real" not in reply.text


@pytest.mark.parametrize(
    "raw",
    [
        b'{"content": "half',
        b"",
        b'{"content": "x", "source": "y", "meta": {"v": NaN}}',
        b'\xff\xfe{"content": "x"}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["truncated", "empty", "nan", "not-utf8", "deeply-nested"],
)
def test_malformed_json_is_400_and_nothing_is_written(intake: RunningIntake, raw: bytes) -> None:
    reply = assert_unchanged_after(intake, lambda: post_raw(intake, "/ingest", raw))
    assert reply.status_code == 400
    assert set(reply.json()) == {"error"}
    assert "half" not in reply.text


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
)
def test_wrong_content_type_is_415(intake: RunningIntake, content_type: str | None) -> None:
    body = b'{"content": "looks fine", "source": "cli"}'
    reply = assert_unchanged_after(intake, lambda: post_raw(intake, "/ingest", body, content_type))
    assert reply.status_code == 415
    assert reply.json() == {"error": "content type must be application/json"}


def test_content_type_parameters_are_accepted(intake: RunningIntake) -> None:
    body = b'{"content": "charset given", "source": "cli"}'
    reply = post_raw(intake, "/ingest", body, "Application/JSON; charset=utf-8")
    assert reply.status_code == 200


def test_body_over_one_mib_is_413_whether_declared_or_streamed(intake: RunningIntake) -> None:
    content = "x" * MIB
    body = json.dumps({"content": content, "source": "cli"}).encode()
    reply = assert_unchanged_after(intake, lambda: post_raw(intake, "/ingest", body))
    assert reply.status_code == 413
    assert "x" * 100 not in reply.text

    def chunks() -> Iterator[bytes]:
        # No Content-Length: the limit must hold while reading.
        yield b'{"source": "cli", "content": "'
        for _ in range(40):
            yield b"y" * 64 * 1024
        yield b'"}'

    reply = assert_unchanged_after(
        intake,
        lambda: httpx.post(
            intake.base_url + "/ingest",
            content=chunks(),
            headers={"content-type": "application/json"},
        ),
    )
    assert reply.status_code == 413


def test_body_just_under_the_limit_is_written(intake: RunningIntake) -> None:
    content = "z" * (MIB - 64)
    body = json.dumps({"content": content, "source": "cli"}).encode()
    assert len(body) <= MIB
    reply = post_raw(intake, "/ingest", body)
    assert reply.status_code == 200
    assert json.loads(intake.journal().splitlines()[-1])["content"] == content


def test_ignored_workspace_is_answered_202_and_not_written(
    intake: RunningIntake, tmp_path: Path
) -> None:
    (tmp_path / ".urchinignore").write_text("", encoding="utf-8")
    body = {"content": "private work", "source": "cli", "workspace": str(tmp_path)}
    reply = assert_unchanged_after(
        intake, lambda: httpx.post(intake.base_url + "/ingest", json=body)
    )
    assert reply.status_code == 202
    assert reply.json()["reason"] == "ignored"


# -- ephemeral mode --------------------------------------------------------------------


@pytest.mark.usefixtures("ephemeral")
def test_ephemeral_mode_drops_events_with_202_and_writes_nothing(intake: RunningIntake) -> None:
    event_id = str(uuid.uuid4())
    reply = assert_unchanged_after(
        intake,
        lambda: httpx.post(
            intake.base_url + "/ingest", json={"id": event_id, "content": "x", "source": "cli"}
        ),
    )
    assert reply.status_code == 202
    assert reply.json() == {"id": event_id, "status": "dropped", "reason": "ephemeral"}
    # Ephemeral comes before validation: even a blank event is silently dropped.
    blank = assert_unchanged_after(
        intake, lambda: httpx.post(intake.base_url + "/ingest", json={"content": " "})
    )
    assert blank.status_code == 202
    assert uuid.UUID(blank.json()["id"])
    batch = {"events": [{"content": "a", "source": "cli"}, {"content": ""}]}
    reply = assert_unchanged_after(
        intake, lambda: httpx.post(intake.base_url + "/ingest/batch", json=batch)
    )
    assert reply.status_code == 202
    assert reply.json() == {"accepted": 0, "dropped": 2, "errors": []}
    health = httpx.get(intake.base_url + "/health").json()
    assert health["ephemeral"] is True


# -- POST /ingest/batch ----------------------------------------------------------------


def test_batch_writes_the_valid_events_and_reports_each_invalid_one(
    intake: RunningIntake,
) -> None:
    good_id = str(uuid.uuid4())
    bad_id = str(uuid.uuid4())
    events = [
        {"id": good_id, "content": "first", "source": "batch-test"},
        {"id": bad_id, "content": " ", "source": "batch-test"},
        {"content": "second", "source": "batch-test", "kind": "decision"},
        "SECRET-VALUE",
        {"content": "third", "source": "batch-test", "timestamp": "SECRET-VALUE"},
    ]
    before = len(intake.journal())
    reply = httpx.post(intake.base_url + "/ingest/batch", json={"events": events})
    assert reply.status_code == 200
    answer = reply.json()
    assert answer["accepted"] == 2
    assert answer["dropped"] == 0
    assert [(e["index"], e["id"]) for e in answer["errors"]] == [(1, bad_id), (3, None), (4, None)]
    assert answer["errors"][0]["error"] == "content must not be blank"
    assert "SECRET-VALUE" not in reply.text
    added = [json.loads(line) for line in intake.journal()[before:].splitlines()]
    assert [(e["content"], e["kind"]) for e in added] == [
        ("first", "conversation"),
        ("second", "decision"),
    ]
    assert added[0]["id"] == good_id


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"events": [{"content": "x", "source": "y"}] * 1001}, 413),
        ({"events": {"content": "x"}}, 400),
        ([{"content": "x", "source": "y"}], 400),
        ({}, 400),
    ],
    ids=["1001-events", "events-not-a-list", "bare-list", "no-events"],
)
def test_batch_with_a_bad_shape_is_rejected_whole(
    intake: RunningIntake, body: object, status: int
) -> None:
    reply = assert_unchanged_after(
        intake, lambda: httpx.post(intake.base_url + "/ingest/batch", json=body)
    )
    assert reply.status_code == status
    assert set(reply.json()) == {"error"}


def test_batch_of_exactly_1000_events_is_accepted(intake: RunningIntake) -> None:
    events = [{"content": f"bulk {i}", "source": "bulk"} for i in range(1000)]
    reply = httpx.post(intake.base_url + "/ingest/batch", json={"events": events}, timeout=60)
    assert reply.json() == {"accepted": 1000, "dropped": 0, "errors": []}
    tail = intake.journal().splitlines()[-1000:]
    assert [json.loads(line)["content"] for line in tail] == [e["content"] for e in events]


# -- reading ---------------------------------------------------------------------------


def test_health_counts_the_events_in_the_journal(intake: RunningIntake) -> None:
    first = httpx.get(intake.base_url + "/health").json()
    httpx.post(intake.base_url + "/ingest", json={"content": "one more", "source": "cli"})
    second = httpx.get(intake.base_url + "/health").json()
    assert first == {"status": "ok", "events": first["events"], "ephemeral": False}
    assert second["events"] == first["events"] + 1 == len(intake.events())


def test_recent_and_query_answer_newest_first(intake: RunningIntake) -> None:
    marker = uuid.uuid4().hex[:12]
    for index in range(3):
        httpx.post(
            intake.base_url + "/ingest",
            json={"content": f"read-test {marker} {index}", "source": f"reader-{marker}"},
        )
    recent = httpx.get(intake.base_url + "/recent", params={"n": 2, "source": f"reader-{marker}"})
    assert recent.status_code == 200
    body = recent.json()
    assert body["count"] == 2
    assert [e["content"] for e in body["events"]] == [
        f"read-test {marker} 2",
        f"read-test {marker} 1",
    ]
    assert set(body["events"][0]) == {"id", "timestamp", "source", "kind", "content"}
    found = httpx.get(intake.base_url + "/query", params={"q": marker.upper(), "limit": 500})
    answer = found.json()
    assert answer["query"] == marker.upper()
    assert answer["count"] == 3
    assert answer["events"][0]["content"] == f"read-test {marker} 2"
    old = httpx.get(intake.base_url + "/query", params={"q": marker, "hours": 0.000001}).json()
    assert old["count"] == 0


def test_recent_caps_n_at_200(intake: RunningIntake) -> None:
    events = [{"content": f"cap {i}", "source": "cap"} for i in range(205)]
    httpx.post(intake.base_url + "/ingest/batch", json={"events": events})
    reply = httpx.get(intake.base_url + "/recent", params={"n": 100_000})
    assert reply.json()["count"] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/query?q=",
        "/query?q=%20%20",
        "/query",
        "/recent?n=PARAM-VALUE",
        "/recent?n=0",
        "/recent?hours=-1",
        "/recent?hours=nan",
        "/query?q=x&limit=PARAM-VALUE",
    ],
)
def test_read_endpoints_reject_bad_parameters_with_400(intake: RunningIntake, path: str) -> None:
    reply = httpx.get(intake.base_url + path)
    assert reply.status_code == 400
    assert set(reply.json()) == {"error"}
    assert "PARAM-VALUE" not in reply.text


def test_openapi_document_describes_requests_and_responses(intake: RunningIntake) -> None:
    doc = httpx.get(intake.base_url + "/openapi.json").json()
    paths = doc["paths"]
    assert set(paths) >= {"/ingest", "/ingest/batch", "/health", "/recent", "/query"}
    schemas = doc["components"]["schemas"]
    ingest = paths["/ingest"]["post"]
    body_ref = ingest["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body_ref == "#/components/schemas/IngestEvent"
    assert {"content", "source", "id", "timestamp", "kind"} <= set(
        schemas["IngestEvent"]["properties"]
    )
    assert set(schemas["IngestEvent"]["required"]) == {"content", "source"}
    responses = ingest["responses"]
    assert set(responses) >= {"200", "202", "400", "401", "413", "415"}
    assert responses["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/Dropped")
    assert responses["401"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    batch_ref = paths["/ingest/batch"]["post"]["requestBody"]["content"]["application/json"]
    assert batch_ref["schema"]["$ref"] == "#/components/schemas/IngestBatch"
    assert "IngestBatch" in schemas
    params = {p["name"] for p in paths["/recent"]["get"]["parameters"]}
    assert params == {"n", "source", "hours"}
    assert all("422" not in op["responses"] for item in paths.values() for op in item.values())
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


# -- the wire ---------------------------------------------------------------------------


def _raw_post(path: str, body: bytes, *extra: bytes) -> bytes:
    head = [
        b"POST " + path.encode() + b" HTTP/1.1",
        b"host: 127.0.0.1",
        b"content-type: application/json",
        b"content-length: %d" % len(body),
        *extra,
    ]
    return b"\r\n".join(head) + b"\r\n\r\n"


class RawAnswers:
    """Reads HTTP/1.1 answers off a socket: status, headers and a content-length body."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)  # the socket's timeout is the deadline
        if not chunk:
            raise AssertionError(f"the server closed the connection; got {self.buffer!r}")
        self.buffer += chunk

    def head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines)
        return int(status_line.split(" ")[1]), headers

    def answer(self) -> tuple[int, bytes]:
        status, headers = self.head()
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body


def raw_connection(intake: RunningIntake) -> socket.socket:
    port = int(intake.base_url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=15)


def test_pipelined_requests_get_whole_answers_in_order(intake: RunningIntake) -> None:
    bodies = [
        json.dumps({"content": f"pipelined {i}", "source": "pipeline"}).encode() for i in range(3)
    ]
    bad = b'{"content": " ", "source": "pipeline"}'
    wire = b"".join(_raw_post("/ingest", body) + body for body in [*bodies[:2], bad, bodies[2]])
    with raw_connection(intake) as sock:
        sock.sendall(wire)  # all at once: the server answers them one after another
        reader = RawAnswers(sock)
        answers = [reader.answer() for _ in range(4)]
        assert reader.buffer == b""
    assert [status for status, _ in answers] == [200, 200, 400, 200]
    assert json.loads(answers[2][1]) == {"error": "content must not be blank"}
    ids = [json.loads(body)["id"] for status, body in answers if status == 200]
    written = [e for e in intake.events() if e["source"] == "pipeline"]
    assert [e["id"] for e in written] == ids
    assert [e["content"] for e in written] == ["pipelined 0", "pipelined 1", "pipelined 2"]


def test_expect_100_continue_is_answered_before_the_body_is_sent(intake: RunningIntake) -> None:
    body = json.dumps({"content": "sent after 100 Continue", "source": "expect"}).encode()
    with raw_connection(intake) as sock:
        sock.sendall(_raw_post("/ingest", body, b"expect: 100-continue"))
        reader = RawAnswers(sock)
        # The client holds the body back until the interim answer arrives.
        assert reader.head() == (100, {})
        sock.sendall(body)
        status, answer = reader.answer()
    assert status == 200
    assert intake.events()[-1]["id"] == json.loads(answer)["id"]


# -- concurrency -----------------------------------------------------------------------


@pytest.mark.parametrize("per_client", [50, pytest.param(500, marks=pytest.mark.slow)])
def test_concurrent_clients_every_acknowledged_event_is_written_exactly_once(
    intake: RunningIntake, per_client: int
) -> None:
    clients = 8
    source = f"concurrent-{per_client}"
    acked: list[list[str]] = [[] for _ in range(clients)]
    failures: list[str] = []

    def client(index: int) -> None:
        with intake.client() as http:
            for number in range(per_client):
                reply = http.post(
                    "/ingest", json={"content": f"c{index} n{number}", "source": source}
                )
                if reply.status_code != 200:
                    failures.append(reply.text)
                    return
                acked[index].append(reply.json()["id"])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    written = Counter(e["id"] for e in intake.events() if e["source"] == source)
    all_acked = [event_id for ids in acked for event_id in ids]
    assert len(all_acked) == clients * per_client
    assert written == Counter(all_acked)
    assert set(written.values()) == {1}


class SyncSpyJournal(Journal):
    """A real journal that remembers the file size at the start of each finished fsync."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, durable=False)
        self.synced: list[int] = []

    def sync(self) -> None:
        size = self.size()
        super().sync()
        self.synced.append(size)


def test_group_commit_acknowledges_only_after_an_fsync_that_covers_the_line(
    tmp_path: Path,
) -> None:
    journal = SyncSpyJournal(tmp_path / "journal" / "events.jsonl")
    committer = GroupCommitter(Recorder(journal, Ephemeral(tmp_path)))
    covered_at_ack: dict[str, int] = {}

    async def one(number: int) -> None:
        event = Event.create(f"group {number}", "group-test")
        result = await committer.commit([event])
        assert result.outcome is Outcome.OK
        covered_at_ack[str(event.id)] = max(journal.synced, default=0)

    async def many() -> None:
        await asyncio.gather(*(one(number) for number in range(200)))

    try:
        asyncio.run(many())
    finally:
        committer.close()
    line_end: dict[str, int] = {}
    offset = 0
    for line in journal.path.read_bytes().splitlines(keepends=True):
        offset += len(line)
        line_end[json.loads(line)["id"]] = offset
    assert set(line_end) == set(covered_at_ack)
    assert all(line_end[event_id] <= covered_at_ack[event_id] for event_id in line_end)
    # Concurrent commits shared fsyncs instead of paying one each.
    assert len(journal.synced) < 100


class _RefusingRecorder(Recorder):
    """Renders every event except those whose content says "unrenderable"."""

    def render(self, events: Sequence[Event]) -> Any:
        if any("unrenderable" in e.content for e in events):
            raise ValueError("cannot render")
        return super().render(events)


def test_an_event_that_cannot_be_rendered_fails_only_its_own_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = Journal(tmp_path / "journal" / "events.jsonl")
    committer = GroupCommitter(_RefusingRecorder(journal, Ephemeral(tmp_path)))

    async def both() -> list[Any]:
        bad = committer.commit([Event.create("unrenderable secret words", "cli")])
        good = committer.commit([Event.create("a fine event", "cli")])
        return await asyncio.gather(bad, good, return_exceptions=True)

    try:
        bad, good = asyncio.run(both())
    finally:
        committer.close()
    assert isinstance(bad, JournalWriteError)
    assert good.outcome is Outcome.OK
    lines = journal.path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["a fine event"]
    assert "secret words" not in caplog.text and "ValueError" in caplog.text


# -- auth ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer wrong-token-value"},
        {"authorization": "Bearer " + TOKEN[:-1] + "X"},
        {"authorization": "Basic " + TOKEN},
        {"authorization": TOKEN},
        {"authorization": "Bearer"},
    ],
    ids=["missing", "wrong", "same-length", "basic", "no-scheme", "empty"],
)
def test_wrong_or_missing_token_is_401_everywhere(
    secured: RunningIntake, headers: dict[str, str]
) -> None:
    event = {"content": "should not land", "source": "cli"}
    with secured.client(headers=headers) as http:
        before = secured.journal()
        replies = [
            http.post("/ingest", json=event),
            http.post("/ingest/batch", json={"events": [event]}),
            http.post("/ingest", content=b"not json", headers={"content-type": "text/plain"}),
            http.get("/recent"),
            http.get("/recent", params={"n": "abc"}),
            http.get("/query", params={"q": "land"}),
        ]
        assert secured.journal() == before
        for reply in replies:
            assert reply.status_code == 401, reply.request.url
            assert reply.json() == {"error": "unauthorized"}
            assert reply.headers["www-authenticate"] == "Bearer"
        health = http.get("/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}


def test_right_token_is_let_through(secured: RunningIntake) -> None:
    with secured.client(headers={"authorization": f"bearer {TOKEN}"}) as http:
        reply = http.post("/ingest", json={"content": "with token", "source": "cli"})
        assert reply.status_code == 200
        assert secured.events()[-1]["id"] == reply.json()["id"]
        batch = http.post("/ingest/batch", json={"events": [{"content": "b", "source": "cli"}]})
        assert batch.json()["accepted"] == 1
        assert http.get("/recent").json()["count"] >= 2
        assert http.get("/query", params={"q": "with token"}).json()["count"] >= 1
        health = http.get("/health").json()
    assert health == {"status": "ok", "events": len(secured.events()), "ephemeral": False}


def test_logs_hold_neither_bodies_nor_tokens_nor_query_text(secured: RunningIntake) -> None:
    marker = "body-marker-" + uuid.uuid4().hex
    headers = {"authorization": f"Bearer {TOKEN}"}
    httpx.post(
        secured.base_url + "/ingest",
        json={"content": marker, "source": "cli"},
        headers=headers,
    )
    httpx.post(
        secured.base_url + "/ingest", json={"content": marker, "source": " "}, headers=headers
    )
    httpx.get(secured.base_url + "/query", params={"q": marker}, headers=headers)
    httpx.post(
        secured.base_url + "/ingest",
        json={"content": marker},
        headers={"authorization": "Bearer " + marker},
    )

    def logged() -> str | None:
        text = secured.log()
        return text if text.count("POST /ingest") >= 3 and "GET /query" in text else None

    log = wait_for(logged)
    assert marker not in log
    assert TOKEN not in log


# -- the command -----------------------------------------------------------------------


def test_non_loopback_host_is_refused_without_the_flag(
    urchin: Callable[..., CliResult],
) -> None:
    # Refused before anything is bound.
    result = urchin("intake", "--host", "0.0.0.0", "--port", str(free_port()))
    assert result.code == 2
    assert "not a loopback address" in result.stderr
    assert "--allow-non-loopback" in result.stderr
    assert "Traceback" not in result.stderr


def test_non_loopback_host_with_the_flag_warns_first(urchin: Callable[..., CliResult]) -> None:
    # 192.0.2.1 (TEST-NET-1) is on no interface here, so binding fails after the warning.
    port = str(free_port())
    result = urchin("intake", "--host", "192.0.2.1", "--port", port, "--allow-non-loopback")
    assert "reachable from other machines" in result.stderr
    assert "no intake_token is set" in result.stderr
    assert result.code == 1
    assert f"cannot listen on 192.0.2.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_port_in_use_is_a_clear_error(urchin: Callable[..., CliResult]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = urchin("intake", "--port", str(port))
    assert result.code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_sigterm_lets_in_flight_writes_finish_and_exits_cleanly(tmp_path: Path) -> None:
    running = start_intake(tmp_path / "home")
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(index: int) -> None:
        with running.client() as http:
            number = 0
            while not stop.is_set():
                try:
                    reply = http.post(
                        "/ingest", json={"content": f"t{index} {number}", "source": "sigterm"}
                    )
                except httpx.TransportError:
                    return  # the server closed the connection while shutting down
                if reply.status_code != 200:
                    return
                with lock:
                    acked.append(reply.json()["id"])
                number += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(acked) >= 100)
        running.proc.send_signal(signal.SIGTERM)
        code = running.proc.wait(timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        running.stop()
    assert code == 0
    assert "intake stopped" in running.log()
    written = Counter(e["id"] for e in running.events())
    assert all(written[event_id] == 1 for event_id in acked)
    assert running.journal().endswith(b"\n")
