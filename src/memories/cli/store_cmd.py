"""init, unlock, lock, sudo, status and passwd: the store and its keys."""

from __future__ import annotations

from typing import Any

import click

from memories.cli import cli
from memories.cli.common import (
    PASSWORD_ENV,
    call,
    json_option,
    read_password,
    reports_errors,
    settings,
)
from memories.cli.render import clean_line, console, emit_json, key_values, short_ids
from memories.errors import ConflictError, DeniedError

__all__ = ["NEW_PASSWORD_ENV"]

NEW_PASSWORD_ENV = "MEMORIES_NEW_PASSWORD"  # noqa: S105 - a variable name

# Argon2id defaults, repeated here for help texts; the service owns the real values and floor.
_DEFAULT_TIME_COST = 3
_DEFAULT_MEMORY_MIB = 64
_DEFAULT_PARALLELISM = 4

password_stdin_option = click.option(
    "--password-stdin",
    is_flag=True,
    help=f"Read the password from the first line of standard input (else ${PASSWORD_ENV}, "
    "else a hidden prompt).",
)


@cli.command()
@password_stdin_option
@click.option("--user-name", help="Your name as it appears on what you write.")
@click.option("--device-name", help="A name for this machine [default: its host name].")
@click.option(
    "--kdf-time-cost",
    type=click.IntRange(1, 100),
    help=f"Argon2id passes [default: {_DEFAULT_TIME_COST}; at least 1].",
)
@click.option(
    "--kdf-memory-mib",
    type=click.IntRange(1, 4096),
    help=f"Argon2id memory in MiB [default: {_DEFAULT_MEMORY_MIB}; at least 19].",
)
@click.option(
    "--kdf-parallelism",
    type=click.IntRange(1, 64),
    help=f"Argon2id lanes [default: {_DEFAULT_PARALLELISM}; at least 1].",
)
@json_option
@reports_errors
def init(
    password_stdin: bool,
    user_name: str | None,
    device_name: str | None,
    kdf_time_cost: int | None,
    kdf_memory_mib: int | None,
    kdf_parallelism: int | None,
    as_json: bool,
) -> None:
    """Create the encrypted store and your personal vault, protected by a password.

    The password is asked twice (hidden). For scripts, set MEMORIES_PASSWORD or pass
    --password-stdin. The password cannot be recovered: keep it safe.

    \b
    Examples:
      memories init
      printf '%s\\n' "$PW" | memories init --password-stdin --user-name Ada
    """
    current = settings()
    if current.store_path.exists():
        raise ConflictError(
            f"a store already exists at {current.store_path}; use `memories unlock`"
        )
    password = read_password("new password", from_stdin=password_stdin, confirm=True)
    kdf: dict[str, int] | None = None
    if kdf_time_cost is not None or kdf_memory_mib is not None or kdf_parallelism is not None:
        kdf = {
            "time_cost": kdf_time_cost or _DEFAULT_TIME_COST,
            "memory_kib": (kdf_memory_mib or _DEFAULT_MEMORY_MIB) * 1024,
            "parallelism": kdf_parallelism or _DEFAULT_PARALLELISM,
        }
    response = call(
        "init", password=password, user_name=user_name, device_name=device_name, kdf=kdf
    )
    if as_json:
        emit_json(response)
        return
    console.print(f"created the encrypted store at {response.get('store', current.store_path)}")
    vaults = [v for v in response.get("vaults", []) if isinstance(v, dict)]
    shorts = short_ids(str(v.get("id", "")) for v in vaults)
    for vault in vaults:
        what = "personal vault" if vault.get("personal") else "vault"
        if vault.get("local"):
            what = "device-only vault"
        name = clean_line(vault.get("name"), 60)
        console.print(f"{what} {name} ({shorts.get(str(vault.get('id', '')), '')})")
    console.print("the store is unlocked; save a memory with `memories put`")


@cli.command()
@password_stdin_option
@json_option
@reports_errors
def unlock(password_stdin: bool, as_json: bool) -> None:
    """Unlock the store with your password.

    It stays unlocked until `memories lock`, the daemon stops, or it sits idle for the idle
    period (15 minutes by default; MEMORIES_IDLE_LOCK_MINUTES changes it).

    \b
    Examples:
      memories unlock
      MEMORIES_PASSWORD=... memories unlock --json
    """
    password = read_password("password", from_stdin=password_stdin)
    response = call("unlock", password=password)
    if as_json:
        emit_json(response)
        return
    minutes = settings().idle_lock_minutes
    console.print(f"unlocked; the store locks again after {minutes:g} idle minutes")


@cli.command()
@json_option
@reports_errors
def lock(as_json: bool) -> None:
    """Lock the store now: the daemon forgets every key until `memories unlock`.

    \b
    Example:
      memories lock
    """
    response = call("lock")
    if as_json:
        emit_json(response)
        return
    console.print("locked")


@cli.command()
@password_stdin_option
@click.option(
    "--minutes",
    type=click.IntRange(1, 60),
    help="How long the elevation lasts [default: 5, or elevation_minutes in the config].",
)
@json_option
@reports_errors
def sudo(password_stdin: bool, minutes: int | None, as_json: bool) -> None:
    """Confirm your password to see private memories and write credentials for a while.

    Like sudo's per-terminal tickets, the elevation covers the commands run from this shell
    (the process that runs `memories`), not other terminals or remote clients.

    \b
    Examples:
      memories sudo
      memories sudo --minutes 2
    """
    password = read_password("password", from_stdin=password_stdin)
    response = call("sudo", password=password, minutes=minutes)
    if as_json:
        emit_json(response)
        return
    seconds = response.get("elevated_until_seconds")
    if isinstance(seconds, int | float):
        console.print(f"elevated for {_duration(seconds)} for commands from this shell")
    else:
        console.print("elevated for commands from this shell")


@cli.command()
@json_option
@reports_errors
def status(as_json: bool) -> None:
    """Show whether the store exists and is unlocked, and what it holds.

    \b
    Example:
      memories status --json
    """
    response = call("status")
    if as_json:
        emit_json(response)
        return
    if not response.get("initialized"):
        console.print("no store yet; create one with `memories init`")
        return
    rows: list[tuple[str, object]] = [
        ("store", response.get("store")),
        ("unlocked", response.get("unlocked")),
    ]
    if response.get("unlocked"):
        rows += [
            ("identity", _identity(response.get("identity"))),
            ("vaults", response.get("vaults")),
            ("assets", response.get("assets")),
        ]
        left = response.get("elevated_seconds_left")
        elevated = bool(response.get("elevated"))
        if elevated and isinstance(left, int | float):
            rows.append(("elevated", f"yes, {_duration(left)} left"))
        else:
            rows.append(("elevated", elevated))
    idle = response.get("idle_lock_seconds")
    if isinstance(idle, int | float):
        rows.append(("idle lock", _duration(idle)))
    console.print(key_values(rows))
    if not response.get("unlocked"):
        console.print("run `memories unlock` to use it")


@cli.command()
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read two lines from standard input: the current password, then the new one.",
)
@json_option
@reports_errors
def passwd(password_stdin: bool, as_json: bool) -> None:
    """Change the store password.

    Asks for the current password, then the new one twice (hidden). For scripts, set
    MEMORIES_PASSWORD (current) and MEMORIES_NEW_PASSWORD (new), or pass --password-stdin
    and write the current password on the first line and the new one on the second.
    When the shell is not elevated, the current password also elevates it for one minute
    (changing the password needs `memories sudo`).

    \b
    Examples:
      memories passwd
      printf '%s\\n%s\\n' "$OLD" "$NEW" | memories passwd --password-stdin
    """
    old = read_password("current password", from_stdin=password_stdin)
    new = read_password(
        "new password", from_stdin=password_stdin, env=NEW_PASSWORD_ENV, confirm=True
    )
    try:
        response = call("change_password", old_password=old, new_password=new)
    except DeniedError:
        if _elevated():
            raise
        call("sudo", password=old, minutes=1)
        response = call("change_password", old_password=old, new_password=new)
    if as_json:
        emit_json(response)
        return
    console.print("password changed; use the new one from now on")


def _elevated() -> bool:
    return bool(call("status").get("elevated"))


def _identity(identity: Any) -> str:
    if isinstance(identity, dict):
        parts = [
            clean_line(identity.get(key), 40)
            for key in ("user_name", "device_name")
            if isinstance(identity.get(key), str)
        ]
        return " / ".join(part for part in parts if part) or "-"
    return clean_line(identity, 80) if identity else "-"


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 120:
        return f"{seconds} seconds"
    return f"{seconds // 60} minutes"
