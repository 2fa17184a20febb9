"""vault project: write the day's activity into the Markdown vault's daily note."""

from __future__ import annotations

from datetime import date, datetime

import click

from urchin import paths
from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.cli.render import emit_json
from urchin.errors import UsageError
from urchin.projection import ProjectionResult, Window, project_daily_note

_DEFAULT_HOURS = 24.0
# A century: far beyond any journal, and well inside what a datetime can subtract.
_MAX_HOURS = 24.0 * 366 * 100


def _parse_day(ctx: click.Context, param: click.Parameter, value: str | None) -> date | None:
    """A calendar day written as YYYY-MM-DD; the error does not repeat the input."""
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise click.BadParameter("must be a real calendar day written as YYYY-MM-DD") from None


@cli.group()
def vault() -> None:
    """The Markdown vault (vault_root): daily notes that summarise the journal."""


@vault.command("project")
@click.option(
    "--hours",
    type=click.FloatRange(0, _MAX_HOURS, min_open=True),
    default=None,
    help="Summarise the last N hours into today's note.  [default: 24]",
)
@click.option(
    "--date",
    "day",
    metavar="YYYY-MM-DD",
    default=None,
    callback=_parse_day,
    help="Summarise the events of this local day into that day's note.",
)
@click.option("--dry-run", is_flag=True, help="Print the block; write nothing.")
@json_option
@reports_errors
def project_cmd(hours: float | None, day: date | None, dry_run: bool, as_json: bool) -> None:
    """Write a summary of the day's events into <vault_root>/daily/YYYY-MM-DD.md.

    Only the text between <!-- URCHIN:start --> and <!-- URCHIN:end --> is
    replaced (or between the markers of earlier urchin versions); a note without
    markers gets the block appended. Running it again gives the same note.
    """
    if day is not None and hours is not None:
        raise UsageError("use either --date or --hours, not both")
    settings = load()
    window = (
        Window.for_day(day)
        if day is not None
        else Window.last_hours(hours if hours is not None else _DEFAULT_HOURS)
    )
    result = project_daily_note(
        settings.journal_path,
        settings.vault_root,
        window,
        home=paths.home_dir(),
        dry_run=dry_run,
    )
    if as_json:
        payload = result.to_json()
        if dry_run:
            payload["dry_run"] = True
            payload["block"] = result.block
        emit_json(payload)
    elif dry_run:
        click.echo(result.block, nl=False)
        click.echo(f"dry run: {_what(result)}", err=True)
    else:
        # Plain echo, not rich: a long vault path must stay on one line, brackets literal.
        click.echo(_what(result))
    if result.malformed and not as_json:
        click.echo(f"skipped {result.malformed} malformed journal line(s)", err=True)


def _what(result: ProjectionResult) -> str:
    events = f"{result.events} event" + ("" if result.events == 1 else "s")
    if not result.changed:
        return f"{result.path} is up to date ({events})"
    if result.created:
        verb = "would create" if result.dry_run else "created"
    elif result.appended:
        verb = (
            "would append the urchin block to" if result.dry_run else "appended the urchin block to"
        )
    else:
        verb = "would update" if result.dry_run else "updated"
    return f"{verb} {result.path} ({events})"
