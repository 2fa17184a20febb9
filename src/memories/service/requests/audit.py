"""Requests that inspect the store's audit trail and integrity."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import Needs, RequestModel

__all__ = ["AuditListRequest", "AuditRequest", "VerifyRequest"]


class AuditListRequest(RequestModel):
    """The store's audit trail (its checkpoints), newest first."""

    NEEDS = Needs()
    RESPONSE = (
        "`{entries: [{seq, at, action, details}]}`; an entry that is damaged, missing or not "
        "chained to its successor is shown in place with `problem` (damaged, gap or unlinked) "
        "and `reason`"
    )

    op: Literal["audit_list"]
    limit: int = Field(default=50, ge=1, le=1000)


class VerifyRequest(RequestModel):
    """Check the whole store: every page, blob and reference, every revision signature and
    parent link, every policy chain, the checkpoint chain, the header binding and the anchors.
    Damage is reported, never repaired; nothing of any content is returned."""

    NEEDS = Needs()
    RESPONSE = (
        "`{ok, problems: [{scope, kind, where, message}], checked: {vaults, policies, assets, "
        "revisions, checkpoints}}`"
    )

    op: Literal["verify"]


AuditRequest: TypeAlias = AuditListRequest | VerifyRequest
