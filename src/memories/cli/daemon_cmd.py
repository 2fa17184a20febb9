"""daemon start|stop|status|run: the background process that holds the store open."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from memories.cli import cli
from memories.cli.common import json_option, reports_errors, settings
from memories.cli.render import console, emit_json, key_values
from memories.errors import MemoriesError, UsageError

__all__: list[str] = []


@cli.group()
def daemon() -> None:
    """Manage the daemon. You rarely need to: any command that needs it starts it.

    The daemon is the only process that opens the store. It listens on a private Unix
    socket, locks the store after the idle period, and forgets every key when it stops.
    """


@daemon.command("start")
@json_option
@reports_errors
def daemon_start(as_json: bool) -> None:
    """Start the daemon in the background.

    \b
    Example:
      memories daemon start
    """
    from memories.daemon.launcher import start_daemon

    current = settings()
    pid = start_daemon(current)
    if as_json:
        emit_json({"started": True, "pid": pid, "socket": str(current.socket_path)})
        return
    console.print(f"started the memories daemon (pid {pid})")


@daemon.command("stop")
@click.option(
    "--timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1, 600),
    help="Seconds to wait for it to exit.",
)
@json_option
@reports_errors
def daemon_stop(timeout: float, as_json: bool) -> None:
    """Stop the daemon; the store locks and every key is forgotten.

    \b
    Example:
      memories daemon stop
    """
    from memories.daemon.launcher import stop_daemon

    pid = stop_daemon(settings(), timeout=timeout)
    if as_json:
        emit_json({"stopped": pid is not None, "pid": pid})
        return
    if pid is None:
        console.print("no memories daemon was running")
    else:
        console.print(f"stopped the memories daemon (pid {pid})")


@daemon.command("status")
@json_option
@reports_errors
def daemon_status_cmd(as_json: bool) -> None:
    """Show whether the daemon runs, its pid and socket, and whether the store is unlocked.

    Exits 0 either way; with --json, "running" says which.

    \b
    Example:
      memories daemon status --json
    """
    from memories.daemon.launcher import daemon_status

    current = settings()
    found = daemon_status(current)
    if as_json:
        emit_json({"running": found is not None, **(found or {})})
        return
    if found is None:
        console.print(f"no memories daemon is running (socket {current.socket_path})")
        return
    console.print(
        key_values(
            [
                ("daemon", f"running (pid {found.get('pid')})"),
                ("socket", found.get("socket")),
                ("store", found.get("store")),
                ("initialized", found.get("initialized")),
                ("unlocked", found.get("unlocked")),
            ]
        )
    )


@daemon.command("run")
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the log to this file [default: standard error].",
)
@click.option(
    "--status-fd",
    type=click.IntRange(min=3),
    hidden=True,
    help="Write the one-line start report to this inherited file descriptor (the launcher's).",
)
@reports_errors
def daemon_run(log_file: Path | None, status_fd: int | None) -> None:
    """Run the daemon in the foreground until SIGTERM or Ctrl-C (for service managers).

    \b
    Example:
      memories daemon run --log-file ~/.local/share/memories/daemon.log
    """
    # Before anything else, so no later secret can reach a core dump or a same-user reader.
    from memories.daemon.hardening import harden_process

    harden_process()
    from memories.daemon.main import run_daemon
    from memories.daemon.startup import report_failure

    if status_fd is not None:
        # Children the daemon may start later must not hold the launcher's pipe open.
        try:
            os.set_inheritable(status_fd, False)
        except OSError:
            raise UsageError("--status-fd is not an open file descriptor") from None
    try:
        current = settings()
    except MemoriesError as exc:
        report_failure(status_fd, exc)
        raise
    sys.exit(run_daemon(current, log_file=log_file, status_fd=status_fd))
