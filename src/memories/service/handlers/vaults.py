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
            return {"vaults": [v.to_dict() for v in core.domain().vaults()]}
        case _:
            assert_never(request)
