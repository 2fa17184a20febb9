"""Two people on three devices, moved by signed bundles: pair, share, edit on every side,
revoke a device and remove a person; every refused bundle leaves the store as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes
from memories.devices.bundle import export_bundle, import_bundle
from memories.devices.membership import (
    devices_of_vault,
    export_identity,
    members_of_vault,
    read_identity,
    remove_member,
    revoke_device,
    set_role,
    share,
)
from memories.devices.pairing import approve, issue_request, join, read_request
from memories.errors import DeniedError, IntegrityError, UsageError
from memories.vault import Vaults
from tests.memories.devices.support import LOCAL_CONFIG, new_join_store, new_store, opened


def titles(v: Vaults, vault: str) -> set[str]:
    found = set()
    for summary in v.list_assets(vault=vault):
        found.add(summary.title)
    return found


class World:
    def __init__(self, tmp: Path) -> None:
        self.desk = new_store(tmp / "desk.db", "olga")
        self.laptop = new_join_store(tmp / "laptop.db")
        self.bob = new_store(tmp / "bob.db", "bob")
        with opened(self.desk) as v:
            approver = v.identity.device_fingerprint
            v.create_vault("team")
        with opened(self.laptop) as v:
            issued = issue_request(v.store, approver=approver)
        with opened(self.desk) as v:
            approval = approve(
                v, read_request(issued.text), confirmed_fingerprint=issued.fingerprint
            )
        with opened(self.laptop) as v:
            join(v.store, approval, local_config=LOCAL_CONFIG)
            self.laptop_device = v.identity.device_fingerprint

    def move(self, source: Path, target: Path, vault: str) -> object:
        with opened(source) as v:
            data = export_bundle(v, vault)
        with opened(target) as v:
            return import_bundle(v, data)

    def seq(self, path: Path) -> int:
        with opened(path) as v:
            return v.store.seq


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_edits_travel_both_ways_between_paired_devices(world: World) -> None:
    with opened(world.desk) as v:
        v.put("personal", "memory", title="from the desk", body="one")
    world.move(world.desk, world.laptop, "personal")
    with opened(world.laptop) as v:
        assert titles(v, "personal") == {"from the desk"}
        v.put("personal", "memory", title="from the laptop", body="two")
        assert v.verify() == []
    imported = world.move(world.laptop, world.desk, "personal")
    assert imported.revisions == 1  # type: ignore[attr-defined]
    with opened(world.desk) as v:
        assert titles(v, "personal") == {"from the desk", "from the laptop"}
        assert v.verify() == []
    # Importing the same bundle again adds nothing.
    assert world.move(world.laptop, world.desk, "personal").revisions == 0  # type: ignore[attr-defined]


def test_a_vault_shared_with_another_person_is_read_and_written_by_both(world: World) -> None:
    with opened(world.bob) as v:
        text, print_ = export_identity(v)
    with opened(world.desk) as v:
        bob = read_identity(text)
        with pytest.raises(DeniedError, match="does not match"):
            share(v, "team", bob, "editor", confirmed_fingerprint="sha256:" + "0" * 64)
        share(v, "team", bob, "editor", confirmed_fingerprint=print_)
        v.put("team", "memory", title="team plan", body="ship it")
        roles = {m["user"]: m["role"] for m in members_of_vault(v, "team")}
        assert roles[print_] == "editor"
    imported = world.move(world.desk, world.bob, "team")
    assert imported.new_vault  # type: ignore[attr-defined]
    with opened(world.bob) as v:
        assert titles(v, "team") == {"team plan"}
        v.put("team", "memory", title="bob's note", body="agreed")
        assert v.verify() == []
    world.move(world.bob, world.desk, "team")
    world.move(world.desk, world.laptop, "team")
    with opened(world.laptop) as v:
        assert titles(v, "team") == {"team plan", "bob's note"}


def test_a_reader_cannot_write_and_an_editor_cannot_change_the_policy(world: World) -> None:
    with opened(world.bob) as v:
        text, _ = export_identity(v)
    with opened(world.desk) as v:
        share(v, "team", read_identity(text), "reader")
    world.move(world.desk, world.bob, "team")
    with opened(world.bob) as v:
        # The service refuses by role before this point; the domain refuses to sign it at all.
        with pytest.raises((DeniedError, IntegrityError)):
            v.put("team", "memory", title="nope", body="x")
        with pytest.raises(DeniedError):
            set_role(v, "team", v.identity.user_fingerprint, "editor")


def test_a_revoked_device_gets_no_new_key_and_its_writes_are_rejected(world: World) -> None:
    world.move(world.desk, world.laptop, "personal")
    with opened(world.desk) as v:
        entry = revoke_device(v, "personal", world.laptop_device)
        assert entry.epoch == 2
        new_key = v.resolve_vault("personal").keys[2]
        v.put("personal", "memory", title="after revocation", body="secret plan")
        data = export_bundle(v, "personal")
        statuses = {d["device"]: d["status"] for d in devices_of_vault(v, "personal")}
        assert statuses[world.laptop_device] == "revoked"
    doc = json.loads(data)
    assert world.laptop_device not in {k["device"] for k in doc["bundle"]["keys"]}
    assert b64u_encode(new_key) not in data.decode()
    before = world.seq(world.laptop)
    with opened(world.laptop) as v, pytest.raises(DeniedError, match="not allowed"):
        import_bundle(v, data)
    assert world.seq(world.laptop) == before
    # The laptop still writes under its stale policy; the desk refuses what it sends.
    with opened(world.laptop) as v:
        v.put("personal", "memory", title="sneaky", body="x")
        stale = export_bundle(v, "personal")
    before = world.seq(world.desk)
    with opened(world.desk) as v:
        with pytest.raises(DeniedError, match="revoked"):
            import_bundle(v, stale)
        assert "sneaky" not in titles(v, "personal")
    assert world.seq(world.desk) == before


def test_a_removed_person_can_no_longer_read_or_write(world: World) -> None:
    with opened(world.bob) as v:
        text, print_ = export_identity(v)
    with opened(world.desk) as v:
        share(v, "team", read_identity(text), "editor")
    world.move(world.desk, world.bob, "team")
    with opened(world.desk) as v:
        entry = remove_member(v, "team", print_)
        assert entry.epoch == 2 and print_ not in entry.members
        v.put("team", "memory", title="without bob", body="x")
        data = export_bundle(v, "team")
    with opened(world.bob) as v:
        with pytest.raises(DeniedError):
            import_bundle(v, data)
        v.put("team", "memory", title="bob again", body="x")
        stale = export_bundle(v, "team")
    with opened(world.desk) as v, pytest.raises(DeniedError):
        import_bundle(v, stale)


def test_an_admin_cannot_revoke_and_only_the_owner_transfers(world: World) -> None:
    with opened(world.bob) as v:
        text, _ = export_identity(v)
    with opened(world.desk) as v:
        share(v, "team", read_identity(text), "admin")
    world.move(world.desk, world.bob, "team")
    with opened(world.bob) as v:
        with pytest.raises(DeniedError, match="only the owner"):
            revoke_device(v, "team", world.laptop_device)
        owner = next(m["user"] for m in members_of_vault(v, "team") if m["role"] == "owner")
        with pytest.raises(DeniedError):
            set_role(v, "team", str(owner), "admin")


@pytest.mark.parametrize("damage", ["signature", "policy", "revision", "trailing"])
def test_a_damaged_bundle_imports_nothing(world: World, damage: str) -> None:
    with opened(world.desk) as v:
        v.put("personal", "memory", title="x", body="y")
        data = export_bundle(v, "personal")
    doc = json.loads(data)
    if damage == "signature":
        doc["bundle"]["created_at"] = "2020-01-01T00:00:00.000Z"
        bad = canonical_bytes(doc)
    elif damage == "policy":
        doc["bundle"]["policies"] = doc["bundle"]["policies"][:1] + doc["bundle"]["policies"][2:]
        bad = canonical_bytes(doc)
    elif damage == "revision":
        chunk = bytearray(b64u_decode(doc["bundle"]["revisions"][-1]["chunks"][0]))
        chunk[-1] ^= 1
        doc["bundle"]["revisions"][-1]["chunks"][0] = b64u_encode(bytes(chunk))
        bad = canonical_bytes(doc)
    else:
        bad = data + b"x"
    before = world.seq(world.laptop)
    with opened(world.laptop) as v, pytest.raises(IntegrityError):
        import_bundle(v, bad)
    assert world.seq(world.laptop) == before


def test_device_only_vaults_never_leave(world: World) -> None:
    with opened(world.desk) as v, pytest.raises(UsageError, match="device-only"):
        export_bundle(v, "device")


def test_a_forked_policy_history_is_refused(world: World) -> None:
    with opened(world.bob) as v:
        text, _ = export_identity(v)
    world.move(world.desk, world.laptop, "team")
    with opened(world.desk) as v:
        share(v, "team", read_identity(text), "reader")
    with opened(world.laptop) as v:
        share(v, "team", read_identity(text), "editor")
        forked = export_bundle(v, "team")
    with opened(world.desk) as v, pytest.raises(IntegrityError, match="forked"):
        import_bundle(v, forked)


def card(v: Vaults, vault: str, title: str) -> str:
    saved = v.put(vault, "card", title=title, card_type="knowledge", metadata={"topic": title})
    return saved.asset_id


def links_of(v: Vaults, asset: str) -> set[tuple[str, str]]:
    return {(link.target, link.relation) for link in v.resolve_asset(asset).links}


def test_links_travel_as_signed_link_sets_and_removals_follow(world: World) -> None:
    with opened(world.desk) as v:
        a, b = card(v, "team", "A"), card(v, "team", "B")
        v.link(a, b, "depends_on")
    world.move(world.desk, world.laptop, "team")
    with opened(world.laptop) as v:
        assert links_of(v, a) == {(b, "depends_on")}
        v.unlink(a, b)
    imported = world.move(world.laptop, world.desk, "team")
    assert imported.links == 1  # type: ignore[attr-defined]
    with opened(world.desk) as v:
        assert links_of(v, a) == set()


def test_a_forged_or_unauthorized_link_set_is_refused(world: World) -> None:
    with opened(world.bob) as v:
        text, _ = export_identity(v)
    with opened(world.desk) as v:
        a, b = card(v, "team", "A"), card(v, "team", "B")
        share(v, "team", read_identity(text), "reader")
        data = export_bundle(v, "team")
    world.move(world.desk, world.bob, "team")
    doc = json.loads(data)
    # Someone alters a signed link set in transit and re-signs the bundle? They cannot: the
    # bundle signature breaks. Re-signed by Bob's device (a reader), the link set is refused.
    with opened(world.bob) as v:
        from memories.devices.pairing import vault_chain
        from memories.vault.links import sign_link_set
        from memories.views.graph import Link

        last = vault_chain(v.store, v.resolve_vault("team"))[-1]
        forged = sign_link_set(v.identity, last.vault_id, last, a, [Link(a, b, "related")])
        body = doc["bundle"]
        body["links"] = [forged]
        body["certificate"] = v.identity.certificate.to_dict()
        signature = b64u_encode(v.identity.device.sign_canonical(body))
        bundle = canonical_bytes({"bundle": body, "signature": signature})
        assert (
            export_bundle(v, "team") and "links" in json.loads(export_bundle(v, "team"))["bundle"]
        )
        assert json.loads(export_bundle(v, "team"))["bundle"]["links"] == []  # a reader's
    before = world.seq(world.desk)
    with opened(world.desk) as v, pytest.raises(IntegrityError, match="link set"):
        import_bundle(v, bundle)
    assert world.seq(world.desk) == before
