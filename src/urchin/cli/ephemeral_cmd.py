"""ephemeral start|end|status: burn mode."""

from __future__ import annotations

from collections.abc import Callable

from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.cli.render import console, emit_json, timestamp_text
from urchin.ephemeral import Ephemeral


@cli.group()
def ephemeral() -> None:
    """Burn mode: while on, every writer (CLI, intake, MCP) discards events."""


def _ephemeral_command(action: str) -> Callable[[bool], None]:
    @json_option
    @reports_errors
    def command(as_json: bool) -> None:
        flag = Ephemeral(load().data_dir)
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
