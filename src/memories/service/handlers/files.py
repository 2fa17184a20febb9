"""Handlers that store and fetch files and store credentials.

Files up to one frame (``file_put`` / ``file_get``) travel whole, and the daemon holds them in
memory (a few times their size) while it stores or returns them. Any file up to
``max_file_mib`` travels in chunks through an upload or a download held by
:class:`~memories.service.transfers.Transfers`: an upload's chunks are sealed and staged in
the store as they arrive and committed at the finish; a download decrypts the chunks each slice
needs. The daemon then holds a few 256 KiB chunks per transfer, whatever the file's size.
"""

from __future__ import annotations

from typing import Any, assert_never

from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import IntegrityError, UsageError
from memories.service.access import Access, authorize
from memories.service.core import Core
from memories.service.requests import CredentialPutRequest, FileGetRequest, FilePutRequest
from memories.service.requests.files import (
    CHUNK_BYTES,
    MAX_INLINE_BYTES,
    FileDownloadCancelRequest,
    FileDownloadChunkRequest,
    FileDownloadStartRequest,
    FileRequest,
    FileUploadCancelRequest,
    FileUploadChunkRequest,
    FileUploadFinishRequest,
    FileUploadStartRequest,
)
from memories.vault import FilePayload, FileUpload
from memories.views.format import format_size

__all__ = ["handle"]


def handle(core: Core, request: FileRequest, access: Access) -> dict[str, Any]:
    match request:
        case FilePutRequest():
            data = _decode(request.data, "file_put")
            return _store(core, request, data)
        case FileGetRequest():
            return _file_get(core, request, access)
        case FileUploadStartRequest():
            return _upload_start(core, request, access)
        case FileUploadChunkRequest():
            upload = core.transfers.upload(access.caller, request.upload)
            data = _decode(request.data, "file_upload_chunk")
            return {"received": upload.append(request.offset, data)}
        case FileUploadFinishRequest():
            return _upload_finish(core, request, access)
        case FileUploadCancelRequest():
            return {"cancelled": core.transfers.close(access.caller, request.upload)}
        case FileDownloadStartRequest():
            return _download_start(core, request, access)
        case FileDownloadChunkRequest():
            return _download_chunk(core, request, access)
        case FileDownloadCancelRequest():
            return {"cancelled": core.transfers.close(access.caller, request.download)}
        case CredentialPutRequest():
            fields: dict[str, object] = {
                "title": request.title,
                "body": request.secret.get_secret_value(),
                "tags": tuple(request.tags or ()),
            }
            if request.metadata:
                fields["metadata"] = request.metadata
            return core.saved(core.domain().put(request.vault, "credential", **fields))
        case _:
            assert_never(request)


def _decode(text: str, op: str) -> bytes:
    try:
        return b64u_decode(text)
    except IntegrityError:
        raise UsageError(f"{op}: field 'data' must be unpadded base64url") from None


def _store(
    core: Core, request: FilePutRequest | FileUploadStartRequest, data: bytes
) -> dict[str, Any]:
    payload = FilePayload(name=request.name, media_type=request.media_type, data=data)
    saved = core.domain().put(
        request.vault,
        "file",
        title=request.name if request.title is None else request.title,
        file=payload,
        tags=tuple(request.tags or ()),
        private=request.private,
    )
    return core.saved(saved)


def _file_get(core: Core, request: FileGetRequest, access: Access) -> dict[str, Any]:
    vaults = core.domain()
    asset_id = vaults.resolve_asset(request.ref).asset_id
    payload = vaults.file_payload(asset_id, elevated=access.elevated)
    if payload.size > MAX_INLINE_BYTES:
        # Refused before the intent: an answer that cannot be framed must not be audited.
        raise UsageError(
            f"the file is {format_size(payload.size)}; file_get carries up to "
            f"{format_size(MAX_INLINE_BYTES)}; fetch it with file_download_start"
        )
    core.intend_read("file_get", asset_id, access.caller)
    return {
        "asset": asset_id,
        "name": payload.name,
        "media_type": payload.media_type,
        "data": b64u_encode(payload.data),
        "size": payload.size,
    }


def _upload_start(core: Core, request: FileUploadStartRequest, access: Access) -> dict[str, Any]:
    transfers = core.transfers
    vaults = core.domain()

    def begin() -> FileUpload:
        # Everything but the bytes is checked now, so a bad name does not cost a 64 MiB upload.
        return vaults.start_file_upload(
            request.vault,
            name=request.name,
            media_type=request.media_type,
            size=request.size,
            title=request.title,
            tags=tuple(request.tags or ()),
            private=request.private,
        )

    upload = transfers.open_upload(access.caller, request, request.size, begin)
    return {"upload": upload.id, "chunk_bytes": CHUNK_BYTES, "max_bytes": transfers.max_file_bytes}


def _upload_finish(core: Core, request: FileUploadFinishRequest, access: Access) -> dict[str, Any]:
    transfers = core.transfers
    upload = transfers.upload(access.caller, request.upload)
    try:
        upload.check(request.sha256)
    except IntegrityError:
        transfers.close(access.caller, upload.id)
        raise
    start = upload.start
    assert isinstance(start, FileUploadStartRequest)
    try:
        # The role or grant may have changed since the upload started; the one authorizer
        # decides.
        authorize(start, access.caller, state=core.state, elevated=access.elevated, directory=core)
        saved = core.domain().finish_file_upload(upload.file)
    finally:
        # Stored or refused, the upload is closed: a refused one's staged chunks go with it.
        transfers.close(access.caller, upload.id)
    return core.saved(saved)


def _download_start(
    core: Core, request: FileDownloadStartRequest, access: Access
) -> dict[str, Any]:
    vaults = core.domain()
    asset_id, opener = vaults.open_file(request.ref, elevated=access.elevated)
    payload = opener.payload
    # Admitted before the intent is filed, so a busy refusal leaves no read in the trail.
    download = core.transfers.open_download(access.caller, opener, None)
    core.intend_read("file_download", asset_id, access.caller)
    download.ticket = core.request_tickets[-1]
    return {
        "download": download.id,
        "asset": asset_id,
        "name": payload.name,
        "media_type": payload.media_type,
        "size": payload.size,
        "sha256": payload.digest,
        "chunk_bytes": CHUNK_BYTES,
    }


def _download_chunk(
    core: Core, request: FileDownloadChunkRequest, access: Access
) -> dict[str, Any]:
    download = core.transfers.download(access.caller, request.download)
    data = download.slice(request.offset, request.length)
    done = request.offset + len(data) >= download.size
    if done:
        core.transfers.close(access.caller, download.id)
    return {"offset": request.offset, "data": b64u_encode(data), "done": done}
