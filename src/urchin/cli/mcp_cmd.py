"""mcp: serve the journal to AI agents over MCP on stdin/stdout."""

from __future__ import annotations

import logging
import os
import sys

from urchin.cli import cli
from urchin.cli.common import load, reports_errors

_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def _log_level(raw: str | None) -> int:
    """``URCHIN_LOG`` as a level: a bare name, or the last ``target=level`` of a filter."""
    if not raw:
        return logging.WARNING
    last = raw.split(",")[-1].split("=")[-1].strip().lower()
    return _LEVELS.get(last, logging.WARNING)


@cli.command("mcp")
@reports_errors
def mcp_cmd() -> None:
    """Serve the journal to AI agents over MCP (JSON-RPC on stdin/stdout).

    Register it with an agent, e.g. `claude mcp add urchin -- urchin mcp`. Logs go to
    stderr (level from URCHIN_LOG, default warning); stdout carries only the protocol.
    """
    # Before the SDK is imported: it configures logging only when nobody has.
    logging.basicConfig(
        stream=sys.stderr,
        level=_log_level(os.environ.get("URCHIN_LOG")),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = load()
    # Imported here so other commands do not pay for loading the MCP SDK.
    from urchin.mcp import serve

    serve(settings)
