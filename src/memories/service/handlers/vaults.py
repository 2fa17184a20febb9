"""Handlers for vaults as a whole."""

from __future__ import annotations

from typing import Any, assert_never

from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import VaultCreateRequest, VaultListRequest, VaultRequest

__all__ = ["handle"]


def handle(core: Core, request: VaultRequest, access: Access) -> dict[str, Any]:
    match request:
        case VaultCreateRequest():
            return dict(core.domain().create_vault(request.name, local=request.local).to_dict())
        case VaultListRequest():
            grant = access.caller.grant
            # A grant caller sees only its vaults, so the list is no existence oracle either.
            found = [v for v in core.domain().vaults() if grant is None or grant.covers(v.id)]
            return {"vaults": [v.to_dict() for v in found]}
        case _:
            assert_never(request)
