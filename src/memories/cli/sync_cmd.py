"""sync add/now/status/remove and quarantine ls/show/reapply/discard.

Sync moves only ciphertext and signed descriptors through a folder or an rclone remote; the
daemon does the work (outside its lock), this module only builds requests and renders answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import (
    Column,
    clean_line,
    console,
    emit_json,
    error_console,
    fitted_table,
    key_values,
)
from memories.errors import UsageError

__all__: list[str] = []

#: ``sync now`` stops after this many passes even if the storage keeps offering more.
_MAX_PASSES: Final = 10_000
_SYNC_TIMEOUT: Final = 900.0
_COUNTS: Final = (
    "enqueued",
    "up",
    "down",
    "merged",
    "policies",
    "audit",
    "quarantined",
    "refused",
    "forks",
)


@cli.group()
def sync() -> None:
    """Sync vaults between your devices through storage you already have.

    A folder (Dropbox, Syncthing, iCloud, Nextcloud, NFS, a USB stick) or any rclone remote
    (S3, SFTP, WebDAV, Google Drive, OneDrive, ...). Only encrypted, signed objects go there;
    never the store file, a key or a password. The daemon syncs every few minutes while
    unlocked (`sync_interval_minutes` in config.toml), never while locked.
    """


@sync.command("add")
@click.argument("kind", type=click.Choice(["folder", "rclone"]))
@click.argument("location", metavar="PATH|REMOTE:PATH")
@json_option
@reports_errors
def sync_add(kind: str, location: str, as_json: bool) -> None:
    """Add a folder or an rclone remote to sync through.

    \b
    Examples:
      memories sync add folder ~/Dropbox/memories
      memories sync add rclone mybox:memories
    """
    from memories.service.requests.sync import SyncAddRequest

    if kind == "folder":
        location = str(Path(location).expanduser().absolute())
    response = call(SyncAddRequest(op="sync_add", kind=kind, location=location))  # type: ignore[arg-type]
    if as_json:
        emit_json(response)
        return
    target = response.get("target", {})
    console.print(
        f"added {clean_line(target.get('kind'), 10)} {clean_line(target.get('location'), 200)} "
        f"({clean_line(target.get('id'), 8)}); run `memories sync now`"
    )


@sync.command("remove")
@click.argument("target", metavar="ID|PATH|REMOTE:PATH")
@json_option
@reports_errors
def sync_remove(target: str, as_json: bool) -> None:
    """Stop syncing through a target (nothing there is deleted).

    \b
    Example:
      memories sync remove ~/Dropbox/memories
    """
    from memories.service.requests.sync import SyncRemoveRequest

    if not target.startswith(("/", "~")) and ":" not in target:
        ref = target
    else:
        ref = str(Path(target).expanduser().absolute()) if ":" not in target else target
    response = call(SyncRemoveRequest(op="sync_remove", target=ref))
    if as_json:
        emit_json(response)
        return
    removed = response.get("removed", {})
    console.print(f"removed {clean_line(removed.get('location'), 200)}; nothing there was deleted")


@sync.command("status")
@json_option
@reports_errors
def sync_status(as_json: bool) -> None:
    """Show the sync targets, what waits to go out or come in, and the quarantine.

    \b
    Example:
      memories sync status
    """
    from memories.service.requests.sync import SyncStatusRequest

    response = call(SyncStatusRequest(op="sync_status"))
    if as_json:
        emit_json(response)
        return
    targets = [t for t in response.get("targets", []) if isinstance(t, Mapping)]
    if not targets:
        console.print("no sync target yet; add one with `memories sync add folder PATH`")
    else:
        rows = []
        for t in targets:
            last = t.get("last") if isinstance(t.get("last"), Mapping) else None
            when = "never"
            if last:
                from datetime import UTC, datetime

                when = datetime.fromtimestamp(float(last.get("at", 0)), UTC).strftime(
                    "%Y-%m-%d %H:%M:%SZ"
                )
            rows.append(
                [
                    Text(clean_line(t.get("id"), 8)),
                    Text(clean_line(t.get("kind"), 8)),
                    Text(clean_line(t.get("location"), 200)),
                    Text(when),
                ]
            )
        columns = [
            Column("id", cap=8, style="cyan"),
            Column("kind", cap=8),
            Column("location", cap=200, flexible=True),
            Column("last sync", cap=20),
        ]
        console.print(fitted_table(columns, rows))
    console.print(
        key_values(
            [
                ("outbox", response.get("outbox")),
                ("inbox", response.get("inbox")),
                ("quarantined", response.get("quarantined")),
                ("forks", response.get("forks")),
                ("refused", response.get("refused")),
                ("every", f"{response.get('interval_minutes')} minutes (0: off)"),
            ]
        )
    )


@sync.command("now")
@click.option("--target", metavar="ID|PATH|REMOTE:PATH", help="Only this target.")
@json_option
@reports_errors
def sync_now(target: str | None, as_json: bool) -> None:
    """Sync now: upload what is new here, download and merge what is new elsewhere.

    Prints counts: up, down, merged, quarantined (see `memories quarantine ls`).

    \b
    Examples:
      memories sync now
      memories sync now --json
    """
    from memories.service.requests.sync import SyncNowRequest

    totals = dict.fromkeys(_COUNTS, 0)
    last: dict[str, Any] = {}
    errors: list[str] = []
    request = SyncNowRequest(op="sync_now", target=target)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=error_console,
        transient=True,
        disable=as_json or not error_console.is_terminal,
    ) as progress:
        task = progress.add_task("syncing", total=None)
        for _ in range(_MAX_PASSES):
            last = call(request, timeout=_SYNC_TIMEOUT)
            for key in _COUNTS:
                totals[key] += int(last.get(key, 0))
            for report in last.get("targets", []):
                if isinstance(report, Mapping) and report.get("error"):
                    errors.append(clean_line(report.get("error"), 300))
            progress.update(
                task,
                description=(
                    f"up {totals['up']}  down {totals['down']}  merged {totals['merged']}  "
                    f"quarantined {totals['quarantined']}"
                ),
            )
            if not last.get("more") or errors:
                break
    summary = {**totals, "pending": int(last.get("pending", 0)), "errors": errors}
    if as_json:
        emit_json(summary)
    else:
        console.print(
            f"up {totals['up']}, down {totals['down']}, merged {totals['merged']}, "
            f"policy entries {totals['policies']}, audit records {totals['audit']}, "
            f"quarantined {totals['quarantined']}, refused {totals['refused']}, "
            f"waiting {summary['pending']}"
        )
        if totals["forks"]:
            error_console.print(
                "[bold yellow]warning:[/] a vault's policy history has forked; "
                "see `memories sync forks`",
                highlight=False,
            )
        for error in errors:
            error_console.print(f"[bold red]error:[/] {error}", highlight=False)
    if errors:
        raise SystemExit(1)


def _branch(entries: object) -> str:
    if not isinstance(entries, list):
        return ""
    parts = []
    for entry in entries:
        if isinstance(entry, Mapping):
            mark = " (resolution)" if entry.get("resolution") else ""
            parts.append(
                f"#{clean_line(entry.get('seq'), 8)} {clean_line(entry.get('id'), 15)}"
                f" by {clean_line(entry.get('signer'), 15)} at "
                f"{clean_line(entry.get('created_at'), 24)}{mark}"
            )
    return "\n".join(parts)


@sync.command("forks")
@json_option
@reports_errors
def sync_forks(as_json: bool) -> None:
    """Show vaults whose permission history forked: two devices changed members, roles or
    devices from the same point. Writes under the other branch wait until an Owner resolves it.

    \b
    Example:
      memories sync forks
    """
    from memories.service.requests.sync import SyncForksRequest

    response = call(SyncForksRequest(op="sync_forks"))
    if as_json:
        emit_json(response)
        return
    forks = [f for f in response.get("forks", []) if isinstance(f, Mapping)]
    if not forks:
        console.print("no permission fork")
        return
    for fork in forks:
        console.print(
            f"vault {clean_line(fork.get('name'), 64)} ({clean_line(fork.get('vault'), 8)}) "
            f"forked after entry #{clean_line(fork.get('base_seq'), 8)}"
        )
        console.print(
            key_values(
                [
                    ("this device's branch", _branch(fork.get("local"))),
                    ("incoming branch", _branch(fork.get("incoming"))),
                    ("detected", fork.get("detected_at")),
                ]
            )
        )
        if fork.get("can_resolve"):
            console.print(
                "resolve it: `memories sudo`, then `memories sync resolve-fork --vault "
                f"{clean_line(fork.get('name'), 64)} --keep local|incoming`"
            )
        else:
            console.print("only the vault's Owner (on both branches) can resolve it")


@sync.command("resolve-fork")
@click.option("--vault", metavar="VAULT", help="The forked vault (default: personal).")
@click.option(
    "--keep",
    type=click.Choice(["local", "incoming"]),
    required=True,
    help="Which branch stays: this device's, or the incoming one.",
)
@json_option
@reports_errors
def sync_resolve_fork(vault: str | None, keep: str, as_json: bool) -> None:
    """Resolve a permission fork (Owner on both branches; needs `memories sudo`).

    Signs a new policy entry after the chosen branch that discards the entire other one and
    starts a new epoch with a fresh key; it reaches the other devices at their next sync.
    What was written under the discarded entries moves to the quarantine.

    \b
    Example:
      memories sync resolve-fork --vault team --keep local
    """
    from memories.service.requests.sync import SyncResolveForkRequest

    request = SyncResolveForkRequest(op="sync_resolve_fork", vault=vault, keep=keep)  # type: ignore[arg-type]
    response = call(request)
    if as_json:
        emit_json(response)
        return
    resolved = response.get("resolved", {})
    if not isinstance(resolved, Mapping):
        raise UsageError("the daemon's answer is malformed; run matching client and daemon")
    discarded = resolved.get("discarded")
    count = len(discarded) if isinstance(discarded, list) else 0
    console.print(
        f"kept the {clean_line(resolved.get('kept'), 10)} branch; discarded {count} "
        f"entr{'y' if count == 1 else 'ies'}; epoch {clean_line(resolved.get('epoch'), 8)}; "
        f"{clean_line(resolved.get('quarantined'), 8)} revisions quarantined; "
        "run `memories sync now` to publish it"
    )


@cli.group()
def quarantine() -> None:
    """Review revisions sync received but did not merge, and decide about them here.

    Nothing that arrives can clear the quarantine: only `reapply` (merge it after all, still
    fully checked) or `discard` (never again) on this device.
    """


def _entry_rows(entry: Mapping[str, Any]) -> list[tuple[str, object]]:
    return [
        (key, entry.get(key))
        for key in ("object", "reason", "vault", "asset", "revision", "device", "descriptor", "at")
    ]


@quarantine.command("ls")
@json_option
@reports_errors
def quarantine_ls(as_json: bool) -> None:
    """List quarantined revisions and why they were not merged."""
    from memories.service.requests.sync import QuarantineListRequest

    response = call(QuarantineListRequest(op="quarantine_list"))
    if as_json:
        emit_json(response)
        return
    items = [q for q in response.get("quarantine", []) if isinstance(q, Mapping)]
    if not items:
        console.print("nothing is quarantined")
        return
    rows = [
        [
            Text(clean_line(q.get("object"), 12)),
            Text(clean_line(q.get("asset"), 8)),
            Text(clean_line(q.get("at"), 20)),
            Text(clean_line(q.get("reason"), 200)),
        ]
        for q in items
    ]
    columns = [
        Column("object", cap=12, style="cyan"),
        Column("asset", cap=8),
        Column("received", cap=20),
        Column("reason", cap=200, flexible=True),
    ]
    console.print(fitted_table(columns, rows))


def _one(op: str, ref: str, key: str, as_json: bool, verb: str) -> None:
    from memories.service.requests import sync as requests

    model = {
        "quarantine_show": requests.QuarantineShowRequest,
        "quarantine_reapply": requests.QuarantineReapplyRequest,
        "quarantine_discard": requests.QuarantineDiscardRequest,
    }[op]
    response = call(model(op=op, ref=ref))
    if as_json:
        emit_json(response)
        return
    entry = response.get(key)
    if not isinstance(entry, Mapping):
        raise UsageError("the daemon's answer is malformed; run matching client and daemon")
    if verb:
        console.print(f"{verb} {clean_line(entry.get('object'), 12)}")
    else:
        console.print(key_values(_entry_rows(entry)))


@quarantine.command("show")
@click.argument("ref", metavar="OBJECT")
@json_option
@reports_errors
def quarantine_show(ref: str, as_json: bool) -> None:
    """Show one quarantined revision (ids and reason; its content stays encrypted)."""
    _one("quarantine_show", ref, "quarantined", as_json, "")


@quarantine.command("reapply")
@click.argument("ref", metavar="OBJECT")
@json_option
@reports_errors
def quarantine_reapply(ref: str, as_json: bool) -> None:
    """Merge a quarantined revision after all (its signature and content are still checked)."""
    _one("quarantine_reapply", ref, "reapplied", as_json, "reapplied")


@quarantine.command("discard")
@click.argument("ref", metavar="OBJECT")
@json_option
@reports_errors
def quarantine_discard(ref: str, as_json: bool) -> None:
    """Never merge a quarantined revision; it stays stored, out of review."""
    _one("quarantine_discard", ref, "discarded", as_json, "discarded")
