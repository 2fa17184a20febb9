"""backup create, verify and restore; archive ls and show (what a recovery kept)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import (
    call,
    json_option,
    read_password,
    reports_errors,
    settings,
)
from memories.cli.render import (
    Column,
    clean_line,
    console,
    emit_json,
    error_console,
    fingerprint,
    fitted_table,
    history_table,
    short_ids,
)
from memories.errors import ConflictError
from memories.views.format import format_size

__all__ = ["PASSPHRASE_ENV"]

PASSPHRASE_ENV = "MEMORIES_BACKUP_PASSPHRASE"  # noqa: S105 - a variable name

passphrase_stdin_option = click.option(
    "--passphrase-stdin",
    is_flag=True,
    help=f"Read the backup passphrase from the first line of standard input (else "
    f"${PASSPHRASE_ENV}, else a hidden prompt).",
)


def _absolute(path: Path) -> str:
    # The daemon opens the file itself; its working folder is not this shell's.
    return os.path.abspath(path.expanduser())


def _passphrase(from_stdin: bool, *, confirm: bool) -> str:
    return read_password(
        "backup passphrase", from_stdin=from_stdin, env=PASSPHRASE_ENV, confirm=confirm
    )


def _counts(doc: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{doc.get(name, 0)} {name}" for name in ("vaults", "policies", "assets", "revisions")
    )


@cli.group()
def backup() -> None:
    """Back up the store to a file, check a backup, or recover from one.

    A backup holds every vault that is not device-only (with its full signed history) and
    your keys, encrypted under a passphrase of its own: it opens without the store and its
    password. Keep the passphrase safe; it cannot be recovered.
    """


@backup.command("create")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@passphrase_stdin_option
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@json_option
@reports_errors
def backup_create(file: Path, passphrase_stdin: bool, force: bool, as_json: bool) -> None:
    """Write a backup of the store to FILE. Needs `memories sudo`.

    The passphrase is asked twice (hidden). The backup is one consistent state even while
    other clients keep writing; it is written to a temporary file beside FILE, read back and
    checked, and only then renamed to FILE (readable by you only). Device-only vaults and
    cloud sign-ins are not included.

    \b
    Examples:
      memories sudo
      memories backup create ~/memories-2026-06-01.backup
      printf '%s\\n' "$PASSPHRASE" | memories backup create vault.backup --passphrase-stdin
    """
    from memories.service.requests import BackupCreateRequest

    passphrase = _passphrase(passphrase_stdin, confirm=True)
    response = call(
        BackupCreateRequest(
            op="backup_create",
            path=_absolute(file),
            passphrase=passphrase,  # type: ignore[arg-type]
            overwrite=force,
        )
    )
    if as_json:
        emit_json(response)
        return
    size = response.get("size")
    where = clean_line(response.get("path"), 200)
    console.print(
        f"wrote {where} ({format_size(size) if isinstance(size, int) else '?'}): "
        f"{_counts(response)}"
    )
    console.print("read back and verified; keep the passphrase safe: it cannot be recovered")


@backup.command("verify")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@passphrase_stdin_option
@json_option
@reports_errors
def backup_verify(file: Path, passphrase_stdin: bool, as_json: bool) -> None:
    """Check a backup: its passphrase, and every signature, hash and ciphertext inside.

    Exit status 1 when anything is damaged.

    \b
    Example:
      memories backup verify ~/memories-2026-06-01.backup --json
    """
    from memories.service.requests import BackupVerifyRequest

    passphrase = _passphrase(passphrase_stdin, confirm=False)
    response = call(
        BackupVerifyRequest(
            op="backup_verify",
            path=_absolute(file),
            passphrase=passphrase,  # type: ignore[arg-type]
        )
    )
    if as_json:
        emit_json(response)
        sys.exit(0 if response.get("ok") else 1)
    created = clean_line(response.get("created_at"), 40)
    if response.get("ok"):
        console.print(f"the backup from {created} is intact: {_counts(response)}")
        return
    problems = [p for p in response.get("problems", []) if isinstance(p, Mapping)]
    error_console.print(f"[bold red]the backup from {created} is damaged:[/]", highlight=False)
    for problem in problems:
        where = " ".join(
            f"{label} {clean_line(problem.get(label), 16)}"
            for label in ("vault", "asset", "revision")
            if problem.get(label)
        )
        message = clean_line(problem.get("message"), 200)
        error_console.print(f"  {where + ': ' if where else ''}{message}", markup=False)
    sys.exit(1)


@backup.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@passphrase_stdin_option
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the new store password from standard input (after the passphrase line when "
    "--passphrase-stdin is given too; else $MEMORIES_PASSWORD, else a hidden prompt).",
)
@click.option("--device-name", help="A name for this machine [default: its host name].")
@click.option("--kdf-time-cost", type=click.IntRange(1, 100), help="Argon2id passes [default: 3].")
@click.option(
    "--kdf-memory-mib",
    type=click.IntRange(1, 4096),
    help="Argon2id memory in MiB [default: 64; at least 19].",
)
@click.option("--kdf-parallelism", type=click.IntRange(1, 64), help="Argon2id lanes [default: 4].")
@json_option
@reports_errors
def backup_restore(
    file: Path,
    passphrase_stdin: bool,
    password_stdin: bool,
    device_name: str | None,
    kdf_time_cost: int | None,
    kdf_memory_mib: int | None,
    kdf_parallelism: int | None,
    as_json: bool,
) -> None:
    """Recover from a backup into a new store, where there is no store yet.

    Asks for the backup's passphrase, then a password for the new store (twice). This device
    gets new keys and every vault a new id; live memories keep their ids, conflicts stay
    conflicts, and the original signed histories are kept read-only (`memories archive ls`).
    Each restored vault lists only you and this device: invite other members again.

    \b
    Examples:
      memories backup restore ~/memories-2026-06-01.backup
      printf '%s\\n%s\\n' "$PASSPHRASE" "$PW" | \\
        memories backup restore vault.backup --passphrase-stdin --password-stdin
    """
    from memories.service.requests import BackupRestoreRequest, KdfSettings

    current = settings()
    if current.store_path.exists():
        raise ConflictError(
            f"a store already exists at {current.store_path}; it was left untouched "
            "(restore into a new data home: set MEMORIES_HOME)"
        )
    path = _absolute(file)
    passphrase = _passphrase(passphrase_stdin, confirm=False)
    password = read_password("new store password", from_stdin=password_stdin, confirm=True)
    kdf = None
    if kdf_time_cost is not None or kdf_memory_mib is not None or kdf_parallelism is not None:
        kdf = KdfSettings(
            time_cost=kdf_time_cost or 3,
            memory_kib=(kdf_memory_mib or 64) * 1024,
            parallelism=kdf_parallelism or 4,
        )
    response = call(
        BackupRestoreRequest(
            op="backup_restore",
            path=path,
            passphrase=passphrase,  # type: ignore[arg-type]
            password=password,  # type: ignore[arg-type]
            device_name=device_name,
            kdf=kdf,
        )
    )
    if as_json:
        emit_json(response)
        return
    created = clean_line(response.get("backup_created_at"), 40)
    console.print(f"restored the backup from {created} into a new store at {current.store_path}")
    vaults = [v for v in response.get("vaults", []) if isinstance(v, Mapping)]
    shorts = short_ids(str(v.get("id", "")) for v in vaults)
    for vault in vaults:
        what = "personal vault" if vault.get("personal") else "vault"
        name = clean_line(vault.get("name"), 60)
        console.print(
            f"{what} {name} ({shorts.get(str(vault.get('id', '')), '')}): "
            f"{vault.get('assets', 0)} assets"
        )
    console.print(
        f"{response.get('assets', 0)} assets restored ({response.get('conflicts', 0)} with "
        f"their conflicts kept); {response.get('deleted', 0)} deleted ones are in the archive "
        "only"
    )
    if response.get("new_ids"):
        console.print(f"{response['new_ids']} assets got new ids: the backup held their ids twice")
    if response.get("dropped_links"):
        console.print(f"{response['dropped_links']} links were dropped: their target was deleted")
    if response.get("foreign_heads"):
        console.print(
            f"{response['foreign_heads']} versions written by other people are now signed by "
            "you; their original signatures are in the archive"
        )
    identity = response.get("identity")
    if isinstance(identity, Mapping):
        console.print(f"this device has new keys: {fingerprint(identity.get('device'))}")
    console.print(clean_line(response.get("membership"), 300))
    console.print("the original signed histories are kept read-only: `memories archive ls`")
    console.print("the store is unlocked")


# -- the archive ------------------------------------------------------------------------------


@cli.group()
def archive() -> None:
    """What a recovery kept: the original vaults and signed histories, read-only."""


@archive.command("ls")
@json_option
@reports_errors
def archive_ls(as_json: bool) -> None:
    """List the archived assets (private ones after `memories sudo`).

    \b
    Example:
      memories archive ls
    """
    from memories.service.requests import ArchiveListRequest

    response = call(ArchiveListRequest(op="archive_list"))
    if as_json:
        emit_json(response)
        return
    assets = [a for a in response.get("assets", []) if isinstance(a, Mapping)]
    if not assets:
        console.print("the archive is empty: it fills when a store is restored from a backup")
        return
    shorts = short_ids(
        [str(a.get("id", "")) for a in assets] + [str(a.get("restored_as") or "") for a in assets]
    )
    rows = []
    for item in assets:
        restored = item.get("restored_as")
        if restored:
            state = "restored" if restored == item.get("id") else f"as {shorts.get(restored, '')}"
        else:
            state = "deleted"
        if item.get("conflicted"):
            state += ", conflict"
        rows.append(
            [
                Text(shorts.get(str(item.get("id", "")), "")),
                Text(clean_line(item.get("kind"), 12)),
                Text(clean_line(item.get("title"), 200)),
                Text(str(item.get("revisions", ""))),
                Text(clean_line(item.get("vault_name"), 40)),
                Text(state),
            ]
        )
    columns = [
        Column("id", cap=32, style="cyan"),
        Column("kind", cap=12),
        Column("title", cap=200, flexible=True),
        Column("revisions", cap=9, justify="right"),
        Column("vault", cap=40),
        Column("now", cap=24),
    ]
    console.print(fitted_table(columns, rows))


@archive.command("show")
@click.argument("ref")
@json_option
@reports_errors
def archive_show(ref: str, as_json: bool) -> None:
    """Show an archived asset's original signed history, newest first.

    REF is its original id or a prefix of it (see `memories archive ls`).

    \b
    Example:
      memories archive show 1a2b3c4d
    """
    from memories.service.requests import ArchiveShowRequest

    response = call(ArchiveShowRequest(op="archive_show", ref=ref))
    if as_json:
        emit_json(response)
        return
    asset = response.get("asset")
    if isinstance(asset, Mapping):
        console.print(
            f"{clean_line(asset.get('kind'), 12)} {clean_line(asset.get('title'), 200)} "
            f"in vault {clean_line(asset.get('vault_name'), 40)} (archived)"
        )
    entries = [e for e in response.get("entries", []) if isinstance(e, Mapping)]
    console.print(history_table(entries))
