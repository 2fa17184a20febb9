"""Signed vault bundles: one vault's policy chain, revisions, epoch keys and audit records.

A bundle is the unit that moves between devices (by file today, by sync later)::

    {"bundle": {"t": "memories.bundle", "v": 2, "vault": {id, name, created_at, card_types},
                "policies": [entries, genesis first], "revisions": [{header, chunks}],
                "keys": [{device, envelope}], "links": [signed link sets],
                "audit": [signed audit records], "created_at", "certificate"},
     "signature": Ed25519 of the exporting device over the canonical ``bundle``}

Version 1 is the same without ``audit``; it still imports (with no records).
``audit`` holds the exporting device's audit entries about the vault and the records it
accepted from other devices, each signed by the device that wrote it
(:mod:`memories.devices.audit_records`).

``keys`` holds, for every other device the newest policy allows, a sealed envelope (purpose
``vault.keys``) with the vault's epoch keys; removed and revoked devices get none, so a key made
after a revocation never reaches them. :func:`import_bundle` validates everything — signature,
certificate, the whole chain, that it extends (or is extended by) this device's chain, that the
exporting device is still allowed, every revision's signature, policy, author, parents and
decryption, and every audit record's signer, signature and time — before one commit writes it
all. Any failure writes nothing.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from memories.crypto import (
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    verify_canonical,
)
from memories.crypto.envelope import open_envelope, seal_envelope
from memories.devices.audit_records import accept_records, local_records, stored_records
from memories.devices.pairing import vault_chain
from memories.errors import DeniedError, IntegrityError, UsageError
from memories.vault.assets import AssetState
from memories.vault.identity import DeviceCertificate, LocalIdentity, now
from memories.vault.links import sign_link_set, verify_link_set
from memories.vault.operations import free_policy_key
from memories.vault.policy import Policy, check_write, verify_chain
from memories.vault.records import (
    VaultRecord,
    asset_key,
    chunk_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, open_content
from memories.vault.vault import Vaults
from memories.views.cards import CardType

__all__ = [
    "BUNDLE_TAG",
    "BUNDLE_VERSION",
    "Imported",
    "certificates_of",
    "export_bundle",
    "import_bundle",
    "open_vault_keys",
    "seal_vault_keys",
]

BUNDLE_TAG: Final = "memories.bundle"
#: The version export writes; import reads every version in ``_READABLE``.
BUNDLE_VERSION: Final = 2
_READABLE: Final = frozenset({1, 2})
KEYS_PURPOSE: Final = "vault.keys"
_KEYS_TAG: Final = "memories.vault_keys"
MAX_BUNDLE_BYTES: Final = 256 * 1024 * 1024
_MALFORMED = "the bundle is malformed or was altered; nothing was imported"


def certificates_of(chain: Sequence[Policy]) -> dict[str, DeviceCertificate]:
    """Every device certificate a chain carries, by device fingerprint."""
    found: dict[str, DeviceCertificate] = {}
    for entry in chain:
        found.setdefault(entry.certificate.device, entry.certificate)
        for cert in entry.added:
            found.setdefault(cert.device, cert)
    return found


def _keys_payload(vault_id: str, keys: Mapping[int, bytes]) -> bytes:
    return canonical_bytes(
        {
            "t": _KEYS_TAG,
            "v": 1,
            "vault": vault_id,
            "keys": {str(e): b64u_encode(k) for e, k in sorted(keys.items())},
        }
    )


def seal_vault_keys(
    sender: LocalIdentity, recipient: DeviceCertificate, vault_id: str, keys: Mapping[int, bytes]
) -> bytes:
    """The epoch ``keys`` of ``vault_id`` in an envelope (purpose ``vault.keys``) that only
    ``recipient`` opens, signed by this device."""
    payload = _keys_payload(vault_id, keys)
    return seal_envelope(sender.device, recipient.exchange_key, payload, purpose=KEYS_PURPOSE)


def open_vault_keys(
    me: LocalIdentity, sealed: bytes, *, sender: bytes, vault_id: str
) -> dict[int, bytes]:
    """The epoch keys in an envelope :func:`seal_vault_keys` made for this device, pinned to
    the ``sender`` device's signing key.

    Raises:
        IntegrityError: it does not open, or holds keys of another vault or malformed keys.
    """
    try:
        opened = open_envelope(me.exchange, sealed, purpose=KEYS_PURPOSE, sender=sender)
        doc = json.loads(opened.plaintext)
        if doc.get("t") != _KEYS_TAG or doc.get("vault") != vault_id:
            raise ValueError("keys for another vault")
        found: dict[int, bytes] = {}
        for epoch, key in dict(doc["keys"]).items():
            value = b64u_decode(str(key))
            if int(epoch) < 1 or len(value) != 32:
                raise ValueError("a malformed key")
            found[int(epoch)] = value
        return found
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IntegrityError(_MALFORMED) from exc


def export_bundle(vaults: Vaults, ref: str | None) -> bytes:
    """The signed bundle of vault ``ref`` (None: personal), as canonical JSON bytes.

    Raises:
        UsageError: a device-only vault (they never leave the device).
        NotFoundError: no such vault.
    """
    record = vaults.resolve_vault(ref)
    if record.local or record.vault_id in vaults._local().local_vaults:
        raise UsageError("device-only vaults never leave this device")
    me = vaults.identity
    chain = vault_chain(vaults.store, record)
    last = chain[-1]
    certs = certificates_of(chain)
    keys = []
    payload = _keys_payload(record.vault_id, record.keys)
    for device in last.devices:
        if device == me.device_fingerprint or device not in certs:
            continue
        sealed = seal_envelope(me.device, certs[device].exchange_key, payload, purpose=KEYS_PURPOSE)
        keys.append({"device": device, "envelope": b64u_encode(sealed)})
    revisions: dict[str, Revision] = {}
    assets: set[str] = set()
    for state in vaults._all_assets().values():
        if state.vault_id == record.vault_id:
            assets.add(state.asset_id)
            vaults._walk(state, revisions)
    audit = local_records(vaults.store, me, record.vault_id, assets, revisions)
    audit += [
        r
        for r in stored_records(vaults.store, record.vault_id)
        if r.device != me.device_fingerprint
    ]
    audit.sort(key=lambda r: (r.device, r.seq))
    # Oldest first, so a reader meets parents before children.
    ordered = sorted(revisions.values(), key=lambda r: (r.created_at, r.id))
    exported = []
    for revision in ordered:
        header, chunks = vaults.export_revision(revision.id)
        exported.append({"header": b64u_encode(header), "chunks": [b64u_encode(c) for c in chunks]})
    link_sets = []
    try:
        check_write(last, me.user_fingerprint, me.device_fingerprint)
        writer = True
    except DeniedError:
        writer = False  # a reader's bundle carries no links: it could not change them
    if writer:
        for state in sorted(vaults._assets_of("card").values(), key=lambda s: s.asset_id):
            if state.vault_id == record.vault_id:
                link_sets.append(
                    sign_link_set(me, record.vault_id, last, state.asset_id, state.links)
                )
    body = {
        "t": BUNDLE_TAG,
        "v": BUNDLE_VERSION,
        "links": link_sets,
        "audit": [r.to_dict() for r in audit],
        "vault": {
            "id": record.vault_id,
            "name": record.name,
            "created_at": record.created_at,
            "card_types": {n: ct.to_dict() for n, ct in sorted(record.card_types.items())},
        },
        "policies": [p.to_dict() for p in chain],
        "revisions": exported,
        "keys": keys,
        "created_at": now(),
        "certificate": me.certificate.to_dict(),
    }
    signature = me.device.sign_canonical(body)
    return canonical_bytes({"bundle": body, "signature": b64u_encode(signature)})


@dataclass(frozen=True)
class Imported:
    vault: str
    name: str
    new_vault: bool
    policies: int  # entries added
    revisions: int  # revisions added
    epoch: int
    links: int = 0  # cards whose links changed
    audit: int = 0  # other devices' audit records added

    def to_dict(self) -> dict[str, object]:
        return {
            "vault": self.vault,
            "name": self.name,
            "new_vault": self.new_vault,
            "policies": self.policies,
            "revisions": self.revisions,
            "epoch": self.epoch,
            "links": self.links,
            "audit": self.audit,
        }


@dataclass(frozen=True)
class _Parsed:
    body: Mapping[str, object]
    certificate: DeviceCertificate
    chain: list[Policy]
    revisions: list[tuple[bytes, list[bytes]]]
    keys: dict[str, bytes]
    vault: Mapping[str, object]
    link_sets: list[object]
    audit: list[object]


def _parse(data: bytes) -> _Parsed:
    if not isinstance(data, bytes) or len(data) > MAX_BUNDLE_BYTES:
        raise UsageError("a bundle file is at most 256 MiB")
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict) or set(doc) != {"bundle", "signature"}:
            raise ValueError("not a bundle")
        body = doc["bundle"]
        if not isinstance(body, dict) or body.get("t") != BUNDLE_TAG:
            raise ValueError("not a bundle")
        version = body.get("v")
        if isinstance(version, bool) or version not in _READABLE:
            raise ValueError("not a bundle version this release reads")
        certificate = DeviceCertificate.from_dict(body["certificate"])
        signature = b64u_decode(str(doc["signature"]))
        chain = [Policy.from_dict(p) for p in body["policies"]]
        revisions = [
            (b64u_decode(str(r["header"])), [b64u_decode(str(c)) for c in r["chunks"]])
            for r in body["revisions"]
        ]
        keys = {str(k["device"]): b64u_decode(str(k["envelope"])) for k in body["keys"]}
        link_sets = body["links"]
        if not isinstance(link_sets, list):
            raise ValueError("bad links")
        if version == 1:
            if "audit" in body:
                raise ValueError("a version 1 bundle carries no audit records")
            audit: list[object] = []
        else:
            audit = body["audit"]
            if not isinstance(audit, list):
                raise ValueError("bad audit records")
        vault = body["vault"]
        if not isinstance(vault, dict) or not chain:
            raise ValueError("no vault")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IntegrityError(_MALFORMED) from exc
    except IntegrityError as exc:
        raise IntegrityError(_MALFORMED) from exc
    try:
        certificate.verify_signature()
        verify_canonical(certificate.signing_key, body, signature)
    except IntegrityError as exc:
        raise IntegrityError(
            "the bundle's signature does not verify; nothing was imported"
        ) from exc
    return _Parsed(body, certificate, chain, revisions, keys, vault, link_sets, audit)


def _merge_chains(local: list[Policy], incoming: list[Policy]) -> list[Policy]:
    ours, theirs = [p.id for p in local], [p.id for p in incoming]
    if theirs[: len(ours)] == ours:
        return incoming
    if ours[: len(theirs)] == theirs:
        return local
    raise IntegrityError(
        "the bundle's policy history has forked from this device's; nothing was imported"
    )


def import_bundle(vaults: Vaults, data: bytes) -> Imported:
    """Validate a bundle completely, then commit its new policies and revisions at once.

    Raises:
        IntegrityError: malformed, altered, a forked or invalid policy chain, a revision that
            does not verify or decrypt, a missing parent, or an audit record that is altered,
            about another vault or contradicts one held already.
        DeniedError: the exporting device is not (or no longer) allowed, a revision comes from
            a revoked device, an audit record from a device the chain never names or from a
            revoked one after its revocation, or this device is not allowed in the vault.
        UsageError: the bundle names a device-only vault of this store.
    """
    parsed = _parse(data)
    me = vaults.identity
    store = vaults.store
    vault_id = str(parsed.vault.get("id", ""))
    chain = parsed.chain
    verify_chain(chain)
    if chain[0].vault_id != vault_id:
        raise IntegrityError(_MALFORMED)
    existing = store.get(vault_key(vault_id))
    record = None if existing is None else VaultRecord.from_bytes(existing)
    if record is not None and (record.local or vault_id in vaults._local().local_vaults):
        raise UsageError("device-only vaults never leave this device")
    local_chain = [] if record is None else vault_chain(store, record)
    merged = chain if record is None else _merge_chains(local_chain, chain)
    newest = merged[-1]
    sender = parsed.certificate
    if newest.user_of(sender.device) != sender.user or sender.device in newest.revoked:
        raise DeniedError(
            "the bundle comes from a device this vault does not allow (revoked or never "
            "added); nothing was imported"
        )
    if newest.user_of(me.device_fingerprint) != me.user_fingerprint:
        raise DeniedError("this device is not allowed in that vault; nothing was imported")
    keys: dict[int, bytes] = {} if record is None else dict(record.keys)
    sealed = parsed.keys.get(me.device_fingerprint)
    if sealed is not None:
        opened = open_vault_keys(me, sealed, sender=sender.signing_key, vault_id=vault_id)
        for epoch, value in opened.items():
            have = keys.get(epoch)
            if have is not None and not hmac.compare_digest(have, value):
                raise IntegrityError(_MALFORMED)  # an epoch key never changes
            keys[epoch] = value
    if newest.epoch not in keys:
        raise DeniedError("the bundle carries no key of the current epoch for this device")
    by_id = {p.id: p for p in merged}
    card_types: dict[str, CardType] = {} if record is None else dict(record.card_types)
    try:
        for name, ct in dict(parsed.vault.get("card_types", {})).items():  # type: ignore[call-overload]
            card_types.setdefault(str(name), CardType.from_dict(ct))
    except (TypeError, ValueError, KeyError) as exc:
        raise IntegrityError(_MALFORMED) from exc
    states: dict[tuple[str, str], AssetState] = {}
    known: dict[tuple[str, str], set[str]] = {}
    added: list[tuple[Revision, bytes, list[bytes]]] = []
    new_states: dict[tuple[str, str], tuple[AssetState, str | None]] = {}
    for header, chunks in parsed.revisions:
        revision = Revision.from_bytes(header)
        if header != revision.to_bytes() or revision.vault_id != vault_id:
            raise IntegrityError(_MALFORMED)
        slot = (revision.kind, revision.asset_id)
        if slot not in known:
            stored = store.get(asset_key(revision.kind, revision.asset_id))
            state = None if stored is None else AssetState.from_bytes(stored)
            if state is not None:
                if state.vault_id != vault_id:
                    raise IntegrityError("a revision in the bundle does not match its asset")
                states[slot] = state
                known[slot] = {e.revision for e in vaults._walk(state)}
            else:
                known[slot] = set()
        if revision.id in known[slot]:
            continue
        policy = by_id.get(revision.policy)
        if policy is None:
            raise IntegrityError("a revision names a policy this vault does not have")
        if revision.author_device in newest.revoked:
            raise DeniedError(
                "the bundle holds a revision written by a revoked device; nothing was imported"
            )
        revision.verify(policy, chunks)
        if not set(revision.parents) <= known[slot]:
            raise IntegrityError("a revision's parent is missing; nothing was imported")
        key = keys.get(revision.epoch)
        if key is None:
            raise IntegrityError("a revision's epoch key is missing; nothing was imported")
        content = open_content(revision, chunks, key)
        current = states.get(slot)
        if current is None:
            if content is None:
                raise IntegrityError("an asset cannot begin with a tombstone")
            current = AssetState.first(
                asset_id=revision.asset_id,
                vault_id=vault_id,
                kind=revision.kind,
                revision_id=revision.id,
                content=content,
                at=revision.created_at,
                author=revision.author_user,
            )
        else:
            current = current.after(
                revision.id, revision.parents, content, revision.created_at, revision.author_user
            )
        states[slot] = current
        known[slot].add(revision.id)
        new_states[slot] = (current, revision.id)
        added.append((revision, header, chunks))
    linked = 0
    for doc in parsed.link_sets:
        link_set = verify_link_set(doc, by_id)
        if link_set.vault_id != vault_id or link_set.certificate.device in newest.revoked:
            raise DeniedError("the bundle holds links from a device this vault does not allow")
        slot = ("card", link_set.source)
        current = states.get(slot)
        if current is None:
            stored = store.get(asset_key("card", link_set.source))
            if stored is None:
                raise IntegrityError("the bundle links a card it does not carry")
            current = AssetState.from_bytes(stored)
        if current.vault_id != vault_id:
            raise IntegrityError("the bundle links a card of another vault")
        for link in link_set.links:
            target = states.get(("card", link.target))
            stored = None if target is not None else store.get(asset_key("card", link.target))
            if target is None and stored is None:
                raise IntegrityError("the bundle links to a card it does not carry")
            if (target or AssetState.from_bytes(stored or b"")).vault_id != vault_id:
                raise IntegrityError("the bundle links a card of another vault")
        if set(current.links) != set(link_set.links):
            current = replace(current, links=link_set.links)
            states[slot] = current
            previous = new_states.get(slot)
            new_states[slot] = (current, None if previous is None else previous[1])
            linked += 1
    records = accept_records(
        store,
        parsed.audit,
        vault_id=vault_id,
        chain=merged,
        certificates=certificates_of(merged),
        me=me.device_fingerprint,
    )
    m = store.mutation()
    new_entries = [p for p in merged if p.seq > len(local_chain)]
    for entry in new_entries:
        m.put_blob(free_policy_key(store, vault_id, entry.seq, entry.id), entry.to_bytes())
    updated = VaultRecord(
        vault_id=vault_id,
        name=str(parsed.vault.get("name", "shared")) if record is None else record.name,
        created_at=str(parsed.vault.get("created_at", "")) if record is None else record.created_at,
        local=False,
        policies=tuple(p.id for p in merged),
        epoch=newest.epoch,
        keys=keys,
        card_types=card_types,
    )
    if record is None and any(r.name == updated.name for r in vaults._records()):
        updated = VaultRecord(**{**updated.__dict__, "name": f"{updated.name}-{vault_id[:8]}"})
    m.put(vault_key(vault_id), updated.to_bytes())
    for revision, header, chunks in added:
        m.put_blob(revision_key(revision.id), header)
        for index, chunk in enumerate(chunks):
            m.put_blob(chunk_key(revision.id, index), chunk)
    for state, _ in new_states.values():
        m.put(asset_key(state.kind, state.asset_id), state.to_bytes())
    for audit_record in records:
        m.put(audit_record.key, audit_record.to_bytes())
    vaults._commit(
        m,
        "bundle.import",
        list(new_states.values()),
        vaults=[vault_id],
        policies_changed=bool(new_entries),
        vault=vault_id,
        sender=sender.device,
        audit=len(records),
    )
    return Imported(
        vault=vault_id,
        name=updated.name,
        new_vault=record is None,
        policies=len(new_entries),
        revisions=len(added),
        epoch=newest.epoch,
        links=linked,
        audit=len(records),
    )
