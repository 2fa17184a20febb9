"""Requests that inspect the store's audit trail and integrity."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import Needs, RequestModel

__all__ = ["AuditListRequest", "AuditRequest"]


class AuditListRequest(RequestModel):
    """The store's audit trail (its checkpoints), newest first."""

    NEEDS = Needs()
    RESPONSE = "`{entries: [{seq, at, action, details}]}`"

    op: Literal["audit_list"]
    limit: int = Field(default=50, ge=1, le=1000)


AuditRequest: TypeAlias = AuditListRequest
