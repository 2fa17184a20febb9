"""intake: run the HTTP intake in the foreground."""

from __future__ import annotations

import click

from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.cli.render import error_console
from urchin.errors import UsageError

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Port to listen on.  [default: intake_port from config, 18799]",
)
@click.option(
    "--allow-non-loopback",
    is_flag=True,
    help="Allow a --host other machines can reach (set intake_token too).",
)
@click.option("--log-level", type=click.Choice(_LOG_LEVELS), default="info", show_default=True)
@click.option(
    "--access-log/--no-access-log",
    default=True,
    show_default=True,
    help="Log one line per request (method, path, status; never bodies or headers).",
)
@json_option
@reports_errors
def intake(
    host: str,
    port: int | None,
    allow_non_loopback: bool,
    log_level: str,
    access_log: bool,
    as_json: bool,
) -> None:
    """Serve the HTTP intake: POST /ingest, /ingest/batch; GET /health, /recent, /query.

    Every acknowledged event is on stable storage. Logs go to stderr; stop with
    Ctrl-C or SIGTERM, which lets in-flight requests finish. With --json, errors
    are reported as JSON.
    """
    # Imported here so other commands do not pay for loading the web stack.
    from urchin.intake.server import is_loopback_host, serve

    settings = load()
    if not is_loopback_host(host):
        if not allow_non_loopback:
            raise UsageError(
                f"refusing to listen on {host}: it is not a loopback address, so other "
                "machines could write to your journal; pass --allow-non-loopback to do it "
                "anyway (and set intake_token)"
            )
        warning = f"warning: the intake listens on {host}, reachable from other machines"
        if not settings.intake_token:
            warning += "; no intake_token is set, so anyone who can reach it can write events"
        error_console.print(warning, markup=False)
    serve(settings, host, port, access_log=access_log, log_level=log_level)
