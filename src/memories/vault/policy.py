"""Vault policies: a signed, linear history of who may do what in one vault.

Each entry holds the membership (user fingerprint → role), the devices allowed to write, the
monotonically growing set of revoked devices and the permission epoch. Entry ``n`` names the hash
of entry ``n-1``; the genesis entry is signed by the creating owner. A change is authorized by the
*preceding* entry (the signer's role there), never by the entry it introduces.

One owner on one device needs only the genesis entry and the write checks; the rules for Admin
changes, ownership transfer and revocation follow the same shape when more members arrive.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
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

__all__ = ["POLICY_TAG", "ROLES", "Policy", "Role", "check_write", "genesis_policy"]

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

    def body(self) -> dict[str, object]:
        return {
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

    def to_dict(self) -> dict[str, object]:
        return {"policy": self.body(), "signature": b64u_encode(self.signature)}

    @cached_property
    def id(self) -> str:  # computed once: canonical encoding is costly and the value is frozen
        return tagged_hash(POLICY_TAG, canonical_bytes(self.to_dict()))

    def to_bytes(self) -> bytes:
        return canonical_bytes(self.to_dict())

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
            body = doc["policy"]
            if body.get("t") != POLICY_TAG:
                raise ValueError("not a policy")
            members = body["members"]
            if not isinstance(members, dict) or not all(r in ROLES for r in members.values()):
                raise ValueError("bad members")
            policy = cls(
                vault_id=str(body["vault"]),
                seq=int(body["seq"]),
                prev=str(body["prev"]),
                epoch=int(body["epoch"]),
                members=members,
                devices=tuple(str(d) for d in body["devices"]),
                revoked=tuple(str(d) for d in body["revoked"]),
                created_at=str(body["created_at"]),
                certificate=DeviceCertificate.from_dict(body["certificate"]),
                signature=b64u_decode(str(doc["signature"])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("a vault policy entry is malformed") from exc
        if policy.body() != body:
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

        Raises ``IntegrityError`` for a broken chain link, a change the signer's role in
        ``previous`` does not allow, or a vault left without exactly one owner.
        """
        signer = self.certificate.user
        if previous is None:
            if self.seq != 1 or self.prev or self.members.get(signer) != "owner":
                raise IntegrityError("a vault's first policy must be signed by its owner")
            return
        if (
            self.vault_id != previous.vault_id
            or self.seq != previous.seq + 1
            or self.prev != previous.id
            or self.epoch < previous.epoch
            or not set(previous.revoked) <= set(self.revoked)
        ):
            raise IntegrityError("a vault policy entry does not follow its predecessor")
        role = previous.members.get(signer)
        if role not in ("owner", "admin") or self.certificate.device not in previous.devices:
            raise IntegrityError("a vault policy entry was signed without authority")
        owners_before = {u for u, r in previous.members.items() if r == "owner"}
        owners_after = {u for u, r in self.members.items() if r == "owner"}
        if role == "admin" and (
            owners_before != owners_after or set(self.revoked) != set(previous.revoked)
        ):
            raise IntegrityError("an admin cannot change owners or revoke devices")
        if len(owners_after) != 1:
            raise IntegrityError("a vault must keep exactly one owner")


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


def check_write(policy: Policy, user: str, device: str) -> None:
    """Raise ``DeniedError`` unless ``user`` on ``device`` may write under ``policy``."""
    if device in policy.revoked or device not in policy.devices:
        raise DeniedError("this device is not allowed to write to this vault")
    if policy.members.get(user) not in _WRITERS:
        raise DeniedError("your role in this vault does not allow writing")
