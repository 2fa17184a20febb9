"""`memories mcp` driven by the official MCP client over stdio, against a real daemon:
the tool list, every tool, the card resources, strict arguments and what may not be written."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from tests.memories.cli.conftest import Memories
from tests.memories.mcp.conftest import Client

from memories.mcp.server import TOOL_NAMES
from memories.mcp.tools import TOOL_REQUESTS

pytestmark = pytest.mark.anyio

Connect = Callable[..., AbstractAsyncContextManager[Client]]


async def test_lists_every_tool_with_typed_schemas_and_hints(
    connect: Connect, grant: Callable[..., str]
) -> None:
    token = grant("read")
    async with connect(token) as client:
        listed = await client.session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == set(TOOL_NAMES) == set(TOOL_REQUESTS)
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations is not None
        assert tool.description
    read_only = {name for name, tool in tools.items() if tool.annotations.read_only_hint}
    assert read_only == {
        "memory_search",
        "memory_retrieve",
        "memory_ask",
        "memory_read",
        "memory_list",
        "memory_history",
        "memory_graph",
    }
    assert tools["memory_delete"].annotations.destructive_hint is True
    assert tools["memory_write"].annotations.destructive_hint is False
    assert tools["memory_read"].annotations.idempotent_hint is True
    # The search syntax is in the search tool's description.
    assert "tag:NAME" in (tools["memory_search"].description or "")
    limit = tools["memory_search"].input_schema["properties"]["limit"]
    assert limit["type"] == "integer"
    assert (limit["minimum"], limit["maximum"]) == (1, 50)


async def test_every_tool_round_trip(connect: Connect, grant: Callable[..., str]) -> None:
    token = grant("read_write_delete")
    async with connect(token) as client:
        note = await client.call(
            "memory_write",
            {
                "title": "Deploy steps",
                "body": "Run make deploy from the release branch.",
                "tags": ["ops"],
            },
        )
        card = await client.call(
            "memory_write",
            {
                "kind": "card",
                "card_type": "knowledge",
                "title": "Release branch",
                "metadata": {"topic": "releases", "confidence": 0.9},
            },
        )
        other = await client.call(
            "memory_write", {"kind": "card", "card_type": "knowledge", "title": "Staging"}
        )
        assert len(note["id"]) >= 8 and note["revision"]

        found = await client.call("memory_search", {"query": "deploy"})
        assert [item["id"] for item in found["items"]] == [note["id"]]
        hit = found["items"][0]
        assert hit["content"]["untrusted"] is True
        assert "deploy" in hit["content"]["snippet"].lower()
        assert "notice" in found

        chunks = await client.call("memory_retrieve", {"query": "deploy"})
        [chunk] = chunks["items"]
        assert chunk["label"] == "S1" and chunk["id"] == note["id"]
        assert "make deploy" in chunk["content"]["text"]

        shown = await client.call("memory_read", {"ref": note["id"]})
        assert shown["content"]["body"] == "Run make deploy from the release branch."
        assert shown["content"]["tags"] == ["ops"]
        assert shown["content"]["untrusted"] is True

        edited = await client.call(
            "memory_write", {"ref": note["id"], "body": "Run make deploy (needs the VPN)."}
        )
        assert edited["id"] == note["id"]
        history = await client.call("memory_history", {"ref": note["id"]})
        assert [e["head"] for e in history["items"]] == [True, False]
        assert history["items"][0]["content"]["title"] == "Deploy steps"

        listed = await client.call("memory_list", {})
        assert {item["id"] for item in listed["items"]} == {note["id"], card["id"], other["id"]}
        cards_only = await client.call("memory_list", {"kind": "card"})
        assert {item["id"] for item in cards_only["items"]} == {card["id"], other["id"]}

        linked = await client.call(
            "memory_link", {"source": card["id"], "target": other["id"], "relation": "depends_on"}
        )
        assert linked == {"source": card["id"], "target": other["id"], "relation": "depends_on"}
        graph = await client.call("memory_graph", {})
        assert {n["id"] for n in graph["nodes"]} == {card["id"], other["id"]}
        assert graph["edges"] == [
            {"source": card["id"], "target": other["id"], "relation": "depends_on"}
        ]

        # No answer model is configured: the answer is extractive (no model named).
        answered = await client.call("memory_ask", {"question": "How do I deploy?"})
        assert not answered["model"] and "answer" in answered

        deleted = await client.call("memory_delete", {"ref": other["id"]})
        assert deleted["deleted"] is True
        after = await client.call("memory_list", {})
        assert other["id"] not in {item["id"] for item in after["items"]}


async def test_cards_are_resources(connect: Connect, grant: Callable[..., str]) -> None:
    token = grant("read_write")
    async with connect(token) as client:
        card = await client.call(
            "memory_write", {"kind": "card", "card_type": "knowledge", "title": "Cluster map"}
        )
        await client.call("memory_write", {"title": "plain memory, not a resource"})
        listed = await client.session.list_resources()
        assert [str(r.uri) for r in listed.resources] == [f"memories://card/{card['id']}"]
        assert listed.resources[0].title == "Cluster map"
        read = await client.session.read_resource(f"memories://card/{card['id']}")
        [contents] = read.contents
        doc = json.loads(contents.text)  # type: ignore[union-attr]
        assert doc["content"]["title"] == "Cluster map"
        assert doc["content"]["untrusted"] is True
        templates = await client.session.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["memories://card/{ref}"]


# (tool, arguments, the field the error names): wrong types are never coerced.
STRICT_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("memory_search", {"query": "x", "limit": True}, "limit"),
    ("memory_search", {"query": "x", "limit": "5"}, "limit"),
    ("memory_search", {"query": "x", "limit": 5.5}, "limit"),
    ("memory_search", {"query": 5}, "query"),
    ("memory_search", {"query": "x", "limit": 0}, "limit"),
    ("memory_search", {"query": "x", "kind": "credential"}, "kind"),
    ("memory_write", {"title": "t", "tags": '["a"]'}, "tags"),
    ("memory_write", {"title": "t", "tags": "a"}, "tags"),
    ("memory_write", {"title": True}, "title"),
    ("memory_write", {"title": "t", "kind": "credential"}, "kind"),
    ("memory_read", {}, "ref"),
    ("memory_read", {"ref": 12345678}, "ref"),
    ("memory_list", {"limit": False}, "limit"),
    ("memory_search", {"query": "x", "private": True}, "arguments"),
]


async def test_arguments_are_strict(connect: Connect, grant: Callable[..., str]) -> None:
    # One server answers every case: each is a separate call, so one cannot mask another.
    token = grant("read_write")
    async with connect(token) as client:
        for tool, arguments, field in STRICT_CASES:
            case = f"{tool} {arguments}"
            message = await client.fail(tool, arguments)
            assert message.startswith(f"invalid arguments for {tool}:"), (case, message)
            assert f"{field}:" in message, (case, message)
            for value in arguments.values():
                if isinstance(value, str) and len(value) > 1:
                    assert value not in message, case  # rejected values are not echoed
        # The server is still healthy after every refusal.
        assert "items" in await client.call("memory_list", {})


async def test_secret_references_and_protected_cards_cannot_be_written(
    store: Memories, connect: Connect, grant: Callable[..., str]
) -> None:
    store.ok("sudo")
    secret = "hunter2-but-longer-9f8e7d"
    made = store.ok(
        "put",
        "--card-type",
        "knowledge",
        "--title",
        "Deploy key card",
        "-",
        input=f"the key is {secret}\n",
    )
    store.ok("protect", made["short_id"], "--label", "deploykey", input=secret)
    protected = store.ok(
        "protected-card",
        "GitHub",
        "--label",
        "github",
        "--kind",
        "token",
        "--secret-stdin",
        input="ghp_canary000000000000000000000000000000\n",
    )
    token = grant("read_write")
    async with connect(token) as client:
        refused = await client.fail(
            "memory_write", {"ref": made["short_id"], "kind": "card", "body": "replaced"}
        )
        assert refused.startswith("denied:")
        card_id = protected.get("short_id") or protected["card"][:8]
        refused = await client.fail(
            "memory_write", {"ref": card_id, "kind": "card", "title": "taken over"}
        )
        assert refused.startswith("denied:")
        # A new protected card is refused by the vault: generic writes cannot attach secrets.
        refused = await client.fail(
            "memory_write",
            {
                "kind": "card",
                "card_type": "protected_card",
                "title": "sneaky",
                "metadata": {"label": "x"},
            },
        )
        assert refused.startswith(("invalid_input:", "denied:"))
        shown = await client.call("memory_read", {"ref": made["short_id"]})
        assert "{{secret:deploykey}}" in shown["content"]["body"]
        assert secret not in json.dumps(shown)


async def test_start_up_answers_without_a_daemon_and_starts_none(connect: Connect) -> None:
    from memories.config import load_settings
    from memories.daemon.launcher import daemon_pid

    settings = load_settings()
    async with connect("mem_grant_" + "C" * 43, MEMORIES_NO_AUTOSTART="1") as client:
        tools = await client.session.list_tools()
        assert len(tools.tools) == len(TOOL_NAMES)
        assert not settings.socket_path.exists()
        # The first call looks for the daemon; with autostart off it says none runs.
        message = await client.fail("memory_list", {})
        assert message.startswith("unavailable:")
    assert daemon_pid(settings) is None
