"""doctor: what urchin sees, and what is wrong."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from urchin import __version__
from urchin.cli import cli
from urchin.cli.common import json_option, load
from urchin.config import Settings
from urchin.ephemeral import Ephemeral
from urchin.errors import UrchinError
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.render import console, emit_json, error_console, timestamp_text


@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check identity, configuration and the journal; report what a reader would skip."""
    report: dict[str, Any] = {"version": __version__}
    identity = Identity.resolve()
    report["identity"] = {"account": identity.account, "device": identity.device}
    problems: list[str] = []
    try:
        settings = load()
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
    exists = path.is_file()
    writable = _can_create_or_append(path)
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


def _can_create_or_append(path: Path) -> bool:
    if path.exists():
        return path.is_file() and os.access(path, os.W_OK)
    ancestor = next((p for p in path.parents if p.exists()), None)
    return ancestor is not None and ancestor.is_dir() and os.access(ancestor, os.W_OK | os.X_OK)


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
