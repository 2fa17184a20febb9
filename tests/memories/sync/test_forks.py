"""Permission forks: two devices change a vault's policy from the same point; sync keeps both
branches apart, an Owner's signed resolution ends it everywhere (advancing the policy and the
key), competing or forged resolutions fail closed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memories.devices.bundle import export_bundle, import_bundle
from memories.devices.membership import export_identity, read_identity, set_role, share
from memories.devices.pairing import vault_chain
from memories.errors import DeniedError, NotFoundError
from memories.sync.engine import referenced_blobs
from memories.sync.forks import discarded_policy, list_forks, resolve_fork
from memories.sync.merge import list_quarantine, reapply
from memories.sync.objects import PolicyObject
from memories.sync.transports import MemoryTransport
from memories.vault.policy import Policy
from tests.memories.devices.support import new_store, opened
from tests.memories.sync.devices import allow_new_device, household, publish, sync, titles


def _chain(path: Path, vault: str | None = None) -> list[Policy]:
    with opened(path) as v:
        return vault_chain(v.store, v.resolve_vault(vault))


def _forked(tmp_path: Path) -> tuple[Path, Path, MemoryTransport]:
    """The desk and the laptop (one user, the Owner) each allow a new device, offline, from
    the same entry; then both sync."""
    homes = household(tmp_path, "laptop")
    desk, laptop = homes["desk"], homes["laptop"]
    shared = MemoryTransport()
    for path in (desk, laptop):
        sync(path, shared)
    with opened(desk) as v:
        allow_new_device(v)
    with opened(laptop) as v:
        allow_new_device(v)
        v.put(None, "memory", title="laptop after its change", body="names its own entry")
    assert sync(desk, shared).forks == 0
    assert sync(laptop, shared).forks == 1
    assert sync(desk, shared).forks == 1
    return desk, laptop, shared


def test_a_fork_is_kept_apart_and_writes_under_the_other_branch_wait(tmp_path: Path) -> None:
    desk, laptop, shared = _forked(tmp_path)
    desk_chain, laptop_chain = _chain(desk), _chain(laptop)
    assert desk_chain[:2] == laptop_chain[:2] and desk_chain[2].id != laptop_chain[2].id
    with opened(desk) as v:
        [fork] = list_forks(v.store)
        assert fork.base == desk_chain[1].id and [p.id for p in fork.branch] == [laptop_chain[2].id]
        assert list_quarantine(v.store) == []
    # The laptop's write names its own entry: it waits on the desk, neither merged nor refused.
    report = sync(desk, shared)
    assert report.merged == 0 and report.pending >= 1 and report.quarantined == 0
    assert "laptop after its change" not in titles(desk)
    assert _chain(desk) == desk_chain  # nothing of the other branch was merged
    # Ordinary work under each device's own branch goes on.
    with opened(desk) as v:
        v.put(None, "memory", title="desk meanwhile", body="under the desk's branch")


def test_the_owner_resolves_for_its_branch_and_the_other_device_adopts_it(tmp_path: Path) -> None:
    desk, laptop, shared = _forked(tmp_path)
    before = _chain(desk)
    lost = _chain(laptop)[2]
    with opened(desk) as v:
        with pytest.raises(NotFoundError):
            resolve_fork(v, "device", "local")  # no fork there
        resolved = resolve_fork(v, None, "local")
        record = v.resolve_vault(None)
        assert resolved.discarded == [lost.id] and resolved.resolution.prev == before[-1].id
        assert record.epoch == resolved.resolution.epoch == 2 and 2 in record.keys  # new key
        assert list_forks(v.store) == []
        assert discarded_policy(v.store, record.vault_id, lost.id) == lost  # still verifiable
    sync(desk, shared)
    report = sync(laptop, shared)
    assert report.policies >= 2 and report.quarantined == 1  # it adopted the desk's branch
    assert _chain(laptop) == _chain(desk) == [*before, resolved.resolution]
    with opened(desk) as d:
        desk_keys = dict(d.resolve_vault(None).keys)
    assert "laptop after its change" not in titles(laptop)
    with opened(laptop) as v:
        assert dict(v.resolve_vault(None).keys) == desk_keys
        assert list_forks(v.store) == []
        [taken] = list_quarantine(v.store)
        assert "discarded" in taken.reason and taken.descriptor == ""
        v.put(None, "memory", title="laptop under the resolution", body="epoch 2")
    sync(laptop, shared)
    report = sync(desk, shared)
    assert "laptop under the resolution" in titles(desk)
    with opened(desk) as v:
        [held] = [q for q in list_quarantine(v.store) if q.type == "revision"]
        assert "discarded" in held.reason
        # The user may still take it in: it verifies against the discarded entry it names.
        reapply(v, held.object)
    assert "laptop after its change" in titles(desk)


def test_keeping_the_incoming_branch_adopts_it_here_and_reaches_the_other(tmp_path: Path) -> None:
    desk, laptop, shared = _forked(tmp_path)
    theirs = _chain(laptop)
    with opened(desk) as v:
        resolved = resolve_fork(v, None, "incoming")
        # The adopted entry takes a number the discarded one keeps: the store still verifies.
        assert v.verify() == []
        referenced = v.verification().referenced_blobs | referenced_blobs(v.store)
        assert v.store.verify_all(referenced) == []
    assert _chain(desk) == [*theirs, resolved.resolution]
    sync(desk, shared)
    report = sync(laptop, shared)
    assert report.policies == 1 and report.forks == 0
    assert _chain(laptop) == _chain(desk)
    sync(desk, shared)
    # Written under the kept branch but under the epoch the resolution superseded, and never
    # seen here before it: quarantined, as any late write of an old epoch; the user decides.
    with opened(desk) as v:
        assert list_forks(v.store) == []
        [late] = list_quarantine(v.store)
        assert "superseded" in late.reason
        reapply(v, late.object)
        bundle = export_bundle(v, None)  # the adopted chain exports whole
    assert "laptop after its change" in titles(desk)
    with opened(laptop) as v:
        assert import_bundle(v, bundle).policies == 0


def test_competing_resolutions_fail_closed_until_the_owner_signs_over_both(
    tmp_path: Path,
) -> None:
    desk, laptop, shared = _forked(tmp_path)
    with opened(desk) as v:
        resolve_fork(v, None, "local")
    with opened(laptop) as v:
        resolve_fork(v, None, "local")
    desk_chain, laptop_chain = _chain(desk), _chain(laptop)
    sync(desk, shared)
    assert sync(laptop, shared).forks == 1
    assert sync(desk, shared).forks == 1
    # Neither resolution was merged anywhere: each device keeps its own, the fork is open.
    assert _chain(desk) == desk_chain and _chain(laptop) == laptop_chain
    for path in (desk, laptop):
        with opened(path) as v:
            [fork] = list_forks(v.store)
            assert fork.branch[-1].discarded  # the other side's resolution, held apart
    with opened(desk) as v:
        again = resolve_fork(v, None, "local")
        assert set(again.resolution.discarded) == {laptop_chain[2].id, laptop_chain[3].id}
        assert again.resolution.epoch == 3
    sync(desk, shared)
    sync(laptop, shared)
    assert _chain(laptop) == _chain(desk) == [*desk_chain, again.resolution]
    for path in (desk, laptop):
        with opened(path) as v:
            assert list_forks(v.store) == []


def _team(tmp_path: Path) -> tuple[Path, Path, MemoryTransport]:
    """The desk (Owner) shares a team vault with Bob as an admin; both sync through it."""
    desk = new_store(tmp_path / "desk.db", "olga")
    bob = new_store(tmp_path / "bob.db", "bob")
    shared = MemoryTransport()
    with opened(bob) as v:
        bob_identity = read_identity(export_identity(v)[0])
    with opened(desk) as v:
        v.create_vault("team")
        share(v, "team", bob_identity, "admin")
        bundle = export_bundle(v, "team")
    with opened(bob) as v:
        import_bundle(v, bundle)
    for path in (desk, bob):
        sync(path, shared)
    return desk, bob, shared


def test_only_the_owner_on_both_branches_resolves_and_forged_resolutions_are_refused(
    tmp_path: Path,
) -> None:
    desk, bob, shared = _team(tmp_path)
    carol = new_store(tmp_path / "carol.db", "carol")
    with opened(carol) as v:
        carol_identity = read_identity(export_identity(v)[0])
    with opened(bob) as v:
        share(v, "team", carol_identity, "reader")  # an admin may add a reader
        bob_identity = v.identity
    with opened(desk) as v:
        set_role(v, "team", bob_identity.user_fingerprint, "editor")
    sync(desk, shared)
    assert sync(bob, shared).forks == 1
    assert sync(desk, shared).forks == 1
    with opened(bob) as v:
        with pytest.raises(DeniedError, match="owner"):
            resolve_fork(v, "team", "local")
        # Bob forges a resolution by hand, signed by himself, and publishes it.
        chain = vault_chain(v.store, v.resolve_vault("team"))
        [fork] = list_forks(v.store)
        unsigned = replace(
            chain[-1],
            seq=chain[-1].seq + 1,
            prev=chain[-1].id,
            epoch=chain[-1].epoch + 1,
            created_at=chain[-1].created_at,
            certificate=v.identity.certificate,
            signature=b"",
            added=(),
            discarded=tuple(p.id for p in fork.branch),
        )
        forged = replace(unsigned, signature=v.identity.device.sign_canonical(unsigned.body()))
        publish(shared, v.identity, PolicyObject(forged, {}, fork.branch).to_bytes(), forged)
    before = _chain(desk, "team")
    report = sync(desk, shared)
    assert report.policies == 0 and report.quarantined == 1
    with opened(desk) as v:
        [refused] = list_quarantine(v.store)
        assert refused.type == "policy" and "owner" in refused.reason
        assert len(list_forks(v.store)) == 1  # still open: only the Owner ends it
        resolved = resolve_fork(v, "team", "local")
    assert _chain(desk, "team") == [*before, resolved.resolution]
    sync(desk, shared)
    sync(bob, shared)
    assert _chain(bob, "team") == _chain(desk, "team")
    with opened(bob) as v:
        assert v.vault_role("team")[1] == "editor"
        assert list_forks(v.store) == []
