"""No canary leaves the vault through `memories mcp`, whatever an agent asks, for any grant.

The vault holds canaries in a credential, a private memory, a protected card and behind a
card's secret reference, and memories whose text tries to talk the agent into revealing
them. For every grant scope an agent-style sequence calls every read-like tool (and, where
the grant writes, tries to edit the secret-bearing cards) with queries aimed at the canaries;
every byte of every answer, error or resource is checked.

The suite runs ``MEMORIES_MCP_LEAK_CALLS`` calls per scope (default 200);
``python -m benchmarks mcp`` runs the full 2,000 per scope.
"""

from __future__ import annotations

import os
from typing import Any, get_args

import pytest
from mcp.shared.exceptions import MCPError
from tests.memories.cli.conftest import PASSWORD
from tests.memories.mcp.conftest import Client, Owner
from tests.memories.mcp.leaks import agent_calls, leaked, seed_canaries

from memories.service.grants import SCOPE_CAPABILITIES, GrantScope

pytestmark = pytest.mark.anyio

CALLS = int(os.environ.get("MEMORIES_MCP_LEAK_CALLS", "200"))


async def run_agent(client: Client, calls: list[tuple[str, dict[str, Any]]]) -> int:
    """Make every call, recording each answer's bytes on the client; returns error count."""
    errors = 0
    for name, arguments in calls:
        if name == "resources/list":
            try:
                listed = await client.session.list_resources()
            except MCPError as exc:
                client.received.append(str(exc))
                errors += 1
            else:
                client.received.append(listed.model_dump_json())
        elif name == "resources/read":
            try:
                read = await client.session.read_resource(f"memories://card/{arguments['ref']}")
            except MCPError as exc:
                client.received.append(str(exc))
                errors += 1
            else:
                client.received.append(read.model_dump_json())
        else:
            result = await client.raw(name, arguments)
            errors += bool(result.is_error)
    return errors


@pytest.mark.timeout(900)
@pytest.mark.parametrize("scope", get_args(GrantScope))
async def test_no_canary_in_any_answer(owner: Owner, connect: Any, scope: GrantScope) -> None:
    seeded = seed_canaries(owner.call, PASSWORD)
    token = owner.grant(scope)
    writes = "write" in SCOPE_CAPABILITIES[scope]
    async with connect(token) as client:
        calls = agent_calls(seeded, CALLS, writes=writes)
        errors = await run_agent(client, calls)
    received = client.received
    assert len(received) == CALLS
    assert leaked(received) == []
    joined = "\n".join(received)
    if "read" in SCOPE_CAPABILITIES[scope]:
        # Not vacuous: the agent did read the vault, injections and secret markers included.
        assert "Maintenance note" in joined
        assert "{{secret:deploykey}}" in joined
        assert '\\"untrusted\\":true' in joined  # inside the JSON text block
        assert errors < len(calls)
    else:
        assert "denied:" in joined
    # The owner still sees the secret-bearing cards unchanged: MCP could not edit them.
    card = owner.call({"op": "read", "ref": seeded.reference_card})
    assert card["revisions"] == 2  # the card, then protect_secret's replacement


def test_the_leak_check_finds_a_canary_in_any_form() -> None:
    assert leaked(['{"body": "x canary-private-memory-2d8e4f6a0c y"}']) == ["private"]
    assert leaked(["CANARY-CREDENTIAL-7F3A9C1E5B"]) == ["credential"]
    assert leaked(["only the tail: 9b1c3e5d7f"]) == ["protected"]
    assert leaked(["nothing here", "canary-"]) == []
