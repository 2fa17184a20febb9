"""grant create, grant ls and grant revoke: tokens that let an MCP client use the vault."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import click
from rich.table import Table
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import Column, clean_line, console, emit_json, error_console, fitted_table
from memories.errors import UsageError

__all__ = ["SCOPES", "parse_duration"]

#: The grant scopes, spelled out so `memories --help` loads no request models; a test keeps
#: them equal to ``memories.service.grants.GRANT_SCOPES``.
SCOPES: Final = ("read", "write", "read_write", "read_write_delete", "allow_all")

_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION: Final = re.compile(r"(?:\d{1,9}[smhdw])+")
_PART: Final = re.compile(r"(\d{1,9})([smhdw])")
_BAD_DURATION: Final = (
    "--expires takes a number and a unit (s, m, h, d or w), such as 30d, 12h, 90m or 1d12h"
)
_ONCE: Final = (
    "This token is shown only once and cannot be read back; store it where the client "
    "reads it (an environment variable such as MEMORIES_MCP_TOKEN). `memories grant revoke` "
    "ends it."
)


def parse_duration(text: str) -> int:
    """Seconds in a duration such as ``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or ``1d12h``.

    Raises:
        UsageError: the text is not such a duration, is zero, or is longer than ten years. The
            message does not repeat the text.
    """
    from memories.service.grants import MAX_EXPIRES_SECONDS

    compact = text.strip().lower()
    if not _DURATION.fullmatch(compact):
        raise UsageError(_BAD_DURATION)
    seconds = sum(int(number) * _UNITS[unit] for number, unit in _PART.findall(compact))
    if seconds <= 0:
        raise UsageError("--expires must be longer than zero; leave it out for no expiry")
    if seconds > MAX_EXPIRES_SECONDS:
        raise UsageError("--expires can be at most ten years (3660d)")
    return seconds


@cli.group()
def grant() -> None:
    """Grant an MCP client (an AI agent) access to vaults, and take it back.

    A grant is a token bound to vaults and a scope: read, write, read_write,
    read_write_delete or allow_all. Whatever the scope, an MCP client never gets credential
    values, secrets, private memories, the clipboard, process execution or new grants.
    Creating a grant needs `memories sudo`.
    """


@grant.command("create")
@click.option("--name", required=True, help="A name for the client, unique among live grants.")
@click.option(
    "--vault",
    "vaults",
    multiple=True,
    help="A vault the client may use (name or id); repeat for more. Default: your personal vault.",
)
@click.option(
    "--scope",
    required=True,
    type=click.Choice(SCOPES),
    help="What the client may do in those vaults.",
)
@click.option(
    "--expires",
    metavar="DURATION",
    help="End the grant after this long: 30d, 12h, 90m, 2w, 1d12h. Default: until revoked.",
)
@json_option
@reports_errors
def grant_create(
    name: str, vaults: tuple[str, ...], scope: str, expires: str | None, as_json: bool
) -> None:
    """Create a grant and print its token, once.

    \b
    Examples:
      memories sudo
      memories grant create --name claude-code --scope read_write
      memories grant create --name ci --vault work --scope read --expires 30d
    """
    from memories.service.requests import GrantCreateRequest

    seconds = None if expires is None else parse_duration(expires)
    request = GrantCreateRequest(
        op="grant_create",
        name=name,
        vaults=list(vaults),
        scope=scope,  # type: ignore[arg-type]  # click.Choice checked it
        expires_seconds=seconds,
    )
    response = call(request)
    token = response.get("token")
    view = response.get("grant")
    if not isinstance(token, str) or not isinstance(view, Mapping):
        raise UsageError("the daemon's answer has no token; run matching client and daemon")
    error_console.print(f"[bold yellow]warning:[/] {_ONCE}", highlight=False)
    if as_json:
        emit_json(response)
        return
    expiry = view.get("expires_at") or "never"
    error_console.print(
        f"created grant {clean_line(view.get('name'), 64)} ({clean_line(view.get('id'), 40)}), "
        f"scope {clean_line(view.get('scope'), 20)}, expires {clean_line(expiry, 30)}",
        highlight=False,
    )
    # The token alone on stdout, so `TOKEN=$(memories grant create ...)` captures just it.
    click.echo(token)


@grant.command("ls")
@json_option
@reports_errors
def grant_ls(as_json: bool) -> None:
    """List grants, live, expired and revoked (tokens are never shown again).

    \b
    Example:
      memories grant ls
    """
    from memories.service.requests import GrantListRequest

    response = call(GrantListRequest(op="grant_list"))
    if as_json:
        emit_json(response)
        return
    grants = [g for g in response.get("grants", []) if isinstance(g, Mapping)]
    if not grants:
        console.print("no grants yet; create one with `memories grant create`")
        return
    console.print(_grants_table(grants))


@grant.command("revoke")
@click.argument("grant_ref", metavar="NAME|ID")
@json_option
@reports_errors
def grant_revoke(grant_ref: str, as_json: bool) -> None:
    """Revoke a grant at once: its client's next request is refused.

    \b
    Examples:
      memories grant revoke claude-code
      memories grant revoke 1a2b3c4d
    """
    from memories.service.requests import GrantRevokeRequest

    response = call(GrantRevokeRequest(op="grant_revoke", grant=grant_ref))
    if as_json:
        emit_json(response)
        return
    view = response.get("grant")
    if isinstance(view, Mapping):
        console.print(
            f"revoked grant {clean_line(view.get('name'), 64)} ({clean_line(view.get('id'), 40)})"
        )


def _state(item: Mapping[str, Any], now: datetime) -> str:
    if item.get("revoked_at"):
        return "revoked"
    expires = item.get("expires_at")
    if isinstance(expires, str):
        try:
            when = datetime.fromisoformat(expires.replace("Z", "+00:00"))
        except ValueError:
            return "?"
        if when <= now:
            return "expired"
    return "live"


def _grants_table(grants: list[Mapping[str, Any]]) -> Table:
    now = datetime.now(UTC)
    rows = []
    for item in grants:
        vaults = item.get("vaults")
        vault_text = ", ".join(str(v)[:8] for v in vaults) if isinstance(vaults, list) else ""
        rows.append(
            [
                Text(clean_line(item.get("name"), 64)),
                Text(clean_line(item.get("id"), 40)[:8]),
                Text(clean_line(item.get("scope"), 20)),
                Text(clean_line(vault_text, 80)),
                Text(_state(item, now)),
                Text(clean_line(item.get("created_at"), 10)),
                Text(clean_line(item.get("expires_at") or "never", 20)),
            ]
        )
    columns = [
        Column("name", cap=64, flexible=True),
        Column("id", cap=8, style="cyan"),
        Column("scope", cap=20),
        Column("vaults", cap=80, flexible=True),
        Column("state", cap=8),
        Column("created", cap=10),
        Column("expires", cap=20),
    ]
    return fitted_table(columns, rows)
