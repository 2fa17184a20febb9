"""Handlers for the audit trail and integrity checks."""

from __future__ import annotations

from typing import Any, assert_never

from memories.devices.audit_records import peer_listing, stored_records
from memories.devices.bundle import certificates_of
from memories.devices.pairing import vault_chain
from memories.service.access import Access
from memories.service.audit import audit_entry
from memories.service.core import Core
from memories.service.requests import (
    AuditDevicesRequest,
    AuditListRequest,
    AuditRequest,
    VerifyRequest,
)
from memories.sync.engine import referenced_blobs

__all__ = ["handle"]


def handle(core: Core, request: AuditRequest, access: Access) -> dict[str, Any]:
    match request:
        case AuditListRequest():
            entries = core.require_store().checkpoints(limit=request.limit)
            return {"entries": [audit_entry(c) for c in entries]}
        case AuditDevicesRequest():
            return _devices(core, request)
        case VerifyRequest():
            return _verify(core)
        case _:
            assert_never(request)


def _devices(core: Core, request: AuditDevicesRequest) -> dict[str, Any]:
    vaults = core.domain()
    record = vaults.resolve_vault(request.vault)
    certificates = certificates_of(vault_chain(vaults.store, record))
    records = stored_records(vaults.store, record.vault_id)
    rows = peer_listing(records, certificates, origin=request.origin, limit=request.limit)
    return {"vault": record.vault_id, "records": rows}


def _verify(core: Core) -> dict[str, Any]:
    """Vault records first (they name every blob they refer to), then the store under them."""
    store = core.require_store()
    vaults = core.domain().verification()
    problems: list[dict[str, object]] = []
    for found in vaults.problems:
        where = " ".join(
            f"{label} {value}"
            for label, value in (
                ("vault", found.vault),
                ("asset", found.asset),
                ("revision", found.revision),
            )
            if value
        )
        problems.append(
            {"scope": "vault", "kind": found.kind, "where": where, "message": found.message}
            | {"vault": found.vault, "asset": found.asset, "revision": found.revision}
        )
    # Sync keeps the objects it published or received as blobs the vault records do not name.
    referenced = vaults.referenced_blobs | referenced_blobs(store)
    for damage in store.verify_all(referenced):
        problems.append(
            {"scope": "store", "kind": damage.area, "where": damage.ref, "message": damage.what}
        )
    return {
        "ok": not problems,
        "problems": problems,
        "checked": {
            "vaults": vaults.vaults,
            "policies": vaults.policies,
            "assets": vaults.assets,
            "revisions": vaults.revisions,
            "checkpoints": store.seq,
        },
    }
