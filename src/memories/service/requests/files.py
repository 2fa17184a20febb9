"""Requests that store and fetch files and store credentials."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, SecretStr, StringConstraints

from memories.service.requests.base import (
    MAX_BODY_CHARS,
    MAX_DATA_CHARS,
    REF_HELP,
    VAULT_HELP,
    Metadata,
    Name,
    Needs,
    Ref,
    RequestModel,
    Tags,
    Text,
    Title,
)

__all__ = ["CredentialPutRequest", "FileGetRequest", "FilePutRequest", "FileRequest"]


class FilePutRequest(RequestModel):
    """Store a file."""

    NEEDS = Needs(role="editor", mcp="write", audit_failures=True)
    RESPONSE = "Saved"

    op: Literal["file_put"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    name: Name = Field(repr=False, description="a plain file name")
    media_type: Text = "application/octet-stream"
    data: Annotated[
        str, StringConstraints(max_length=MAX_DATA_CHARS, pattern=r"^[A-Za-z0-9_-]*$")
    ] = Field(repr=False, description="the bytes as unpadded base64url")
    title: Title | None = Field(default=None, repr=False, description="defaults to the name")
    tags: Tags | None = Field(default=None, repr=False)
    private: bool = False


class FileGetRequest(RequestModel):
    """A file's bytes; a read intent is audited first."""

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = "`{asset, name, media_type, data (unpadded base64url), size}`"

    op: Literal["file_get"]
    ref: Ref = Field(description=REF_HELP)


class CredentialPutRequest(RequestModel):
    """Store a credential. Its value never appears in any response, view or audit record."""

    NEEDS = Needs(elevation="always", role="editor", audit_failures=True)
    RESPONSE = "Saved"

    op: Literal["credential_put"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    title: Title = Field(repr=False)
    secret: Annotated[SecretStr, Field(min_length=1, max_length=MAX_BODY_CHARS)] = Field(
        description="the credential value (secret)"
    )
    tags: Tags | None = Field(default=None, repr=False)
    metadata: Metadata | None = Field(
        default=None, repr=False, description="must be empty: only cards carry metadata"
    )


FileRequest: TypeAlias = FilePutRequest | FileGetRequest | CredentialPutRequest
