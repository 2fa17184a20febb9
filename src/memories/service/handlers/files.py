"""Handlers that store and fetch files and store credentials."""

from __future__ import annotations

from typing import Any, assert_never

from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import IntegrityError, UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import (
    CredentialPutRequest,
    FileGetRequest,
    FilePutRequest,
    FileRequest,
)
from memories.vault import FilePayload

__all__ = ["handle"]


def handle(core: Core, request: FileRequest, access: Access) -> dict[str, Any]:
    match request:
        case FilePutRequest():
            return _file_put(core, request)
        case FileGetRequest():
            vaults = core.domain()
            asset_id = vaults.resolve_asset(request.ref).asset_id
            payload = vaults.file_payload(asset_id, elevated=access.elevated)
            core.intend_read("file_get", asset_id, access.caller)
            return {
                "asset": asset_id,
                "name": payload.name,
                "media_type": payload.media_type,
                "data": b64u_encode(payload.data),
                "size": payload.size,
            }
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


def _file_put(core: Core, request: FilePutRequest) -> dict[str, Any]:
    try:
        data = b64u_decode(request.data)
    except IntegrityError:
        raise UsageError("file_put: field 'data' must be unpadded base64url") from None
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
