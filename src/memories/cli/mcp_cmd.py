"""mcp: serve the vault to one AI client over MCP on stdin/stdout, with a grant token."""

from __future__ import annotations

import logging
import os
import re
import stat
import sys
from pathlib import Path
from typing import Final

import click

from memories.cli import cli
from memories.cli.common import DEBUG_ENV, fail, state

__all__ = ["TOKEN_ENV", "read_token", "read_token_file"]

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


_MAX_TOKEN_FILE = 4096


def read_token_file(path: Path) -> str:
    """The grant token in ``path``: a regular file of this user's, readable by nobody else
    (as ``memories connect`` writes it), holding the token and at most one line break.

    Raises:
        click.UsageError: the file is missing, a link or not a regular file, belongs to
            someone else, can be read or written by others, or does not hold a token (its
            content is never shown).
    """
    shown = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise click.UsageError(f"no token file at {shown}; run `memories connect` again") from None
    except OSError as exc:
        raise click.UsageError(
            f"cannot read the token file {shown} ({exc.strerror or 'not a regular file'})"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise click.UsageError(f"the token file {shown} is not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise click.UsageError(
                f"the token file {shown} must be yours and private (chmod 600 {shown})"
            )
        raw = handle.read(_MAX_TOKEN_FILE + 1)
    try:
        token = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError:
        token = ""
    if not _TOKEN.fullmatch(token):
        raise click.UsageError(f"the token file {shown} does not hold a grant token")
    return token


@cli.command("mcp")
@click.option(
    "--token-env",
    default=TOKEN_ENV,
    show_default=True,
    metavar="NAME",
    help="The environment variable that holds the grant token.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Read the grant token from this private (0600) file instead, as `memories connect` "
    "sets it up.",
)
def mcp_cmd(token_env: str, token_file: Path | None) -> None:
    """Serve the vault to an AI client over MCP (JSON-RPC on stdin/stdout).

    The client is allowed what its grant allows: create one with `memories grant create
    --name NAME --vault V --scope read|write|read_write|read_write_delete|allow_all` and give
    the printed token to the client in MEMORIES_MCP_TOKEN (or the variable --token-env
    names, or a private file --token-file names; never a config file). The daemon starts on
    the first tool call when none is running; secrets, credentials and private memories are
    never served. Logs go to stderr; stdout carries only the protocol.

    \b
    Example (Claude Code):
      claude mcp add memories --env MEMORIES_MCP_TOKEN=... -- memories mcp
    """
    try:
        if token_file is not None:
            if token_env != TOKEN_ENV:
                raise click.UsageError("give --token-env or --token-file, not both")
            token = read_token_file(token_file.expanduser())
        else:
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
