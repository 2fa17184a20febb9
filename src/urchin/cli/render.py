"""Human and JSON output for the urchin command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime

from rich.console import Console
from rich.table import Table

from urchin.event import Event, format_timestamp

__all__ = ["console", "emit_json", "error_console", "event_summary", "events_table", "first_line"]

console = Console(highlight=False, soft_wrap=False)
error_console = Console(stderr=True, highlight=False)


def emit_json(value: object) -> None:
    """Print one JSON document on stdout (UTF-8, no ASCII escaping)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def first_line(text: str, limit: int = 120) -> str:
    """The first line of ``text`` with control characters blanked, cut to ``limit``."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    # Terminal escapes from captured output must not reach the user's terminal.
    line = "".join(" " if (ch < " " or "\x7f" <= ch < "\xa0") else ch for ch in line)
    if len(line) > limit:
        return line[: limit - 1] + "…"
    return line


def local_time(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def event_summary(event: Event, content_limit: int | None = None) -> dict[str, object]:
    """The JSON shape printed for an event: its journal fields, content optionally cut."""
    data: dict[str, object] = dict(event.to_json())
    if content_limit is not None and len(event.content) > content_limit:
        data["content"] = event.content[:content_limit]
        data["content_truncated"] = True
    return data


def events_table(events: Sequence[Event], title: str | None = None) -> Table:
    rows = [
        (
            local_time(event.timestamp),
            event.source,
            str(event.kind),
            _short_workspace(event.workspace),
            _label(event),
        )
        for event in events
    ]
    # Fixed columns take what their values need (capped); content gets the rest, so the
    # table fits the terminal instead of squeezing the other columns away.
    caps = (16, 14, 12, 24)
    headers = ("time", "source", "kind", "workspace")
    widths = [
        min(cap, max([len(header), *(len(row[index]) for row in rows)]))
        for index, (cap, header) in enumerate(zip(caps, headers, strict=True))
    ]
    room = max(12, console.width - sum(widths) - 16)
    table = Table(title=title, show_lines=False, expand=False)
    for header, width in zip(headers, widths, strict=True):
        table.add_column(header, no_wrap=True, max_width=width, overflow="ellipsis")
    table.add_column("content", no_wrap=True, max_width=room, overflow="ellipsis")
    for row in rows:
        table.add_row(*row)
    return table


def _label(event: Event) -> str:
    label = first_line(event.content)
    if event.title and event.title not in label:
        label = f"{first_line(event.title, 40)}: {label}"
    return label


def _short_workspace(workspace: str | None) -> str:
    if not workspace:
        return ""
    parts = workspace.rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else workspace


def timestamp_text(moment: datetime | None) -> str | None:
    return None if moment is None else format_timestamp(moment)
