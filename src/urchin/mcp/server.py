"""The MCP server: the tool table, exact argument checking, and the stdio loop.

The SDK's own argument handling is narrowed here (:class:`_ExactArguments`) so a value
the advertised schema forbids is rejected, and its validation messages are rewritten
to name the argument and the rule, never the value.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import ConfigDict, ValidationError

from urchin import __version__
from urchin.mcp.tools import UrchinTools

if TYPE_CHECKING:
    from urchin.config import Settings
    from urchin.identity import Identity

__all__ = ["build_server", "serve"]

log = logging.getLogger(__name__)

_INSTRUCTIONS = (
    "urchin is the user's local activity journal: what they and their AI agents did in "
    "shells, git and agent sessions. Call urchin_workspace_context with the current repository "
    "path at the start of a session, urchin_search or urchin_semantic_search to find earlier "
    "work, and urchin_remember to record a decision worth keeping. urchin_ephemeral start stops "
    "all recording until end."
)


_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


def _tool_table(
    tools: UrchinTools, settings: Settings
) -> list[tuple[Callable[..., CallToolResult], str, str, ToolAnnotations]]:
    write = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    read = _READ.model_copy(update={"open_world_hint": False})
    return [
        (tools.status, "urchin_status", "Journal status", read),
        (tools.ingest, "urchin_ingest", "Record an event", write),
        (tools.recent_activity, "urchin_recent_activity", "Recent activity", read),
        (tools.project_context, "urchin_project_context", "Project context", read),
        (tools.search, "urchin_search", "Search the journal", read),
        (tools.workspace_context, "urchin_workspace_context", "Workspace context", read),
        (tools.remember, "urchin_remember", "Remember a decision", write),
        (
            tools.ephemeral,
            "urchin_ephemeral",
            "Ephemeral (burn) mode",
            # Starting it makes every later event vanish for good; clients should ask first.
            ToolAnnotations(
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        (
            tools.agent_reflect,
            "urchin_agent_reflect",
            "Reflect on a goal",
            write.model_copy(update={"open_world_hint": bool(settings.chat_url)}),
        ),
        (
            tools.semantic_search,
            "urchin_semantic_search",
            "Semantic search",
            read.model_copy(update={"open_world_hint": bool(settings.embedder_url)}),
        ),
    ]


class _ExactArguments(FuncMetadata):
    """The SDK's argument handling without its JSON-in-a-string leniency.

    The SDK decodes a string argument as JSON when the parameter is not a string
    (``"[\"a\"]"`` becomes a list), so a value the schema forbids would pass.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def _strict(tool: Tool) -> Tool:
    """Validate exactly against the advertised schema: unknown arguments and JSON text
    standing in for a list are rejected, and rejected values stay out of the messages."""
    metadata = tool.fn_metadata
    base = metadata.arg_model
    config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    namespace = {"model_config": config, "__module__": __name__, "__doc__": base.__doc__}
    tool.fn_metadata = _ExactArguments(
        arg_model=cast(type[ArgModelBase], type(base.__name__, (base,), namespace)),
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
    tool.parameters["additionalProperties"] = False
    return tool


def _argument_problems(tool: Tool, arguments: object) -> str | None:
    """A readable account of why ``arguments`` fail the tool's schema, or None if they pass."""
    if not isinstance(arguments, dict):
        return None
    metadata = tool.fn_metadata
    try:
        metadata.arg_model.model_validate(metadata.pre_parse_json(arguments))
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False, include_context=False)[:8]:
            where = ".".join(str(part) for part in error["loc"]) or "arguments"
            problems.append(f"{where}: {error['msg']}")
        return f"invalid arguments for {tool.name}: " + "; ".join(problems)
    return None


def _argument_messages(tools: Mapping[str, Tool]) -> ServerMiddleware[Any]:
    """Middleware that rewrites the SDK's argument-validation failures into short messages.

    The SDK's own text quotes pydantic's report; ours names each argument and rule only.
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
        message = _argument_problems(tool, params.get("arguments") or {})
        if message is None:
            return result
        return {**result, "content": [{"type": "text", "text": message}]}

    return middleware


_LevelName = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _level_name() -> _LevelName:
    # The SDK configures logging only if nobody has; hand it the level already in force.
    level = logging.getLogger().getEffectiveLevel()
    if level <= logging.DEBUG:
        return "DEBUG"
    if level <= logging.INFO:
        return "INFO"
    if level <= logging.WARNING:
        return "WARNING"
    return "ERROR" if level <= logging.ERROR else "CRITICAL"


def build_server(settings: Settings, identity: Identity | None = None) -> MCPServer[Any]:
    """The MCP server with its ten tools, ready to run on any transport.

    Raises:
        ConfigError: a configured redaction pattern is invalid.
    """
    from urchin.identity import Identity

    tools = UrchinTools(settings, identity or Identity.resolve())
    registered: dict[str, Tool] = {}
    for func, name, title, hints in _tool_table(tools, settings):
        description = inspect.cleandoc(func.__doc__ or title)
        tool = Tool.from_function(
            func, name=name, title=title, description=description, annotations=hints
        )
        registered[name] = _strict(tool)
    return MCPServer(
        name="urchin",
        title="urchin activity journal",
        version=__version__,
        instructions=_INSTRUCTIONS,
        tools=list(registered.values()),
        middleware=[_argument_messages(registered)],
        log_level=_level_name(),
    )


def serve(settings: Settings, identity: Identity | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    server = build_server(settings, identity)
    log.debug("urchin mcp serving %s", settings.journal_path)
    server.run("stdio")
