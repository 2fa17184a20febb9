"""audit and verify: the store's audit trail (who read or changed what, never the content) and
a check of everything the store holds."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, Final

import click
from rich.table import Table
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import Column, clean_line, console, emit_json, fitted_table
from memories.errors import UsageError

__all__ = ["VERIFY_TIMEOUT_SECONDS"]

#: How long `memories verify` waits: it decrypts every page and blob and walks the whole
#: checkpoint chain, in time proportional to the store.
VERIFY_TIMEOUT_SECONDS: Final = 3600.0

#: How an audit entry the store could not vouch for is marked, by its ``problem``.
_PROBLEM_MARKS: Final = {"damaged": "DAMAGED", "gap": "GAP", "unlinked": "UNLINKED"}

#: What `verify` counted, in the order it reports them: the key, then its singular.
_CHECKED: Final = (
    ("vaults", "vault"),
    ("policies", "policy"),
    ("assets", "asset"),
    ("revisions", "revision"),
    ("checkpoints", "checkpoint"),
)


@cli.command()
@click.option(
    "-n",
    "--limit",
    default=50,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many of the newest entries to show.",
)
@click.option(
    "--devices",
    "devices",
    is_flag=True,
    help="Show other devices' records of a vault (brought by `vault import`) instead.",
)
@click.option("--vault", help="With --devices: the vault (name, id or prefix; default personal).")
@click.option(
    "--origin",
    help="With --devices: only this device's records (fingerprint, 8+ hex of it, or name).",
)
@json_option
@reports_errors
def audit(limit: int, devices: bool, vault: str | None, origin: str | None, as_json: bool) -> None:
    """Show the newest audit entries: reads, writes, unlocks and failures.

    Entries name ids and actions only, never content or secrets. An entry the store cannot
    vouch for is shown in its place, marked: DAMAGED (it does not decrypt), GAP (entries are
    missing there) or UNLINKED (it is not the entry its successor was chained to).

    With --devices, shows instead the records other devices wrote about a vault, as bundles
    brought them: each was signed by the device named in its row and checked on import.

    \b
    Examples:
      memories audit
      memories audit -n 200 --json
      memories audit --devices --vault team
      memories audit --devices --origin laptop --json
    """
    if devices:
        _devices(limit, vault, origin, as_json)
        return
    if vault is not None or origin is not None:
        raise UsageError("--vault and --origin go with --devices")
    from memories.service.requests import AuditListRequest

    response = call(AuditListRequest(op="audit_list", limit=limit))
    if as_json:
        emit_json(response)
        return
    entries = [e for e in response.get("entries", []) if isinstance(e, Mapping)]
    if not entries:
        console.print("no audit entries yet")
        return
    console.print(_audit_table(entries))
    marked = sum(1 for entry in entries if entry.get("problem"))
    if marked:
        console.print(
            Text(
                f"{marked} entr{'y' if marked == 1 else 'ies'} of the trail cannot be vouched "
                "for; `memories verify` checks the whole store",
                style="bold red",
            )
        )


def _devices(limit: int, vault: str | None, origin: str | None, as_json: bool) -> None:
    from memories.service.requests import AuditDevicesRequest

    response = call(
        AuditDevicesRequest(op="audit_devices", vault=vault, origin=origin, limit=limit)
    )
    if as_json:
        emit_json(response)
        return
    records = [r for r in response.get("records", []) if isinstance(r, Mapping)]
    if not records:
        console.print("no records from other devices for this vault yet")
        return
    rows = []
    for record in records:
        name = clean_line(record.get("name"), 40)
        short = clean_line(record.get("short"), 20)
        rows.append(
            [
                Text(_when(record.get("at"))),
                Text(f"{name} {short}" if name else short),
                Text(clean_line(record.get("seq"), 12)),
                Text(clean_line(record.get("action"), 40), style="cyan"),
                Text(clean_line(_details_text(record.get("details")), 300)),
            ]
        )
    columns = [
        Column("at (UTC)", cap=19),
        Column("device", cap=62),
        Column("seq", cap=12, justify="right"),
        Column("action", cap=40),
        Column("details", cap=300, flexible=True),
    ]
    console.print(fitted_table(columns, rows))


def _details_text(details: object) -> str:
    if not details:
        return ""
    return json.dumps(details, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _audit_table(entries: list[Mapping[str, Any]]) -> Table:
    rows = []
    for entry in entries:
        problem = entry.get("problem")
        if problem:
            rows.append(_problem_row(entry, str(problem)))
            continue
        text = _details_text(entry.get("details"))
        rows.append(
            [
                Text(clean_line(entry.get("seq"), 12)),
                Text(_when(entry.get("at"))),
                Text(clean_line(entry.get("action"), 40), style="cyan"),
                Text(clean_line(text, 300)),
            ]
        )
    columns = [
        Column("seq", cap=12, justify="right"),
        Column("at (UTC)", cap=19),
        Column("action", cap=40),
        Column("details", cap=300, flexible=True),
    ]
    return fitted_table(columns, rows)


def _problem_row(entry: Mapping[str, Any], problem: str) -> list[Text]:
    """A marked row: what is wrong in red, in the entry's place in the trail."""
    mark = _PROBLEM_MARKS.get(problem, clean_line(problem, 20).upper())
    reason = clean_line(entry.get("reason"), 300)
    details = entry.get("details")
    if not reason and problem == "gap" and isinstance(details, Mapping):
        first, last = details.get("first"), details.get("last")
        if isinstance(first, int) and isinstance(last, int):
            reason = f"entry {first} is missing" if first == last else f"{first}-{last} missing"
    action = clean_line(entry.get("action"), 40)
    return [
        Text(clean_line(entry.get("seq"), 12), style="bold red"),
        Text(_when(entry.get("at"))),
        Text(f"{mark} {action}" if action else mark, style="bold red"),
        Text(reason or "cannot be vouched for", style="red"),
    ]


def _when(stamp: object) -> str:
    return clean_line(stamp, 40)[:19].replace("T", " ")


@cli.command()
@json_option
@reports_errors
def verify(as_json: bool) -> None:
    """Check the whole store: every record, signature, chain and anchor.

    Decrypts every page and blob, checks every revision signature and parent link, every
    vault policy chain, the audit checkpoint chain, the header binding and both rollback
    anchors. Damage is reported, never repaired, and nothing of any content is shown. Takes
    time in proportion to the store.

    Exits 0 when nothing is wrong and 1 when anything is (with --json too).

    \b
    Examples:
      memories verify
      memories verify --json
    """
    from memories.service.requests import VerifyRequest

    response = call(VerifyRequest(op="verify"), timeout=VERIFY_TIMEOUT_SECONDS)
    ok = response.get("ok") is True
    if as_json:
        emit_json(response)
    else:
        _print_verification(response, ok)
    if not ok:
        sys.exit(1)


def _print_verification(response: Mapping[str, Any], ok: bool) -> None:
    problems = [p for p in response.get("problems", []) if isinstance(p, Mapping)]
    if ok:
        console.print(Text("the store verified: nothing is damaged", style="bold green"))
    else:
        count = len(problems)
        console.print(
            Text(
                f"DAMAGE FOUND: {count} problem{'s' if count != 1 else ''}; nothing was repaired",
                style="bold red",
            )
        )
        console.print(_problems_table(problems))
    checked = response.get("checked")
    if isinstance(checked, Mapping):
        parts = []
        for plural, singular in _CHECKED:
            number = checked.get(plural)
            if isinstance(number, int) and not isinstance(number, bool):
                parts.append(f"{number} {singular if number == 1 else plural}")
        if parts:
            console.print(f"checked {', '.join(parts)}; every page, blob and anchor")


def _problems_table(problems: list[Mapping[str, Any]]) -> Table:
    """Every problem in full: where and what wrap rather than being cut, since each one is
    something to act on."""
    table = Table(expand=False)
    table.add_column("scope", no_wrap=True)
    table.add_column("kind", no_wrap=True, style="red")
    table.add_column("where", overflow="fold", ratio=1)
    table.add_column("message", ratio=1)
    for problem in problems:
        table.add_row(
            Text(clean_line(problem.get("scope"), 10)),
            Text(clean_line(problem.get("kind"), 24)),
            Text(clean_line(problem.get("where"), 300)),
            Text(clean_line(problem.get("message"), 500)),
        )
    return table
