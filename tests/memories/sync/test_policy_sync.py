"""Policy entries and audit records travel as sync objects between separate devices: changes
made on one device take effect on the others, and forged ones are never merged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memories.crypto import SigningKey
from memories.devices.audit_records import stored_records
from memories.devices.bundle import export_bundle, import_bundle, seal_vault_keys
from memories.devices.membership import (
    devices_of_vault,
    export_identity,
    read_identity,
    revoke_device,
    set_role,
    share,
)
from memories.devices.pairing import vault_chain
from memories.errors import DeniedError, IntegrityError, UsageError
from memories.sync.merge import list_quarantine, reapply
from memories.sync.objects import Descriptor, PolicyAnnounced, PolicyObject, object_id
from memories.sync.transports import FolderTransport, MemoryTransport
from memories.vault.identity import LocalIdentity
from memories.vault.policy import Policy, propose
from tests.memories.devices.support import new_store, opened
from tests.memories.sync.devices import device, household, pair, sync, sync_vaults, titles
from tests.memories.sync.hostile import HostileTransport
from tests.memories.vault.support import another_device


def _device_of(path: Path) -> str:
    with opened(path) as v:
        return v.identity.device_fingerprint


def test_a_revocation_on_the_desk_reaches_every_device_and_takes_effect(tmp_path: Path) -> None:
    homes = household(tmp_path, "laptop", "tablet")
    desk, laptop, tablet = homes["desk"], homes["laptop"], homes["tablet"]
    folder = FolderTransport(tmp_path / "Dropbox" / "memories")
    with opened(desk) as v:
        v.put(None, "memory", title="before", body="everyone sees this")
    for path in (desk, laptop, tablet, desk):
        sync(path, folder)
    assert titles(laptop) == titles(tablet) == {"before"}
    # The desk approved the tablet after the laptop joined: that entry reached the laptop.
    with opened(laptop) as v:
        assert {d["device"] for d in devices_of_vault(v, None)} >= {_device_of(tablet)}

    tablet_device = _device_of(tablet)
    with opened(desk) as v:
        revoked = revoke_device(v, None, tablet_device)
    with opened(tablet) as v:
        v.put(None, "memory", title="offline on the tablet", body="written before it knew")
    assert sync(desk, folder).policies == 0  # its own entry goes out; nothing comes in yet
    report = sync(laptop, folder)
    assert report.policies == 1
    with opened(laptop) as v:
        record = v.resolve_vault(None)
        assert record.epoch == revoked.epoch == 2 and 2 in record.keys  # the new key arrived
        status = {d["device"]: d["status"] for d in devices_of_vault(v, None)}
        assert status[tablet_device] == "revoked"
        v.put(None, "memory", title="laptop under epoch 2", body="the tablet never gets this key")
    sync(laptop, folder)

    # The tablet learns of its revocation: its offline write leaves its own view too (no
    # other device merges it), the laptop's new write cannot reach it, and it writes no more.
    report = sync(tablet, folder)
    assert report.policies == 1 and report.quarantined == 1 and report.merged == 0
    assert titles(tablet) == {"before"}
    with opened(tablet) as v:
        [taken] = list_quarantine(v.store)
        assert taken.descriptor == "" and "epoch 1" in taken.reason
        assert 2 not in v.resolve_vault(None).keys
        with pytest.raises(DeniedError):
            v.put(None, "memory", title="late", body="refused")

    # The desk and the laptop quarantine the tablet's write; only the laptop's reaches the desk.
    for path in (desk, laptop):
        sync(path, folder)
        assert titles(path) == {"before", "laptop under epoch 2"}
        with opened(path) as v:
            held = [q for q in list_quarantine(v.store) if q.type == "revision"]
            assert [q.device for q in held] == [tablet_device]
    # Another round changes nothing anywhere: the devices agree and are quiet.
    for path in (desk, laptop, tablet):
        again = sync(path, folder)
        assert (again.merged, again.policies, again.quarantined) == (0, 0, 0)


def test_a_role_change_reaches_the_other_person_and_takes_effect(tmp_path: Path) -> None:
    desk = new_store(tmp_path / "desk.db", "olga")
    bob = new_store(tmp_path / "bob.db", "bob")
    shared = MemoryTransport()
    with opened(bob) as v:
        bob_identity = read_identity(export_identity(v)[0])
    with opened(desk) as v:
        v.create_vault("team")
        share(v, "team", bob_identity, "editor")
        bundle = export_bundle(v, "team")
    with opened(bob) as v:
        import_bundle(v, bundle)
        v.put("team", "memory", title="bob's first", body="as an editor")
    sync(bob, shared)
    sync(desk, shared)
    assert titles(desk, "team") == {"bob's first"}

    with opened(desk) as v:
        set_role(v, "team", bob_identity.fingerprint, "reader")
    with opened(bob) as v:
        v.put("team", "memory", title="bob offline", body="before he learned")
    sync(desk, shared)
    assert sync(bob, shared).policies == 1
    with opened(bob) as v:
        assert v.vault_role("team")[1] == "reader"
        with pytest.raises(DeniedError, match="role"):
            v.put("team", "memory", title="as a reader", body="refused")
    report = sync(desk, shared)
    assert report.merged == 0 and report.quarantined >= 1
    assert titles(desk, "team") == {"bob's first"}


def test_audit_records_reach_the_other_devices(tmp_path: Path) -> None:
    homes = household(tmp_path, "laptop", "tablet")
    desk, laptop, tablet = homes["desk"], homes["laptop"], homes["tablet"]
    shared = MemoryTransport()
    with opened(desk) as v:
        saved = v.put(None, "memory", title="plan", body="one")
        vault_id = v.resolve_vault(None).vault_id
    with opened(laptop) as v:
        v.put(None, "memory", title="laptop plan", body="two")
    for path in (desk, laptop, tablet, desk, laptop):
        sync(path, shared)
    desk_device, laptop_device = _device_of(desk), _device_of(laptop)
    with opened(tablet) as v:
        records = stored_records(v.store, vault_id)
    by_device = {r.device for r in records}
    assert by_device >= {desk_device, laptop_device}
    assert any(
        r.device == desk_device and r.action == "asset.put" and r.details["asset"] == saved.asset_id
        for r in records
    )
    assert not any(r.action.startswith("sync.") for r in records)  # bookkeeping stays home
    with opened(desk) as v:
        assert laptop_device in {r.device for r in stored_records(v.store, vault_id)}
        assert desk_device not in {r.device for r in stored_records(v.store, vault_id)}
    # Quiet afterwards: nothing new is published, so nothing new arrives.
    for path in (desk, laptop, tablet):
        sync(path, shared)
    with device(tablet) as v:
        assert sync_vaults(v, shared).audit == 0


def _publish(transport: MemoryTransport, by: LocalIdentity, obj: bytes, entry: Policy) -> None:
    oid = object_id(obj)
    descriptor = Descriptor.sign(by, entry.vault_id, [PolicyAnnounced(oid, entry.id, entry.seq)])
    data = descriptor.to_bytes()
    transport.put(f"objects/{oid}", obj)
    transport.put(f"descriptors/{object_id(data)}", data)


def test_forged_policy_entries_and_keys_are_quarantined_never_merged(tmp_path: Path) -> None:
    homes = household(tmp_path, "laptop")
    desk, laptop = homes["desk"], homes["laptop"]
    shared = MemoryTransport()
    for path in (desk, laptop):
        sync(path, shared)
    with opened(laptop) as v:
        laptop_identity = v.identity
        record = v.resolve_vault(None)
        chain = vault_chain(v.store, record)
    with opened(desk) as v:
        desk_cert = v.identity.certificate
    vault_id, head = record.vault_id, chain[-1]
    laptop_device = laptop_identity.device_fingerprint
    newcomer = another_device(laptop_identity)

    # 1. A stranger (another user's device) signs an entry that revokes the laptop.
    stranger = another_device(laptop_identity, user=SigningKey.generate())
    forged = propose(
        head,
        laptop_identity,
        revoked=(laptop_identity.device_fingerprint,),
        devices={d: u for d, u in head.users_by_device().items() if d != laptop_device},
    )
    unsigned = replace(forged, certificate=stranger.certificate)
    by_stranger = replace(unsigned, signature=stranger.device.sign_canonical(unsigned.body()))
    _publish(shared, stranger, PolicyObject(by_stranger).to_bytes(), by_stranger)
    # 2. A real entry by the laptop (it may add a device of its user) whose keys envelope
    #    swaps the desk's epoch-1 key for another one.
    honest = propose(
        head,
        laptop_identity,
        devices={**head.users_by_device(), newcomer.device_fingerprint: head.owner()},
        certificates=(newcomer.certificate,),
    )
    swapped = seal_vault_keys(laptop_identity, desk_cert, vault_id, {1: bytes(32)})
    _publish(
        shared,
        laptop_identity,
        PolicyObject(honest, {desk_cert.device: swapped}).to_bytes(),
        honest,
    )
    # 3. A replay: the laptop republishes the vault's genesis entry.
    _publish(shared, laptop_identity, PolicyObject(chain[0]).to_bytes(), chain[0])

    with opened(desk) as v:
        before = v.resolve_vault(None)
    report = sync(desk, shared)
    assert report.policies == 0 and report.quarantined == 2
    with opened(desk) as v:
        after = v.resolve_vault(None)
        assert after.policies == before.policies and dict(after.keys) == dict(before.keys)
        reasons = sorted(q.reason for q in list_quarantine(v.store))
        assert any("without authority" in r for r in reasons)
        assert any("contradicts" in r for r in reasons)
        assert {q.type for q in list_quarantine(v.store)} == {"policy"}
        # A policy entry is not reapplied by hand.
        with pytest.raises(UsageError, match="only a quarantined revision"):
            reapply(v, list_quarantine(v.store)[0].object)
    # Quarantined for good: more passes leave it so, and the desk still writes under epoch 1.
    assert sync(desk, shared).quarantined == 0
    with opened(desk) as v:
        v.put(None, "memory", title="still fine", body="x")
    sync(desk, shared)
    sync(laptop, shared)
    assert "still fine" in titles(laptop)


def test_writes_under_a_policy_entry_still_on_its_way_wait_for_it(tmp_path: Path) -> None:
    homes = household(tmp_path, "laptop")
    desk, laptop = homes["desk"], homes["laptop"]
    inner = MemoryTransport()
    hostile = HostileTransport(inner)
    for path in (desk, laptop):
        sync(path, inner)
    # The desk pairs a tablet; the tablet writes and syncs before the laptop hears of it.
    tablet = pair(desk, tmp_path / "tablet.db", "tablet")
    with opened(tablet) as v:
        v.put(None, "memory", title="from the tablet", body="new device")
    sync(desk, inner)
    sync(tablet, inner)
    # Both the desk and the tablet publish that entry (each with its own key envelopes).
    hostile.withheld.update(_policy_objects_of(inner, seq=3))
    report = sync(laptop, hostile, at=0)
    # Its revision and audit records name a device no entry the laptop holds allows: they
    # wait; nothing is quarantined, nothing merged.
    assert (report.merged, report.policies, report.quarantined) == (0, 0, 0)
    assert report.pending >= 1 and "from the tablet" not in titles(laptop)
    hostile.withheld.clear()
    report = sync(laptop, hostile, at=10_000)
    assert report.policies == 1 and report.merged == 1 and report.quarantined == 0
    assert report.audit >= 1 and report.pending == 0
    assert "from the tablet" in titles(laptop)


def _policy_objects_of(transport: MemoryTransport, *, seq: int) -> set[str]:
    found = set()
    for name in transport.list():
        if not name.startswith("objects/"):
            continue
        try:
            obj = PolicyObject.from_bytes(transport.get(name))
        except IntegrityError:
            continue
        if obj.entry.seq == seq:
            found.add(name)
    assert len(found) == 2
    return found
