"""`urchin mcp` driven through the official MCP client over stdio, as an agent would."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tests.support import CliResult, script
from tests.urchin.recall.test_semantic import OpenAIStub
from urchin.event import Event
from urchin.journal import Journal

pytestmark = pytest.mark.anyio

TOOLS = {
    "urchin_status",
    "urchin_ingest",
    "urchin_recent_activity",
    "urchin_project_context",
    "urchin_search",
    "urchin_workspace_context",
    "urchin_remember",
    "urchin_ephemeral",
    "urchin_agent_reflect",
    "urchin_semantic_search",
}
SECRET = "sk-live-0123456789abcdef"
GITHUB_TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "server-stderr.log"


class Client:
    """A connected MCP client session plus helpers that decode our JSON results."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = await self.session.call_tool(name, arguments or {})
        assert not result.is_error, _text(result)
        payload = json.loads(_text(result))
        # The text block and the structured content carry the same payload.
        assert payload == result.structured_content
        assert isinstance(payload, dict)
        return payload

    async def fail(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.session.call_tool(name, arguments)
        assert result.is_error, _text(result)
        return _text(result)


def _text(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def connect(server_log: Path) -> Callable[..., Any]:
    """Start the real `urchin mcp` console script and open a client session to it."""

    @asynccontextmanager
    async def open_client(**env: str) -> AsyncIterator[Client]:
        names = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
        server_env = {name: os.environ[name] for name in names}
        server_env |= {"URCHIN_ACCOUNT": "tester", "URCHIN_DEVICE": "testbox", **env}
        params = StdioServerParameters(command=script("urchin"), args=["mcp"], env=server_env)
        with server_log.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=30) as session,
            ):
                info = await session.initialize()
                assert info.server_info.name == "urchin"
                yield Client(session)

    return open_client


def journal_events(path: Path) -> list[Event]:
    return [entry.event for entry in Journal(path).scan()]


def seed(path: Path, *events: Event) -> None:
    with Journal(path) as journal:
        journal.append_many(events)


def ago(**delta: float) -> datetime:
    return datetime.now(UTC) - timedelta(**delta)


# -- discovery ----------------------------------------------------------------------------


async def test_lists_ten_tools_and_reports_status(
    connect: Callable[..., Any], journal_path: Path, isolated_home: Path
) -> None:
    older = Event.create("first", "shell", timestamp=ago(hours=2))
    newer = Event.create("second", "git", kind="commit", timestamp=ago(hours=1))
    seed(journal_path, older, newer)
    with journal_path.open("ab") as handle:
        handle.write(b"not json\n")
    async with connect(URCHIN_INTAKE_PORT="18801") as client:
        listed = await client.session.list_tools()
        status = await client.call("urchin_status")

    assert status["events"] == 2
    assert status["skipped_malformed"] == 1
    assert status["last_event"]["id"] == str(newer.id)
    assert status["journal"] == str(journal_path)
    assert status["journal_bytes"] == journal_path.stat().st_size
    assert status["intake_port"] == 18801
    assert status["vault_root"] == str(isolated_home / "brain")
    assert status["identity"] == {"account": "tester", "device": "testbox"}
    assert status["ephemeral"] == {"active": False, "since": None}
    assert (status["chat"], status["embedder"]) == ("off", "off")

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS

    required = {
        "urchin_status": [],
        "urchin_ingest": ["content", "workspace"],
        "urchin_recent_activity": [],
        "urchin_project_context": ["project"],
        "urchin_search": ["query"],
        "urchin_workspace_context": ["path"],
        "urchin_remember": ["content"],
        "urchin_ephemeral": ["action"],
        "urchin_agent_reflect": ["goal"],
        "urchin_semantic_search": ["query"],
    }
    defaults = {
        "urchin_ingest": {"source": "mcp", "kind": "conversation", "tags": []},
        "urchin_recent_activity": {"hours": 24, "limit": 20},
        "urchin_project_context": {"hours": 168, "limit": 30},
        "urchin_search": {"hours": 168, "limit": 20},
        "urchin_workspace_context": {"hours": 168, "limit": 40},
        "urchin_agent_reflect": {"hours": 24, "limit": 30},
        "urchin_semantic_search": {"hours": 168, "limit": 10},
    }
    for name, tool in tools.items():
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, name
        assert sorted(schema.get("required", [])) == sorted(required[name]), name
        assert tool.description, name
        for prop, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{prop} has no description"
        for prop, value in defaults.get(name, {}).items():
            assert schema["properties"][prop]["default"] == value, f"{name}.{prop}"
        if "limit" in schema["properties"]:
            limit = schema["properties"]["limit"]
            assert limit["type"] == "integer"
            assert limit["minimum"] == 1
            assert limit["maximum"] <= 200
        if "hours" in schema["properties"]:
            assert schema["properties"]["hours"]["exclusiveMinimum"] == 0

    ingest = tools["urchin_ingest"].input_schema["properties"]
    assert ingest["tags"]["type"] == "array"
    assert ingest["tags"]["items"]["type"] == "string"
    assert ingest["content"]["minLength"] == 1
    assert tools["urchin_ephemeral"].input_schema["properties"]["action"]["enum"] == [
        "start",
        "end",
        "status",
    ]

    def hints(name: str) -> tuple[bool | None, bool | None, bool | None]:
        notes = tools[name].annotations
        assert notes is not None, name
        return notes.read_only_hint, notes.destructive_hint, notes.idempotent_hint

    for name in (
        "urchin_status",
        "urchin_recent_activity",
        "urchin_project_context",
        "urchin_search",
        "urchin_workspace_context",
        "urchin_semantic_search",
    ):
        assert hints(name) == (True, False, True), name
    for name in ("urchin_ingest", "urchin_remember", "urchin_agent_reflect"):
        assert hints(name) == (False, False, False), name
    assert hints("urchin_ephemeral") == (False, True, True)


# -- writing and reading ------------------------------------------------------------------


async def test_ingest_and_remember_then_search_recent_project_and_workspace_find_them(
    connect: Callable[..., Any], journal_path: Path, tmp_path: Path
) -> None:
    seed(
        journal_path,
        Event.create("Old note about Harbor", "shell", timestamp=ago(days=10), workspace="/w/x"),
        *(
            Event.create(f"bulk entry {i} " + "b" * 3000, "shell", timestamp=ago(days=3, minutes=i))
            for i in range(200)
        ),
    )
    async with connect() as client:
        first = await client.call(
            "urchin_ingest",
            {
                "content": "Hardened the Intake auth check",
                "workspace": "/dev/harbor/api",
                "title": "intake auth",
                "kind": "commit",
                "tags": ["security"],
                "session": "s-1",
            },
        )
        second = await client.call(
            "urchin_ingest",
            {
                "content": "Sketched the billing page",
                "workspace": "/dev/ledger",
                "source": "claude",
            },
        )
        assert first["status"] == second["status"] == "ok"
        uuid.UUID(first["id"])

        found = await client.call("urchin_search", {"query": "INTAKE AUTH"})
        assert [event["id"] for event in found["events"]] == [first["id"]]
        hit = found["events"][0]
        assert hit == {
            "id": first["id"],
            "timestamp": hit["timestamp"],
            "source": "mcp",
            "kind": "commit",
            "workspace": "/dev/harbor/api",
            "title": "intake auth",
            "tags": ["security"],
            "content": "Hardened the Intake auth check",
        }

        recent = await client.call("urchin_recent_activity")
        assert [event["id"] for event in recent["events"]] == [second["id"], first["id"]]
        only_claude = await client.call("urchin_recent_activity", {"source": "claude"})
        assert [event["id"] for event in only_claude["events"]] == [second["id"]]
        wider = await client.call("urchin_recent_activity", {"hours": 24 * 30, "limit": 2})
        assert wider["count"] == 2
        assert wider["matched"] == 203

        # Project context matches the workspace and tags too; the old event is out of the window.
        project = await client.call("urchin_project_context", {"project": "harbor"})
        assert [event["id"] for event in project["events"]] == [first["id"]]
        by_tag = await client.call("urchin_project_context", {"project": "Security"})
        assert [event["id"] for event in by_tag["events"]] == [first["id"]]
        month = await client.call("urchin_project_context", {"project": "harbor", "hours": 720})
        assert month["count"] == 2

        for path in ("/dev/harbor", "/dev/harbor/", "/dev/harbor/api"):
            scoped = await client.call("urchin_workspace_context", {"path": path})
            assert [event["id"] for event in scoped["events"]] == [first["id"]], path
        nothing = await client.call("urchin_workspace_context", {"path": "/elsewhere"})
        assert nothing["events"] == []

        # Long content is cut, and a large answer is capped as a whole.
        long = "long entry " + "x" * 5000
        await client.call("urchin_ingest", {"content": long, "workspace": "/w"})
        [cut] = (await client.call("urchin_search", {"query": "long entry"}))["events"]
        assert cut["truncated"] is True
        assert cut["content"] == long[:500]
        bulk = await client.call("urchin_search", {"query": "bulk entry", "limit": 200})
        assert bulk["matched"] == 200
        assert 0 < bulk["count"] < 200
        assert bulk["omitted"] == 200 - bulk["count"]
        assert "left out" in bulk["note"]
        assert sum(len(e["content"]) for e in bulk["events"]) <= 60_000

        remembered = await client.call(
            "urchin_remember", {"content": "Use SQLite for the index", "tags": ["arch"]}
        )
        placed = await client.call(
            "urchin_remember", {"content": "Ship on Fridays", "workspace": "/dev/ledger"}
        )
        assert remembered["status"] == placed["status"] == "ok"

        # Writes go through the recorder: secrets are redacted, ignored workspaces skipped.
        leaky = await client.call(
            "urchin_ingest", {"content": f"deploy with token {GITHUB_TOKEN}", "workspace": "/w"}
        )
        assert leaky["status"] == "ok"
        assert (await client.call("urchin_search", {"query": GITHUB_TOKEN}))["events"] == []
        private = tmp_path / "private"
        private.mkdir()
        (private / ".urchinignore").write_text("", encoding="utf-8")
        hidden = await client.call(
            "urchin_ingest", {"content": "private work", "workspace": str(private / "repo")}
        )
        assert hidden["status"] == "ignored"

    lines = [json.loads(line) for line in journal_path.read_text(encoding="utf-8").splitlines()]
    decision = lines[-3]
    assert decision["id"] == remembered["id"]
    assert (decision["kind"], decision["source"], decision["tags"]) == ("decision", "mcp", ["arch"])
    assert "workspace" not in decision
    assert lines[-2]["workspace"] == "/dev/ledger"
    assert lines[-2]["kind"] == "decision"
    assert lines[-1]["id"] == leaky["id"]
    assert lines[-1]["content"] == "deploy with token [REDACTED:github_token]"
    assert GITHUB_TOKEN not in journal_path.read_text(encoding="utf-8")

    written = journal_events(journal_path)
    assert len(written) == 201 + 6
    event = next(e for e in written if str(e.id) == first["id"])
    assert event.session == "s-1"
    assert event.actor is not None
    assert (event.actor.account, event.actor.device) == ("tester", "testbox")
    assert event.actor.workspace == "/dev/harbor/api"


async def test_ephemeral_start_drops_every_write_until_end(
    connect: Callable[..., Any],
    journal_path: Path,
    isolated_home: Path,
    urchin: Callable[..., CliResult],
) -> None:
    flag = isolated_home / ".local" / "share" / "urchin" / "ephemeral.lock"
    async with connect() as client:
        started = await client.call("urchin_ephemeral", {"action": "start"})
        assert started["active"] is True
        assert started["since"]
        assert flag.exists()
        # The flag is shared with every other urchin process.
        assert urchin("ephemeral", "status", "--json").json()["active"] is True

        dropped = await client.call("urchin_ingest", {"content": "secret plan", "workspace": "/w"})
        assert dropped["status"] == "dropped"
        assert dropped["reason"] == "ephemeral"
        noted = await client.call("urchin_remember", {"content": "secret decision"})
        assert noted["status"] == "dropped"
        reflected = await client.call("urchin_agent_reflect", {"goal": "anything"})
        assert reflected["recorded"]["status"] == "dropped"
        assert not journal_path.exists()

        status = await client.call("urchin_ephemeral", {"action": "status"})
        assert status["active"] is True
        assert (await client.call("urchin_status"))["ephemeral"]["active"] is True

        ended = await client.call("urchin_ephemeral", {"action": "end"})
        assert ended["active"] is False
        assert not flag.exists()
        again = await client.call("urchin_ephemeral", {"action": "end"})
        assert again["message"] == "ephemeral mode was not on"
        kept = await client.call("urchin_ingest", {"content": "public plan", "workspace": "/w"})
        assert kept["status"] == "ok"
    assert [event.content for event in journal_events(journal_path)] == ["public plan"]


# -- reflection and semantic search -------------------------------------------------------


def reflection_window() -> list[Event]:
    return [
        Event.create("Looked into the flaky login test", "claude", timestamp=ago(minutes=5)),
        Event.create(
            "pytest tests/auth\nFAILED tests/auth/test_login.py::test_redirect",
            "shell",
            kind="command",
            timestamp=ago(minutes=10),
            workspace="/dev/app",
        ),
        Event.create(
            "Use one session fixture per login test",
            "mcp",
            kind="decision",
            timestamp=ago(minutes=20),
            workspace="/dev/app",
        ),
        Event.create("Should the docs move to the new theme?", "copilot", timestamp=ago(hours=2)),
        Event.create("Long ago", "claude", timestamp=ago(days=3)),
    ]


async def test_reflect_records_an_agent_event_and_semantic_search_ranks_by_meaning(
    connect: Callable[..., Any], journal_path: Path
) -> None:
    seed(
        journal_path,
        *reflection_window(),
        Event.create(
            "Ran the database migration for invoices, then rolled it back",
            "shell",
            timestamp=ago(minutes=30),
        ),
        Event.create("Released version 2 to kubernetes", "git", timestamp=ago(minutes=2)),
        Event.create("数据库迁移失败，需要回滚", "claude", timestamp=ago(minutes=3)),
    )
    async with connect() as client:
        digest = await client.call("urchin_agent_reflect", {"goal": "fix the flaky login test"})
        found = await client.call(
            "urchin_semantic_search", {"query": "database migration rollback"}
        )
        chinese = await client.call("urchin_semantic_search", {"query": "数据库回滚"})

    assert digest["events_considered"] == 7
    assert digest["by_source"] == {"claude": 2, "shell": 2, "copilot": 1, "git": 1, "mcp": 1}
    assert digest["by_workspace"] == {"/dev/app": 2}
    assert [d["content"] for d in digest["decisions"]] == ["Use one session fixture per login test"]
    assert [(t["reason"], t["source"]) for t in digest["open_threads"]] == [
        ("failure", "shell"),
        ("question", "copilot"),
    ]
    assert digest["relevant"][0]["content"] == "Looked into the flaky login test"
    assert digest["relevant"][0]["score"] > digest["relevant"][-1]["score"]
    assert digest["summary_source"] == "digest"
    assert "7 events in the last 24h" in digest["summary"]
    assert "note" not in digest
    assert digest["recorded"]["status"] == "ok"

    recorded = journal_events(journal_path)[-1]
    assert str(recorded.id) == digest["recorded"]["id"]
    assert (recorded.source, str(recorded.kind)) == ("urchin-agent", "agent")
    assert recorded.content.startswith("Reflection on: fix the flaky login test")
    assert recorded.actor is not None
    assert recorded.actor.account == "tester"

    assert found["method"] == "tfidf"
    assert found["events"][0]["content"].startswith("Ran the database migration")
    scores = [event["score"] for event in found["events"]]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)
    assert chinese["events"][0]["content"] == "数据库迁移失败，需要回滚"


async def test_model_endpoints_are_used_when_configured(
    connect: Callable[..., Any], journal_path: Path
) -> None:
    seed(
        journal_path,
        *reflection_window(),
        Event.create("Adjusted the button layout", "claude", timestamp=ago(minutes=7)),
        Event.create("Ran the invoices migration", "shell", timestamp=ago(minutes=8)),
    )
    with OpenAIStub(chat_reply="- Pin the session fixture.") as stub:
        env = {"URCHIN_CHAT_URL": stub.url, "URCHIN_CHAT_MODEL": "tiny"}
        async with connect(**env, URCHIN_EMBEDDER_URL=stub.url) as client:
            status = await client.call("urchin_status")
            digest = await client.call("urchin_agent_reflect", {"goal": "fix the login test"})
            found = await client.call("urchin_semantic_search", {"query": "postgres schema"})
            tools = {t.name: t for t in (await client.session.list_tools()).tools}
    assert (status["chat"], status["embedder"]) == ("configured", "configured")
    assert digest["summary_source"] == "model"
    assert digest["summary"] == "- Pin the session fixture."
    assert "note" not in digest
    chat = [body for path, body in stub.requests if path == "/v1/chat/completions"]
    assert len(chat) == 1
    assert chat[0]["model"] == "tiny"
    assert "fix the login test" in chat[0]["messages"][1]["content"]
    recorded = journal_events(journal_path)[-1]
    assert "- Pin the session fixture." in recorded.content

    # No word of the query appears in any event; only the embedder can connect them.
    assert found["method"] == "embeddings"
    assert found["events"][0]["content"] == "Ran the invoices migration"
    assert "/v1/embeddings" in stub.paths()
    reflect_hints = tools["urchin_agent_reflect"].annotations
    assert reflect_hints is not None
    assert reflect_hints.open_world_hint is True


async def test_model_endpoint_failures_fall_back_and_say_so(
    connect: Callable[..., Any], journal_path: Path
) -> None:
    seed(journal_path, *reflection_window())
    with OpenAIStub(fail=500) as stub:
        env = {"URCHIN_CHAT_URL": stub.url, "URCHIN_EMBEDDER_URL": stub.url}
        async with connect(**env) as client:
            digest = await client.call("urchin_agent_reflect", {"goal": "fix the login test"})
            found = await client.call("urchin_semantic_search", {"query": "login test"})
    assert digest["summary_source"] == "digest"
    assert "the chat endpoint answered HTTP 500" in digest["note"]
    assert "deterministic digest" in digest["note"]
    assert digest["recorded"]["status"] == "ok"
    assert found["method"] == "tfidf"
    assert "the embeddings endpoint answered HTTP 500" in found["note"]
    assert found["events"][0]["content"] == "Looked into the flaky login test"


# -- bad input ----------------------------------------------------------------------------


async def test_bad_arguments_are_tool_errors_with_clear_messages(
    connect: Callable[..., Any], journal_path: Path, server_log: Path
) -> None:
    async with connect() as client:
        missing = await client.fail("urchin_search", {})
        assert "invalid arguments for urchin_search" in missing
        assert "query: Field required" in missing

        missing_two = await client.fail("urchin_ingest", {"title": SECRET})
        assert "content: Field required" in missing_two
        assert "workspace: Field required" in missing_two

        wrong_type = await client.fail("urchin_recent_activity", {"limit": "lots"})
        assert "limit: Input should be a valid integer" in wrong_type
        not_text = await client.fail("urchin_remember", {"content": 12345})
        assert "content: Input should be a valid string" in not_text
        bad_tags = await client.fail("urchin_remember", {"content": "x", "tags": "not-a-list"})
        assert "tags" in bad_tags

        too_many = await client.fail("urchin_search", {"query": "x", "limit": 1000})
        assert "limit: Input should be less than or equal to 200" in too_many
        no_hours = await client.fail("urchin_search", {"query": "x", "hours": 0})
        assert "hours: Input should be greater than 0" in no_hours

        action = await client.fail("urchin_ephemeral", {"action": "explode"})
        assert "action: Input should be 'start', 'end' or 'status'" in action

        unknown = await client.fail("urchin_search", {"query": "x", "secret_arg": SECRET})
        assert "secret_arg: Extra inputs are not permitted" in unknown

        blank = await client.fail("urchin_ingest", {"content": "   ", "workspace": "/w"})
        assert "content must not be blank" in blank
        blank_path = await client.fail("urchin_workspace_context", {"path": "  "})
        assert "path must not be blank" in blank_path
        blank_goal = await client.fail("urchin_agent_reflect", {"goal": " "})
        assert "goal must not be blank" in blank_goal

        long_source = await client.fail(
            "urchin_ingest", {"content": SECRET, "workspace": "/w", "source": "s" * 101}
        )
        assert "source: String should have at most 100 characters" in long_source

        # Nothing rejected was written, and the server still answers.
        assert (await client.call("urchin_status"))["events"] == 0

    for message in (missing_two, unknown, long_source):
        assert SECRET not in message
    assert not journal_path.exists()
    assert SECRET not in server_log.read_text(encoding="utf-8")


async def test_values_outside_the_advertised_schema_are_rejected_and_nothing_is_written(
    connect: Callable[..., Any], journal_path: Path
) -> None:
    async with connect() as client:
        for value in (True, False, "5", "lots", 2.5, None, [3]):
            message = await client.fail("urchin_recent_activity", {"limit": value})
            assert "limit: Input should be a valid integer" in message, value
        for value in (True, "24", "1e3", None, {"h": 1}):
            message = await client.fail("urchin_search", {"query": "x", "hours": value})
            assert "hours: Input should be a valid number" in message, value
        # The reflection would be recorded as an event: a bad limit must stop it first.
        reflect = await client.fail("urchin_agent_reflect", {"goal": "ship", "limit": True})
        assert "limit: Input should be a valid integer" in reflect
        semantic = await client.fail("urchin_semantic_search", {"query": "x", "limit": "3"})
        assert "limit: Input should be a valid integer" in semantic
        # JSON text where the schema says array is not an array.
        tags = await client.fail("urchin_remember", {"content": "x", "tags": '["a", "b"]'})
        assert "tags" in tags
        listed = await client.fail("urchin_ingest", {"content": "x", "workspace": 7})
        assert "workspace: Input should be a valid string" in listed
        assert not journal_path.exists()

        # What JSON Schema calls an integer is one: 2.0 is 2, and 1.5 hours is a number.
        whole = await client.call("urchin_recent_activity", {"limit": 2.0, "hours": 1.5})
        assert (whole["count"], whole["hours"]) == (0, 1.5)
        remembered = await client.call("urchin_remember", {"content": "x", "tags": ["a", "b"]})
        assert remembered["status"] == "ok"
    [event] = journal_events(journal_path)
    assert event.tags == ("a", "b")


async def test_unwritable_journal_is_a_tool_error(
    connect: Callable[..., Any], tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    async with connect(URCHIN_JOURNAL_PATH=str(blocker / "events.jsonl")) as client:
        message = await client.fail("urchin_ingest", {"content": "x", "workspace": "/w"})
    assert "cannot append to the journal" in message


def test_bad_config_fails_before_serving_with_nothing_on_stdout(
    urchin: Callable[..., CliResult],
) -> None:
    result = urchin("mcp", input="", env={"URCHIN_INTAKE_PORT": "not-a-port"})
    assert result.code == 1
    assert result.stdout == ""
    assert "intake_port must be an integer from 1 to 65535" in result.stderr
    assert "Traceback" not in result.stderr
