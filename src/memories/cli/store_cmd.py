"""init, unlock, lock, sudo, status and passwd: the store and its keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import (
    PASSWORD_ENV,
    call,
    json_option,
    read_password,
    reports_errors,
    settings,
    state,
)
from memories.cli.render import (
    Column,
    clean_line,
    console,
    emit_json,
    error_console,
    fitted_table,
    key_values,
    short_ids,
)
from memories.errors import ConflictError, IntegrityError, UsageError

if TYPE_CHECKING:
    from memories.service.requests import RequestModel

__all__ = ["NEW_PASSWORD_ENV", "ROTATION_TIMEOUT_SECONDS"]

NEW_PASSWORD_ENV = "MEMORIES_NEW_PASSWORD"  # noqa: S105 - a variable name

#: How long `passwd --rotate-key` waits for the daemon. A rotation re-seals every record of
#: the store in one transaction, so it takes time in proportion to the store, far beyond the
#: usual per-call limit.
ROTATION_TIMEOUT_SECONDS: Final = 3600.0

#: What each rollback anchor finding means, for the unlock report.
_ROLLBACK_REASONS: Final = {
    "missing": "the anchor file was missing",
    "damaged": "the anchor file was damaged",
    "older": "the store is older than the anchor's last commit",
    "diverged": "the store's history differs from the anchor's",
}
_ANCHORS: Final = {"local": "anchor beside the store", "state": "anchor in the state folder"}

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
    "--join",
    is_flag=True,
    help="Create a store that joins your other device: `memories device request` comes next.",
)
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
    join: bool,
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
      memories init --join     # a new device of yours: no identity until it joins
    """
    current = settings()
    if current.store_path.exists():
        raise ConflictError(
            f"a store already exists at {current.store_path}; use `memories unlock`"
        )
    from pydantic import SecretStr

    from memories.service.requests import InitRequest, KdfSettings

    password = read_password("new password", from_stdin=password_stdin, confirm=True)
    kdf: KdfSettings | None = None
    if kdf_time_cost is not None or kdf_memory_mib is not None or kdf_parallelism is not None:
        kdf = KdfSettings(
            time_cost=kdf_time_cost or _DEFAULT_TIME_COST,
            memory_kib=(kdf_memory_mib or _DEFAULT_MEMORY_MIB) * 1024,
            parallelism=kdf_parallelism or _DEFAULT_PARALLELISM,
        )
    if join:
        from memories.service.requests.devices import InitJoinRequest

        joined = call(
            InitJoinRequest(
                op="init_join", password=SecretStr(password), device_name=device_name, kdf=kdf
            )
        )
        if as_json:
            emit_json(joined)
            return
        console.print(f"created the encrypted store at {joined.get('store', current.store_path)}")
        console.print("next: `memories device request --approver FINGERPRINT` on this device")
        return
    response = call(
        InitRequest(
            op="init",
            password=SecretStr(password),
            user_name=user_name,
            device_name=device_name,
            kdf=kdf,
        )
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
@click.option(
    "--accept-rollback",
    is_flag=True,
    help="Open the store even though its rollback anchors do not vouch for it (it was "
    "restored from an older copy, or an anchor is missing or damaged). Anything committed "
    "after that copy is not in it. Recorded in the audit trail.",
)
@json_option
@reports_errors
def unlock(password_stdin: bool, accept_rollback: bool, as_json: bool) -> None:
    """Unlock the store with your password.

    It stays unlocked until `memories lock`, the daemon stops, or it sits idle for the idle
    period (15 minutes by default; MEMORIES_IDLE_LOCK_MINUTES changes it).

    Unlock refuses a store file that is older than the last commit this machine recorded
    for it (its rollback anchors), as after putting back a copy of the data folder. If you
    did that on purpose, --accept-rollback opens it as it is: the acceptance, with each
    anchor and why it did not vouch for the store, is recorded in the audit trail and the
    anchors are reset to the store as it is now.

    \b
    Examples:
      memories unlock
      MEMORIES_PASSWORD=... memories unlock --json
      memories unlock --accept-rollback      # after restoring an older copy on purpose
    """
    from pydantic import SecretStr

    from memories.service.requests import UnlockRequest

    password = read_password("password", from_stdin=password_stdin)
    request = UnlockRequest(
        op="unlock", password=SecretStr(password), accept_rollback=accept_rollback
    )
    try:
        response = call(request)
    except IntegrityError as exc:
        if accept_rollback or "--accept-rollback" not in exc.message:
            raise
        raise IntegrityError(_rollback_refusal(exc.message)) from None
    if as_json:
        emit_json(response)
        return
    accepted = [a for a in response.get("accepted", []) if isinstance(a, Mapping)]
    if accepted:
        _report_accepted(accepted)
    minutes = settings().idle_lock_minutes
    console.print(f"unlocked; the store locks again after {minutes:g} idle minutes")


def _rollback_refusal(message: str) -> str:
    """The daemon's refusal, with what --accept-rollback would do."""
    return (
        f"{message.rstrip('.')}. --accept-rollback opens the store as this file holds it: "
        "whatever was committed after this copy was made is not in it, and the anchors are "
        "reset to it; use it only if you restored or moved the data folder yourself"
    )


def _report_accepted(accepted: list[Mapping[str, Any]]) -> None:
    """Say loudly, on the terminal as in a log, which anchor findings were overridden."""
    console.print(
        Text("ROLLBACK ACCEPTED: ", style="bold red")
        + Text("the store was opened although its rollback anchors did not vouch for it")
    )
    rows = []
    for item in accepted:
        anchor = clean_line(item.get("anchor"), 20)
        reason = clean_line(item.get("reason"), 20)
        seq = item.get("anchor_seq")
        rows.append(
            [
                Text(_ANCHORS.get(anchor, anchor)),
                Text(reason, style="bold red"),
                Text(str(seq) if isinstance(seq, int) else "-"),
                Text(_ROLLBACK_REASONS.get(reason, clean_line(item.get("message"), 300))),
            ]
        )
    columns = [
        Column("anchor", cap=28),
        Column("reason", cap=10),
        Column("anchor's commit", cap=16, justify="right"),
        Column("what it means", cap=300, flexible=True),
    ]
    console.print(fitted_table(columns, rows))
    console.print(
        "recorded in the audit trail as store.rollback_accepted (`memories audit`); both "
        "anchors now vouch for the store as it is"
    )


@cli.command()
@json_option
@reports_errors
def lock(as_json: bool) -> None:
    """Lock the store now: the daemon forgets every key until `memories unlock`.

    \b
    Example:
      memories lock
    """
    from memories.service.requests import LockRequest

    response = call(LockRequest(op="lock"))
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
    from pydantic import SecretStr

    from memories.service.requests import SudoRequest

    password = read_password("password", from_stdin=password_stdin)
    response = call(SudoRequest(op="sudo", password=SecretStr(password), minutes=minutes))
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
    from memories.service.requests import StatusRequest

    response = call(StatusRequest(op="status"))
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
    help="Read the passwords from standard input, one a line: the current one, then the new "
    "one (none with --rotate-key alone).",
)
@click.option(
    "--rotate-key",
    is_flag=True,
    help="Instead of rewrapping the key, generate a new master key and re-seal every record "
    "under it (takes time in proportion to the store). Keeps the password unless "
    "--new-password is given too.",
)
@click.option(
    "--new-password",
    "change",
    is_flag=True,
    help="With --rotate-key: also choose a new password (plain `passwd` always does).",
)
@json_option
@reports_errors
def passwd(password_stdin: bool, rotate_key: bool, change: bool, as_json: bool) -> None:
    """Change the store password, or rotate the master key with --rotate-key.

    Asks for the current password, then the new one twice (hidden). For scripts, set
    MEMORIES_PASSWORD (current) and MEMORIES_NEW_PASSWORD (new), or pass --password-stdin
    and write the current password on the first line and the new one on the second.
    When the shell is not elevated, the current password also elevates it for one minute
    (both changes need `memories sudo`).

    A password change only rewraps the master key, so a copy of the old store header still
    opens with the old password. --rotate-key generates a new master key and re-seals every
    record under it in one transaction: afterwards no earlier copy of the header, with the
    old password or the old key, opens anything in this store.

    \b
    Examples:
      memories passwd
      printf '%s\\n%s\\n' "$OLD" "$NEW" | memories passwd --password-stdin
      memories passwd --rotate-key                   # same password, new key
      memories passwd --rotate-key --new-password    # new key and new password
    """
    from pydantic import SecretStr

    from memories.service.requests import ChangePasswordRequest, RotateKeyRequest

    if rotate_key and not change and state().secret(NEW_PASSWORD_ENV):
        raise UsageError(
            f"{NEW_PASSWORD_ENV} is set, but --rotate-key keeps the password; add "
            "--new-password to change it as well"
        )
    old = read_password("current password", from_stdin=password_stdin)
    new: str | None = None
    if change or not rotate_key:
        new = read_password(
            "new password", from_stdin=password_stdin, env=NEW_PASSWORD_ENV, confirm=True
        )
    request: RequestModel
    if rotate_key:
        request = RotateKeyRequest(
            op="rotate_key",
            password=SecretStr(old),
            new_password=None if new is None else SecretStr(new),
        )
    else:
        assert new is not None  # always read without --rotate-key
        request = ChangePasswordRequest(
            op="change_password", old_password=SecretStr(old), new_password=SecretStr(new)
        )
    try:
        response = _elevated_call(request, old, rotating=rotate_key, as_json=as_json)
    except IntegrityError as exc:
        if not rotate_key:
            raise
        # Rotation re-seals only what verifies, so damage stops it before anything changes.
        raise IntegrityError(
            f"{exc.message.rstrip('.')}; the key was not rotated and nothing changed; "
            "`memories verify` shows what is damaged"
        ) from None
    if as_json:
        emit_json(response)
        return
    if not rotate_key:
        console.print("password changed; use the new one from now on")
        return
    console.print("master key rotated: every record is sealed under a new key")
    if new is not None:
        console.print("password changed; use the new one from now on")
    else:
        console.print("the password is unchanged")
    console.print("copies of the store's earlier header no longer open anything in it")


def _elevated_call(
    request: RequestModel, password: str, *, rotating: bool, as_json: bool
) -> dict[str, Any]:
    """Send a request that needs elevation, elevating this shell for a minute when it is
    not elevated yet (the password was just typed, so asking for `memories sudo` first would
    only repeat it).

    Raises:
        DeniedError: the password is not correct, or the elevation ended meanwhile.
    """
    from pydantic import SecretStr

    from memories.service.requests import SudoRequest

    # Asked first rather than tried: a refused attempt would be audited as a failure.
    if not _elevated():
        call(SudoRequest(op="sudo", password=SecretStr(password), minutes=1))
    return _send(request, rotating=rotating, as_json=as_json)


def _send(request: RequestModel, *, rotating: bool, as_json: bool) -> dict[str, Any]:
    if not rotating:
        return call(request)
    if as_json:
        return call(request, timeout=ROTATION_TIMEOUT_SECONDS)
    # On stderr, so the result on stdout stays clean; rich draws nothing when it is no terminal.
    with error_console.status("re-sealing every record under a new key ..."):
        return call(request, timeout=ROTATION_TIMEOUT_SECONDS)


def _elevated() -> bool:
    from memories.service.requests import StatusRequest

    return bool(call(StatusRequest(op="status")).get("elevated"))


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
