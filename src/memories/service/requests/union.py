"""The closed set of requests: one discriminated union over every area's requests."""

from __future__ import annotations

from typing import Annotated, Final, TypeAlias, get_args

from pydantic import Field

from memories.service.requests.assets import AssetRequest
from memories.service.requests.audit import AuditRequest
from memories.service.requests.backup import BackupRequest
from memories.service.requests.base import RequestModel, op_name
from memories.service.requests.cards import CardRequest
from memories.service.requests.devices import DeviceRequest
from memories.service.requests.files import FileRequest
from memories.service.requests.grants import GrantRequest
from memories.service.requests.imports import ImportRequest
from memories.service.requests.search import SearchRequest
from memories.service.requests.secrets import SecretRequest
from memories.service.requests.session import SessionRequest
from memories.service.requests.sync import SyncRequest
from memories.service.requests.vaults import VaultRequest

__all__ = ["REQUEST_TYPES", "Request", "op_names"]

Request: TypeAlias = Annotated[
    SessionRequest
    | VaultRequest
    | AssetRequest
    | CardRequest
    | FileRequest
    | AuditRequest
    | BackupRequest
    | SearchRequest
    | ImportRequest
    | SecretRequest
    | GrantRequest
    | SyncRequest
    | DeviceRequest,
    Field(discriminator="op"),
]


def _members(*areas: object) -> tuple[type[RequestModel], ...]:
    found: list[type[RequestModel]] = []
    for area in areas:
        members = get_args(area) or (area,)
        found.extend(m for m in members if isinstance(m, type) and issubclass(m, RequestModel))
    return tuple(found)


#: Every request model, in documentation order (area by area).
REQUEST_TYPES: Final[tuple[type[RequestModel], ...]] = _members(
    SessionRequest,
    VaultRequest,
    AssetRequest,
    CardRequest,
    FileRequest,
    AuditRequest,
    BackupRequest,
    SearchRequest,
    ImportRequest,
    SecretRequest,
    GrantRequest,
    SyncRequest,
    DeviceRequest,
)


def op_names() -> tuple[str, ...]:
    """Every op, in documentation order."""
    return tuple(op_name(model) for model in REQUEST_TYPES)
