"""audit: the store's audit trail (who read or changed what, never the content)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import Column, clean_line, console, emit_json, fitted_table

__all__: list[str] = []


@cli.command()
@click.option(
    "-n",
    "--limit",
    default=50,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many of the newest entries to show.",
)
@json_option
@reports_errors
def audit(limit: int, as_json: bool) -> None:
    """Show the newest audit entries: reads, writes, unlocks and failures.

    Entries name ids and actions only, never content or secrets.

    \b
    Examples:
      memories audit
      memories audit -n 200 --json
    """
    response = call("audit_list", limit=limit)
    if as_json:
        emit_json(response)
        return
    entries = [e for e in response.get("entries", []) if isinstance(e, Mapping)]
    if not entries:
        console.print("no audit entries yet")
        return
    console.print(_audit_table(entries))


def _audit_table(entries: list[Mapping[str, Any]]) -> Table:
    rows = []
    for entry in entries:
        details = entry.get("details")
        text = (
            json.dumps(details, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if details
            else ""
        )
        rows.append(
            [
                Text(clean_line(entry.get("seq"), 12)),
                Text(clean_line(entry.get("at"), 40)[:19].replace("T", " ")),
                Text(clean_line(entry.get("action"), 40)),
                Text(clean_line(text, 300)),
            ]
        )
    columns = [
        Column("seq", cap=12, justify="right"),
        Column("at (UTC)", cap=19),
        Column("action", cap=40, style="cyan"),
        Column("details", cap=300, flexible=True),
    ]
    return fitted_table(columns, rows)
