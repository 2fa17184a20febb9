"""The typed request set every front end sends to the service, one module per area.

One pydantic model per operation, joined in the discriminated union :data:`Request` on the
snake_case ``op`` field. Every model rejects unknown fields and validates strictly: ``"1"`` is not
a number, ``1`` is not a boolean and a list must be a list. Lengths are bounded coarsely here to
stop abuse; the vault domain applies the real content rules again. Password and secret fields
are ``SecretStr`` and content fields are left out of reprs, so a logged request shows no
plaintext.

Layout: ``base`` (the model base, field types and :class:`Needs`, the authorization
declaration every request carries) · ``session`` · ``vaults`` · ``assets`` · ``cards`` ·
``files`` · ``audit`` · ``backup`` · ``search`` (one area each) · ``union`` (the closed
:data:`Request` union) · ``parse`` (:func:`parse_request`, the only way in).

``docs/requests.md`` is generated from these models by ``scripts/gen_request_docs.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memories.lazy import lazy_attributes

if TYPE_CHECKING:
    from memories.service.requests.assets import (
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
    from memories.service.requests.audit import (
        AuditDevicesRequest,
        AuditListRequest,
        AuditRequest,
        VerifyRequest,
    )
    from memories.service.requests.backup import (
        ArchiveListRequest,
        ArchiveShowRequest,
        BackupCreateRequest,
        BackupRequest,
        BackupRestoreRequest,
        BackupVerifyRequest,
    )
    from memories.service.requests.base import (
        MAX_BODY_CHARS,
        MAX_DATA_CHARS,
        Needs,
        RequestModel,
        op_name,
    )
    from memories.service.requests.cards import (
        CardPutRequest,
        CardRequest,
        CardTypeDefineRequest,
        CardTypesRequest,
        FieldDefinition,
        GraphRequest,
        LinkRequest,
        UnlinkRequest,
    )
    from memories.service.requests.files import (
        CredentialPutRequest,
        FileGetRequest,
        FilePutRequest,
        FileRequest,
    )
    from memories.service.requests.grants import (
        GrantCreateRequest,
        GrantListRequest,
        GrantRequest,
        GrantRevokeRequest,
    )
    from memories.service.requests.imports import ImportBatchRequest, ImportItem, ImportRequest
    from memories.service.requests.parse import parse_request
    from memories.service.requests.search import (
        AskRequest,
        RagStatusRequest,
        RetrieveRequest,
        SearchQueryRequest,
        SearchRequest,
    )
    from memories.service.requests.secrets import (
        CredentialCopyRequest,
        CredentialGenerateRequest,
        CredentialPublicRequest,
        OtpCodeRequest,
        ProtectedCardRequest,
        ProtectSecretRequest,
        RunBindingsRequest,
        RunBindRequest,
        RunBoundRequest,
        SecretRequest,
    )
    from memories.service.requests.session import (
        ChangePasswordRequest,
        DesktopStatusRequest,
        InitRequest,
        KdfSettings,
        LockRequest,
        RotateKeyRequest,
        SessionRequest,
        StatusRequest,
        SudoRequest,
        UnlockRequest,
    )
    from memories.service.requests.union import REQUEST_TYPES, Request, op_names
    from memories.service.requests.vaults import VaultCreateRequest, VaultListRequest, VaultRequest

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_DATA_CHARS",
    "REQUEST_TYPES",
    "ArchiveListRequest",
    "ArchiveShowRequest",
    "AskRequest",
    "AssetRequest",
    "AuditDevicesRequest",
    "AuditListRequest",
    "AuditRequest",
    "BackupCreateRequest",
    "BackupRequest",
    "BackupRestoreRequest",
    "BackupVerifyRequest",
    "CardPutRequest",
    "CardRequest",
    "CardTypeDefineRequest",
    "CardTypesRequest",
    "ChangePasswordRequest",
    "ConflictsRequest",
    "CredentialCopyRequest",
    "CredentialGenerateRequest",
    "CredentialPublicRequest",
    "CredentialPutRequest",
    "DesktopStatusRequest",
    "DiffRequest",
    "FieldDefinition",
    "FileGetRequest",
    "FilePutRequest",
    "FileRequest",
    "GrantCreateRequest",
    "GrantListRequest",
    "GrantRequest",
    "GrantRevokeRequest",
    "GraphRequest",
    "HistoryRequest",
    "ImportBatchRequest",
    "ImportItem",
    "ImportRequest",
    "InitRequest",
    "KdfSettings",
    "LinkRequest",
    "ListRequest",
    "LockRequest",
    "Needs",
    "OtpCodeRequest",
    "ProtectSecretRequest",
    "ProtectedCardRequest",
    "PutRequest",
    "RagStatusRequest",
    "ReadRequest",
    "Request",
    "RequestModel",
    "ResolveRequest",
    "RetrieveRequest",
    "RotateKeyRequest",
    "RunBindRequest",
    "RunBindingsRequest",
    "RunBoundRequest",
    "SearchQueryRequest",
    "SearchRequest",
    "SecretRequest",
    "SessionRequest",
    "StatusRequest",
    "SudoRequest",
    "TombstoneRequest",
    "UnlinkRequest",
    "UnlockRequest",
    "UpdateRequest",
    "VaultCreateRequest",
    "VaultListRequest",
    "VaultRequest",
    "VerifyRequest",
    "op_name",
    "op_names",
    "parse_request",
]

#: The area module that defines each public name. Nothing is imported with this package: a
#: front end that builds one request loads that area's models only (``__getattr__``), while
#: the daemon's parser loads them all through :mod:`union`.
_DEFINED_IN: dict[str, str] = {
    "AssetRequest": ".assets",
    "ConflictsRequest": ".assets",
    "DiffRequest": ".assets",
    "HistoryRequest": ".assets",
    "ListRequest": ".assets",
    "PutRequest": ".assets",
    "ReadRequest": ".assets",
    "ResolveRequest": ".assets",
    "TombstoneRequest": ".assets",
    "UpdateRequest": ".assets",
    "AuditDevicesRequest": ".audit",
    "AuditListRequest": ".audit",
    "AuditRequest": ".audit",
    "VerifyRequest": ".audit",
    "ArchiveListRequest": ".backup",
    "ArchiveShowRequest": ".backup",
    "BackupCreateRequest": ".backup",
    "BackupRequest": ".backup",
    "BackupRestoreRequest": ".backup",
    "BackupVerifyRequest": ".backup",
    "MAX_BODY_CHARS": ".base",
    "MAX_DATA_CHARS": ".base",
    "Needs": ".base",
    "RequestModel": ".base",
    "op_name": ".base",
    "CardPutRequest": ".cards",
    "CardRequest": ".cards",
    "CardTypeDefineRequest": ".cards",
    "CardTypesRequest": ".cards",
    "FieldDefinition": ".cards",
    "GraphRequest": ".cards",
    "LinkRequest": ".cards",
    "UnlinkRequest": ".cards",
    "CredentialPutRequest": ".files",
    "FileGetRequest": ".files",
    "FilePutRequest": ".files",
    "FileRequest": ".files",
    "GrantCreateRequest": ".grants",
    "GrantListRequest": ".grants",
    "GrantRequest": ".grants",
    "GrantRevokeRequest": ".grants",
    "ImportBatchRequest": ".imports",
    "ImportItem": ".imports",
    "ImportRequest": ".imports",
    "parse_request": ".parse",
    "AskRequest": ".search",
    "RagStatusRequest": ".search",
    "RetrieveRequest": ".search",
    "SearchQueryRequest": ".search",
    "SearchRequest": ".search",
    "CredentialCopyRequest": ".secrets",
    "CredentialGenerateRequest": ".secrets",
    "CredentialPublicRequest": ".secrets",
    "OtpCodeRequest": ".secrets",
    "ProtectSecretRequest": ".secrets",
    "ProtectedCardRequest": ".secrets",
    "RunBindRequest": ".secrets",
    "RunBindingsRequest": ".secrets",
    "RunBoundRequest": ".secrets",
    "SecretRequest": ".secrets",
    "ChangePasswordRequest": ".session",
    "DesktopStatusRequest": ".session",
    "InitRequest": ".session",
    "KdfSettings": ".session",
    "LockRequest": ".session",
    "RotateKeyRequest": ".session",
    "SessionRequest": ".session",
    "StatusRequest": ".session",
    "SudoRequest": ".session",
    "UnlockRequest": ".session",
    "REQUEST_TYPES": ".union",
    "Request": ".union",
    "op_names": ".union",
    "VaultCreateRequest": ".vaults",
    "VaultListRequest": ".vaults",
    "VaultRequest": ".vaults",
}


__getattr__ = lazy_attributes(__name__, _DEFINED_IN)
