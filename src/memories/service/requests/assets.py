"""Requests that create, read, edit and list memories, cards and credentials."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import (
    MAX_LIST_ITEMS,
    METADATA_HELP,
    REF_HELP,
    VAULT_HELP,
    Body,
    Kind,
    Metadata,
    Needs,
    Ref,
    RequestModel,
    Source,
    Tags,
    Text,
    Title,
)

__all__ = [
    "AssetRequest",
    "ConflictsRequest",
    "DiffRequest",
    "HistoryRequest",
    "ListRequest",
    "PutRequest",
    "ReadRequest",
    "ResolveRequest",
    "TombstoneRequest",
    "UpdateRequest",
]


class PutRequest(RequestModel):
    """Create a memory, card or credential (files use file_put)."""

    NEEDS = Needs(elevation="credential_kind", role="editor", mcp="write", audit_failures=True)
    RESPONSE = "Saved `{asset, revision, vault, heads, short_id}`"

    op: Literal["put"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    kind: Kind = Field(default="memory", description="file assets are stored with file_put")
    title: Title = Field(repr=False, description="one line, at most 300 characters")
    body: Body = Field(default="", repr=False, description="at most 8 MiB of UTF-8")
    tags: Tags | None = Field(default=None, repr=False)
    source: Source | None = Field(default=None, repr=False, description="where it came from")
    card_type: Text | None = Field(default=None, description="cards only")
    metadata: Metadata | None = Field(default=None, repr=False, description=METADATA_HELP)
    private: bool = Field(default=False, description="readable only when elevated")


class ReadRequest(RequestModel):
    """Read an asset's newest head (or a named revision); a read intent is audited first."""

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = "AssetView (a credential's value is never included)"

    op: Literal["read"]
    ref: Ref = Field(description=REF_HELP)
    revision: Ref | None = Field(default=None, description="revision id or prefix")


class UpdateRequest(RequestModel):
    """Append a revision with the given fields changed; fields left out stay as they are."""

    NEEDS = Needs(
        elevation="private_or_credential",
        role="editor",
        mcp="write",
        subjects=("ref",),
        audit_failures=True,
    )
    RESPONSE = "Saved"

    op: Literal["update"]
    ref: Ref = Field(description=REF_HELP)
    base: Ref | None = Field(
        default=None, description="the revision the edit started from (stale edits are refused)"
    )
    fork: bool = Field(default=False, description="keep a stale edit as a deliberate conflict")
    title: Title | None = Field(default=None, repr=False)
    body: Body | None = Field(default=None, repr=False)
    tags: Tags | None = Field(default=None, repr=False)
    source: Source | None = Field(default=None, repr=False)
    metadata: Metadata | None = Field(default=None, repr=False, description=METADATA_HELP)
    private: bool | None = None


class TombstoneRequest(RequestModel):
    """Delete an asset from current views; its history stays."""

    NEEDS = Needs(
        elevation="private_or_credential",
        role="editor",
        mcp="delete",
        subjects=("ref",),
        audit_failures=True,
    )
    RESPONSE = "Saved"

    op: Literal["tombstone"]
    ref: Ref = Field(description=REF_HELP)
    base: Ref | None = Field(default=None, description="the revision the deletion applies to")


class ResolveRequest(RequestModel):
    """End a conflict with a revision whose parents are all current heads."""

    NEEDS = Needs(
        elevation="private_or_credential",
        role="editor",
        mcp="write",
        subjects=("ref",),
        audit_failures=True,
    )
    RESPONSE = "Saved"

    op: Literal["resolve"]
    ref: Ref = Field(description=REF_HELP)
    parents: Annotated[list[Ref], Field(max_length=MAX_LIST_ITEMS)] | None = Field(
        default=None, description="the heads being resolved (all of them)"
    )
    delete: bool = Field(default=False, description="resolve to a tombstone")
    title: Title | None = Field(default=None, repr=False)
    body: Body | None = Field(default=None, repr=False)
    tags: Tags | None = Field(default=None, repr=False)
    source: Source | None = Field(default=None, repr=False)
    metadata: Metadata | None = Field(default=None, repr=False, description=METADATA_HELP)
    private: bool | None = None


class HistoryRequest(RequestModel):
    """Every revision of an asset, newest first; a read intent is audited first."""

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = "`{asset, entries: [HistoryEntry]}`"

    op: Literal["history"]
    ref: Ref = Field(description=REF_HELP)


class DiffRequest(RequestModel):
    """Unified diff of the text projection; a read intent is audited first."""

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = '`{asset, diff: "unified text"}`'

    op: Literal["diff"]
    ref: Ref = Field(description=REF_HELP)
    old: Ref | None = Field(default=None, description="defaults to the new revision's parent")
    new: Ref | None = Field(default=None, description="defaults to the live head")


class ListRequest(RequestModel):
    """Safe summaries of current assets, newest first (private ones only when elevated)."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = "`{summaries: [Summary]}`"

    op: Literal["list"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    kind: Kind | None = None
    card_type: Text | None = None
    tag: Text | None = None
    all_vaults: bool = False


class ConflictsRequest(RequestModel):
    """Assets with more than one head."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = "`{summaries: [Summary]}`"

    op: Literal["conflicts"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)


AssetRequest: TypeAlias = (
    PutRequest
    | ReadRequest
    | UpdateRequest
    | TombstoneRequest
    | ResolveRequest
    | HistoryRequest
    | DiffRequest
    | ListRequest
    | ConflictsRequest
)
