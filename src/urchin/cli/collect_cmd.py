"""collect: pull new activity from shell history, git and the agents' logs."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table

from urchin.cli import cli
from urchin.cli.common import json_option, load, recorder, reports_errors
from urchin.cli.render import console, emit_json, error_console
from urchin.collectors.base import CheckpointStore, CollectResult, run_all
from urchin.identity import Identity


@cli.command("collect")
@click.argument("names", nargs=-1, metavar="[NAME|all]...")
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Also read this git repository (repeatable).",
)
@json_option
@reports_errors
def collect_cmd(names: tuple[str, ...], repos: tuple[Path, ...], as_json: bool) -> None:
    """Read new activity from every source (or the named ones) into the journal.

    Sources: shell, zsh, fish, git, claude, copilot, gemini, codex, opencode,
    local-model. A source that does not exist on this machine is skipped. Each run
    only reads what is new since the last one.
    """
    # Imported here: loading every collector module is not needed by other commands.
    from urchin.collectors.registry import build_collectors

    wanted = () if not names or names == ("all",) else names
    settings = load()
    collectors = build_collectors(
        settings, wanted, repos=[r.expanduser().absolute() for r in repos]
    )
    sink = recorder(settings, durable=False)
    identity = Identity.resolve()
    checkpoints = CheckpointStore(settings.data_dir)
    show_progress = not as_json and sys.stderr.isatty()
    with Progress(
        SpinnerColumn(),
        TextColumn("collecting {task.description}"),
        console=error_console,
        transient=True,
        disable=not show_progress,
    ) as progress:
        task = progress.add_task(collectors[0].name if collectors else "", total=len(collectors))

        def advance(result: CollectResult) -> None:
            position = int(progress.tasks[task].completed) + 1
            upcoming = collectors[position].name if position < len(collectors) else "done"
            progress.update(task, advance=1, description=upcoming)

        results = run_all(collectors, sink, identity, checkpoints, on_result=advance)
    sink.journal.sync()
    sink.journal.close()
    failed = any(result.errors for result in results)
    if as_json:
        emit_json(
            {
                "collectors": [result.to_json() for result in results],
                "new": sum(result.new for result in results),
                "ok": not failed,
            }
        )
    else:
        console.print(_summary(results))
        for result in results:
            for message in result.errors:
                error_console.print(f"[red]{result.name}:[/] {message}")
    if failed:
        sys.exit(1)


def _summary(results: list[CollectResult]) -> Table:
    table = Table(title=None)
    table.add_column("source")
    table.add_column("new", justify="right")
    table.add_column("skipped", justify="right")
    table.add_column("status")
    for result in results:
        if not result.available:
            status = "[dim]not on this machine[/]"
        elif result.errors:
            status = f"[red]{len(result.errors)} problem(s)[/]"
        elif result.dropped:
            status = f"ephemeral: {result.dropped} dropped"
        else:
            status = "[green]ok[/]"
        table.add_row(result.name, str(result.new), str(result.skipped), status)
    return table


__all__ = ["collect_cmd"]
