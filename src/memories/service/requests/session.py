"""Requests about the store itself: create, lock state, elevation, password, status."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import Name, Needs, Password, RequestModel, StrictModel

__all__ = [
    "ChangePasswordRequest",
    "DesktopStatusRequest",
    "InitRequest",
    "KdfSettings",
    "LockRequest",
    "RotateKeyRequest",
    "SessionRequest",
    "StatusRequest",
    "SudoRequest",
    "UnlockRequest",
]


# Argon2id bounds, as memories.crypto.kdf enforces them. Stated here so that front ends that
# build requests do not load the crypto stack; a test keeps the two in step.
DEFAULT_TIME_COST: Final = 3
DEFAULT_MEMORY_KIB: Final = 65536
DEFAULT_PARALLELISM: Final = 4
FLOOR_TIME_COST: Final = 1
FLOOR_MEMORY_KIB: Final = 19456
FLOOR_PARALLELISM: Final = 1
MAX_TIME_COST: Final = 100
MAX_MEMORY_KIB: Final = 4 * 1024 * 1024
MAX_PARALLELISM: Final = 64


class KdfSettings(StrictModel):
    """Argon2id cost of a new store."""

    time_cost: int = Field(
        default=DEFAULT_TIME_COST, ge=FLOOR_TIME_COST, le=MAX_TIME_COST, description="passes"
    )
    memory_kib: int = Field(
        default=DEFAULT_MEMORY_KIB,
        ge=FLOOR_MEMORY_KIB,
        le=MAX_MEMORY_KIB,
        description="memory in KiB",
    )
    parallelism: int = Field(
        default=DEFAULT_PARALLELISM, ge=FLOOR_PARALLELISM, le=MAX_PARALLELISM, description="lanes"
    )


class InitRequest(RequestModel):
    """Create the store: an identity, the personal vault and a device-only vault; then unlock."""

    NEEDS = Needs(unlocked=False, remote=False)
    RESPONSE = "`{store, vaults: [VaultInfo], identity}`; ConflictError when a store exists already"

    op: Literal["init"]
    password: Password = Field(description="the store password (secret)")
    user_name: Name | None = Field(default=None, description="shown to other devices")
    device_name: Name | None = Field(default=None, description="defaults to the host name")
    kdf: KdfSettings | None = Field(default=None, description="Argon2id cost; defaults apply")


class UnlockRequest(RequestModel):
    """Unlock the store. Over a remote transport this also elevates the remote namespace."""

    NEEDS = Needs(unlocked=False)
    RESPONSE = (
        "`{unlocked: true, accepted: [{anchor, reason, anchor_seq, message}]}` (`accepted` "
        'lists what accept_rollback accepted); DeniedError "the password is not correct", '
        "an `integrity` error naming --accept-rollback when the anchors do not vouch for the store"
    )

    op: Literal["unlock"]
    password: Password = Field(description="the store password (secret)")
    accept_rollback: bool = Field(
        default=False,
        description=(
            "open a store its rollback anchors do not vouch for (restored from a copy, anchors "
            "lost or damaged); the acceptance is recorded in the audit trail"
        ),
    )


class LockRequest(RequestModel):
    """Lock now: keys and plaintext caches are dropped and every elevation ends."""

    NEEDS = Needs(unlocked=False)
    RESPONSE = "`{locked: true}`"

    op: Literal["lock"]


class SudoRequest(RequestModel):
    """Elevate the caller's namespace (a shell session, or one remote namespace) for a while."""

    NEEDS = Needs(audit_failures=True)
    RESPONSE = "`{elevated_until_seconds}`: how many seconds the elevation lasts"

    op: Literal["sudo"]
    password: Password = Field(description="the store password (secret)")
    minutes: int | None = Field(
        default=None, ge=1, le=60, description="defaults to elevation_minutes from the config"
    )


class ChangePasswordRequest(RequestModel):
    """Rewrap the master key under a new password; nothing else is re-encrypted."""

    NEEDS = Needs(elevation="always", audit_failures=True)
    RESPONSE = "`{changed: true}`"

    op: Literal["change_password"]
    old_password: Password = Field(description="the current password (secret)")
    new_password: Password = Field(description="the new password (secret)")


class RotateKeyRequest(RequestModel):
    """Generate a new master key and re-seal everything under it, in one transaction.

    A copy of any earlier header (the old password's wrapped key) opens nothing afterwards.
    """

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{rotated: true, seq}`"

    op: Literal["rotate_key"]
    password: Password = Field(description="the current password (secret)")
    new_password: Password | None = Field(
        default=None, description="a new password at the same time (secret); else unchanged"
    )


class StatusRequest(RequestModel):
    """Lock state, identity and counts; answered while locked too."""

    NEEDS = Needs(unlocked=False)
    RESPONSE = (
        "`{initialized, unlocked, store, version, elevated, elevated_seconds_left, "
        "idle_lock_seconds}` and, when unlocked, `identity`, `vaults` (count), `assets` "
        "(count, deleted ones included)"
    )

    op: Literal["status"]


class DesktopStatusRequest(RequestModel):
    """The tray's projection: counts only, no ids, titles or contents; never resets timers."""

    NEEDS = Needs(unlocked=False)
    RESPONSE = (
        "`{initialized, unlocked, libraries, connections, providers: [], sync_queue: "
        "{pending}}`; when locked only `{initialized, unlocked: false}`"
    )

    op: Literal["desktop_status"]


SessionRequest: TypeAlias = (
    InitRequest
    | UnlockRequest
    | LockRequest
    | SudoRequest
    | ChangePasswordRequest
    | RotateKeyRequest
    | StatusRequest
    | DesktopStatusRequest
)
