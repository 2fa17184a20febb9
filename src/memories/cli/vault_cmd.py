"""vault create and vault list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import Column, clean_line, console, emit_json, fitted_table

__all__: list[str] = []


@cli.group()
def vault() -> None:
    """Create and list vaults (separate collections with their own keys).

    Your personal vault exists from `memories init`; commands use it unless given --vault.
    """


@vault.command("create")
@click.argument("name")
@click.option("--local", is_flag=True, help="Keep the vault on this device only (never synced).")
@json_option
@reports_errors
def vault_create(name: str, local: bool, as_json: bool) -> None:
    """Create a vault called NAME.

    \b
    Examples:
      memories vault create work
      memories vault create scratch --local
    """
    from memories.service.requests import VaultCreateRequest

    response = call(VaultCreateRequest(op="vault_create", name=name, local=local))
    if as_json:
        emit_json(response)
        return
    console.print(
        f"created vault {clean_line(response.get('name'), 60)} ({clean_line(response.get('id'))})"
    )


@vault.command("list")
@json_option
@reports_errors
def vault_list(as_json: bool) -> None:
    """List the vaults this device can use.

    \b
    Example:
      memories vault list
    """
    from memories.service.requests import VaultListRequest

    response = call(VaultListRequest(op="vault_list"))
    if as_json:
        emit_json(response)
        return
    vaults = [v for v in response.get("vaults", []) if isinstance(v, Mapping)]
    console.print(_vaults_table(vaults))


def _vaults_table(vaults: list[Mapping[str, Any]]) -> Table:
    rows = []
    for item in vaults:
        flags = [name for name in ("personal", "local") if item.get(name)]
        rows.append(
            [
                Text(clean_line(item.get("name"), 64)),
                Text(clean_line(item.get("id"), 70)),
                Text(clean_line(item.get("role"), 20)),
                Text(" ".join(flags)),
                Text(clean_line(item.get("created_at"), 10)),
            ]
        )
    columns = [
        Column("name", cap=64, flexible=True),
        Column("id", cap=70, style="cyan"),
        Column("role", cap=20),
        Column("flags", cap=16),
        Column("created", cap=10),
    ]
    return fitted_table(columns, rows)
