"""ingest, recent and query: write to and read from the journal."""

from __future__ import annotations

import os
import sys

import click

from urchin.cli import cli
from urchin.cli.common import json_option, load, recorder, reports_errors
from urchin.cli.render import console, emit_json, error_console, event_summary, events_table
from urchin.errors import UsageError
from urchin.event import Event
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.query import QueryResult, recent, search
from urchin.recorder import Outcome


@cli.command()
@click.argument("content")
@click.option("--source", default="cli", show_default=True, help="Where the event comes from.")
@click.option(
    "--kind",
    default="conversation",
    show_default=True,
    help="conversation, agent, command, commit, file, decision, … or any other word.",
)
@click.option("--workspace", help="Project path the event belongs to [default: current dir].")
@click.option("--no-workspace", is_flag=True, help="Record no workspace.")
@click.option("--title", help="Short title.")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--session", help="Session id to group events by.")
@json_option
@reports_errors
def ingest(
    content: str,
    source: str,
    kind: str,
    workspace: str | None,
    no_workspace: bool,
    title: str | None,
    tags: tuple[str, ...],
    session: str | None,
    as_json: bool,
) -> None:
    """Record one event. Use - as CONTENT to read it from standard input."""
    if content == "-":
        try:
            content = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("standard input is not UTF-8 text") from None
    if no_workspace:
        workspace = None
    elif workspace is None:
        workspace = os.getcwd()
    settings = load()
    identity = Identity.resolve()
    event = Event.create(
        content,
        source,
        kind,
        workspace=workspace,
        session=session,
        title=title,
        tags=tags,
        actor=identity.actor(workspace),
    )
    outcome = recorder(settings).record(event)
    if outcome is Outcome.DROPPED:
        if as_json:
            emit_json({"id": str(event.id), "status": "dropped", "reason": "ephemeral"})
        else:
            error_console.print("ephemeral mode is on: the event was discarded, nothing written")
        return
    if outcome is Outcome.IGNORED:
        if as_json:
            emit_json({"id": str(event.id), "status": "ignored", "reason": "urchinignore"})
        else:
            error_console.print(
                "the workspace is ignored (.urchinignore): the event was not recorded"
            )
        return
    if as_json:
        emit_json({"id": str(event.id), "status": "ok"})
    else:
        console.print(f"recorded {event.id}")


# -- recent / query -------------------------------------------------------------------

limit_type = click.IntRange(1, 100_000)
hours_type = click.FloatRange(min=0, min_open=True)


def _print_result(result: QueryResult, as_json: bool, extra: dict[str, object]) -> None:
    if as_json:
        emit_json(
            {
                **extra,
                "events": [event_summary(event) for event in result.events],
                "count": len(result.events),
                "matched": result.matched,
                "skipped_malformed": result.malformed,
                "torn_tail": result.torn_tail,
            }
        )
        return
    if result.events:
        console.print(events_table(result.events))
    else:
        console.print("no matching events")
    if result.malformed:
        error_console.print(f"skipped {result.malformed} malformed journal line(s)")


@cli.command("recent")
@click.option("-n", "--limit", default=20, show_default=True, type=limit_type)
@click.option("--source", help="Only events from this source.")
@click.option("--hours", type=hours_type, help="Only events from the last N hours.")
@json_option
@reports_errors
def recent_cmd(limit: int, source: str | None, hours: float | None, as_json: bool) -> None:
    """Show the newest events, newest first."""
    journal = Journal(load().journal_path)
    _print_result(recent(journal, limit, source, hours), as_json, {})


@cli.command("query")
@click.argument("text")
@click.option("--limit", default=20, show_default=True, type=limit_type)
@click.option("--source", help="Only events from this source.")
@click.option("--hours", type=hours_type, help="Only events from the last N hours.")
@json_option
@reports_errors
def query_cmd(
    text: str, limit: int, source: str | None, hours: float | None, as_json: bool
) -> None:
    """Find events whose content, title, tags or workspace contain TEXT (any case)."""
    if not text.strip():
        raise UsageError("query text must not be blank")
    journal = Journal(load().journal_path)
    _print_result(search(journal, text, limit, source, hours), as_json, {"query": text})
