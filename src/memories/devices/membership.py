"""Members, roles and devices of a vault: sharing with another person, changing a role,
removing a member, revoking a device. Every change is a new signed policy entry judged by
:func:`memories.vault.policy.propose`; one that removes or revokes starts a new epoch with a
fresh vault key, which later bundles deliver only to the devices still allowed.

A person's public identity travels as ``memories-identity-v1:`` + base64url of
``{"t": "memories.identity", "v": 1, "user_name", "user_key", "devices": [certificates]}``;
its fingerprint is the user key's full SHA-256 fingerprint.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, fingerprint, new_key
from memories.devices.bundle import certificates_of
from memories.devices.pairing import check_fingerprint, vault_chain
from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.vault.identity import DeviceCertificate
from memories.vault.operations import free_policy_key
from memories.vault.policy import ROLES, Policy, Role, propose
from memories.vault.records import VaultRecord, vault_key
from memories.vault.vault import Vaults

__all__ = [
    "IDENTITY_PREFIX",
    "PublicIdentity",
    "change_policy",
    "devices_of_vault",
    "export_identity",
    "members_of_vault",
    "read_identity",
    "remove_member",
    "revoke_device",
    "set_role",
    "share",
]

IDENTITY_PREFIX: Final = "memories-identity-v1:"
_IDENTITY_TAG: Final = "memories.identity"


@dataclass(frozen=True)
class PublicIdentity:
    user_name: str
    user_key: bytes
    devices: tuple[DeviceCertificate, ...]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.user_key)


def export_identity(vaults: Vaults) -> tuple[str, str]:
    """This user's public identity string (user key, this device's certificate) and its full
    fingerprint. Holds no private key."""
    me = vaults.identity
    doc = {
        "t": _IDENTITY_TAG,
        "v": 1,
        "user_name": me.user_name,
        "user_key": b64u_encode(me.user.public_bytes()),
        "devices": [me.certificate.to_dict()],
    }
    return IDENTITY_PREFIX + b64u_encode(canonical_bytes(doc)), me.user_fingerprint


def read_identity(text: str) -> PublicIdentity:
    """Parse a public identity string; every certificate must be signed by its user key.

    Raises:
        UsageError: not an identity string.
        IntegrityError: malformed, or a certificate that does not verify or belongs to another.
    """
    body = "".join(text.split()) if isinstance(text, str) else ""
    if not body.startswith(IDENTITY_PREFIX) or len(body) > 1024 * 1024:
        raise UsageError(f"this is not an identity (it should start with {IDENTITY_PREFIX})")
    try:
        raw = b64u_decode(body[len(IDENTITY_PREFIX) :])
        doc = json.loads(raw)
        if doc.get("t") != _IDENTITY_TAG or doc.get("v") != 1 or canonical_bytes(doc) != raw:
            raise ValueError("not an identity")
        identity = PublicIdentity(
            user_name=str(doc["user_name"]),
            user_key=b64u_decode(str(doc["user_key"])),
            devices=tuple(DeviceCertificate.from_dict(c) for c in doc["devices"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError, IntegrityError) as exc:
        raise IntegrityError("the identity is malformed or was altered") from exc
    for cert in identity.devices:
        if cert.user_key != identity.user_key:
            raise IntegrityError("the identity holds a device of another user")
        cert.verify()
    if not identity.devices:
        raise IntegrityError("the identity names no device")
    return identity


def _writable_record(vaults: Vaults, ref: str | None) -> VaultRecord:
    record = vaults.resolve_vault(ref)
    if record.local or record.vault_id in vaults._local().local_vaults:
        raise UsageError("device-only vaults have one member and one device; they are not shared")
    return record


def change_policy(
    vaults: Vaults,
    ref: str | None,
    *,
    members: Mapping[str, Role] | None = None,
    devices: Mapping[str, str] | None = None,
    revoked: Sequence[str] | None = None,
    certificates: Sequence[DeviceCertificate] = (),
) -> Policy:
    """Sign and commit the next policy entry of vault ``ref``; a new epoch gets a fresh key.

    Raises:
        DeniedError: the change breaks a policy rule (nothing is committed).
        UsageError: a device-only vault. NotFoundError: no such vault.
    """
    record = _writable_record(vaults, ref)
    chain = vault_chain(vaults.store, record)
    entry = propose(
        chain[-1],
        vaults.identity,
        members=members,
        devices=devices,
        revoked=revoked,
        certificates=certificates,
    )
    keys = dict(record.keys)
    if entry.epoch != record.epoch:
        # The fresh key is what removed and revoked devices never receive.
        keys[entry.epoch] = bytes(new_key())
    m = vaults.store.mutation()
    m.put_blob(
        free_policy_key(vaults.store, record.vault_id, entry.seq, entry.id), entry.to_bytes()
    )
    updated = replace(record, policies=(*record.policies, entry.id), epoch=entry.epoch, keys=keys)
    m.put(vault_key(record.vault_id), updated.to_bytes())
    vaults._commit(
        m,
        "policy.change",
        vaults=[record.vault_id],
        policies_changed=True,
        vault=record.vault_id,
        epoch=entry.epoch,
    )
    return entry


def _last(vaults: Vaults, ref: str | None) -> tuple[VaultRecord, Policy]:
    record = vaults.resolve_vault(ref)
    return record, vault_chain(vaults.store, record)[-1]


def _role(value: str) -> Role:
    for role in ROLES:
        if value == role:
            return role
    raise UsageError("a role is owner, admin, editor or reader")


def share(
    vaults: Vaults,
    ref: str | None,
    identity: PublicIdentity,
    role: str,
    *,
    confirmed_fingerprint: str | None = None,
) -> Policy:
    """Make the person ``identity`` a member with ``role`` and allow their devices; ``owner``
    transfers ownership (this user becomes an admin).

    Raises:
        DeniedError: a fingerprint that does not match, or a change the rules refuse.
    """
    wanted = _role(role)
    if confirmed_fingerprint is not None:
        confirmed = check_fingerprint(confirmed_fingerprint, "identity fingerprint")
        if not hmac.compare_digest(confirmed, identity.fingerprint):
            raise DeniedError("the fingerprint does not match this identity; nothing was shared")
    _, last = _last(vaults, ref)
    members: dict[str, Role] = dict(last.members)
    if wanted == "owner":
        members[vaults.identity.user_fingerprint] = "admin"
    members[identity.fingerprint] = wanted
    devices = last.users_by_device()
    for cert in identity.devices:
        if cert.device not in last.revoked:
            devices[cert.device] = identity.fingerprint
    return change_policy(
        vaults, ref, members=members, devices=devices, certificates=identity.devices
    )


def _member(last: Policy, user: str) -> str:
    text = user.strip().lower()
    if text in last.members:
        return text
    matches = [
        u
        for u in last.members
        if u.startswith(text if text.startswith("sha256:") else "sha256:" + text)
    ]
    if len(text) >= 8 and len(matches) == 1:
        return matches[0]
    raise NotFoundError(
        "no member of that vault has that fingerprint; `memories member ls` shows them"
    )


def set_role(vaults: Vaults, ref: str | None, user: str, role: str) -> Policy:
    """Change a member's role. Raises ``DeniedError`` when the rules refuse it."""
    _, last = _last(vaults, ref)
    who = _member(last, user)
    return change_policy(vaults, ref, members={**last.members, who: _role(role)})


def remove_member(vaults: Vaults, ref: str | None, user: str) -> Policy:
    """Remove a member and their devices; starts a new epoch. Raises ``DeniedError``."""
    _, last = _last(vaults, ref)
    who = _member(last, user)
    members = {u: r for u, r in last.members.items() if u != who}
    devices = {d: u for d, u in last.users_by_device().items() if u != who}
    return change_policy(vaults, ref, members=members, devices=devices)


def revoke_device(vaults: Vaults, ref: str | None, device: str) -> Policy:
    """Revoke a device for good (Owner only); starts a new epoch. Raises ``DeniedError``."""
    full = check_fingerprint(device, "device fingerprint")
    _, last = _last(vaults, ref)
    if full not in last.devices and full not in last.revoked:
        raise NotFoundError("that device is not allowed in this vault; `memories device ls`")
    devices = {d: u for d, u in last.users_by_device().items() if d != full}
    return change_policy(vaults, ref, devices=devices, revoked=(*last.revoked, full))


def members_of_vault(vaults: Vaults, ref: str | None) -> list[dict[str, object]]:
    """Members of the vault with their roles and allowed device counts."""
    _, last = _last(vaults, ref)
    return [
        {"user": user, "role": role, "devices": len(last.devices_of(user))}
        for user, role in sorted(last.members.items(), key=lambda i: (ROLES.index(i[1]), i[0]))
    ]


def devices_of_vault(vaults: Vaults, ref: str | None) -> list[dict[str, object]]:
    """Allowed and revoked devices of the vault (names from their certificates)."""
    record, last = _last(vaults, ref)
    certs = certificates_of(vault_chain(vaults.store, record))
    me = vaults.identity.device_fingerprint
    rows: list[dict[str, object]] = []
    for device, user in sorted(last.users_by_device().items()):
        cert = certs.get(device)
        rows.append(
            {
                "device": device,
                "name": "" if cert is None else cert.device_name,
                "user": user,
                "status": "allowed",
                "this_device": device == me,
            }
        )
    for device in last.revoked:
        cert = certs.get(device)
        rows.append(
            {
                "device": device,
                "name": "" if cert is None else cert.device_name,
                "user": "" if cert is None else cert.user,
                "status": "revoked",
                "this_device": device == me,
            }
        )
    return rows
