"""Requests about backups and recovery, and the archive a recovery leaves behind.

None of them is available over MCP or remote transports: a backup carries the user's private
keys, and a restore creates the store. Paths are absolute (the CLI resolves them); the daemon
runs as the same user and reads or writes them itself.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import Name, Needs, Password, Ref, RequestModel
from memories.service.requests.session import KdfSettings

__all__ = [
    "ArchiveListRequest",
    "ArchiveShowRequest",
    "BackupCreateRequest",
    "BackupRequest",
    "BackupRestoreRequest",
    "BackupVerifyRequest",
]

MAX_PATH_CHARS: Final = 4096
FilePath = Annotated[str, StringConstraints(min_length=1, max_length=MAX_PATH_CHARS)]
_PATH_HELP: Final = "absolute path of the backup file"
_PASSPHRASE_HELP: Final = "the backup passphrase (secret; at least 8 characters)"  # noqa: S105


class BackupCreateRequest(RequestModel):
    """Write a backup of this store (every vault that is not device-only) to a file, under a
    passphrase of its own. Read in one request, so it is one consistent state; written to a
    temporary file, read back and checked, then renamed into place (mode 0600)."""

    NEEDS = Needs(elevation="always", remote=False)
    RESPONSE = (
        "`{path, size, verified: true, ok, backup, created_at, seq, vaults, policies, assets, "
        "revisions, problems: []}`; ConflictError when the file exists and `overwrite` is false"
    )

    op: Literal["backup_create"]
    path: FilePath = Field(description=_PATH_HELP)
    passphrase: Password = Field(description=_PASSPHRASE_HELP)
    overwrite: bool = Field(default=False, description="replace an existing file")


class BackupVerifyRequest(RequestModel):
    """Open a backup and check every signature, hash and ciphertext in it. Needs no store."""

    NEEDS = Needs(unlocked=False, remote=False)
    RESPONSE = (
        "`{ok, backup, created_at, seq, vaults, policies, assets, revisions, problems: "
        '[Problem]}`; DeniedError for a wrong passphrase, IntegrityError ("integrity") for a '
        "file that is damaged, truncated or not a backup"
    )

    op: Literal["backup_verify"]
    path: FilePath = Field(description=_PATH_HELP)
    passphrase: Password = Field(description=_PASSPHRASE_HELP)


class BackupRestoreRequest(RequestModel):
    """Recover into a new store from a backup, where there is no store yet (like init): new
    device keys, new vault ids whose policies list only this user and device, live content and
    conflict heads re-signed, asset ids kept, the original histories archived read-only. Then
    unlock it."""

    NEEDS = Needs(unlocked=False, remote=False)
    RESPONSE = (
        "`{store, backup, backup_created_at, vaults: [{original, id, name, personal, assets}], "
        "assets, conflicts, deleted, new_ids, dropped_links, foreign_heads, archived_assets, "
        "archived_revisions, identity, membership}`; ConflictError when a store exists (it is "
        "left untouched); nothing is created when the backup does not check out"
    )

    op: Literal["backup_restore"]
    path: FilePath = Field(description=_PATH_HELP)
    passphrase: Password = Field(description=_PASSPHRASE_HELP)
    password: Password = Field(description="the new store's password (secret)")
    device_name: Name | None = Field(default=None, description="defaults to the host name")
    kdf: KdfSettings | None = Field(
        default=None, description="Argon2id cost of the new store; defaults apply"
    )


class ArchiveListRequest(RequestModel):
    """The vaults and assets a recovery archived (their original ids and summaries); private
    assets only when elevated."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{vaults: [ArchivedVault], assets: [ArchivedAsset]}`; both empty without a recovery"

    op: Literal["archive_list"]


class ArchiveShowRequest(RequestModel):
    """An archived asset's original signed history; a read intent is audited first."""

    NEEDS = Needs(remote=False)
    RESPONSE = (
        "`{asset: ArchivedAsset, entries: [HistoryEntry]}`; DeniedError for a private asset "
        "when not elevated"
    )

    op: Literal["archive_show"]
    ref: Ref = Field(description="the archived asset's original id, or a prefix of 4+ hex digits")


BackupRequest: TypeAlias = (
    BackupCreateRequest
    | BackupVerifyRequest
    | BackupRestoreRequest
    | ArchiveListRequest
    | ArchiveShowRequest
)
