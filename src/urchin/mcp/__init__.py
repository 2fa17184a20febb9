"""``urchin mcp``: the journal served to AI agents over MCP (JSON-RPC on stdin/stdout).

This package is the only part of urchin that imports the MCP SDK.

Layout:

- :mod:`~urchin.mcp.tools`: the ten tools: argument types, result shapes, behaviour.
- :mod:`~urchin.mcp.server`: the tool table, exact argument checking, the stdio loop.

Start-up loads the SDK and nothing heavy of urchin: the journal queries, the index,
reflection and ranking are imported by the first tool that needs them.
"""

from __future__ import annotations

from urchin.mcp.server import build_server, serve
from urchin.mcp.tools import CONTENT_CHARS, TOOL_NAMES, UrchinTools, compact_event

__all__ = ["CONTENT_CHARS", "TOOL_NAMES", "UrchinTools", "build_server", "compact_event", "serve"]
