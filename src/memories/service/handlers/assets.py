"""Handlers that create, read, edit and list memories, cards and credentials."""

from __future__ import annotations

from typing import Any, assert_never

from memories.errors import DeniedError, UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import (
    AssetRequest,
    ConflictsRequest,
    DiffRequest,
    HistoryRequest,
    ListRequest,
    PutRequest,
    ReadRequest,
    ResolveRequest,
    TombstoneRequest,
    UpdateRequest,
)

__all__ = ["handle"]


def handle(core: Core, request: AssetRequest, access: Access) -> dict[str, Any]:
    elevated = access.elevated
    match request:
        case PutRequest():
            return _put(core, request)
        case ReadRequest():
            view = core.domain().get(request.ref, revision=request.revision, elevated=elevated)
            core.intend_read("read", view.asset_id, access.caller, revision=view.revision)
            return dict(view.to_dict())
        case UpdateRequest():
            _refuse_secret_bearing(core, access, request.ref)
            saved = core.domain().update(
                request.ref,
                base=request.base,
                fork=request.fork,
                elevated=elevated,
                **_changes(request),
            )
            return core.saved(saved)
        case TombstoneRequest():
            _refuse_secret_bearing(core, access, request.ref)
            return core.saved(
                core.domain().tombstone(request.ref, base=request.base, elevated=elevated)
            )
        case ResolveRequest():
            _refuse_secret_bearing(core, access, request.ref)
            changes = _changes(request)
            if request.delete:
                changes["delete"] = True
            saved = core.domain().resolve(
                request.ref, parents=request.parents, elevated=elevated, **changes
            )
            return core.saved(saved)
        case HistoryRequest():
            vaults = core.domain()
            asset_id = vaults.resolve_asset(request.ref).asset_id
            entries = vaults.history(asset_id, elevated=elevated)
            core.intend_read("history", asset_id, access.caller)
            return {"asset": asset_id, "entries": [e.to_dict() for e in entries]}
        case DiffRequest():
            vaults = core.domain()
            asset_id = vaults.resolve_asset(request.ref).asset_id
            text = vaults.diff(asset_id, request.old, request.new, elevated=elevated)
            core.intend_read("diff", asset_id, access.caller)
            return {"asset": asset_id, "diff": text}
        case ListRequest():
            summaries = core.domain().list_assets(
                request.vault,
                kind=request.kind,
                card_type=request.card_type,
                tag=request.tag,
                elevated=elevated,
                all_vaults=request.all_vaults,
            )
            grant = access.caller.grant
            if grant is not None:  # all_vaults means all of the grant's vaults
                summaries = [s for s in summaries if grant.covers(s.vault)]
            return {"summaries": [s.to_dict() for s in summaries]}
        case ConflictsRequest():
            found = core.domain().conflicts(request.vault, elevated=elevated)
            return {"summaries": [s.to_dict() for s in found]}
        case _:
            assert_never(request)


def _refuse_secret_bearing(core: Core, access: Access, ref: str) -> None:
    """A grant's client (an agent) never edits or deletes what references a secret: it could
    move the reference somewhere the secret would then be delivered."""
    if access.caller.grant is not None and core.domain().carries_secrets(ref):
        raise DeniedError("this asset carries secret references; edit it with the memories CLI")


def _put(core: Core, request: PutRequest) -> dict[str, Any]:
    if request.kind == "file":
        raise UsageError("put: files are stored with file_put")
    fields: dict[str, object] = {
        "title": request.title,
        "body": request.body,
        "tags": tuple(request.tags or ()),
        "source": request.source,
        "private": request.private,
    }
    if request.card_type is not None:
        fields["card_type"] = request.card_type
    if request.metadata is not None:
        fields["metadata"] = request.metadata
    return core.saved(core.domain().put(request.vault, request.kind, **fields))


def _changes(request: UpdateRequest | ResolveRequest) -> dict[str, object]:
    changes: dict[str, object] = {}
    for name in ("title", "body", "source", "metadata", "private"):
        value = getattr(request, name)
        if value is not None:
            changes[name] = value
    if request.tags is not None:
        changes["tags"] = tuple(request.tags)
    return changes
