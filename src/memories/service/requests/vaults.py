"""Requests about vaults as a whole."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import Name, Needs, RequestModel

__all__ = ["VaultCreateRequest", "VaultListRequest", "VaultRequest"]


class VaultCreateRequest(RequestModel):
    """Create a vault."""

    NEEDS = Needs(audit_failures=True)
    RESPONSE = "VaultInfo `{id, name, created_at, local, personal, epoch, role}`"

    op: Literal["vault_create"]
    name: Name = Field(description="1 to 64 letters, digits, spaces or . _ -")
    local: bool = Field(default=False, description="device-only: never synchronized")


class VaultListRequest(RequestModel):
    """List the vaults this device holds."""

    NEEDS = Needs(mcp="read")
    RESPONSE = "`{vaults: [VaultInfo]}`"

    op: Literal["vault_list"]


VaultRequest: TypeAlias = VaultCreateRequest | VaultListRequest
