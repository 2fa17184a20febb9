"""Requests about synchronization through storage the user owns, and the quarantine it keeps.

None is available over MCP or remote transports: sync decides where ciphertext goes, and the
quarantine decides what enters a vault. Folder paths are absolute (the CLI resolves them).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import Needs, Ref, RequestModel

__all__ = [
    "QuarantineDiscardRequest",
    "QuarantineListRequest",
    "QuarantineReapplyRequest",
    "QuarantineShowRequest",
    "SyncAddRequest",
    "SyncForksRequest",
    "SyncNowRequest",
    "SyncRemoveRequest",
    "SyncRequest",
    "SyncResolveForkRequest",
    "SyncStatusRequest",
]

MAX_LOCATION_CHARS: Final = 4096
Location = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LOCATION_CHARS)]
_TARGET_HELP: Final = "a sync target's id, folder path or rclone REMOTE:PATH"
_SYNC: Final = Needs(mcp=None, remote=False)
_REVIEW: Final = Needs(mcp=None, remote=False, audit_failures=True)


class SyncAddRequest(RequestModel):
    """Add a place objects are synced through: a folder (any directory, such as a Dropbox or
    Syncthing folder) or an rclone remote. Only ciphertext and signed descriptors go there."""

    NEEDS = Needs(mcp=None, remote=False, audit_failures=True)
    RESPONSE = (
        "`{target: {id, kind, location, added_at}}`; ConflictError when it is added already, "
        "UsageError for a relative path or a malformed REMOTE:PATH"
    )

    op: Literal["sync_add"]
    kind: Literal["folder", "rclone"] = Field(description="folder or rclone")
    location: Location = Field(description="absolute folder path, or REMOTE:PATH for rclone")


class SyncRemoveRequest(RequestModel):
    """Stop syncing through a target. Nothing there is deleted (history is never purged)."""

    NEEDS = Needs(mcp=None, remote=False, audit_failures=True)
    RESPONSE = "`{removed: {id, kind, location, added_at}}`; NotFoundError"

    op: Literal["sync_remove"]
    target: Location = Field(description=_TARGET_HELP)


class SyncStatusRequest(RequestModel):
    """The sync targets, the outbox and inbox sizes, quarantine and the last pass per target."""

    NEEDS = _SYNC
    RESPONSE = (
        "`{targets: [{id, kind, location, added_at, last: {at, up, down, merged, quarantined} "
        "| null}], outbox, inbox, receipts, quarantined, forks, refused, interval_minutes}`"
    )

    op: Literal["sync_status"]


class SyncNowRequest(RequestModel):
    """One bounded pass against every target (or one): enqueue new local policy entries,
    revisions and audit records, upload, list, download and merge. The transport I/O runs
    outside the service lock; a lock during it imports nothing. Send it again while ``more``
    is true."""

    NEEDS = Needs(mcp=None, remote=False)
    RESPONSE = (
        "`{targets: [{target, enqueued, up, down, merged, policies, audit, quarantined, "
        "refused, forks, pending, more, error}], up, down, merged, policies, audit, "
        "quarantined, refused, forks, pending, more}`; NotFoundError when there is no target"
    )

    op: Literal["sync_now"]
    target: Location | None = Field(default=None, description=_TARGET_HELP)


class QuarantineListRequest(RequestModel):
    """Objects (revisions, policy entries, audit records) that arrived and were not merged, and
    this device's writes a new epoch left behind, with the reason; ids only, never content."""

    NEEDS = _SYNC
    RESPONSE = (
        "`{quarantine: [{object, type, descriptor, vault, asset, revision, device, reason, at}]}`"
    )

    op: Literal["quarantine_list"]


class QuarantineShowRequest(RequestModel):
    """One quarantined object (its id or a prefix of at least 6 hex digits)."""

    NEEDS = _SYNC
    RESPONSE = (
        "`{quarantined: {object, type, descriptor, vault, asset, revision, device, reason, at}}`"
    )

    op: Literal["quarantine_show"]
    ref: Ref = Field(description="object id or a prefix of at least 6 hex digits")


class QuarantineReapplyRequest(RequestModel):
    """Merge a quarantined revision after all, by this user's local decision; the revision's
    own signature, policy chain and ciphertext are still checked."""

    NEEDS = _REVIEW
    RESPONSE = (
        "`{reapplied: {...}}`; IntegrityError when it still does not verify (it stays), "
        "ConflictError when its parents or its policy entry have not arrived, UsageError for "
        "a policy entry or audit records (only revisions are reapplied)"
    )

    op: Literal["quarantine_reapply"]
    ref: Ref = Field(description="object id or a prefix of at least 6 hex digits")


class QuarantineDiscardRequest(RequestModel):
    """Drop a quarantined revision from review for good; its bytes stay (nothing is purged)."""

    NEEDS = _REVIEW
    RESPONSE = "`{discarded: {...}}`; NotFoundError"

    op: Literal["quarantine_discard"]
    ref: Ref = Field(description="object id or a prefix of at least 6 hex digits")


class SyncForksRequest(RequestModel):
    """Open permission forks: vaults whose policy history split into two branches, with both
    branches' entries (ids, numbers, signers, times) and whether this user may resolve it."""

    NEEDS = _SYNC
    RESPONSE = (
        "`{forks: [{vault, name, base, base_seq, local: [{id, seq, epoch, signer, device, "
        "created_at, resolution}], incoming: [...], detected_at, can_resolve}]}`"
    )

    op: Literal["sync_forks"]


class SyncResolveForkRequest(RequestModel):
    """Resolve a vault's permission fork (Owner on both branches): sign a new policy entry that
    follows the chosen branch and discards the entire other one, with a fresh vault key. What
    was written under the discarded entries moves to the quarantine."""

    NEEDS = Needs(role="owner", elevation="always", mcp=None, remote=False, audit_failures=True)
    RESPONSE = (
        "`{resolved: {vault, kept, resolution, seq, epoch, discarded: [ids], quarantined}}`; "
        "NotFoundError when the vault has not forked, DeniedError when this user is not the "
        "Owner on both branches or holds no key of the incoming branch it would keep"
    )

    op: Literal["sync_resolve_fork"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    keep: Literal["local", "incoming"] = Field(
        description="local: this device's branch; incoming: the other branch"
    )


SyncRequest: TypeAlias = (
    SyncAddRequest
    | SyncRemoveRequest
    | SyncStatusRequest
    | SyncNowRequest
    | QuarantineListRequest
    | QuarantineShowRequest
    | QuarantineReapplyRequest
    | QuarantineDiscardRequest
    | SyncForksRequest
    | SyncResolveForkRequest
)
