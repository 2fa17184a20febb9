"""Handlers that mint, list and revoke MCP grants."""

from __future__ import annotations

import re
from typing import Any, Final, assert_never

from memories.errors import UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests.grants import (
    GrantCreateRequest,
    GrantListRequest,
    GrantRequest,
    GrantRevokeRequest,
)

__all__ = ["handle"]

_GRANT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}")


def handle(core: Core, request: GrantRequest, access: Access) -> dict[str, Any]:
    """Answer one grant request. Raises what :class:`~memories.service.grants.GrantBook` and
    the vault look-ups raise (``UsageError``, ``NotFoundError``, ``ConflictError``)."""
    namespace = access.caller.namespace
    match request:
        case GrantCreateRequest():
            name = request.name.strip()
            if not _GRANT_NAME.fullmatch(name):
                raise UsageError(
                    "a grant name is 1 to 64 letters, digits, spaces or . _ - (starting with "
                    "a letter or digit)"
                )
            domain = core.domain()
            refs: list[str | None] = list(request.vaults) or [None]
            vault_ids = [domain.resolve_vault(ref).vault_id for ref in refs]
            record, token = core.grants().create(
                name,
                request.scope,
                vault_ids,
                now=core.now(),
                expires_seconds=request.expires_seconds,
                caller=namespace,
            )
            return {"grant": record.view(), "token": token}
        case GrantListRequest():
            return {"grants": [r.view() for r in core.grants().records()]}
        case GrantRevokeRequest():
            revoked = core.grants().revoke(request.grant, now=core.now(), caller=namespace)
            return {"grant": revoked.view()}
        case _:
            assert_never(request)
