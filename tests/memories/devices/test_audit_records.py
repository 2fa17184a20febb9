"""Audit records in bundles: each device's entries about a vault travel signed by that device,
are checked record by record on import, stored once, relayed through a third device with their
original signatures, and any bad record refuses the whole bundle."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memories.crypto import b64u_encode, canonical_bytes
from memories.devices.audit_records import (
    AuditRecord,
    peer_listing,
    record_key,
    stored_records,
)
from memories.devices.bundle import BUNDLE_VERSION, certificates_of, export_bundle, import_bundle
from memories.devices.membership import revoke_device
from memories.devices.pairing import approve, issue_request, join, read_request, vault_chain
from memories.errors import DeniedError, IntegrityError, NotFoundError
from tests.memories.devices.support import LOCAL_CONFIG, new_join_store, new_store, opened

CANARY = "audit-canary-51d2e8"


class Devices:
    """Olga's desk with two devices paired to it (laptop, tablet), and Bob's unrelated store."""

    def __init__(self, tmp: Path) -> None:
        self.desk = new_store(tmp / "desk.db", "olga")
        self.bob = new_store(tmp / "bob.db", "bob")
        with opened(self.desk) as v:
            approver = v.identity.device_fingerprint
            self.desk_device = approver
            v.create_vault("team")
            self.personal = v.resolve_vault("personal").vault_id
        self.laptop = self._pair(tmp / "laptop.db", "laptop", approver)
        self.tablet = self._pair(tmp / "tablet.db", "tablet", approver)
        with opened(self.laptop) as v:
            self.laptop_device = v.identity.device_fingerprint

    def _pair(self, path: Path, name: str, approver: str) -> Path:
        new_join_store(path, name)
        with opened(path) as v:
            issued = issue_request(v.store, approver=approver)
        with opened(self.desk) as v:
            approval = approve(
                v, read_request(issued.text), confirmed_fingerprint=issued.fingerprint
            )
        with opened(path) as v:
            join(v.store, approval, local_config=LOCAL_CONFIG)
        return path

    def export(self, source: Path, vault: str = "personal") -> bytes:
        with opened(source) as v:
            return export_bundle(v, vault)

    def load(self, target: Path, data: bytes) -> Any:
        with opened(target) as v:
            return import_bundle(v, data)

    def resign(self, signer: Path, data: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
        """``data`` changed by ``change`` and signed again by ``signer`` (its exporter), so
        only the audit records' own signatures can tell."""
        body = json.loads(data)["bundle"]
        change(body)
        with opened(signer) as v:
            signature = v.identity.device.sign_canonical(body)
        return canonical_bytes({"bundle": body, "signature": b64u_encode(signature)})

    def held(self, path: Path, vault_id: str) -> list[AuditRecord]:
        with opened(path) as v:
            return stored_records(v.store, vault_id)

    def state(self, path: Path) -> tuple[int, int]:
        with opened(path) as v:
            return v.store.seq, v.store.count()


@pytest.fixture
def devices(tmp_path: Path) -> Devices:
    return Devices(tmp_path)


def _records(data: bytes) -> list[dict[str, Any]]:
    body = json.loads(data)["bundle"]
    assert body["v"] == BUNDLE_VERSION == 2
    return list(body["audit"])


def test_a_bundle_carries_the_devices_signed_entries_about_its_vault_only(
    devices: Devices,
) -> None:
    with opened(devices.desk) as v:
        saved = v.put("personal", "memory", title="plan", body=f"the body {CANARY}")
        # What the service files before it delivers a read (memories.service.audit).
        v.store.record_intent("read.intent", {"op": "read", "asset": saved.asset_id})
        other = v.put("team", "memory", title="team only", body="elsewhere")
        certificate = v.identity.certificate
    data = devices.export(devices.desk)
    assert CANARY not in data.decode()
    records = [AuditRecord.from_dict(doc) for doc in _records(data)]
    assert records, "the desk's entries about its personal vault travel"
    for record in records:
        record.verify(certificate)  # raises when it does not verify
        assert record.device == devices.desk_device and record.vault_id == devices.personal
    named = {str(value) for r in records for value in r.details.values()}
    assert saved.asset_id in named and saved.revision in named
    assert other.asset_id not in named  # a team entry stays on the desk
    assert {"asset.put", "read.intent"} <= {r.action for r in records}
    team = [AuditRecord.from_dict(d) for d in _records(devices.export(devices.desk, "team"))]
    assert {r.action for r in team} == {"vault.create", "asset.put"}
    assert other.asset_id in {str(value) for r in team for value in r.details.values()}

    imported = devices.load(devices.laptop, data)
    assert imported.audit == len(records)
    held = devices.held(devices.laptop, devices.personal)
    assert [r.to_bytes() for r in held] == [r.to_bytes() for r in records]
    with opened(devices.laptop) as v:
        certs = certificates_of(vault_chain(v.store, v.resolve_vault("personal")))
        rows = peer_listing(held, certs, limit=1000)
        assert {row["device"] for row in rows} == {devices.desk_device}
        assert rows == sorted(rows, key=lambda r: (r["at"], r["seq"]), reverse=True)
        by_prefix = peer_listing(held, certs, origin=devices.desk_device[7:19])
        assert len(by_prefix) == min(50, len(held))
        with pytest.raises(NotFoundError):
            peer_listing(held, certs, origin="no such device")


def test_importing_the_same_records_again_stores_each_once(devices: Devices) -> None:
    with opened(devices.desk) as v:
        v.put("personal", "memory", title="once", body="x")
    data = devices.export(devices.desk)
    first = devices.load(devices.laptop, data)
    assert first.audit > 0
    count = len(devices.held(devices.laptop, devices.personal))
    again = devices.load(devices.laptop, data)
    assert again.audit == 0 and again.revisions == 0
    assert len(devices.held(devices.laptop, devices.personal)) == count
    # A later bundle repeats the old records and adds only the new ones.
    with opened(devices.desk) as v:
        v.put("personal", "memory", title="twice", body="y")
    later = devices.load(devices.laptop, devices.export(devices.desk))
    assert 0 < later.audit < len(_records(devices.export(devices.desk)))


def test_one_altered_record_refuses_the_whole_bundle(devices: Devices) -> None:
    with opened(devices.desk) as v:
        v.put("personal", "memory", title="altered", body="x")
    data = devices.export(devices.desk)

    def alter(body: dict[str, Any]) -> None:
        body["audit"][0]["record"]["action"] = "asset.delete"

    forged = devices.resign(devices.desk, data, alter)
    before = devices.state(devices.laptop)
    with pytest.raises(IntegrityError, match="does not verify"):
        devices.load(devices.laptop, forged)
    assert devices.state(devices.laptop) == before
    assert devices.held(devices.laptop, devices.personal) == []
    with opened(devices.laptop) as v:
        assert [s.title for s in v.list_assets(vault="personal")] == []


def test_a_record_signed_by_a_device_the_vault_never_named_is_refused(devices: Devices) -> None:
    data = devices.export(devices.desk)
    with opened(devices.bob) as v:
        entry = v.store.checkpoints(limit=1)[0]
        stranger = AuditRecord.signed(v.identity, devices.personal, entry)

    def add(body: dict[str, Any]) -> None:
        body["audit"].append(stranger.to_dict())

    before = devices.state(devices.laptop)
    with pytest.raises(DeniedError, match="never allowed"):
        devices.load(devices.laptop, devices.resign(devices.desk, data, add))
    assert devices.state(devices.laptop) == before


def test_records_about_another_vault_or_contradicting_held_ones_are_refused(
    devices: Devices,
) -> None:
    with opened(devices.desk) as v:
        v.put("personal", "memory", title="held", body="x")
    data = devices.export(devices.desk)
    devices.load(devices.laptop, data)
    with opened(devices.desk) as v:
        team = v.resolve_vault("team").vault_id
        entry = v.store.checkpoints(limit=1)[0]
        elsewhere = AuditRecord.signed(v.identity, team, entry)
        first = AuditRecord.from_dict(_records(data)[0])
        # Validly signed by the desk, but another story for a number the laptop holds.
        unsigned = AuditRecord(first.vault_id, first.device, first.seq, first.at, "x.y", {})
        signature = v.identity.device.sign_canonical(unsigned.body())
        twin = AuditRecord(**{**unsigned.__dict__, "signature": signature})
    twin.verify(first_certificate(devices))

    def add(body: dict[str, Any]) -> None:
        body["audit"].append(elsewhere.to_dict())

    def swap(body: dict[str, Any]) -> None:
        body["audit"][0] = twin.to_dict()

    before = devices.state(devices.laptop)
    with pytest.raises(IntegrityError, match="another vault"):
        devices.load(devices.laptop, devices.resign(devices.desk, data, add))
    with pytest.raises(IntegrityError, match="contradicts"):
        devices.load(devices.laptop, devices.resign(devices.desk, data, swap))
    assert devices.state(devices.laptop) == before
    assert first.to_bytes() in {r.to_bytes() for r in devices.held(devices.laptop, first.vault_id)}


def first_certificate(devices: Devices) -> Any:
    with opened(devices.desk) as v:
        return v.identity.certificate


def test_records_relay_through_a_third_device_and_a_revoked_devices_later_ones_are_refused(
    devices: Devices,
) -> None:
    with opened(devices.desk) as v:
        shared = v.put("personal", "memory", title="shared", body="x").asset_id
    devices.load(devices.laptop, devices.export(devices.desk))
    with opened(devices.laptop) as v:  # the laptop reads the desk's memory
        v.store.record_intent("read.intent", {"op": "read", "asset": shared})
    devices.load(devices.desk, devices.export(devices.laptop))
    with opened(devices.desk) as v:
        revoke_device(v, "personal", devices.laptop_device)
    with opened(devices.laptop) as v:  # it has not heard of the revocation yet
        v.store.record_intent("read.intent", {"op": "read", "asset": shared})
        entry = v.store.checkpoints(limit=1)[0]
        after = AuditRecord.signed(v.identity, devices.personal, entry)

    data = devices.export(devices.desk)
    relayed = [
        r for r in map(AuditRecord.from_dict, _records(data)) if r.device != devices.desk_device
    ]
    assert relayed and {r.device for r in relayed} == {devices.laptop_device}
    # Written before the revocation, so the tablet accepts them, as the laptop signed them.
    imported = devices.load(devices.tablet, data)
    assert imported.audit == len(_records(data))
    held = devices.held(devices.tablet, devices.personal)
    assert {r.to_bytes() for r in relayed} <= {r.to_bytes() for r in held}
    with opened(devices.tablet) as v:
        certs = certificates_of(vault_chain(v.store, v.resolve_vault("personal")))
    named = peer_listing(held, certs, origin="laptop", limit=1000)
    assert {row["name"] for row in named} == {"laptop"} and len(named) == len(relayed)

    def add(body: dict[str, Any]) -> None:
        body["audit"].append(after.to_dict())

    before = devices.state(devices.tablet)
    with pytest.raises(DeniedError, match="revoked"):
        devices.load(devices.tablet, devices.resign(devices.desk, data, add))
    assert devices.state(devices.tablet) == before
    with opened(devices.tablet) as v:
        assert v.store.get(record_key(devices.personal, after.device, after.seq)) is None


def test_a_version_1_bundle_still_imports_without_records(devices: Devices) -> None:
    with opened(devices.desk) as v:
        v.put("personal", "memory", title="old format", body="x")
    data = devices.export(devices.desk)

    def downgrade(body: dict[str, Any]) -> None:
        del body["audit"]
        body["v"] = 1

    old = devices.resign(devices.desk, data, downgrade)
    imported = devices.load(devices.laptop, old)
    assert imported.revisions == 1 and imported.audit == 0
    assert devices.held(devices.laptop, devices.personal) == []

    def mixed(body: dict[str, Any]) -> None:
        body["v"] = 1  # a version 1 bundle never carried records

    before = devices.state(devices.tablet)
    with pytest.raises(IntegrityError, match="malformed"):
        devices.load(devices.tablet, devices.resign(devices.desk, data, mixed))
    assert devices.state(devices.tablet) == before
