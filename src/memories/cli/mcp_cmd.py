"""mcp: serve the vault to one AI client over MCP on stdin/stdout, with a grant token."""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Final

import click

from memories.cli import cli
from memories.cli.common import DEBUG_ENV, fail, state

__all__ = ["TOKEN_ENV", "read_token"]

#: Where `memories mcp` reads its grant token unless --token-env names another variable.
TOKEN_ENV: Final = "MEMORIES_MCP_TOKEN"  # noqa: S105 - the variable's name, not a token
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TOKEN = re.compile(r"[\x21-\x7e]{16,512}")


def read_token(name: str) -> str:
    """The grant token from the environment variable ``name``, removed from the environment.

    Raises:
        click.UsageError: the name is not a variable name, the variable is unset or empty,
            or its value cannot be a grant token (the value is never shown).
    """
    if not _ENV_NAME.fullmatch(name):
        raise click.UsageError("--token-env takes an environment variable name, like MY_TOKEN")
    # `memories` takes every secret-looking MEMORIES_* variable out of the environment as it
    # starts; any other variable is taken here, so no child (the daemon) inherits it.
    token = state().secret(name)
    if token is None:
        from memories.daemon.environment import take_variable

        token = take_variable(name)
    if not token:
        raise click.UsageError(
            f"no grant token: set {name} to the token `memories grant create` printed "
            "(tokens never come from a config file)"
        )
    if not _TOKEN.fullmatch(token):
        raise click.UsageError(
            f"{name} does not hold a grant token (16 to 512 printable characters, no spaces)"
        )
    return token


@cli.command("mcp")
@click.option(
    "--token-env",
    default=TOKEN_ENV,
    show_default=True,
    metavar="NAME",
    help="The environment variable that holds the grant token.",
)
def mcp_cmd(token_env: str) -> None:
    """Serve the vault to an AI client over MCP (JSON-RPC on stdin/stdout).

    The client is allowed what its grant allows: create one with `memories grant create
    --name NAME --vault V --scope read|write|read_write|read_write_delete|allow_all` and give
    the printed token to the client in MEMORIES_MCP_TOKEN (or the variable --token-env
    names). The daemon starts on the first tool call when none is running; secrets,
    credentials and private memories are never served. Logs go to stderr; stdout carries
    only the protocol.

    \b
    Example (Claude Code):
      claude mcp add memories --env MEMORIES_MCP_TOKEN=... -- memories mcp
    """
    try:
        token = read_token(token_env)
    except click.UsageError as exc:
        fail(exc.format_message(), "invalid_input", 2, as_json=False)
    # Before the SDK is imported: it configures logging only when nobody has.
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if os.environ.get(DEBUG_ENV) else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from memories.config import load_settings
    from memories.mcp.connection import DaemonLink
    from memories.mcp.server import serve

    serve(DaemonLink(load_settings, token, autostart=state().autostart))
