"""Vault policies: a signed, linear history of who may do what in one vault.

Each entry holds the membership (user fingerprint → role), the devices allowed to write and
whose user each belongs to, the monotonically growing set of revoked devices and the permission
epoch. Entry ``n`` names the hash of entry ``n-1``; the genesis entry is signed by the creating
owner. A change is authorized by the *preceding* entry (the signer's role there), never by the
entry it introduces. The rules (:func:`change_problem`), each a sentence of the specification:

- the signer is a member of the preceding entry and signs on a device it allows (not revoked);
- any member may authorize another device of their own without changing membership;
- an Admin may change Admin, Editor and Reader membership and authorize a member's device, but
  cannot add, remove or alter an Owner, revoke devices, or transfer ownership; Owners can;
- Editors and Readers change nothing else; every entry keeps exactly one Owner;
- revocations only grow, a revoked device is never allowed again, every allowed device belongs
  to a current member, and removing a device, a member or revoking starts a new epoch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

from memories.crypto import (
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    tagged_hash,
    verify_canonical,
)
from memories.errors import DeniedError, IntegrityError
from memories.vault.identity import DeviceCertificate, LocalIdentity, now

__all__ = [
    "POLICY_TAG",
    "ROLES",
    "Policy",
    "Role",
    "change_problem",
    "check_write",
    "genesis_policy",
    "propose",
    "propose_resolution",
    "resolution_problem",
    "verify_chain",
]

POLICY_TAG = "memories.policy"
Role = Literal["owner", "admin", "editor", "reader"]
ROLES: tuple[Role, ...] = ("owner", "admin", "editor", "reader")
_WRITERS = frozenset({"owner", "admin", "editor"})


@dataclass(frozen=True)
class Policy:
    vault_id: str
    seq: int
    prev: str  # id of the preceding entry, "" for genesis
    epoch: int
    members: Mapping[str, Role]
    devices: tuple[str, ...]  # allowed device fingerprints, sorted
    revoked: tuple[str, ...]  # revoked device fingerprints, sorted; only ever grows
    created_at: str
    certificate: DeviceCertificate  # the signing device's
    signature: bytes
    # The user of each allowed device that is not the Owner's; a device left out belongs to the
    # Owner (so a one-person vault, and every entry written before sharing, needs no map).
    device_users: Mapping[str, str] = field(default_factory=dict)
    # Certificates of the devices this entry allows that the preceding entry did not (other
    # than the signer's, which travels as ``certificate``): peers learn exchange keys from them.
    added: tuple[DeviceCertificate, ...] = ()
    # A fork resolution: the ids of the entire competing branch it discards, oldest first.
    # ``prev`` names the head chosen instead (see :func:`resolution_problem`).
    discarded: tuple[str, ...] = ()

    def body(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "t": POLICY_TAG,
            "v": 1,
            "vault": self.vault_id,
            "seq": self.seq,
            "prev": self.prev,
            "epoch": self.epoch,
            "members": dict(sorted(self.members.items())),
            "devices": list(self.devices),
            "revoked": list(self.revoked),
            "created_at": self.created_at,
            "certificate": self.certificate.to_dict(),
        }
        if self.device_users:
            doc["device_users"] = dict(sorted(self.device_users.items()))
        if self.added:
            doc["device_certs"] = [c.to_dict() for c in sorted(self.added, key=_by_device)]
        if self.discarded:
            doc["discarded"] = list(self.discarded)
        return doc

    def to_dict(self) -> dict[str, object]:
        return {"policy": self.body(), "signature": b64u_encode(self.signature)}

    @cached_property
    def id(self) -> str:  # computed once: canonical encoding is costly and the value is frozen
        return tagged_hash(POLICY_TAG, canonical_bytes(self.to_dict()))

    def to_bytes(self) -> bytes:
        return canonical_bytes(self.to_dict())

    @property
    def signer(self) -> str:
        """The signing user's full fingerprint."""
        return self.certificate.user

    def user_of(self, device: str) -> str | None:
        """The user an allowed device belongs to (None for a device this entry does not allow)."""
        if device not in self.devices:
            return None
        return self.device_users.get(device, self._default_user())

    def users_by_device(self) -> dict[str, str]:
        """Every allowed device and its user."""
        default = self._default_user()
        return {d: self.device_users.get(d, default) for d in self.devices}

    def _default_user(self) -> str:
        owners = [u for u, r in self.members.items() if r == "owner"]
        # A malformed entry without one owner is refused by the rules; until then its unnamed
        # devices belong to nobody.
        return owners[0] if len(owners) == 1 else ""

    def devices_of(self, user: str) -> tuple[str, ...]:
        """The allowed devices of ``user``."""
        return tuple(d for d, u in self.users_by_device().items() if u == user)

    def owner(self) -> str:
        """The one Owner's fingerprint. Raises ``IntegrityError`` if there is not exactly one."""
        owners = [u for u, r in self.members.items() if r == "owner"]
        if len(owners) != 1:
            raise IntegrityError("a vault must keep exactly one owner")
        return owners[0]

    @classmethod
    def from_stored(cls, data: bytes, policy_id: str) -> Policy:
        """Parse an entry this store wrote (canonical bytes) and check it is ``policy_id`` by
        hashing those bytes. Raises ``IntegrityError`` when it is not."""
        if tagged_hash(POLICY_TAG, data) != policy_id:
            raise IntegrityError("a vault policy entry does not match the vault's chain")
        policy = cls.from_bytes(data)
        vars(policy)["id"] = policy_id  # prime the cached property with the checked id
        return policy

    @classmethod
    def from_bytes(cls, data: bytes) -> Policy:
        """Parse a stored entry (not yet verified). Raises ``IntegrityError`` if malformed."""
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise IntegrityError("a vault policy entry is malformed") from exc
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: object) -> Policy:
        """Parse an entry from its JSON object (not yet verified).

        Raises:
            IntegrityError: the object is not exactly a policy entry in canonical form.
        """
        try:
            if not isinstance(doc, dict) or set(doc) != {"policy", "signature"}:
                raise ValueError("not a policy")
            body = doc["policy"]
            if not isinstance(body, dict) or body.get("t") != POLICY_TAG:
                raise ValueError("not a policy")
            members = body["members"]
            if not isinstance(members, dict) or not all(r in ROLES for r in members.values()):
                raise ValueError("bad members")
            users = body.get("device_users", {})
            certs = body.get("device_certs", [])
            discarded = body.get("discarded", [])
            if not isinstance(users, dict) or not isinstance(certs, list):
                raise ValueError("bad devices")
            if not isinstance(discarded, list) or not all(isinstance(d, str) for d in discarded):
                raise ValueError("bad discarded")
            policy = cls(
                vault_id=str(body["vault"]),
                seq=int(body["seq"]),
                prev=str(body["prev"]),
                epoch=int(body["epoch"]),
                members={str(u): r for u, r in members.items()},
                devices=tuple(str(d) for d in body["devices"]),
                revoked=tuple(str(d) for d in body["revoked"]),
                created_at=str(body["created_at"]),
                certificate=DeviceCertificate.from_dict(body["certificate"]),
                signature=b64u_decode(str(doc["signature"])),
                device_users={str(d): str(u) for d, u in users.items()},
                added=tuple(DeviceCertificate.from_dict(c) for c in certs),
                discarded=tuple(discarded),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("a vault policy entry is malformed") from exc
        if (
            policy.body() != body
            or list(policy.devices) != sorted(set(policy.devices))
            or list(policy.revoked) != sorted(set(policy.revoked))
            # The Owner's devices are implied, never listed: one entry, one encoding.
            or policy._default_user() in policy.device_users.values()
        ):
            raise IntegrityError("a vault policy entry is malformed")
        return policy

    def verify(self, previous: Policy | None) -> None:
        """Check this entry's signature and that ``previous`` authorized it.

        Raises ``IntegrityError`` for a bad signature, certificate or chain link, and for a
        change the signer's role in the preceding entry does not allow.
        """
        self.certificate.verify(self.created_at)
        self.verify_signature()
        self.verify_follows(previous)

    def verify_signature(self) -> None:
        """Check the signing device's signature over this entry (not its certificate).

        Raises ``IntegrityError`` when it does not verify.
        """
        verify_canonical(self.certificate.signing_key, self.body(), self.signature)

    def verify_follows(self, previous: Policy | None) -> None:
        """Check that this entry may follow ``previous`` (None: that it is a valid genesis).

        Raises ``IntegrityError`` naming the rule broken: a broken chain link, a change the
        signer's role in ``previous`` does not allow, or a vault left without exactly one owner.
        """
        problem = change_problem(previous, self)
        if problem is not None:
            raise IntegrityError(problem)


def _by_device(cert: DeviceCertificate) -> str:
    return cert.device


def _shape_problem(policy: Policy) -> str | None:
    """Rules every entry obeys on its own."""
    if len([r for r in policy.members.values() if r == "owner"]) != 1:
        return "a vault must keep exactly one owner"
    if set(policy.devices) & set(policy.revoked):
        return "a revoked device cannot be allowed again"
    if set(policy.device_users) - set(policy.devices):
        return "a vault policy entry names the user of a device it does not allow"
    if any(user not in policy.members for user in policy.users_by_device().values()):
        return "every allowed device must belong to a member of the vault"
    for cert in policy.added:
        if policy.user_of(cert.device) != cert.user:
            return "a device certificate does not belong to the user the policy names"
        try:
            cert.verify_signature()
        except IntegrityError:
            return "a device certificate in a policy entry does not verify"
    return None


def change_problem(previous: Policy | None, policy: Policy) -> str | None:
    """Which rule ``policy`` breaks by following ``previous`` (None: a genesis entry), or None
    when it may follow it. The verdict depends only on the two entries."""
    problem = _shape_problem(policy)
    if problem is not None:
        return problem
    signer = policy.certificate.user
    if previous is None:
        if (
            policy.seq != 1
            or policy.prev
            or policy.members.get(signer) != "owner"
            or policy.certificate.device not in policy.devices
            or policy.added
            or policy.revoked
            or policy.discarded
        ):
            return "a vault's first policy must be signed by its owner"
        return None
    resolution = bool(policy.discarded)
    # A fork resolution rotates past both branches' epochs, so it may jump more than one.
    epochs_ok = (
        policy.epoch > previous.epoch
        if resolution
        else policy.epoch in (previous.epoch, previous.epoch + 1)
    )
    if (
        policy.vault_id != previous.vault_id
        or policy.seq != previous.seq + 1
        or policy.prev != previous.id
        or not epochs_ok
    ):
        return "a vault policy entry does not follow its predecessor"
    if not set(previous.revoked) <= set(policy.revoked):
        return "a vault's revocations can only grow"
    role = previous.members.get(signer)
    device = policy.certificate.device
    if role is None or previous.user_of(device) != signer or device in previous.revoked:
        return "a vault policy entry was signed without authority"
    if resolution and role != "owner":
        return "only the owner can resolve a permission fork"
    before, after = previous.users_by_device(), policy.users_by_device()
    added = set(after) - set(before)
    removed = set(before) - set(after)
    if any(before[d] != after[d] for d in set(before) & set(after)):
        return "a device cannot change hands"
    certified = {c.device for c in policy.added}
    if added != certified:
        return "every newly allowed device must come with its certificate"
    newly_revoked = set(policy.revoked) - set(previous.revoked)
    changed = {
        u
        for u in set(previous.members) | set(policy.members)
        if previous.members.get(u) != policy.members.get(u)
    }
    left = set(previous.members) - set(policy.members)
    if (removed or newly_revoked or left) and policy.epoch <= previous.epoch:
        return "removing a device or a member must start a new epoch"
    if role == "owner":
        return None
    if newly_revoked:
        return "only the owner can revoke devices"
    if role == "admin":
        if any("owner" in (previous.members.get(u), policy.members.get(u)) for u in changed):
            return "an admin cannot add, remove or alter an owner, or transfer ownership"
        if any(before[d] in policy.members for d in removed):
            return "only the owner can revoke a member's device"
        return None
    # Editors and Readers: only another device of their own.
    if changed:
        return "your role in this vault does not allow changing its members"
    if removed or policy.epoch != previous.epoch:
        return "your role in this vault does not allow changing its devices"
    if any(after[d] != signer for d in added):
        return "you can authorize only devices of your own"
    return None


def verify_chain(entries: Sequence[Policy]) -> None:
    """Verify a whole chain, genesis first: each certificate, signature and link.

    Raises:
        IntegrityError: naming the first entry that fails and why.
    """
    previous: Policy | None = None
    for entry in entries:
        try:
            entry.verify(previous)
        except IntegrityError as exc:
            raise IntegrityError(f"policy entry {entry.seq}: {exc.message}") from exc
        previous = entry


def genesis_policy(vault_id: str, identity: LocalIdentity) -> Policy:
    """The first entry of a new vault: this user Owner, this device allowed, epoch 1."""
    unsigned = Policy(
        vault_id=vault_id,
        seq=1,
        prev="",
        epoch=1,
        members={identity.user_fingerprint: "owner"},
        devices=(identity.device_fingerprint,),
        revoked=(),
        created_at=now(),
        certificate=identity.certificate,
        signature=b"",
    )
    signed = replace(unsigned, signature=identity.device.sign_canonical(unsigned.body()))
    signed.verify(None)
    return signed


def propose(
    previous: Policy,
    identity: LocalIdentity,
    *,
    members: Mapping[str, Role] | None = None,
    devices: Mapping[str, str] | None = None,
    revoked: Sequence[str] | None = None,
    epoch: int | None = None,
    certificates: Sequence[DeviceCertificate] = (),
    at: str | None = None,
) -> Policy:
    """The entry after ``previous`` with the given changes, signed by this device.

    ``devices`` maps every allowed device to its user; ``certificates`` are those of devices
    not allowed before (others are ignored). Unchanged parts are carried over; the epoch
    advances by itself when a device or member is removed or a device revoked.

    Raises:
        DeniedError: the change breaks a rule (the message names it); nothing is signed.
    """
    members = dict(previous.members if members is None else members)
    users = previous.users_by_device() if devices is None else dict(devices)
    revoked_set = sorted(set(previous.revoked if revoked is None else revoked))
    owners = [u for u, r in members.items() if r == "owner"]
    owner = owners[0] if len(owners) == 1 else ""
    new = set(users) - set(previous.devices)
    added = tuple(c for c in certificates if c.device in new)
    if epoch is None:
        shrinks = (
            set(previous.devices) - set(users)
            or set(revoked_set) - set(previous.revoked)
            or set(previous.members) - set(members)
        )
        epoch = previous.epoch + 1 if shrinks else previous.epoch
    unsigned = Policy(
        vault_id=previous.vault_id,
        seq=previous.seq + 1,
        prev=previous.id,
        epoch=epoch,
        members=members,
        devices=tuple(sorted(users)),
        revoked=tuple(revoked_set),
        created_at=at or now(),
        certificate=identity.certificate,
        signature=b"",
        device_users={d: u for d, u in sorted(users.items()) if u != owner},
        added=tuple(sorted({c.device: c for c in added}.values(), key=_by_device)),
    )
    problem = change_problem(previous, unsigned)
    if problem is not None:
        raise DeniedError(problem)
    return replace(unsigned, signature=identity.device.sign_canonical(unsigned.body()))


def resolution_problem(
    base: Policy, chosen: Policy, resolution: Policy, discarded: Sequence[Policy]
) -> str | None:
    """Which rule a fork resolution breaks, or None when it holds (its link to ``chosen`` is
    :func:`change_problem`'s to judge).

    ``base`` is the last entry both branches share, ``chosen`` the head the resolution follows
    and ``discarded`` the entire competing branch after ``base``. The resolution must name
    exactly that branch, every entry of it must have been valid there, its signer must be the
    Owner (on an allowed device) on both branches, it keeps every revocation of both, and it
    starts an epoch after both branches' (a fresh key).
    """
    if not discarded or resolution.discarded != tuple(p.id for p in discarded):
        return "a fork resolution must name the entire branch it discards"
    if chosen.seq <= base.seq or chosen.vault_id != base.vault_id:
        return "a fork resolution must follow a branch of the fork"
    previous = base
    for entry in discarded:
        try:
            entry.verify(previous)
        except IntegrityError:
            return "an entry of the branch a fork resolution discards does not verify"
        previous = entry
    other = discarded[-1]
    signer, device = resolution.signer, resolution.certificate.device
    for head in (chosen, other):
        if head.members.get(signer) != "owner" or head.user_of(device) != signer:
            return "only the owner on both branches can resolve a permission fork"
    if resolution.epoch != max(chosen.epoch, other.epoch) + 1:
        return "a fork resolution must start a new epoch after both branches"
    if not set(other.revoked) <= set(resolution.revoked):
        return "a fork resolution must keep the revocations of both branches"
    return None


def propose_resolution(
    base: Policy,
    chosen: Policy,
    discarded: Sequence[Policy],
    identity: LocalIdentity,
    *,
    at: str | None = None,
) -> Policy:
    """The entry after ``chosen`` that resolves a fork for it, discarding ``discarded`` (the
    entire other branch after ``base``), signed by this device. It keeps the chosen head's
    members and devices, adds the other branch's revocations (removing those devices) and
    starts an epoch after both branches'.

    Raises:
        DeniedError: this device's user is not the Owner on both branches, or another rule
            refuses it (the message names it); nothing is signed.
    """
    if not discarded:
        raise DeniedError("a fork resolution must name the entire branch it discards")
    revoked = sorted(set(chosen.revoked) | set(discarded[-1].revoked))
    users = {d: u for d, u in chosen.users_by_device().items() if d not in revoked}
    owners = [u for u, r in chosen.members.items() if r == "owner"]
    owner = owners[0] if len(owners) == 1 else ""
    unsigned = Policy(
        vault_id=chosen.vault_id,
        seq=chosen.seq + 1,
        prev=chosen.id,
        epoch=max(chosen.epoch, *(p.epoch for p in discarded)) + 1,
        members=dict(chosen.members),
        devices=tuple(sorted(users)),
        revoked=tuple(revoked),
        created_at=at or now(),
        certificate=identity.certificate,
        signature=b"",
        device_users={d: u for d, u in sorted(users.items()) if u != owner},
        discarded=tuple(p.id for p in discarded),
    )
    problem = change_problem(chosen, unsigned) or resolution_problem(
        base, chosen, unsigned, discarded
    )
    if problem is not None:
        raise DeniedError(problem)
    return replace(unsigned, signature=identity.device.sign_canonical(unsigned.body()))


def check_write(policy: Policy, user: str, device: str) -> None:
    """Raise ``DeniedError`` unless ``user`` on ``device`` may write under ``policy``."""
    if device in policy.revoked or device not in policy.devices:
        raise DeniedError("this device is not allowed to write to this vault")
    if policy.user_of(device) != user:
        raise DeniedError("this device is not allowed to write to this vault")
    if policy.members.get(user) not in _WRITERS:
        raise DeniedError("your role in this vault does not allow writing")
