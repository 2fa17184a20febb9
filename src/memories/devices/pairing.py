"""Pairing a personal device: an expiring signed join request, an approval envelope, a join.

::

    new device                         existing device
    init --join   (device keys only)
    request --approver FP  ──────────▶ approve REQUEST --fingerprint FULL
                                       (adds the device to the chosen vaults' policies)
    join APPROVAL ◀──────────────────  approval: an envelope to the new exchange key

A join-mode store holds only the ``pairing`` entry: this device's signing and exchange keys and
the requests it issued (nonce, expiry, the approving device's key it pins). ``join`` opens the
approval only with that pinned sender and a pending, unexpired request, checks everything, and
commits identity, vaults and policies in one transaction that also consumes the request: a
replayed approval finds no request. Strings carry public keys only; the user signing key and
vault keys travel inside the envelope.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from memories.crypto import (
    ExchangeKey,
    SigningKey,
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    digest,
    fingerprint,
    new_id,
    verify_canonical,
)
from memories.crypto.envelope import open_envelope, seal_envelope
from memories.errors import ConflictError, DeniedError, IntegrityError, UsageError
from memories.store import Mutation, Store
from memories.vault.content import make_content
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.operations import (
    Reader,
    create_vault,
    free_policy_key,
    read_policy,
    write_revision,
)
from memories.vault.policy import Policy, propose, verify_chain
from memories.vault.records import (
    IDENTITY_KEY,
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    policy_key,
    vault_key,
)
from memories.vault.vault import Vaults
from memories.views.cards import CardType

__all__ = [
    "APPROVAL_PREFIX",
    "PAIRING_KEY",
    "REQUEST_PREFIX",
    "Issued",
    "JoinRequest",
    "Joined",
    "approve",
    "check_fingerprint",
    "is_joining",
    "issue_request",
    "join",
    "read_request",
    "stage_join",
]

PAIRING_KEY: Final = "pairing"
REQUEST_PREFIX: Final = "memories-join-v1:"
APPROVAL_PREFIX: Final = "memories-approval-v1:"
APPROVAL_PURPOSE: Final = "device.approval"
_REQUEST_TAG: Final = "memories.join_request"
_PAIRING_TAG: Final = "memories.pairing"
_APPROVAL_TAG: Final = "memories.approval"
DEFAULT_TTL: Final = timedelta(minutes=15)
MAX_TTL: Final = timedelta(days=1)
_FULL_FINGERPRINT = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_TEXT = 8 * 1024 * 1024


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _clock(at: datetime | None) -> datetime:
    return at or datetime.now(UTC)


def check_fingerprint(value: str, what: str = "fingerprint") -> str:
    """A full ``sha256:<64 hex>`` fingerprint, lower-cased.

    Raises:
        UsageError: anything shorter or otherwise malformed (a short form is never enough).
    """
    text = value.strip().lower() if isinstance(value, str) else ""
    if not text.startswith("sha256:"):
        text = "sha256:" + text
    if not _FULL_FINGERPRINT.fullmatch(text):
        raise UsageError(
            f"give the full {what}: sha256: and 64 hex digits (a short form is not accepted)"
        )
    return text


def _decode_text(text: str, prefix: str, what: str) -> bytes:
    if not isinstance(text, str) or len(text) > _MAX_TEXT:
        raise UsageError(f"this is not a {what}")
    body = "".join(text.split())
    if not body.startswith(prefix):
        raise UsageError(f"this is not a {what} (it should start with {prefix})")
    try:
        return b64u_decode(body[len(prefix) :])
    except IntegrityError as exc:
        raise UsageError(f"this {what} is damaged; copy it again") from exc


# -- the pending state of a join-mode store ----------------------------------------------------


@dataclass(frozen=True)
class _Pending:
    nonce: str
    fingerprint: str
    approver: str
    expires_at: str


@dataclass(frozen=True)
class _Pairing:
    device_id: str
    device_name: str
    device: SigningKey
    exchange: ExchangeKey
    pending: tuple[_Pending, ...]

    def __repr__(self) -> str:
        return f"_Pairing(device={self.device_id}, pending={len(self.pending)})"

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": _PAIRING_TAG,
                "v": 1,
                "device_id": self.device_id,
                "device_name": self.device_name,
                "device_private": b64u_encode(bytes(self.device.private_bytes())),
                "exchange_private": b64u_encode(bytes(self.exchange.private_bytes())),
                "pending": [
                    {
                        "nonce": p.nonce,
                        "fingerprint": p.fingerprint,
                        "approver": p.approver,
                        "expires_at": p.expires_at,
                    }
                    for p in self.pending
                ],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> _Pairing:
        try:
            doc = json.loads(data)
            if doc.get("t") != _PAIRING_TAG:
                raise ValueError("not a pairing record")
            return cls(
                device_id=str(doc["device_id"]),
                device_name=str(doc["device_name"]),
                device=SigningKey.from_private_bytes(b64u_decode(str(doc["device_private"]))),
                exchange=ExchangeKey.from_private_bytes(b64u_decode(str(doc["exchange_private"]))),
                pending=tuple(
                    _Pending(
                        str(p["nonce"]),
                        str(p["fingerprint"]),
                        str(p["approver"]),
                        str(p["expires_at"]),
                    )
                    for p in doc["pending"]
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError, UsageError) as exc:
            raise IntegrityError("the pairing record is malformed") from exc


def stage_join(m: Mutation, *, device_name: str) -> None:
    """Stage a join-mode store's only record: fresh device keys, no user identity, no vaults."""
    pairing = _Pairing(new_id(), device_name, SigningKey.generate(), ExchangeKey.generate(), ())
    m.put(PAIRING_KEY, pairing.to_bytes())


def is_joining(store: Store) -> bool:
    """Whether the unlocked store is waiting to join (it has device keys but no identity)."""
    return store.get(IDENTITY_KEY) is None and store.get(PAIRING_KEY) is not None


def _pairing(store: Store) -> _Pairing:
    data = store.get(PAIRING_KEY)
    if data is None or store.get(IDENTITY_KEY) is not None:
        raise ConflictError(
            "this store is not waiting to join; `memories init --join` creates one that is"
        )
    return _Pairing.from_bytes(data)


# -- the request ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JoinRequest:
    """A verified join request: the new device's public keys, whom it pins, until when."""

    device_id: str
    device_name: str
    signing_key: bytes
    exchange_key: bytes
    nonce: str
    approver: str
    created_at: str
    expires_at: str
    fingerprint: str  # sha256 of the signed request's canonical bytes

    def public_dict(self) -> dict[str, object]:
        return {
            "device_id": self.device_id,
            "device_name": self.device_name,
            "device": fingerprint(self.signing_key),
            "approver": self.approver,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "fingerprint": self.fingerprint,
        }


@dataclass(frozen=True)
class Issued:
    text: str
    fingerprint: str
    expires_at: str


def issue_request(
    store: Store, *, approver: str, ttl: timedelta = DEFAULT_TTL, at: datetime | None = None
) -> Issued:
    """Sign a new join request pinning the approving device ``approver`` (its full device
    fingerprint) and remember it as pending.

    Raises:
        ConflictError: the store is not waiting to join.
        UsageError: the approver is not a full fingerprint, or the lifetime is out of bounds.
    """
    pinned = check_fingerprint(approver, "approving device's fingerprint")
    if not timedelta(minutes=1) <= ttl <= MAX_TTL:
        raise UsageError("a join request lives from one minute to one day")
    pairing = _pairing(store)
    moment = _clock(at)
    body = {
        "t": _REQUEST_TAG,
        "v": 1,
        "device_id": pairing.device_id,
        "device_name": pairing.device_name,
        "signing_key": b64u_encode(pairing.device.public_bytes()),
        "exchange_key": b64u_encode(pairing.exchange.public_bytes()),
        "nonce": new_id(),
        "approver": pinned,
        "created_at": _stamp(moment),
        "expires_at": _stamp(moment + ttl),
    }
    signed = {"request": body, "signature": b64u_encode(pairing.device.sign_canonical(body))}
    raw = canonical_bytes(signed)
    print_ = digest(raw)
    pending = _Pending(str(body["nonce"]), print_, pinned, str(body["expires_at"]))
    # Expired requests are dropped here so the record stays small.
    now_text = _stamp(moment)
    kept = tuple(p for p in pairing.pending if p.expires_at > now_text)
    m = store.mutation()
    updated = _Pairing(
        pairing.device_id, pairing.device_name, pairing.device, pairing.exchange, (*kept, pending)
    )
    m.put(PAIRING_KEY, updated.to_bytes())
    store.commit(m, action="device.request", details={"request": print_})
    return Issued(REQUEST_PREFIX + b64u_encode(raw), print_, pending.expires_at)


def read_request(text: str, *, at: datetime | None = None) -> JoinRequest:
    """Parse and verify a join request string: its own device key signs it, it is unexpired.

    Raises:
        UsageError: not a join request string.
        IntegrityError: malformed, forged or tampered.
        DeniedError: expired.
    """
    raw = _decode_text(text, REQUEST_PREFIX, "join request")
    try:
        doc = json.loads(raw)
        body = doc["request"]
        if (
            set(doc) != {"request", "signature"}
            or body.get("t") != _REQUEST_TAG
            or body.get("v") != 1
        ):
            raise ValueError("not a request")
        request = JoinRequest(
            device_id=str(body["device_id"]),
            device_name=str(body["device_name"]),
            signing_key=b64u_decode(str(body["signing_key"])),
            exchange_key=b64u_decode(str(body["exchange_key"])),
            nonce=str(body["nonce"]),
            approver=check_fingerprint(str(body["approver"])),
            created_at=str(body["created_at"]),
            expires_at=str(body["expires_at"]),
            fingerprint=digest(raw),
        )
        signature = b64u_decode(str(doc["signature"]))
        if canonical_bytes(doc) != raw or len(body) != 10:
            raise ValueError("not canonical")
    except (KeyError, TypeError, ValueError, AttributeError, UsageError) as exc:
        raise IntegrityError("the join request is malformed or was altered") from exc
    try:
        verify_canonical(request.signing_key, body, signature)
    except IntegrityError as exc:
        raise IntegrityError("the join request is malformed or was altered") from exc
    if _stamp(_clock(at)) > request.expires_at:
        raise DeniedError("the join request has expired; make a new one on the new device")
    return request


# -- approving -----------------------------------------------------------------------------------


def _vault_payload(record: VaultRecord, chain: Sequence[Policy]) -> dict[str, object]:
    return {
        "id": record.vault_id,
        "name": record.name,
        "created_at": record.created_at,
        "epoch": record.epoch,
        "keys": {str(e): b64u_encode(k) for e, k in sorted(record.keys.items())},
        "card_types": {n: ct.to_dict() for n, ct in sorted(record.card_types.items())},
        "policies": [p.to_dict() for p in chain],
    }


def approve(
    vaults: Vaults,
    request: JoinRequest,
    *,
    confirmed_fingerprint: str,
    vault_refs: Sequence[str] | None = None,
    at: datetime | None = None,
) -> str:
    """Authorize the requesting device in the chosen vaults and return the approval string.

    ``confirmed_fingerprint`` is what the user confirmed: the request's full fingerprint.
    Device-only vaults are never included; the default is every other vault.

    Raises:
        DeniedError: the fingerprint does not match, the request is expired or is not for this
            device, or this device may not authorize devices in a chosen vault.
        UsageError: a short fingerprint, or a device-only vault named.
        NotFoundError: a named vault does not exist.
    """
    confirmed = check_fingerprint(confirmed_fingerprint, "request fingerprint")
    if not hmac.compare_digest(confirmed, request.fingerprint):
        raise DeniedError("the fingerprint does not match this request; nothing was approved")
    if _stamp(_clock(at)) > request.expires_at:
        raise DeniedError("the join request has expired; make a new one on the new device")
    me = vaults.identity
    if not hmac.compare_digest(request.approver, me.device_fingerprint):
        raise DeniedError("this join request names another device as its approver")
    local = vaults._local()
    if vault_refs:
        chosen = []
        for ref in vault_refs:
            record = vaults.resolve_vault(ref)
            if record.local or record.vault_id in local.local_vaults:
                raise UsageError("device-only vaults never leave this device")
            chosen.append(record)
    else:
        chosen = [
            r for r in vaults._records() if not r.local and r.vault_id not in local.local_vaults
        ]
    cert = me.certify(
        request.signing_key,
        request.exchange_key,
        device_name=request.device_name,
        device_id=request.device_id,
    )
    m = vaults.store.mutation()
    shared = []
    for record in {r.vault_id: r for r in chosen}.values():
        chain = vault_chain(vaults.store, record)
        last = chain[-1]
        entry = propose(
            last,
            me,
            devices={**last.users_by_device(), cert.device: me.user_fingerprint},
            certificates=(cert,),
        )
        m.put_blob(
            free_policy_key(vaults.store, record.vault_id, entry.seq, entry.id), entry.to_bytes()
        )
        updated = VaultRecord(
            vault_id=record.vault_id,
            name=record.name,
            created_at=record.created_at,
            local=False,
            policies=(*record.policies, entry.id),
            epoch=record.epoch,
            keys=record.keys,
            card_types=record.card_types,
        )
        m.put(vault_key(record.vault_id), updated.to_bytes())
        shared.append(_vault_payload(updated, (*chain, entry)))
    payload = {
        "t": _APPROVAL_TAG,
        "v": 1,
        "request": request.fingerprint,
        "nonce": request.nonce,
        "user_name": me.user_name,
        "user_private": b64u_encode(bytes(me.user.private_bytes())),
        "certificate": cert.to_dict(),
        "personal": local.personal,
        "vaults": shared,
    }
    envelope = seal_envelope(
        me.device, request.exchange_key, canonical_bytes(payload), purpose=APPROVAL_PURPOSE
    )
    vaults._commit(
        m,
        "device.approve",
        vaults=[r.vault_id for r in chosen],
        policies_changed=True,
        device=cert.device,
        request=request.fingerprint,
    )
    return APPROVAL_PREFIX + b64u_encode(envelope)


def vault_chain(store: Reader, record: VaultRecord) -> list[Policy]:
    """A vault's stored policy chain, genesis first, each entry checked against its id."""
    return [
        read_policy(store, record.vault_id, seq, pid)[1]
        for seq, pid in enumerate(record.policies, start=1)
    ]


# -- joining -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Joined:
    identity: dict[str, object]
    vaults: tuple[str, ...]


def _parse_vault(doc: object) -> tuple[VaultRecord, list[Policy]]:
    if not isinstance(doc, dict):
        raise ValueError("bad vault")
    chain = [Policy.from_dict(p) for p in doc["policies"]]
    keys = {int(e): b64u_decode(str(k)) for e, k in dict(doc["keys"]).items()}
    types = {str(n): CardType.from_dict(ct) for n, ct in dict(doc["card_types"]).items()}
    record = VaultRecord(
        vault_id=str(doc["id"]),
        name=str(doc["name"]),
        created_at=str(doc["created_at"]),
        local=False,
        policies=tuple(p.id for p in chain),
        epoch=int(doc["epoch"]),
        keys=keys,
        card_types=types,
    )
    return record, chain


def join(
    store: Store, text: str, *, local_config: Mapping[str, str], at: datetime | None = None
) -> Joined:
    """Verify an approval against the pending request it answers and commit the join: the
    identity, the shared vaults and their policies, a new device-only vault, and the request
    consumed, in one transaction.

    Raises:
        ConflictError: the store is not waiting to join.
        UsageError: not an approval string.
        IntegrityError: forged, tampered, for another device, or not from the pinned approver.
        DeniedError: no pending request matches (replayed) or it expired.
    """
    pairing = _pairing(store)
    envelope = _decode_text(text, APPROVAL_PREFIX, "device approval")
    now_text = _stamp(_clock(at))
    try:
        result = open_envelope(pairing.exchange, envelope, purpose=APPROVAL_PURPOSE)
    except IntegrityError as exc:
        raise IntegrityError(
            "the approval could not be opened: it is damaged, forged or for another device"
        ) from exc
    sender = fingerprint(result.sender)
    pending = next((p for p in pairing.pending if hmac.compare_digest(p.approver, sender)), None)
    if pending is None:
        raise DeniedError(
            "no pending join request matches this approval (already used, or signed by a "
            "device the request did not name); nothing was changed"
        )
    try:
        doc = json.loads(result.plaintext)
        if doc.get("t") != _APPROVAL_TAG or doc.get("v") != 1:
            raise ValueError("not an approval")
        if (
            not hmac.compare_digest(str(doc["request"]), pending.fingerprint)
            or str(doc["nonce"]) != pending.nonce
        ):
            raise DeniedError("this approval answers another join request; nothing was changed")
        user = SigningKey.from_private_bytes(b64u_decode(str(doc["user_private"])))
        cert = DeviceCertificate.from_dict(doc["certificate"])
        shared = [_parse_vault(v) for v in doc["vaults"]]
        personal = str(doc["personal"])
        user_name = str(doc["user_name"])
    except (KeyError, TypeError, ValueError, AttributeError, UsageError) as exc:
        raise IntegrityError("the approval's contents are malformed") from exc
    if now_text > pending.expires_at:
        raise DeniedError("the join request has expired; make a new one and ask again")
    cert.verify()
    if (
        cert.user_key != user.public_bytes()
        or cert.signing_key != pairing.device.public_bytes()
        or cert.exchange_key != pairing.exchange.public_bytes()
        or cert.device_id != pairing.device_id
    ):
        raise IntegrityError("the approval's certificate is not for this device")
    identity = LocalIdentity(user, pairing.device, pairing.exchange, cert, user_name)
    for record, chain in shared:
        verify_chain(chain)
        last = chain[-1]
        if last.vault_id != record.vault_id or last.user_of(cert.device) != cert.user:
            raise IntegrityError("a shared vault's policy does not allow this device")
        if last.epoch != record.epoch or any(
            e not in record.keys for e in range(1, last.epoch + 1)
        ):
            raise IntegrityError("a shared vault is missing an epoch key")
    m = store.mutation()
    m.put(IDENTITY_KEY, canonical_bytes(identity.to_dict()))
    for record, chain in shared:
        for entry in chain:
            m.put_blob(policy_key(record.vault_id, entry.seq), entry.to_bytes())
        m.put(vault_key(record.vault_id), record.to_bytes())
    ids = {record.vault_id for record, _ in shared}
    if personal not in ids:
        personal = create_vault(m, identity, "personal", local=False).vault_id
    device = create_vault(m, identity, "device", local=True)
    m.put(LOCAL_KEY, LocalState(personal, (device.vault_id,)).to_bytes())
    body = "\n".join(f"{k}: {v}" for k, v in sorted(local_config.items()))
    content = make_content("memory", title="local_config", body=body, tags=("local_config",))
    write_revision(
        m,
        identity,
        device,
        asset_id=new_id(),
        kind="memory",
        state=None,
        parents=(),
        content=content,
    )
    # The request is consumed by this same commit: a replay finds nothing pending.
    m.delete(PAIRING_KEY)
    store.commit(m, action="device.join", details={"request": pending.fingerprint})
    return Joined(identity.public_dict(), tuple(sorted(ids)))
