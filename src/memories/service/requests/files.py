"""Requests that store and fetch files and store credentials."""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

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

__all__ = [
    "CHUNK_BYTES",
    "MAX_INLINE_BYTES",
    "CredentialPutRequest",
    "FileDownloadCancelRequest",
    "FileDownloadChunkRequest",
    "FileDownloadStartRequest",
    "FileGetRequest",
    "FilePutRequest",
    "FileRequest",
    "FileUploadCancelRequest",
    "FileUploadChunkRequest",
    "FileUploadFinishRequest",
    "FileUploadStartRequest",
]

#: Largest chunk of a streamed upload or download, in raw bytes.
CHUNK_BYTES: Final = 4 * 1024 * 1024
#: Largest file ``file_put`` / ``file_get`` carry in one frame (16 MiB of base64url, less
#: room for the envelope); larger files are streamed with the ``file_upload_*`` and
#: ``file_download_*`` ops.
MAX_INLINE_BYTES: Final = 12 * 1024 * 1024 - 64 * 1024
# Unpadded base64url of CHUNK_BYTES: 4 characters per 3 bytes, the last group shortened.
_MAX_CHUNK_CHARS: Final = (CHUNK_BYTES * 4 + 2) // 3
# Larger than any configurable file limit; the service checks the configured one.
_MAX_SIZE: Final = 2**40

TransferId = Annotated[
    str, StringConstraints(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
]
Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
Offset = Annotated[int, Field(ge=0, le=_MAX_SIZE)]
ChunkData = Annotated[
    str,
    StringConstraints(min_length=1, max_length=_MAX_CHUNK_CHARS, pattern=r"^[A-Za-z0-9_-]*$"),
]


class FilePutRequest(RequestModel):
    """Store a file sent in this one request (at most about 11.9 MiB; larger files use
    ``file_upload_start``)."""

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
    """A file's bytes in this one response; a read intent is audited first. Files larger
    than one frame carries (about 11.9 MiB) are refused before the intent: fetch those with
    ``file_download_start``."""

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = "`{asset, name, media_type, data (unpadded base64url), size}`"

    op: Literal["file_get"]
    ref: Ref = Field(description=REF_HELP)


class FileUploadStartRequest(RequestModel):
    """Open an upload of a file of ``size`` bytes, to be sent with ``file_upload_chunk``.

    Everything but the bytes is checked now: the size against ``max_file_mib``, the name,
    media type, title and tags against the content rules, the vault role. Each chunk is sealed
    and staged in the store as it arrives; nothing is visible until ``file_upload_finish``
    commits it. The upload is dropped (its staged chunks deleted) at lock, after 5 minutes
    without a chunk, and by ``file_upload_cancel``. A caller may hold 4 open transfers.
    """

    NEEDS = Needs(role="editor", mcp="write")
    RESPONSE = "`{upload (its id), chunk_bytes (the largest chunk), max_bytes}`"

    op: Literal["file_upload_start"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    name: Name = Field(repr=False, description="a plain file name")
    media_type: Text = "application/octet-stream"
    size: Offset = Field(description="the file's exact size in bytes")
    title: Title | None = Field(default=None, repr=False, description="defaults to the name")
    tags: Tags | None = Field(default=None, repr=False)
    private: bool = False


class FileUploadChunkRequest(RequestModel):
    """Add the next chunk to an open upload. Chunks come in order: ``offset`` must be the
    number of bytes received so far (``conflict`` otherwise)."""

    NEEDS = Needs(mcp="write")
    RESPONSE = "`{received}`: the bytes received so far"

    op: Literal["file_upload_chunk"]
    upload: TransferId = Field(description="the id file_upload_start returned")
    offset: Offset = Field(description="where this chunk starts in the file")
    data: ChunkData = Field(
        repr=False, description="at most chunk_bytes (4 MiB) as unpadded base64url"
    )


class FileUploadFinishRequest(RequestModel):
    """Store an upload whose bytes have all arrived and match ``sha256``.

    The vault role is checked again, then the file is stored like ``file_put`` and the upload
    closed. A digest that does not match (``integrity``) closes it too: nothing is stored.
    """

    NEEDS = Needs(mcp="write", audit_failures=True)
    RESPONSE = "Saved"

    op: Literal["file_upload_finish"]
    upload: TransferId = Field(description="the id file_upload_start returned")
    sha256: Digest = Field(description="`sha256:<hex>` of the whole file")


class FileUploadCancelRequest(RequestModel):
    """Drop an open upload and the bytes it holds. Works while locked (there is nothing left
    to drop then)."""

    NEEDS = Needs(unlocked=False, mcp="write")
    RESPONSE = "`{cancelled}`: whether an upload was open"

    op: Literal["file_upload_cancel"]
    upload: TransferId


class FileDownloadStartRequest(RequestModel):
    """Open a download of a file of any size up to ``max_file_mib``; a read intent is audited
    before the answer, and the chunks of this download need no further intent.

    Each chunk is decrypted when it is fetched. The download stays open until the last chunk
    is fetched, it is cancelled, 5 minutes pass without a chunk, or the store locks.
    """

    NEEDS = Needs(elevation="private", role="reader", mcp="read", subjects=("ref",))
    RESPONSE = (
        "`{download (its id), asset, name, media_type, size, sha256 (`sha256:<hex>`), chunk_bytes}`"
    )

    op: Literal["file_download_start"]
    ref: Ref = Field(description=REF_HELP)


class FileDownloadChunkRequest(RequestModel):
    """Up to ``length`` bytes of an open download from ``offset``. The chunk that reaches the
    end of the file closes the download (``done``)."""

    NEEDS = Needs(mcp="read")
    RESPONSE = "`{offset, data (unpadded base64url), done}`"

    op: Literal["file_download_chunk"]
    download: TransferId = Field(description="the id file_download_start returned")
    offset: Offset = Field(description="where the chunk starts in the file")
    length: Annotated[int, Field(ge=1, le=CHUNK_BYTES)] = Field(
        default=CHUNK_BYTES, description="the most bytes to return (at most 4 MiB)"
    )


class FileDownloadCancelRequest(RequestModel):
    """Drop an open download. Works while locked (there is nothing left to drop then)."""

    NEEDS = Needs(unlocked=False, mcp="read")
    RESPONSE = "`{cancelled}`: whether a download was open"

    op: Literal["file_download_cancel"]
    download: TransferId


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


FileRequest: TypeAlias = (
    FilePutRequest
    | FileGetRequest
    | FileUploadStartRequest
    | FileUploadChunkRequest
    | FileUploadFinishRequest
    | FileUploadCancelRequest
    | FileDownloadStartRequest
    | FileDownloadChunkRequest
    | FileDownloadCancelRequest
    | CredentialPutRequest
)
