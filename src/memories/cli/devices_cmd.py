"""device request|approve|join|ls|revoke, identity export, member ls|role|remove, and
vault export|import|share: more devices, more people.

Request, approval and identity strings are long single lines meant for copy and paste (or
``--out FILE`` and ``@FILE``). They hold public keys, and approvals hold keys sealed to one
device; none is ever logged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import clean_line, console, emit_json, error_console
from memories.cli.vault_cmd import vault
from memories.errors import DeniedError, UsageError

__all__: list[str] = []

_ROLES = ("owner", "admin", "editor", "reader")
_MAX_TEXT = 8 * 1024 * 1024


def _text_or_file(value: str, what: str) -> str:
    """``value`` itself, or the text of the file ``@PATH`` (``@-``: standard input)."""
    if not value.startswith("@"):
        return value.strip()
    name = value[1:]
    try:
        if name == "-":
            text = sys.stdin.read(_MAX_TEXT + 1)
        else:
            with open(os.path.expanduser(name), encoding="utf-8") as handle:
                text = handle.read(_MAX_TEXT + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"the {what} file cannot be read") from exc
    if len(text) > _MAX_TEXT:
        raise UsageError(f"the {what} file is too large")
    return text.strip()


def _write_out(path: str, text: str) -> None:
    target = Path(os.path.expanduser(path))
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except FileExistsError as exc:
        raise UsageError("that file exists already; choose a new path") from exc
    except OSError as exc:
        raise UsageError("the file cannot be written there") from exc


def _absolute(path: str) -> str:
    return str(Path(os.path.expanduser(path)).resolve())


# -- devices ------------------------------------------------------------------------------------


@cli.group()
def device() -> None:
    """Pair your other devices and manage the devices a vault allows.

    \b
    Pairing a new device (no QR codes; strings or files):
      new$      memories init --join
      new$      memories device request --approver sha256:... --out req.txt
      existing$ memories sudo && memories device approve @req.txt --out approval.txt
      new$      memories device join @approval.txt
    `memories status --json` on the existing device shows its device fingerprint.
    """


@device.command("request")
@click.option("--approver", required=True, help="The approving device's full fingerprint.")
@click.option(
    "--expires",
    "minutes",
    type=click.IntRange(1, 1440),
    default=15,
    show_default=True,
    help="Minutes the request stays valid.",
)
@click.option("--out", "out", help="Write the request to this new file instead of printing it.")
@json_option
@reports_errors
def device_request(approver: str, minutes: int, out: str | None, as_json: bool) -> None:
    """On a new device (after `memories init --join`): make a signed, expiring join request.

    The request pins the approving device: only an approval signed by it is accepted.
    """
    from memories.service.requests.devices import DeviceRequestRequest

    response = call(
        DeviceRequestRequest(op="device_request", approver=approver, expires_minutes=minutes)
    )
    if out:
        _write_out(out, str(response["request"]))
    if as_json:
        emit_json(response if not out else {**response, "out": out})
        return
    if not out:
        click.echo(str(response["request"]))
    error_console.print(f"fingerprint {response['fingerprint']}")
    error_console.print(f"expires {response['expires_at']}; approve it on the other device")


@device.command("approve")
@click.argument("request")
@click.option("--fingerprint", help="The request's full fingerprint (for scripts; else asked).")
@click.option(
    "--vault",
    "vaults",
    multiple=True,
    help="A vault to share with the device; repeat. Default: all but device-only.",
)
@click.option("--out", "out", help="Write the approval to this new file instead of printing it.")
@json_option
@reports_errors
def device_approve(
    request: str, fingerprint: str | None, vaults: tuple[str, ...], out: str | None, as_json: bool
) -> None:
    """Approve a join request (REQUEST, or @FILE) from another device of yours.

    Shows the request's full SHA-256 fingerprint: compare it with the one the new device
    printed. Scripts pass --fingerprint FULL_HEX; a mismatch approves nothing. Needs
    `memories sudo`: the approval carries your signing key and vault keys, sealed to that
    device alone.
    """
    from memories.service.requests.devices import DeviceApproveRequest, DeviceInspectRequest

    text = _text_or_file(request, "request")
    if fingerprint is None:
        info = call(DeviceInspectRequest(op="device_inspect", request=text))
        if not sys.stdin.isatty():
            raise UsageError("no terminal to confirm the fingerprint; pass --fingerprint")
        error_console.print(f"device {clean_line(info.get('device_name'), 60)} asks to join")
        error_console.print(f"fingerprint {info['fingerprint']}")
        if not click.confirm("Is this the fingerprint the new device shows?", err=True):
            raise DeniedError("not confirmed; nothing was approved")
        fingerprint = str(info["fingerprint"])
    response = call(
        DeviceApproveRequest(
            op="device_approve", request=text, fingerprint=fingerprint, vaults=list(vaults)
        )
    )
    if out:
        _write_out(out, str(response["approval"]))
    if as_json:
        emit_json(response if not out else {k: v for k, v in response.items() if k != "approval"})
        return
    if not out:
        click.echo(str(response["approval"]))
    error_console.print(f"approved {response['device']} for {len(response['vaults'])} vault(s)")


@device.command("join")
@click.argument("approval")
@json_option
@reports_errors
def device_join(approval: str, as_json: bool) -> None:
    """On the new device: verify the approval (APPROVAL, or @FILE) and join."""
    from memories.service.requests.devices import DeviceJoinRequest

    response = call(
        DeviceJoinRequest(op="device_join", approval=_text_or_file(approval, "approval"))
    )
    if as_json:
        emit_json(response)
        return
    identity: dict[str, Any] = response.get("identity", {})
    console.print(f"joined as device {identity.get('device')}; {len(response['vaults'])} vault(s)")


@device.command("ls")
@click.option("--vault", help="Vault name or id [default: personal].")
@json_option
@reports_errors
def device_ls(vault: str | None, as_json: bool) -> None:
    """List the devices a vault allows and those it revoked."""
    from memories.service.requests.devices import DeviceListRequest

    response = call(DeviceListRequest(op="device_list", vault=vault))
    if as_json:
        emit_json(response)
        return
    for row in response.get("devices", []):
        mark = " (this device)" if row.get("this_device") else ""
        console.print(f"{row['status']:8} {row['device']} {clean_line(row.get('name'), 40)}{mark}")


@device.command("revoke")
@click.argument("device_fingerprint")
@click.option("--vault", help="Vault name or id [default: personal].")
@json_option
@reports_errors
def device_revoke(device_fingerprint: str, vault: str | None, as_json: bool) -> None:
    """Revoke a device (its full fingerprint) for good. Owner only; needs `memories sudo`.

    A new epoch starts with a fresh vault key that the revoked device never receives.
    """
    from memories.service.requests.devices import DeviceRevokeRequest

    response = call(DeviceRevokeRequest(op="device_revoke", vault=vault, device=device_fingerprint))
    if as_json:
        emit_json(response)
        return
    console.print(f"revoked; the vault is at epoch {response['epoch']}")


# -- identity and members ------------------------------------------------------------------------


@cli.group()
def identity() -> None:
    """Your public identity, to share vaults with another person."""


@identity.command("export")
@click.option("--out", "out", help="Write it to this new file instead of printing it.")
@json_option
@reports_errors
def identity_export(out: str | None, as_json: bool) -> None:
    """Print your public identity (no private key) and its full fingerprint."""
    from memories.service.requests.devices import IdentityExportRequest

    response = call(IdentityExportRequest(op="identity_export"))
    if out:
        _write_out(out, str(response["identity"]))
    if as_json:
        emit_json(response)
        return
    if not out:
        click.echo(str(response["identity"]))
    error_console.print(f"fingerprint {response['fingerprint']}")


@cli.group()
def member() -> None:
    """The people who share a vault, and their roles (owner, admin, editor, reader)."""


@member.command("ls")
@click.option("--vault", help="Vault name or id [default: personal].")
@json_option
@reports_errors
def member_ls(vault: str | None, as_json: bool) -> None:
    """List a vault's members and roles."""
    from memories.service.requests.devices import MemberListRequest

    response = call(MemberListRequest(op="member_list", vault=vault))
    if as_json:
        emit_json(response)
        return
    for row in response.get("members", []):
        console.print(f"{row['role']:7} {row['user']} ({row['devices']} device(s))")


@member.command("role")
@click.argument("user")
@click.argument("role", type=click.Choice(_ROLES))
@click.option("--vault", help="Vault name or id [default: personal].")
@json_option
@reports_errors
def member_role(user: str, role: str, vault: str | None, as_json: bool) -> None:
    """Give the member USER (fingerprint) the role ROLE."""
    from memories.service.requests.devices import MemberRoleRequest

    response = call(MemberRoleRequest(op="member_role", vault=vault, user=user, role=role))  # type: ignore[arg-type]
    if as_json:
        emit_json(response)
        return
    console.print(f"role changed to {role}")


@member.command("remove")
@click.argument("user")
@click.option("--vault", help="Vault name or id [default: personal].")
@json_option
@reports_errors
def member_remove(user: str, vault: str | None, as_json: bool) -> None:
    """Remove the member USER and their devices; a new epoch and key they never receive."""
    from memories.service.requests.devices import MemberRemoveRequest

    response = call(MemberRemoveRequest(op="member_remove", vault=vault, user=user))
    if as_json:
        emit_json(response)
        return
    console.print(f"removed; the vault is at epoch {response['epoch']}")


# -- vault bundles and sharing -------------------------------------------------------------------


@vault.command("share")
@click.argument("name")
@click.option("--identity", "identity_text", required=True, help="Their identity, or @FILE.")
@click.option("--role", required=True, type=click.Choice(_ROLES))
@click.option("--fingerprint", help="Their full identity fingerprint, checked when given.")
@json_option
@reports_errors
def vault_share(
    name: str, identity_text: str, role: str, fingerprint: str | None, as_json: bool
) -> None:
    """Share vault NAME with another person; the next `vault export` carries them its key."""
    from memories.service.requests.devices import VaultShareRequest

    response = call(
        VaultShareRequest(
            op="vault_share",
            vault=name,
            identity=_text_or_file(identity_text, "identity"),
            role=role,  # type: ignore[arg-type]
            fingerprint=fingerprint,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(f"shared with {response['member']} as {role}")


@vault.command("export")
@click.argument("name")
@click.option("--out", "out", required=True, help="A new file for the signed bundle.")
@json_option
@reports_errors
def vault_export(name: str, out: str, as_json: bool) -> None:
    """Write a signed bundle of vault NAME for your other devices and members."""
    from memories.service.requests.devices import VaultExportRequest

    response = call(VaultExportRequest(op="vault_export", vault=name, path=_absolute(out)))
    if as_json:
        emit_json(response)
        return
    console.print(f"wrote {response['bytes']} bytes to {response['path']}")


@vault.command("import")
@click.argument("file")
@json_option
@reports_errors
def vault_import(file: str, as_json: bool) -> None:
    """Check a signed bundle completely, then add what is new in it."""
    from memories.service.requests.devices import VaultImportRequest

    response = call(VaultImportRequest(op="vault_import", path=_absolute(file)))
    if as_json:
        emit_json(response)
        return
    console.print(
        f"imported {response['revisions']} revision(s), {response['policies']} policy "
        f"entr{'y' if response['policies'] == 1 else 'ies'} into {clean_line(response['name'], 60)}"
    )
