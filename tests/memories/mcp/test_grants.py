"""What each grant lets `memories mcp` do, checked over the real server and daemon.

Expectations come from the request declarations: a tool call is allowed exactly when every
op it sends declares an MCP capability that the grant's scope holds
(``Needs.mcp`` against ``SCOPE_CAPABILITIES``), never from a table copied here.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, get_args

import pytest
from tests.memories.cli.conftest import PASSWORD, Memories
from tests.memories.mcp.conftest import Client, Owner, server_env
from tests.support import script

from memories.mcp.tools import TOOL_REQUESTS
from memories.service.grants import SCOPE_CAPABILITIES, GrantScope
from memories.service.requests import REQUEST_TYPES, op_name

pytestmark = pytest.mark.anyio

Connect = Callable[..., AbstractAsyncContextManager[Client]]
SCOPES: tuple[GrantScope, ...] = get_args(GrantScope)
NEEDS = {op_name(model): model.NEEDS for model in REQUEST_TYPES}


def allowed(scope: GrantScope, ops: tuple[str, ...]) -> bool:
    """Whether the declarations let a grant of ``scope`` send every op in ``ops``."""
    capabilities = SCOPE_CAPABILITIES[scope]
    return all(NEEDS[op].mcp is not None and NEEDS[op].mcp in capabilities for op in ops)


def seed(owner: Owner, scope: str) -> dict[str, str]:
    """A memory, two cards and a memory to delete, made by the owner for one scope's run."""
    return {
        "memory": owner.put(f"Runbook {scope}", f"restart the {scope} queue"),
        "card": owner.put(f"Queue {scope}", card_type="knowledge"),
        "other": owner.put(f"Broker {scope}", card_type="knowledge"),
        "doomed": owner.put(f"Old note {scope}", "obsolete"),
    }


def calls(ids: dict[str, str]) -> list[tuple[str, dict[str, Any], tuple[str, ...]]]:
    """Every tool, with arguments, and the ops that call sends."""
    return [
        ("memory_search", {"query": "queue"}, ("search",)),
        ("memory_retrieve", {"query": "queue"}, ("retrieve",)),
        ("memory_ask", {"question": "How do I restart the queue?"}, ("ask",)),
        ("memory_read", {"ref": ids["memory"]}, ("read",)),
        ("memory_list", {}, ("list",)),
        ("memory_history", {"ref": ids["memory"]}, ("history",)),
        ("memory_graph", {}, ("graph",)),
        ("memory_write", {"title": "A new memory"}, ("put",)),
        (
            "memory_write",
            {"kind": "card", "card_type": "knowledge", "title": "A new card"},
            ("card_put",),
        ),
        ("memory_write", {"ref": ids["memory"], "body": "edited"}, ("read", "update")),
        ("memory_link", {"source": ids["card"], "target": ids["other"]}, ("link",)),
        ("memory_delete", {"ref": ids["doomed"]}, ("tombstone",)),
    ]


@pytest.mark.timeout(400)
async def test_every_scope_allows_exactly_what_the_requests_declare(
    owner: Owner, connect: Connect
) -> None:
    outcomes: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for scope in SCOPES:
        ids = seed(owner, scope)
        token = owner.grant(scope)
        async with connect(token) as client:
            for tool, arguments, ops in calls(ids):
                assert set(ops) <= set(TOOL_REQUESTS[tool]), (tool, ops)
                result = await client.raw(tool, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                if result.is_error and text.startswith("denied:"):
                    outcome = "denied"
                elif result.is_error and not text.startswith("unavailable:"):
                    outcome = f"failed: {text}"  # neither allowed nor denied: a bug
                else:
                    outcome = "allowed"  # ask without a model says it is unavailable
                outcomes[(scope, tool, ops)] = outcome
    expected = {key: "allowed" if allowed(key[0], key[2]) else "denied" for key in outcomes}
    assert outcomes == expected
    # The matrix is not trivial: every scope allows something and every tool is denied to
    # some scope (allow_all and read_write_delete allow all of them).
    assert {tool for (scope, tool, _), o in outcomes.items() if o == "denied"} >= {
        "memory_search",
        "memory_write",
        "memory_delete",
    }


async def test_a_vault_outside_the_grant_looks_like_nothing(owner: Owner, connect: Connect) -> None:
    owner.call({"op": "vault_create", "name": "work"})
    personal = owner.put("Personal plan", "the personal plan")
    work = owner.put("Work plan", "the work plan", vault="work")
    token = owner.grant("read_write", "work")
    async with connect(token) as client:
        found = await client.call("memory_search", {"query": "plan", "vault": "work"})
        assert [item["id"] for item in found["items"]] == [work]
        outside = await client.fail("memory_search", {"query": "plan", "vault": "personal"})
        missing = await client.fail("memory_search", {"query": "plan", "vault": "nosuchvault"})
        assert outside.startswith("not_found:")
        assert outside == missing  # no existence oracle
        assert (await client.fail("memory_read", {"ref": personal})).startswith("not_found:")


async def test_revoking_a_grant_stops_a_connected_client(
    store: Memories, connect: Connect, grant: Callable[..., str]
) -> None:
    store.ok("put", "--title", "Queue runbook", "restart the queue")
    token = grant("read", name="doomed client")
    async with connect(token) as client:
        assert (await client.call("memory_search", {"query": "queue"}))["count"] == 1
        store.ok("grant", "revoke", "doomed client")
        assert await client.fail("memory_search", {"query": "queue"}) == "unauthorized"
        assert await client.fail("memory_list", {}) == "unauthorized"


async def test_locking_stops_a_connected_client_until_unlocked(
    store: Memories, owner: Owner, connect: Connect
) -> None:
    owner.put("Queue runbook", "restart the queue")
    token = owner.grant("read")
    async with connect(token) as client:
        assert (await client.call("memory_list", {}))["count"] == 1
        store.ok("lock")
        message = await client.fail("memory_list", {})
        assert message.startswith("locked:")
        assert "Queue runbook" not in message
        store.ok("unlock")
        assert (await client.call("memory_list", {}))["count"] == 1


async def test_a_wrong_token_is_unauthorized_and_nothing_more(
    owner: Owner, connect: Connect
) -> None:
    owner.put("Queue runbook", "restart the queue")
    async with connect("mem_grant_" + "A" * 43) as client:
        # Start-up never needs the daemon: the tools are listed all the same.
        assert len((await client.session.list_tools()).tools) == len(TOOL_REQUESTS)
        assert await client.fail("memory_search", {"query": "queue"}) == "unauthorized"
        assert await client.fail("memory_read", {"ref": "00000000"}) == "unauthorized"


async def test_an_expired_grant_is_unauthorized(owner: Owner, connect: Connect) -> None:
    owner.put("Queue runbook", "restart the queue")
    token = owner.grant("read", expires_seconds=2)
    async with connect(token) as client:
        deadline = time.monotonic() + 30
        while True:  # the grant expires on the daemon's clock; wait for it, bounded
            result = await client.raw("memory_list", {})
            if result.is_error:
                break
            assert time.monotonic() < deadline, "the grant never expired"
        assert result.content[0].text == "unauthorized"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("env", "args", "says"),
    [
        ({}, [], "no grant token: set MEMORIES_MCP_TOKEN"),
        ({"MEMORIES_MCP_TOKEN": ""}, [], "no grant token"),
        ({"MEMORIES_MCP_TOKEN": "short"}, [], "does not hold a grant token"),
        ({"MEMORIES_MCP_TOKEN": "has spaces in it, quite a few"}, [], "does not hold a grant"),
        ({"OTHER": "mem_grant_" + "B" * 43}, [], "no grant token"),
        ({}, ["--token-env", "MY_TOKEN"], "set MY_TOKEN"),
        ({}, ["--token-env", "1-bad name"], "--token-env takes an environment variable name"),
    ],
)
def test_a_missing_or_malformed_token_stops_the_server_with_a_message(
    env: dict[str, str], args: list[str], says: str
) -> None:
    proc = subprocess.run(
        [script("memories"), "mcp", *args],
        input=b"",
        capture_output=True,
        env=server_env(None, **env),
        timeout=60,
        check=False,
    )
    stderr = proc.stderr.decode("utf-8")
    assert proc.returncode == 2
    assert proc.stdout == b""  # stdout is the protocol's alone
    assert says in " ".join(stderr.split())
    assert "Traceback" not in stderr
    for value in env.values():
        if len(value) > 6:
            assert value not in stderr


def test_the_token_can_come_from_another_variable(
    store: Memories, grant: Callable[..., str]
) -> None:
    del store
    token = grant("read")
    hello = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
    )
    proc = subprocess.run(
        [script("memories"), "mcp", "--token-env", "AGENT_MEMORY_TOKEN"],
        input=hello,
        capture_output=True,
        env=server_env(None, AGENT_MEMORY_TOKEN=token, MEMORIES_PASSWORD=PASSWORD),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert b'"serverInfo"' in proc.stdout
    assert token.encode() not in proc.stdout + proc.stderr


async def test_the_token_can_come_from_a_private_file(
    owner: Owner, connect: Connect, tmp_path: Path
) -> None:
    owner.put("Queue runbook", "restart the queue")
    path = tmp_path / "client.token"
    path.write_text(owner.grant("read") + "\n", encoding="utf-8")
    path.chmod(0o600)
    async with connect(None, "--token-file", str(path)) as client:
        assert (await client.call("memory_list", {}))["count"] == 1


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ("missing", "no token file at"),
        ("readable", "must be yours and private"),
        ("link", "cannot read the token file"),
        ("garbage", "does not hold a grant token"),
        ("both", "not both"),
    ],
)
def test_a_bad_token_file_stops_the_server_with_a_message(
    tmp_path: Path, setup: str, says: str
) -> None:
    token = "mem_grant_" + "D" * 43
    path = tmp_path / "client.token"
    args = ["--token-file", str(path)]
    if setup in ("readable", "both", "link"):
        real = tmp_path / "real.token"
        real.write_text(token, encoding="utf-8")
        real.chmod(0o644 if setup == "readable" else 0o600)
        if setup == "link":
            path.symlink_to(real)
        else:
            real.rename(path)
    if setup == "garbage":
        path.write_bytes(b"\xff\xfe not a token \n")
        path.chmod(0o600)
    if setup == "both":
        args += ["--token-env", "OTHER"]
    proc = subprocess.run(
        [script("memories"), "mcp", *args],
        input=b"",
        capture_output=True,
        env=server_env(None),
        timeout=60,
        check=False,
    )
    stderr = " ".join(proc.stderr.decode("utf-8").split())
    assert proc.returncode == 2, stderr
    assert says in stderr
    assert token not in stderr and "Traceback" not in stderr
