"""Every sentence of the policy rules as a test: roles, devices, revocation, epochs, one Owner.

Local changes go through :func:`propose` (refused with ``DeniedError`` before anything is
signed); entries from elsewhere are checked by ``verify`` (``IntegrityError``). Forged entries are
built field by field, signed by a real device, so only the rules can refuse them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memories.crypto import new_id
from memories.errors import DeniedError, IntegrityError
from memories.vault.identity import LocalIdentity, now
from memories.vault.policy import (
    Policy,
    change_problem,
    check_write,
    genesis_policy,
    propose,
    verify_chain,
)


class People:
    def __init__(self) -> None:
        self.owner = LocalIdentity.generate(user_name="olga", device_name="olga-desk")
        self.owner_laptop = self.owner.new_device(device_name="olga-laptop")
        self.admin = LocalIdentity.generate(user_name="ada")
        self.editor = LocalIdentity.generate(user_name="ed")
        self.editor_phone = self.editor.new_device(device_name="ed-phone")
        self.reader = LocalIdentity.generate(user_name="rita")
        self.reader_tablet = self.reader.new_device(device_name="rita-tablet")
        self.outsider = LocalIdentity.generate(user_name="xavier")


@pytest.fixture
def people() -> People:
    return People()


def with_member(policy: Policy, by: LocalIdentity, who: LocalIdentity, role: Any) -> Policy:
    return propose(
        policy,
        by,
        members={**policy.members, who.user_fingerprint: role},
        devices={**policy.users_by_device(), who.device_fingerprint: who.user_fingerprint},
        certificates=(who.certificate,),
    )


@pytest.fixture
def team(people: People) -> list[Policy]:
    """Olga owns; Ada admin, Ed editor, Rita reader, each with one device."""
    chain = [genesis_policy(new_id(), people.owner)]
    for who, role in (
        (people.admin, "admin"),
        (people.editor, "editor"),
        (people.reader, "reader"),
    ):
        chain.append(with_member(chain[-1], people.owner, who, role))
    verify_chain(chain)
    return chain


def forged(previous: Policy, signer: LocalIdentity, **changes: Any) -> Policy:
    """An entry after ``previous`` with raw field changes, properly signed by ``signer``."""
    fields: dict[str, Any] = {
        "seq": previous.seq + 1,
        "prev": previous.id,
        "created_at": now(),
        "certificate": signer.certificate,
        "added": (),
        **changes,
    }
    unsigned = replace(previous, signature=b"", **fields)
    return replace(unsigned, signature=signer.device.sign_canonical(unsigned.body()))


def refused_locally(call: Any) -> str:
    with pytest.raises(DeniedError) as caught:
        call()
    return caught.value.message


# -- the chain --------------------------------------------------------------------------------


def test_a_genesis_is_signed_by_its_owner_on_an_allowed_device(people: People) -> None:
    genesis = genesis_policy(new_id(), people.owner)
    genesis.verify(None)
    assert genesis.owner() == people.owner.user_fingerprint
    assert genesis.user_of(people.owner.device_fingerprint) == people.owner.user_fingerprint
    as_admin = forged(
        genesis,
        people.owner,
        seq=1,
        prev="",
        members={people.owner.user_fingerprint: "admin", people.admin.user_fingerprint: "owner"},
    )
    with pytest.raises(IntegrityError):
        as_admin.verify(None)


def test_entries_round_trip_with_device_users_and_certificates(
    team: list[Policy], people: People
) -> None:
    for entry in team:
        again = Policy.from_bytes(entry.to_bytes())
        assert again == entry and again.id == entry.id
    assert len(team[-1].device_users) == 3  # the three members' devices are not the owner's
    assert [c.device for c in team[1].added] == [people.admin.device_fingerprint]


def test_a_non_canonical_device_map_is_malformed(team: list[Policy], people: People) -> None:
    entry = team[-1]
    doc = entry.to_dict()
    body = dict(doc["policy"])  # type: ignore[arg-type]
    users = dict(body["device_users"])
    users[people.owner.device_fingerprint] = people.owner.user_fingerprint  # implied; not written
    body["device_users"] = users
    with pytest.raises(IntegrityError):
        Policy.from_dict({"policy": body, "signature": doc["signature"]})


def test_role_checks_use_the_preceding_policy(team: list[Policy], people: People) -> None:
    # Xavier cannot make himself an admin in the very entry he signs ...
    grab = forged(
        team[-1],
        people.outsider,
        members={**team[-1].members, people.outsider.user_fingerprint: "admin"},
        device_users={
            **team[-1].device_users,
            people.outsider.device_fingerprint: people.outsider.user_fingerprint,
        },
        devices=tuple(sorted((*team[-1].devices, people.outsider.device_fingerprint))),
        added=(people.outsider.certificate,),
    )
    with pytest.raises(IntegrityError, match="without authority"):
        grab.verify(team[-1])
    # ... but once an entry made him admin, the next one he signs is judged by that role.
    made = with_member(team[-1], people.owner, people.outsider, "admin")
    made.verify(team[-1])
    demoted_editor = propose(
        made, people.outsider, members={**made.members, people.editor.user_fingerprint: "reader"}
    )
    demoted_editor.verify(made)
    # A demotion binds the next entry: Ed, now a reader, cannot change membership any more.
    assert "role" in refused_locally(
        lambda: propose(
            demoted_editor,
            people.editor,
            members={**demoted_editor.members, people.outsider.user_fingerprint: "reader"},
        )
    )


def test_an_entry_must_name_its_predecessor_in_order(team: list[Policy], people: People) -> None:
    last = team[-1]
    for changes in (
        {"prev": team[0].id},
        {"seq": last.seq + 2},
        {"vault_id": new_id()},
        {"epoch": last.epoch + 2},
        {"epoch": last.epoch - 1},
    ):
        with pytest.raises(IntegrityError, match="does not follow"):
            forged(last, people.owner, **changes).verify(last)


def test_a_tampered_entry_fails_its_signature(team: list[Policy], people: People) -> None:
    entry = forged(team[-1], people.owner)
    tampered = replace(entry, members={**entry.members, people.outsider.user_fingerprint: "reader"})
    with pytest.raises(IntegrityError):
        tampered.verify(team[-1])


# -- ordinary members and their own devices ---------------------------------------------------


@pytest.mark.parametrize("who", ["reader", "editor"])
def test_a_member_may_authorize_another_device_of_their_own(
    team: list[Policy], people: People, who: str
) -> None:
    me = getattr(people, who)
    extra = me.new_device(device_name="extra")
    entry = propose(
        team[-1],
        me,
        devices={**team[-1].users_by_device(), extra.device_fingerprint: me.user_fingerprint},
        certificates=(extra.certificate,),
    )
    entry.verify(team[-1])
    assert entry.members == team[-1].members and entry.epoch == team[-1].epoch
    assert entry.user_of(extra.device_fingerprint) == me.user_fingerprint


def test_a_member_cannot_authorize_someone_elses_device(team: list[Policy], people: People) -> None:
    other = people.owner.new_device()
    message = refused_locally(
        lambda: propose(
            team[-1],
            people.editor,
            devices={
                **team[-1].users_by_device(),
                other.device_fingerprint: people.owner.user_fingerprint,
            },
            certificates=(other.certificate,),
        )
    )
    assert message == "you can authorize only devices of your own"


def test_editors_and_readers_cannot_change_membership(team: list[Policy], people: People) -> None:
    for me in (people.editor, people.reader):
        for members in (
            {**team[-1].members, people.outsider.user_fingerprint: "reader"},
            {**team[-1].members, me.user_fingerprint: "admin"},
        ):
            assert "does not allow changing its members" in refused_locally(
                lambda me=me, members=members: propose(team[-1], me, members=members)
            )


def test_a_member_cannot_remove_a_device_without_the_owner(
    team: list[Policy], people: People
) -> None:
    devices = team[-1].users_by_device()
    del devices[people.admin.device_fingerprint]
    assert refused_locally(lambda: propose(team[-1], people.editor, devices=devices))


def test_a_device_needs_its_certificate_from_the_named_user(
    team: list[Policy], people: People
) -> None:
    phone = people.editor_phone
    devices = {
        **team[-1].users_by_device(),
        phone.device_fingerprint: people.editor.user_fingerprint,
    }
    assert "certificate" in refused_locally(
        lambda: propose(team[-1], people.editor, devices=devices)
    )
    # A certificate made by another user key for Ed's phone key does not belong to Ed.
    fake = people.outsider.certify(
        phone.device.public_bytes(), phone.exchange.public_bytes(), device_name="fake"
    )
    assert "does not belong" in refused_locally(
        lambda: propose(team[-1], people.editor, devices=devices, certificates=(fake,))
    )
    broken = replace(phone.certificate, device_name="renamed")
    assert "does not verify" in refused_locally(
        lambda: propose(team[-1], people.editor, devices=devices, certificates=(broken,))
    )


def test_readers_cannot_write_and_editors_can(team: list[Policy], people: People) -> None:
    last = team[-1]
    for who in (people.owner, people.admin, people.editor):
        check_write(last, who.user_fingerprint, who.device_fingerprint)
    with pytest.raises(DeniedError, match="role"):
        check_write(last, people.reader.user_fingerprint, people.reader.device_fingerprint)
    with pytest.raises(DeniedError):  # a device is allowed for its own user only
        check_write(last, people.editor.user_fingerprint, people.admin.device_fingerprint)
    with pytest.raises(DeniedError):
        check_write(last, people.outsider.user_fingerprint, people.outsider.device_fingerprint)


# -- admins -----------------------------------------------------------------------------------


def test_an_admin_may_change_admin_editor_and_reader_membership(
    team: list[Policy], people: People
) -> None:
    last = team[-1]
    added = with_member(last, people.admin, people.outsider, "admin")
    added.verify(last)
    roles = propose(
        added,
        people.admin,
        members={
            **added.members,
            people.editor.user_fingerprint: "reader",
            people.reader.user_fingerprint: "editor",
        },
    )
    roles.verify(added)
    devices = roles.users_by_device()
    del devices[people.outsider.device_fingerprint]
    members = dict(roles.members)
    del members[people.outsider.user_fingerprint]
    removed = propose(roles, people.admin, members=members, devices=devices)
    removed.verify(roles)
    assert removed.epoch == roles.epoch + 1
    assert people.outsider.device_fingerprint not in removed.devices
    assert removed.revoked == ()  # an admin removes, it never revokes


def test_an_admin_may_authorize_a_members_device(team: list[Policy], people: People) -> None:
    phone = people.editor_phone
    entry = propose(
        team[-1],
        people.admin,
        devices={
            **team[-1].users_by_device(),
            phone.device_fingerprint: people.editor.user_fingerprint,
        },
        certificates=(phone.certificate,),
    )
    entry.verify(team[-1])


def test_an_admin_cannot_add_remove_or_alter_an_owner(team: list[Policy], people: People) -> None:
    last, owner = team[-1], people.owner.user_fingerprint
    attempts = {
        "promote to owner": {**last.members, people.editor.user_fingerprint: "owner"},
        "demote the owner": {**last.members, owner: "admin"},
        "transfer": {**last.members, owner: "admin", people.admin.user_fingerprint: "owner"},
    }
    for members in attempts.values():
        refused_locally(lambda m=members: propose(last, people.admin, members=m))
        with pytest.raises(IntegrityError):
            forged(last, people.admin, members=members).verify(last)
    members = {u: r for u, r in last.members.items() if u != owner}
    devices = {d: u for d, u in last.users_by_device().items() if u != owner}
    refused_locally(lambda: propose(last, people.admin, members=members, devices=devices))


def test_an_admin_cannot_revoke_devices(team: list[Policy], people: People) -> None:
    last = team[-1]
    devices = last.users_by_device()
    del devices[people.editor.device_fingerprint]
    revoked = (people.editor.device_fingerprint,)
    assert (
        refused_locally(lambda: propose(last, people.admin, devices=devices, revoked=revoked))
        == "only the owner can revoke devices"
    )
    # Taking a remaining member's device off the allowlist is a revocation by another name.
    assert refused_locally(lambda: propose(last, people.admin, devices=devices)) == (
        "only the owner can revoke a member's device"
    )


# -- owners -----------------------------------------------------------------------------------


def test_the_owner_may_revoke_and_the_revocation_starts_an_epoch(
    team: list[Policy], people: People
) -> None:
    last = team[-1]
    devices = last.users_by_device()
    del devices[people.editor.device_fingerprint]
    entry = propose(
        last, people.owner, devices=devices, revoked=(people.editor.device_fingerprint,)
    )
    entry.verify(last)
    assert entry.epoch == last.epoch + 1
    assert entry.revoked == (people.editor.device_fingerprint,)
    with pytest.raises(IntegrityError, match="new epoch"):
        forged(
            last,
            people.owner,
            devices=tuple(sorted(devices)),
            revoked=entry.revoked,
            device_users={d: u for d, u in last.device_users.items() if d in devices},
        ).verify(last)


def test_revocations_only_grow_and_never_come_back(team: list[Policy], people: People) -> None:
    last = team[-1]
    devices = last.users_by_device()
    del devices[people.reader.device_fingerprint]
    revoked = propose(
        last, people.owner, devices=devices, revoked=(people.reader.device_fingerprint,)
    )
    with pytest.raises(IntegrityError, match="only grow"):
        forged(revoked, people.owner, revoked=(), epoch=revoked.epoch + 1).verify(revoked)
    back = {**devices, people.reader.device_fingerprint: people.reader.user_fingerprint}
    assert "revoked device" in refused_locally(
        lambda: propose(
            revoked, people.owner, devices=back, certificates=(people.reader.certificate,)
        )
    )


def test_a_revoked_device_cannot_sign_even_with_the_user_key(
    team: list[Policy], people: People
) -> None:
    last = team[-1]
    devices = last.users_by_device()
    del devices[people.editor.device_fingerprint]
    revoked = propose(
        last, people.owner, devices=devices, revoked=(people.editor.device_fingerprint,)
    )
    # The revoked device still holds Ed's user key: it certifies a fresh device and tries to
    # add it, signing on the revoked device and on the new one. Neither is allowed.
    fresh = people.editor.new_device(device_name="sneaky")
    wanted = {**revoked.users_by_device(), fresh.device_fingerprint: people.editor.user_fingerprint}
    for signer in (people.editor, fresh):
        assert "without authority" in refused_locally(
            lambda s=signer: propose(revoked, s, devices=wanted, certificates=(fresh.certificate,))
        )
    with pytest.raises(DeniedError):
        check_write(revoked, people.editor.user_fingerprint, people.editor.device_fingerprint)


def test_ownership_transfer_keeps_exactly_one_owner(team: list[Policy], people: People) -> None:
    last, old, new = team[-1], people.owner.user_fingerprint, people.admin.user_fingerprint
    moved = propose(last, people.owner, members={**last.members, old: "admin", new: "owner"})
    moved.verify(last)
    assert moved.owner() == new
    # Devices keep their users across the transfer (the map is re-encoded against the owner).
    assert moved.users_by_device() == last.users_by_device()
    # The old owner is an admin now and cannot take it back.
    refused_locally(
        lambda: propose(moved, people.owner, members={**moved.members, old: "owner", new: "admin"})
    )
    for members in ({**last.members, new: "owner"}, {**last.members, old: "admin"}):
        assert refused_locally(lambda m=members: propose(last, people.owner, members=m)) == (
            "a vault must keep exactly one owner"
        )


def test_every_allowed_device_belongs_to_a_member(team: list[Policy], people: People) -> None:
    last = team[-1]
    members = {u: r for u, r in last.members.items() if u != people.reader.user_fingerprint}
    assert "belong to a member" in refused_locally(
        lambda: propose(last, people.owner, members=members)
    )
    devices = {
        d: u for d, u in last.users_by_device().items() if u != people.reader.user_fingerprint
    }
    removed = propose(last, people.owner, members=members, devices=devices)
    removed.verify(last)
    assert removed.epoch == last.epoch + 1


def test_change_problem_names_nothing_for_a_valid_chain(team: list[Policy]) -> None:
    previous = None
    for entry in team:
        assert change_problem(previous, entry) is None
        previous = entry
    with pytest.raises(IntegrityError, match="policy entry 3"):
        verify_chain([team[0], team[2]])
