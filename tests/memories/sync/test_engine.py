"""The outbox/inbox and the validated merge, over replicas of one vault in separate stores."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memories.crypto import b64u_encode, canonical_bytes
from memories.errors import LockedError
from memories.sync import engine
from memories.sync.engine import execute, load_state, prepare
from memories.sync.merge import ack, discard, list_quarantine, reapply
from memories.sync.objects import Announced, Descriptor, RevisionObject, object_id
from memories.sync.transports import FolderTransport, MemoryTransport
from memories.vault.operations import load_identity
from tests.memories.sync.hostile import HostileTransport
from tests.memories.sync.support import (
    TARGET,
    make_replicas,
    replica,
    sync_once,
    sync_until_quiet,
    titles,
)
from tests.memories.vault.support import PASSWORD, another_device


def test_writes_reach_every_replica_through_one_folder(tmp_path: Path) -> None:
    a, b, c = make_replicas(tmp_path, 3)
    folder = FolderTransport(tmp_path / "Dropbox" / "memories")
    with replica(a) as va:
        va.put(None, "memory", title="from a", body="alpha")
        sync_until_quiet(va, folder)
    with replica(b) as vb:
        vb.put(None, "memory", title="from b", body="beta")
        report = sync_until_quiet(vb, folder)
        assert report.merged == 1
        assert titles(vb) == ["from a", "from b"]
    for path in (c, a):
        with replica(path) as v:
            sync_until_quiet(v, folder)
            assert titles(v) == ["from a", "from b"]


def test_concurrent_edits_of_one_asset_become_a_conflict_on_both_sides(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    shared = MemoryTransport()
    with replica(a) as va:
        saved = va.put(None, "memory", title="plan", body="v1")
        sync_until_quiet(va, shared)
    with replica(b) as vb:
        sync_until_quiet(vb, shared)
        vb.update(saved.asset_id, body="b's edit")
        sync_until_quiet(vb, shared)
    with replica(a) as va:
        va.update(saved.asset_id, body="a's edit")
        sync_until_quiet(va, shared)
        assert [s.title for s in va.list_assets(conflicts_only=True)] == ["plan"]
    with replica(b) as vb:
        sync_until_quiet(vb, shared)
        assert [s.title for s in vb.list_assets(conflicts_only=True)] == ["plan"]


def test_enqueue_commits_object_and_descriptor_before_any_transport_io(tmp_path: Path) -> None:
    (a,) = make_replicas(tmp_path, 1)
    shared = MemoryTransport()
    with replica(a) as va:
        va.put(None, "memory", title="one", body="x")
        plan = prepare(va, TARGET, at=0)
        state = load_state(va.store)
        # The policy entry, the revision and the audit record, then the descriptor naming them.
        areas = [e.name.split("/")[0] for e in state.outbox]
        assert areas == ["objects", "objects", "objects", "descriptors"]
        assert shared.list() == []  # nothing has gone out yet
    # A crash here (no execute, no ack) loses nothing: the next pass uploads the same ids.
    with replica(a) as va:
        again = prepare(va, TARGET, at=0)
        assert [n for n, _ in again.uploads] == [n for n, _ in plan.uploads]
        ack(va, again, execute(again, shared), at=0)
        assert sorted(shared.list()) == sorted(n for n, _ in plan.uploads)
        assert load_state(va.store).outbox == []  # compacted into receipts
        assert sync_once(va, shared).uploaded == 0


def test_a_late_ack_after_lock_and_unlock_imports_nothing(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    shared = MemoryTransport()
    with replica(a) as va:
        va.put(None, "memory", title="secret plan", body="x")
        sync_until_quiet(va, shared)
    with replica(b) as vb:
        plan = prepare(vb, TARGET, at=0)
        outcome = execute(plan, shared)
        assert outcome.objects
        vb.store.lock()
        vb.store.unlock(PASSWORD)
        with pytest.raises(LockedError):
            ack(vb, plan, outcome, at=0)
        assert titles(vb) == []
        sync_until_quiet(vb, shared)  # a fresh pass in the new session does it
        assert titles(vb) == ["secret plan"]


def test_hostile_transport_cannot_make_anything_merge_wrongly_or_crash(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    inner = MemoryTransport()
    with replica(a) as va:
        first = va.put(None, "memory", title="first", body="1")
        sync_until_quiet(va, inner)
        hostile = HostileTransport(inner, seed=7)
        hostile.freeze_listing()  # b will see only the first publication for a while
        va.update(first.asset_id, body="2")
        va.put(None, "memory", title="second", body="2")
        sync_until_quiet(va, inner)
    objects = sorted(n for n in inner.list() if n.startswith("objects/"))
    with replica(b) as vb:
        # Every object withheld or truncated: descriptors arrive before their objects.
        hostile.withheld = set(objects[:2])
        hostile.truncate = set(objects[2:])
        report = sync_once(vb, hostile, at=0)
        assert report.merged == 0 and report.pending >= 1 and report.quarantined == 0
        assert titles(vb) == []
        # Within the persisted retry delay nothing is asked for again.
        hostile.gets.clear()
        sync_once(vb, hostile, at=1)
        assert not any(n.startswith("objects/") for n in hostile.gets)
        # Released, still behind a stale, shuffled, duplicated listing.
        hostile.withheld.clear()
        hostile.truncate.clear()
        report = sync_once(vb, hostile, at=10_000)
        assert titles(vb) == ["first"]
        hostile.stale = None
        sync_until_quiet(vb, hostile, at=20_000)
        assert titles(vb) == ["first", "second"]
        assert list_quarantine(vb.store) == []


def _forged(tmp_path: Path, va_path: Path, inner: MemoryTransport) -> tuple[str, str]:
    """Publish (straight into the storage) a revision signed by a device the vault does not
    allow, with a valid descriptor from that device; and a descriptor with a broken signature."""
    with replica(va_path) as va:
        saved = va.put(None, "memory", title="honest", body="ok")
        header, chunks = va.export_revision(saved.revision)
        identity = load_identity(va.store)
    stranger = another_device(identity)
    obj = RevisionObject(header, tuple(chunks)).to_bytes()
    oid = object_id(obj)
    from memories.vault.revision import Revision

    revision = Revision.from_bytes(header)
    announced = Announced(oid, revision.id, revision.asset_id, revision.parents)
    descriptor = Descriptor.sign(stranger, revision.vault_id, [announced]).to_bytes()
    inner.put(f"objects/{oid}", obj)
    inner.put(f"descriptors/{object_id(descriptor)}", descriptor)
    honest = Descriptor.sign(identity, revision.vault_id, [announced])
    doc = canonical_bytes(
        {**honest.body(), "signature": b64u_encode(bytes(64)), "created_at": honest.created_at}
    )
    inner.put(f"descriptors/{hashlib.sha256(doc).hexdigest()}", doc)
    return oid, revision.asset_id


def test_forged_and_unauthorized_publications_are_quarantined_or_refused(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    inner = MemoryTransport()
    oid, asset = _forged(tmp_path, a, inner)
    with replica(b) as vb:
        report = sync_until_quiet(vb, inner)
        assert report.refused == 1  # the broken signature
        assert report.quarantined == 1  # a stranger's device
        assert titles(vb) == []
        [entry] = list_quarantine(vb.store)
        assert entry.object == oid and entry.asset == asset
        assert "does not allow" in entry.reason
        # Nothing an incoming field says clears it: more passes leave it quarantined.
        sync_until_quiet(vb, inner)
        assert [q.object for q in list_quarantine(vb.store)] == [oid]
        # The user reviews it locally and reapplies: the revision itself verifies.
        reapply(vb, oid[:10])
        assert titles(vb) == ["honest"]
        assert list_quarantine(vb.store) == []


def test_a_discarded_quarantine_never_comes_back(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    inner = MemoryTransport()
    oid, _ = _forged(tmp_path, a, inner)
    with replica(b) as vb:
        sync_until_quiet(vb, inner)
        discard(vb.store, oid)
        sync_until_quiet(vb, inner)
        assert list_quarantine(vb.store) == []
        assert titles(vb) == []


def test_garbage_under_a_valid_name_is_quarantined_not_merged(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    inner = MemoryTransport()
    with replica(a) as va:
        va.put(None, "memory", title="real", body="x")
        identity = load_identity(va.store)
        vault_id = va.resolve_vault(None).vault_id
    junk = b"not an object at all"
    fake = Announced(object_id(junk), "sha256:" + "1" * 64, "2" * 32, ())
    descriptor = Descriptor.sign(identity, vault_id, [fake]).to_bytes()
    inner.put(f"objects/{object_id(junk)}", junk)
    inner.put(f"descriptors/{object_id(descriptor)}", descriptor)
    with replica(b) as vb:
        report = sync_until_quiet(vb, inner)
        assert report.quarantined == 1 and titles(vb) == []


def test_no_plaintext_key_or_password_reaches_the_storage(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    folder = FolderTransport(tmp_path / "shared")
    canary = "CANARY-plaintext-7f3a9c"
    with replica(a) as va:
        va.put(None, "memory", title=f"title {canary}", body=f"body {canary}", tags=["canarytag"])
        identity = load_identity(va.store)
        sync_until_quiet(va, folder)
        record_keys = [bytes(k) for k in va.resolve_vault(None).keys.values()]
    secrets = [canary.encode(), b"canarytag", PASSWORD.encode()]
    secrets += [bytes(identity.device.private_bytes()), bytes(identity.user.private_bytes())]
    secrets += record_keys
    secrets += [b64u_encode(s).encode() for s in secrets[3:]]
    files = [p for p in (tmp_path / "shared").rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret not in data, path.name
    with replica(b) as vb:
        sync_until_quiet(vb, folder)
        assert vb.list_assets()[0].title == f"title {canary}"


def test_objects_the_get_bound_leaves_behind_come_in_the_next_passes_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_replicas(tmp_path, 2)
    shared = MemoryTransport()
    with replica(a) as va:
        for i in range(12):
            va.put(None, "memory", title=f"n{i:02}", body="x")
        sync_until_quiet(va, shared)
    monkeypatch.setattr(engine, "MAX_GETS", 5)
    with replica(b) as vb:
        first = sync_once(vb, shared, at=0)
        assert first.more and first.merged < 12  # the bound, not the storage, stopped it
        # Same moment, no retry delay: ``sync now`` keeps going until everything is in.
        sync_until_quiet(vb, shared, at=0)
        assert titles(vb) == [f"n{i:02}" for i in range(12)]
        assert load_state(vb.store).inbox == {}


def test_a_pass_stops_fetching_at_its_byte_bound_and_the_next_passes_bring_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_replicas(tmp_path, 2)
    shared = MemoryTransport()
    with replica(a) as va:
        for i in range(6):
            va.put(None, "memory", title=f"n{i:02}", body="x" * 3000)
        sync_until_quiet(va, shared)
    monkeypatch.setattr(engine, "MAX_GET_BYTES", 1)  # one object per pass at most
    with replica(b) as vb:
        plan = engine.prepare(vb, TARGET, at=0)
        outcome = engine.execute(plan, shared)
        assert len(outcome.descriptors) + len(outcome.objects) == 1
        assert outcome.deferred_listing
        first = ack(vb, plan, outcome, at=0)
        assert first.more and first.merged == 0
        sync_until_quiet(vb, shared, at=0)
        assert titles(vb) == [f"n{i:02}" for i in range(6)]
        assert load_state(vb.store).inbox == {}
