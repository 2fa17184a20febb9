"""Random sequences of policy changes by random actors (members or not, on allowed, removed or
revoked devices). An independent model of the rules says which changes are authorized; the
policy code must agree in both directions, and the chain keeps exactly one Owner, growing
revocations and only members' devices."""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from memories.crypto import new_id
from memories.errors import DeniedError
from memories.vault.identity import LocalIdentity
from memories.vault.policy import Policy, genesis_policy, propose, verify_chain

USERS = 5
ROLES = ("owner", "admin", "editor", "reader")
OPS = ("set_role", "remove_member", "transfer", "add_device", "revoke")
# Identities are costly to make; a fixed cast with spare devices serves every run.
CAST = [LocalIdentity.generate(user_name=f"user{i}") for i in range(USERS)]
DEVICES = [[person] + [person.new_device(device_name=f"d{j}") for j in range(3)] for person in CAST]


class PolicyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.chain = [genesis_policy(new_id(), CAST[0])]

    @property
    def last(self) -> Policy:
        return self.chain[-1]

    def signer_ok(self, actor: LocalIdentity) -> bool:
        """A member signing on one of their own allowed, unrevoked devices."""
        last, me = self.last, actor.user_fingerprint
        return (
            me in last.members
            and last.user_of(actor.device_fingerprint) == me
            and actor.device_fingerprint not in last.revoked
        )

    def allowed(self, actor: LocalIdentity, op: str, whom: int, role: str, device: int) -> bool:
        """The model: the rules restated from the specification, for a change that changes
        something."""
        if not self.signer_ok(actor):
            return False
        last = self.last
        mine = last.members[actor.user_fingerprint]
        who = CAST[whom].user_fingerprint
        their = last.members.get(who)
        if op == "set_role":
            return "owner" not in (their, role) and mine in ("owner", "admin")
        if op == "remove_member":
            return their != "owner" and mine in ("owner", "admin")
        if op == "transfer":
            # Ownership may go to a member or to someone it makes a member at the same time.
            return mine == "owner"
        if op == "add_device":
            if DEVICES[whom][device].device_fingerprint in last.revoked:
                return False
            return their is not None and (
                mine in ("owner", "admin") or who == actor.user_fingerprint
            )
        if op == "revoke":
            return mine == "owner"
        raise AssertionError(op)

    @rule(
        actor=st.integers(0, USERS - 1),
        actor_device=st.integers(0, 3),
        op=st.sampled_from(OPS),
        whom=st.integers(0, USERS - 1),
        role=st.sampled_from(ROLES),
        device=st.integers(0, 3),
    )
    def act(
        self, actor: int, actor_device: int, op: str, whom: int, role: str, device: int
    ) -> None:
        signer = DEVICES[actor][actor_device]
        last = self.last
        members: dict[str, Any] = dict(last.members)
        devices = last.users_by_device()
        revoked = set(last.revoked)
        certificates = []
        who = CAST[whom].user_fingerprint
        if op == "set_role":
            members[who] = role
        elif op == "remove_member":
            members.pop(who, None)
            devices = {d: u for d, u in devices.items() if u != who}
        elif op == "transfer":
            members[signer.user_fingerprint] = "admin"
            members[who] = "owner"
        elif op == "add_device":
            new = DEVICES[whom][device]
            devices[new.device_fingerprint] = who
            certificates.append(new.certificate)
        else:
            victim = DEVICES[whom][device].device_fingerprint
            devices.pop(victim, None)
            revoked.add(victim)
        unchanged = (
            members == dict(last.members)
            and devices == last.users_by_device()
            and revoked == set(last.revoked)
        )
        if unchanged:
            expected = self.signer_ok(signer)
        else:
            expected = self.allowed(signer, op, whom, role, device)
        try:
            entry = propose(
                last,
                signer,
                members=members,
                devices=devices,
                revoked=sorted(revoked),
                certificates=certificates,
            )
        except DeniedError:
            assert not expected, (op, "refused although the rules allow it")
            return
        assert expected, (op, "accepted without authority")
        entry.verify(last)
        self.chain.append(entry)

    @invariant()
    def exactly_one_owner(self) -> None:
        assert list(self.last.members.values()).count("owner") == 1

    @invariant()
    def revocations_grow_and_devices_belong_to_members(self) -> None:
        if len(self.chain) > 1:
            assert set(self.chain[-2].revoked) <= set(self.last.revoked)
            removed = set(self.chain[-2].devices) - set(self.last.devices)
            if removed or set(self.chain[-2].members) - set(self.last.members):
                assert self.last.epoch == self.chain[-2].epoch + 1
        assert not set(self.last.devices) & set(self.last.revoked)
        assert set(self.last.users_by_device().values()) <= set(self.last.members)

    def teardown(self) -> None:
        verify_chain(self.chain)
        verify_chain([Policy.from_bytes(p.to_bytes()) for p in self.chain])


TestPolicyMachine = PolicyMachine.TestCase
TestPolicyMachine.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
