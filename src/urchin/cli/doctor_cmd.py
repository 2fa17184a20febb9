"""doctor: what urchin sees, and what is wrong."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from urchin import __version__
from urchin.cli import cli
from urchin.cli.common import json_option, load
from urchin.cli.render import console, emit_json, error_console, timestamp_text
from urchin.config import Settings
from urchin.ephemeral import Ephemeral
from urchin.errors import UrchinError
from urchin.identity import Identity
from urchin.ignore import IgnorePolicy
from urchin.journal import Journal
from urchin.redact import event_marker_counts


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
        redactions: Counter[str] = Counter()
        report["journal"] = _journal_report(settings, problems, redactions)
        report["redactions"] = _redaction_report(settings, redactions)
        report["ephemeral"] = Ephemeral(settings.data_dir).status().to_json()
    report["ok"] = not problems
    report["problems"] = problems
    if as_json:
        emit_json(report)
    else:
        _print_doctor(report)
    if problems:
        sys.exit(1)


def _journal_report(
    settings: Settings, problems: list[str], redactions: Counter[str]
) -> dict[str, Any]:
    path = settings.journal_path
    journal = Journal(path)
    scan = journal.scan()
    last = None
    for entry in scan:
        if last is None or entry.event.timestamp >= last.timestamp:
            last = entry.event
        redactions.update(event_marker_counts(entry.event))
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


def _redaction_report(settings: Settings, counts: Counter[str]) -> dict[str, Any]:
    """Whether redaction is on, the [REDACTED:<kind>] markers in the journal, ignore files."""
    policy = IgnorePolicy.from_settings(settings)
    global_file = policy.global_file
    return {
        "enabled": settings.redact,
        "extra_patterns": len(settings.redact_patterns),
        "allow_entries": len(settings.redact_allow),
        "total": sum(counts.values()),
        "counts": dict(sorted(counts.items())),
        "ignore_files": {
            "global": None if global_file is None else str(global_file),
            "global_exists": global_file is not None and global_file.is_file(),
            "workspace": [str(p) for p in policy.files_for(os.getcwd())],
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
    redactions = report.get("redactions")
    if redactions:
        state = "on" if redactions["enabled"] else "OFF"
        kinds = ", ".join(f"{kind} {n}" for kind, n in redactions["counts"].items())
        found = f"{redactions['total']} in the journal" + (f" ({kinds})" if kinds else "")
        console.print(f"redaction    {state}; {found}")
        ignore = redactions["ignore_files"]
        files = [ignore["global"]] if ignore["global_exists"] else []
        files += ignore["workspace"]
        console.print(f"ignore files {', '.join(files) if files else 'none'}")
    ephemeral = report.get("ephemeral")
    if ephemeral:
        state = f"ON since {ephemeral['since']}" if ephemeral["active"] else "off"
        console.print(f"ephemeral    {state}")
    for problem in report["problems"]:
        error_console.print(f"[red]problem:[/] {problem}")
    if report["ok"]:
        console.print("[green]all good[/]")
