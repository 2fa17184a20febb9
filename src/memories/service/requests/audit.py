"""Requests that inspect the store's audit trail and integrity."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import Needs, Ref, RequestModel

__all__ = ["AuditDevicesRequest", "AuditListRequest", "AuditRequest", "VerifyRequest"]


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


class AuditDevicesRequest(RequestModel):
    """Other devices' audit records about one vault, as bundles brought them, newest first.

    Each record was signed by the device that wrote it and checked when its bundle was
    imported; this device's own entries are in `audit_list`."""

    NEEDS = Needs(role="reader", remote=False)
    RESPONSE = (
        "`{vault, records: [{device, short, name, seq, at, action, details}]}`: `device` is the "
        "writing device's fingerprint, `short` its short form, `name` its certificate's name, "
        "`seq` the entry's number in that device's trail"
    )

    op: Literal["audit_devices"]
    vault: Ref | None = Field(default=None, description="vault; default personal")
    origin: Ref | None = Field(
        default=None,
        description="only this device's records: a fingerprint (full or 8+ hex) or a device name",
    )
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


AuditRequest: TypeAlias = AuditListRequest | AuditDevicesRequest | VerifyRequest
