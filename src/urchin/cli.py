"""The ``urchin`` command line.

Thin by design: parse, call the library, render. Errors go to stderr with the
exit codes of DESIGN §7 (1 failed, 2 usage); ``--json`` makes both results and
errors machine-readable.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from urchin import __version__
from urchin.config import KEYS, Settings, load_settings, set_config_value, unset_config_value
from urchin.ephemeral import Ephemeral
from urchin.errors import UrchinError, UsageError
from urchin.event import Event
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.query import QueryResult, recent, search
from urchin.render import (
    console,
    emit_json,
    error_console,
    event_summary,
    events_table,
    timestamp_text,
)

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table."
)


def reports_errors(func: F) -> F:
    """Turn UrchinError into a one-line message on stderr and the error's exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UrchinError as exc:
            _fail(exc.message, exc.code, exc.exit_code, bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


def _fail(message: str, code: str, exit_code: int, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        error_console.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    sys.exit(exit_code)


def _settings() -> Settings:
    return load_settings()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="urchin")
def cli() -> None:
    """urchin: capture what you and your AI agents do into an append-only journal.

    Events live in one JSONL file (~/.local/share/urchin/journal/events.jsonl by
    default). Every command accepts --json.
    """


# -- ingest ---------------------------------------------------------------------------


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
    settings = _settings()
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
    if Ephemeral(settings.data_dir).is_active():
        result = {"id": str(event.id), "status": "dropped", "reason": "ephemeral"}
        if as_json:
            emit_json(result)
        else:
            error_console.print("ephemeral mode is on: the event was discarded, nothing written")
        return
    with Journal(settings.journal_path, durable=True) as journal:
        journal.append(event)
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
    journal = Journal(_settings().journal_path)
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
    journal = Journal(_settings().journal_path)
    _print_result(search(journal, text, limit, source, hours), as_json, {"query": text})


# -- doctor ---------------------------------------------------------------------------


@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check identity, configuration and the journal; report what a reader would skip."""
    report: dict[str, Any] = {"version": __version__}
    identity = Identity.resolve()
    report["identity"] = {"account": identity.account, "device": identity.device}
    problems: list[str] = []
    try:
        settings = _settings()
    except UrchinError as exc:
        problems.append(exc.message)
        report["config"] = {"error": exc.message}
        settings = None
    if settings is not None:
        report["config"] = settings.public_json()
        report["journal"] = _journal_report(settings, problems)
        report["ephemeral"] = Ephemeral(settings.data_dir).status().to_json()
    report["ok"] = not problems
    report["problems"] = problems
    if as_json:
        emit_json(report)
    else:
        _print_doctor(report)
    if problems:
        sys.exit(1)


def _journal_report(settings: Settings, problems: list[str]) -> dict[str, Any]:
    path = settings.journal_path
    journal = Journal(path)
    scan = journal.scan()
    last = None
    for entry in scan:
        if last is None or entry.event.timestamp >= last.timestamp:
            last = entry.event
    stats = scan.stats
    exists = path.exists()
    folder = path if exists else next((p for p in path.parents if p.exists()), path.parent)
    writable = os.access(folder, os.W_OK)
    if not writable:
        problems.append(f"the journal at {path} is not writable")
    return {
        "path": str(path),
        "exists": exists,
        "writable": writable,
        "size_bytes": journal.size(),
        "events": stats.events,
        "malformed_lines": stats.malformed,
        "oversized_lines": stats.oversized,
        "torn_tail": stats.torn_tail,
        "last_event": None
        if last is None
        else {
            "id": str(last.id),
            "timestamp": timestamp_text(last.timestamp),
            "source": last.source,
            "kind": str(last.kind),
        },
    }


def _print_doctor(report: dict[str, Any]) -> None:
    ident = report["identity"]
    console.print(f"[bold]urchin {report['version']}[/]")
    console.print(f"identity     {ident['account']} @ {ident['device']}")
    config = report["config"]
    if "error" in config:
        console.print(f"config       [red]{config['error']}[/]")
    else:
        state = "found" if config["config_exists"] else "not found, using defaults"
        console.print(f"config       {config['config_path']} ({state})")
        overrides = [f"{k} ({v})" for k, v in config["origins"].items() if v != "default"]
        if overrides:
            console.print(f"overrides    {', '.join(overrides)}")
    journal = report.get("journal")
    if journal:
        console.print(f"journal      {journal['path']}")
        console.print(f"events       {journal['events']} ({journal['size_bytes']} bytes)")
        last = journal["last_event"]
        if last:
            console.print(f"last event   {last['timestamp']} {last['source']} {last['kind']}")
        skipped = journal["malformed_lines"] + journal["oversized_lines"]
        console.print(f"skipped      {skipped} malformed or oversized line(s)")
        if journal["torn_tail"]:
            console.print("torn tail    yes (an unfinished last line; skipped)")
    ephemeral = report.get("ephemeral")
    if ephemeral:
        state = f"ON since {ephemeral['since']}" if ephemeral["active"] else "off"
        console.print(f"ephemeral    {state}")
    for problem in report["problems"]:
        error_console.print(f"[red]problem:[/] {problem}")
    if report["ok"]:
        console.print("[green]all good[/]")


# -- ephemeral ------------------------------------------------------------------------


@cli.group()
def ephemeral() -> None:
    """Burn mode: while on, every writer (CLI, intake, MCP) discards events."""


def _ephemeral_command(action: str) -> Callable[[bool], None]:
    @json_option
    @reports_errors
    def command(as_json: bool) -> None:
        flag = Ephemeral(_settings().data_dir)
        if action == "start":
            status = flag.start()
            message = "ephemeral mode is ON: events are discarded until `urchin ephemeral end`"
        elif action == "end":
            flag.end()
            status = flag.status()
            message = "ephemeral mode is off: events are recorded again"
        else:
            status = flag.status()
            message = (
                f"ephemeral mode is ON (since {timestamp_text(status.since) or 'unknown'})"
                if status.active
                else "ephemeral mode is off"
            )
        if as_json:
            emit_json(status.to_json())
        else:
            console.print(message)

    return command


ephemeral.command("start", help="Start discarding every event.")(_ephemeral_command("start"))
ephemeral.command("end", help="Stop discarding events.")(_ephemeral_command("end"))
ephemeral.command("status", help="Say whether ephemeral mode is on.")(_ephemeral_command("status"))


# -- config ---------------------------------------------------------------------------


@cli.group()
def config() -> None:
    """Show or change settings in ~/.config/urchin/config.toml."""


@config.command("show")
@json_option
@reports_errors
def config_show(as_json: bool) -> None:
    """Show every setting, its value and where it came from (the token is never shown)."""
    settings = _settings()
    data = settings.public_json()
    if as_json:
        emit_json(data)
        return
    console.print(f"config file: {data['config_path']}")
    for key, value in data["values"].items():  # type: ignore[attr-defined]
        origin = settings.origins[key]
        console.print(f"{key:<14} {value if value is not None else '(unset)'}  [dim]{origin}[/]")


@config.command("set")
@click.argument("key", type=click.Choice(sorted(KEYS)))
@click.argument("value")
@json_option
@reports_errors
def config_set(key: str, value: str, as_json: bool) -> None:
    """Set KEY to VALUE in config.toml. Use - as VALUE to read it from standard input."""
    if value == "-":
        value = sys.stdin.readline().rstrip("\n")
    path = set_config_value(key, value)
    shown = "(set)" if KEYS[key].kind == "secret" else value
    if as_json:
        emit_json({"key": key, "value": shown, "config_path": str(path)})
    else:
        console.print(f"{key} = {shown}  ({path})")


@config.command("unset")
@click.argument("key", type=click.Choice(sorted(KEYS)))
@json_option
@reports_errors
def config_unset(key: str, as_json: bool) -> None:
    """Remove KEY from config.toml so its default applies."""
    path = unset_config_value(key)
    if as_json:
        emit_json({"key": key, "value": None, "config_path": str(path)})
    else:
        console.print(f"{key} unset  ({path})")


def main() -> None:
    """Console-script entry point."""
    try:
        cli.main(prog_name="urchin")
    except KeyboardInterrupt:
        error_console.print("interrupted")
        sys.exit(130)
