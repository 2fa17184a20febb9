"""Every reach into the MCP SDK beyond its documented surface, in one place.

The SDK's public surface (``MCPServer``, ``ToolAnnotations``, ``ToolError``, the resource
decorator, ``middleware=``) is used where it is needed. What it does not offer, and this
module adds on top of its internals:

- **exact arguments**: the SDK validates tool arguments in pydantic's lax mode and decodes
  a string as JSON when the parameter is not a string, so ``true`` would pass for a number,
  ``"5"`` for an integer and ``"[\\"a\\"]"`` for a list. :func:`strict_tool` swaps the tool's
  argument model for a strict one that also refuses unknown arguments and keeps rejected
  values out of its messages (``FuncMetadata``, ``ArgModelBase``, ``Tool.fn_metadata``);
- **short argument errors**: :func:`argument_messages` rewrites the SDK's validation text
  into ``field: rule`` lines (context-tier middleware and its ``ctx.method``/``ctx.params``);
- **a dynamic resource list**: :func:`resource_listing` answers ``resources/list`` from the
  daemon instead of the SDK's static registry;
- **stdio without worker threads**: :func:`serve_stdio` runs the server's session loop
  (``MCPServer._lowlevel_server``) over the SDK's ``stdio_server`` fed with the event-loop
  pipes of :mod:`memories.mcp.pipes`, falling back to ``MCPServer.run("stdio")`` where stdin
  or stdout is not a pipe.

tests/memories/mcp/test_sdk.py checks each assumption and fails loudly when an SDK release
changes one of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, ValidationError

from memories.mcp.pipes import claimed_stdio

__all__ = [
    "INTERNAL_ERROR",
    "argument_messages",
    "argument_problems",
    "resource_listing",
    "serve_stdio",
    "strict_tool",
]

#: JSON-RPC's internal-error code, for a resource listing that failed.
INTERNAL_ERROR: Final = -32603


class _ExactArguments(FuncMetadata):
    """The SDK's argument handling without its JSON-in-a-string leniency."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def strict_tool(
    fn: Callable[..., Any],
    *,
    name: str,
    title: str,
    description: str,
    annotations: ToolAnnotations,
) -> Tool:
    """A tool whose arguments are validated exactly against its advertised schema.

    Strict types (no boolean for a number, no string for an integer, no JSON text for a list),
    unknown arguments refused, rejected values never quoted back.

    Raises:
        RuntimeError: the SDK no longer builds tools the way this module expects.
    """
    tool = Tool.from_function(
        fn, name=name, title=title, description=description, annotations=annotations
    )
    metadata = tool.fn_metadata
    base = metadata.arg_model
    if not issubclass(base, ArgModelBase):
        raise RuntimeError("the MCP SDK's tool argument model changed; update memories.mcp.sdk")
    config = ConfigDict(extra="forbid", strict=True, hide_input_in_errors=True)
    namespace = {"model_config": config, "__module__": __name__, "__doc__": base.__doc__}
    tool.fn_metadata = _ExactArguments(
        arg_model=cast(type[ArgModelBase], type(base.__name__, (base,), namespace)),
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
    tool.parameters["additionalProperties"] = False
    return tool


def argument_problems(tool: Tool, arguments: object) -> str | None:
    """Why ``arguments`` fail ``tool``'s schema, as ``field: rule`` lines; None if they pass."""
    if not isinstance(arguments, dict):
        return f"invalid arguments for {tool.name}: arguments must be an object"
    metadata = tool.fn_metadata
    try:
        metadata.arg_model.model_validate(metadata.pre_parse_json(arguments))
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False, include_context=False)[:8]:
            where = ".".join(str(part) for part in error["loc"]) or "arguments"
            if error["type"] == "extra_forbidden":
                where = "arguments"
                message = "unknown argument"
            else:
                message = error["msg"]
            problems.append(f"{where}: {message}")
        return f"invalid arguments for {tool.name}: " + "; ".join(problems)
    return None


def argument_messages(tools: Mapping[str, Tool]) -> ServerMiddleware[Any]:
    """Middleware that replaces the SDK's text for arguments that fail validation.

    The SDK's own message repeats pydantic's report (and, for unknown arguments, their
    names); ours names each declared argument and its rule only.
    """

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/call" or not isinstance(result, dict) or not result.get("isError"):
            return result
        params = ctx.params or {}
        name = params.get("name")
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return result
        message = argument_problems(tool, params.get("arguments") or {})
        if message is None:
            return result
        return {**result, "content": [{"type": "text", "text": message}]}

    return middleware


def resource_listing(
    list_resources: Callable[[], Awaitable[list[dict[str, Any]]]],
) -> ServerMiddleware[Any]:
    """Middleware that answers ``resources/list`` with what ``list_resources`` returns.

    Each item is a resource in the protocol's JSON form (``uri``, ``name``, ``title``,
    ``mimeType``...). A ``ValueError`` (raised for a failure worth showing) becomes a JSON-RPC
    error carrying its message.
    """

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "resources/list":
            return await call_next(ctx)
        try:
            items = await list_resources()
        except ValueError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from exc
        return {"resources": items}

    return middleware


def serve_stdio(server: MCPServer[Any], *, on_close: Callable[[], None] | None = None) -> None:
    """Serve ``server`` on stdin/stdout until the client closes stdin, then call ``on_close``
    (still on the event loop, so it may close the loop's transports).

    Raises:
        RuntimeError: the SDK no longer keeps its session loop where this module expects.
    """
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not callable(getattr(lowlevel, "run", None)):
        raise RuntimeError("the MCP SDK's server layout changed; update memories.mcp.sdk")

    async def run() -> None:
        try:
            async with claimed_stdio() as pipes:
                if pipes is None:
                    await server.run_stdio_async()
                    return
                reader, writer = pipes
                # stdio_server() takes any object with async line iteration, write and flush.
                async with stdio_server(reader, writer) as (read_stream, write_stream):  # type: ignore[arg-type]
                    await lowlevel.run(
                        read_stream, write_stream, lowlevel.create_initialization_options()
                    )
        finally:
            if on_close is not None:
                on_close()

    anyio.run(run)
