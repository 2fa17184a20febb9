"""serve: the intake plus periodic collection, in one long-running process."""

from __future__ import annotations

from pathlib import Path

import click

from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.errors import UsageError

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Intake address.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Intake port.  [default: intake_port from config, 18799]",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    help="Seconds between collection ticks.  [default: collect_interval from config, 60]",
)
@click.option(
    "--collector",
    "names",
    multiple=True,
    help="Run only this collector (repeatable).  [default: all]",
)
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Also read this git repository (repeatable).",
)
@click.option("--log-level", type=click.Choice(_LOG_LEVELS), default="info", show_default=True)
@json_option
@reports_errors
def serve(
    host: str,
    port: int | None,
    interval: float | None,
    names: tuple[str, ...],
    repos: tuple[Path, ...],
    log_level: str,
    as_json: bool,
) -> None:
    """Run the HTTP intake and collect from every source on a timer.

    Collection runs at start and then every --interval seconds. Stop with Ctrl-C or
    SIGTERM: the current append and collector finish and checkpoints are saved.
    Logs go to stderr.
    """
    from urchin.daemon import serve as run_daemon
    from urchin.intake.server import is_loopback_host

    if not is_loopback_host(host):
        raise UsageError(
            f"refusing to listen on {host}: `urchin serve` only listens on loopback; "
            "use `urchin intake --allow-non-loopback` for other addresses"
        )
    run_daemon(
        load(),
        host,
        port,
        interval=interval,
        names=names,
        repos=[r.expanduser().absolute() for r in repos],
        log_level=log_level,
    )
