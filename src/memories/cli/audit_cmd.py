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
@json_option
@reports_errors
def audit(limit: int, as_json: bool) -> None:
    """Show the newest audit entries: reads, writes, unlocks and failures.

    Entries name ids and actions only, never content or secrets. An entry the store cannot
    vouch for is shown in its place, marked: DAMAGED (it does not decrypt), GAP (entries are
    missing there) or UNLINKED (it is not the entry its successor was chained to).

    \b
    Examples:
      memories audit
      memories audit -n 200 --json
    """
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


def _audit_table(entries: list[Mapping[str, Any]]) -> Table:
    rows = []
    for entry in entries:
        problem = entry.get("problem")
        if problem:
            rows.append(_problem_row(entry, str(problem)))
            continue
        details = entry.get("details")
        text = (
            json.dumps(details, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if details
            else ""
        )
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
