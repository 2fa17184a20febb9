"""Handlers for the audit trail and integrity checks."""

from __future__ import annotations

from typing import Any, assert_never

from memories.service.access import Access
from memories.service.audit import audit_entry
from memories.service.core import Core
from memories.service.requests import AuditListRequest, AuditRequest

__all__ = ["handle"]


def handle(core: Core, request: AuditRequest, access: Access) -> dict[str, Any]:
    match request:
        case AuditListRequest():
            entries = core.require_store().checkpoints(limit=request.limit)
            return {"entries": [audit_entry(c) for c in entries]}
        case _:
            assert_never(request)
