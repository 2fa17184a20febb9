"""Requests for more devices and more people: joining, approving, bundles, members, revocation.

None goes over MCP or a remote transport: each moves keys or changes who may read a vault.
Approving a device hands it the user signing key and vault keys, so it needs elevation, as does
revoking a device; the rest is checked by the vault's policy rules (the role declared here is
the weakest that can possibly succeed).
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import Name, Needs, Password, Ref, RequestModel
from memories.service.requests.session import KdfSettings

__all__ = [
    "DeviceApproveRequest",
    "DeviceInspectRequest",
    "DeviceJoinRequest",
    "DeviceListRequest",
    "DeviceRequest",
    "DeviceRequestRequest",
    "DeviceRevokeRequest",
    "IdentityExportRequest",
    "InitJoinRequest",
    "MemberListRequest",
    "MemberRemoveRequest",
    "MemberRoleRequest",
    "VaultExportRequest",
    "VaultImportRequest",
    "VaultShareRequest",
]

Blob = Annotated[str, StringConstraints(min_length=1, max_length=8 * 1024 * 1024)]
Fingerprint = Annotated[str, StringConstraints(min_length=1, max_length=80)]
Path = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
RoleName = Literal["owner", "admin", "editor", "reader"]


class InitJoinRequest(RequestModel):
    """Create a store that waits to join: its own password and device keys, no user identity
    and no vaults until `device_join` commits an approval."""

    NEEDS = Needs(unlocked=False, remote=False)
    RESPONSE = "`{store, joining: true}`; ConflictError when a store exists already"

    op: Literal["init_join"]
    password: Password = Field(description="the new store's password (secret)")
    device_name: Name | None = Field(default=None, description="defaults to the host name")
    kdf: KdfSettings | None = Field(default=None, description="Argon2id cost; defaults apply")


class DeviceRequestRequest(RequestModel):
    """On a joining store: sign an expiring join request that pins the approving device."""

    NEEDS = Needs(remote=False, audit_failures=True)
    RESPONSE = "`{request, fingerprint, expires_at}`: the string to copy and its full fingerprint"

    op: Literal["device_request"]
    approver: Fingerprint = Field(description="the approving device's full fingerprint")
    expires_minutes: int = Field(default=15, ge=1, le=1440, description="lifetime in minutes")


class DeviceInspectRequest(RequestModel):
    """Verify a join request and show what it asks for, with its full fingerprint."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{device_id, device_name, device, approver, created_at, expires_at, fingerprint}`"

    op: Literal["device_inspect"]
    request: Blob = Field(description="the join request string")


class DeviceApproveRequest(RequestModel):
    """Authorize the requesting device (same user) in the chosen vaults and seal an approval
    to it. `fingerprint` must be the request's full fingerprint."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{approval, device, vaults: [vault id]}`"

    op: Literal["device_approve"]
    request: Blob = Field(description="the join request string")
    fingerprint: Fingerprint = Field(description="the request's full sha256 fingerprint")
    vaults: list[Ref] = Field(
        default_factory=list,
        max_length=256,
        description="vaults to share; empty: all but device-only",
    )


class DeviceJoinRequest(RequestModel):
    """On a joining store: verify an approval against its pending request and commit."""

    NEEDS = Needs(remote=False, audit_failures=True)
    RESPONSE = "`{identity, vaults: [vault id]}`"

    op: Literal["device_join"]
    approval: Blob = Field(description="the approval string (secret material inside an envelope)")


class DeviceListRequest(RequestModel):
    """The devices a vault allows and the ones it revoked."""

    NEEDS = Needs(role="reader", remote=False)
    RESPONSE = "`{devices: [{device, name, user, status, this_device}]}`"

    op: Literal["device_list"]
    vault: Ref | None = Field(default=None, description="vault; default personal")


class DeviceRevokeRequest(RequestModel):
    """Revoke a device for good (Owner): a new epoch and key it never receives."""

    NEEDS = Needs(role="owner", elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{vault, epoch, revoked}`"

    op: Literal["device_revoke"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    device: Fingerprint = Field(description="the device's full fingerprint")


class IdentityExportRequest(RequestModel):
    """This user's public identity (user key and this device's certificate) to share."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{identity, fingerprint}`"

    op: Literal["identity_export"]


class VaultShareRequest(RequestModel):
    """Make another person a member with a role and allow their devices."""

    NEEDS = Needs(role="admin", remote=False, audit_failures=True)
    RESPONSE = "`{vault, member, role, epoch}`"

    op: Literal["vault_share"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    identity: Blob = Field(description="their identity string (`identity export`)")
    role: RoleName = Field(description="owner (transfers ownership), admin, editor or reader")
    fingerprint: Fingerprint | None = Field(
        default=None, description="their full identity fingerprint, checked when given"
    )


class MemberListRequest(RequestModel):
    """The members of a vault and their roles."""

    NEEDS = Needs(role="reader", remote=False)
    RESPONSE = "`{members: [{user, role, devices}]}`"

    op: Literal["member_list"]
    vault: Ref | None = Field(default=None, description="vault; default personal")


class MemberRoleRequest(RequestModel):
    """Change a member's role."""

    NEEDS = Needs(role="admin", remote=False, audit_failures=True)
    RESPONSE = "`{vault, member, role, epoch}`"

    op: Literal["member_role"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    user: Fingerprint = Field(description="the member's fingerprint (full, or 8+ hex)")
    role: RoleName = Field(description="the new role")


class MemberRemoveRequest(RequestModel):
    """Remove a member and their devices: a new epoch and key they never receive."""

    NEEDS = Needs(role="admin", remote=False, audit_failures=True)
    RESPONSE = "`{vault, removed, epoch}`"

    op: Literal["member_remove"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    user: Fingerprint = Field(description="the member's fingerprint (full, or 8+ hex)")


class VaultExportRequest(RequestModel):
    """Write a signed bundle of a vault (policies, revisions, keys sealed to its devices,
    signed audit records about it)."""

    NEEDS = Needs(role="reader", remote=False, audit_failures=True)
    RESPONSE = "`{path, vault, policies, revisions, bytes}`"

    op: Literal["vault_export"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    path: Path = Field(description="absolute path of a new file (never overwritten)")


class VaultImportRequest(RequestModel):
    """Validate a bundle completely, then commit its new policies, revisions and other
    devices' audit records at once."""

    NEEDS = Needs(remote=False, audit_failures=True)
    RESPONSE = "`{vault, name, new_vault, policies, revisions, epoch, links, audit}`"

    op: Literal["vault_import"]
    path: Path = Field(description="absolute path of the bundle file")


DeviceRequest: TypeAlias = (
    InitJoinRequest
    | DeviceRequestRequest
    | DeviceInspectRequest
    | DeviceApproveRequest
    | DeviceJoinRequest
    | DeviceListRequest
    | DeviceRevokeRequest
    | IdentityExportRequest
    | VaultShareRequest
    | MemberListRequest
    | MemberRoleRequest
    | MemberRemoveRequest
    | VaultExportRequest
    | VaultImportRequest
)
