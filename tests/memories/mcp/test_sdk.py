"""What memories.mcp.sdk assumes about the MCP SDK's internals; fails loudly on a change.

If one of these fails after an SDK upgrade, memories.mcp.sdk needs updating before the
server can be trusted to validate arguments strictly again.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import anyio
import pytest
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import Field

from memories.mcp.sdk import argument_messages, argument_problems, resource_listing, strict_tool

HINTS = ToolAnnotations(read_only_hint=True)


async def sample(
    count: Annotated[int, Field(ge=1, le=10)],
    ratio: float = 0.5,
    tags: list[str] | None = None,
    flag: bool = False,
) -> str:
    """A sample tool."""
    return f"{count} {ratio} {tags} {flag}"


def make() -> Tool:
    return strict_tool(sample, name="sample", title="Sample", description="d", annotations=HINTS)


def test_the_sdk_still_has_the_internals_we_replace() -> None:
    tool = Tool.from_function(sample, name="sample")
    assert isinstance(tool.fn_metadata, FuncMetadata)
    assert issubclass(tool.fn_metadata.arg_model, ArgModelBase)
    for name in ("arg_model", "output_schema", "output_model", "wrap_output"):
        assert name in FuncMetadata.model_fields, name
    assert callable(FuncMetadata.pre_parse_json)
    assert "parameters" in Tool.model_fields
    # Middleware sees the method and the raw params of every request.
    fields = {f for f in getattr(ServerRequestContext, "__dataclass_fields__", {})}
    assert {"method", "params"} <= fields or {"method", "params"} <= set(
        inspect.get_annotations(ServerRequestContext)
    )
    assert "middleware" in inspect.signature(MCPServer).parameters
    # serve_stdio: the session loop of the low-level server, fed by stdio_server's streams.
    lowlevel = getattr(MCPServer(name="probe"), "_lowlevel_server", None)
    assert callable(getattr(lowlevel, "run", None))
    assert callable(getattr(lowlevel, "create_initialization_options", None))
    assert {"stdin", "stdout"} <= set(inspect.signature(stdio_server).parameters)


def test_a_strict_tool_advertises_a_closed_schema() -> None:
    tool = make()
    assert tool.parameters["additionalProperties"] is False
    assert tool.parameters["properties"]["count"]["type"] == "integer"
    assert tool.annotations == HINTS


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"count": True}, "count:"),
        ({"count": "5"}, "count:"),
        ({"count": 5.5}, "count:"),
        ({"count": 0}, "count:"),
        ({"count": 1, "ratio": True}, "ratio:"),
        ({"count": 1, "ratio": "0.5"}, "ratio:"),
        ({"count": 1, "tags": '["a"]'}, "tags:"),
        ({"count": 1, "flag": 1}, "flag:"),
        ({"count": 1, "flag": "true"}, "flag:"),
        ({"count": 1, "extra": "x"}, "arguments: unknown argument"),
        ({}, "count:"),
    ],
)
def test_values_outside_the_schema_are_rejected_without_echo(
    arguments: dict[str, Any], problem: str
) -> None:
    message = argument_problems(make(), arguments)
    assert message is not None and message.startswith("invalid arguments for sample: ")
    assert problem in message
    assert "extra" not in message.removeprefix("invalid arguments for sample: ")
    assert '["a"]' not in message


def test_values_inside_the_schema_pass_and_run() -> None:
    tool = make()
    assert argument_problems(tool, {"count": 3, "ratio": 1, "tags": ["a"], "flag": True}) is None

    async def main() -> str:
        server: MCPServer[Any] = MCPServer(name="t", tools=[tool])
        result = await server.call_tool("sample", {"count": 3, "ratio": 2, "flag": True})
        return str(result)

    assert "3 2.0 None True" in anyio.run(main)


def test_the_middlewares_are_callables_the_server_accepts() -> None:
    async def none() -> list[dict[str, Any]]:
        return []

    server: MCPServer[Any] = MCPServer(
        name="t",
        tools=[make()],
        middleware=[argument_messages({"sample": make()}), resource_listing(none)],
    )
    assert len(server.middleware) >= 2
